"""Seconds of one kappa tuning (the experiment's fusion-tune stage): a MAP curve per fusion method.

Usage::

    nice .venv/bin/python benchmarks/kappa_tuning.py --runs RUN_A RUN_B --qrels QRELS \\
        [--methods borda rrf] [--step 0.05] [--repeat 3]

Reads the two runs once, then times :func:`clirplug.fusion.tune.kappa_curve` for each method
(``--repeat`` times; the median is printed) and prints a digest of the curves, so that two versions
of the code (``PYTHONPATH=...``) can be compared on the same machine state: equal digests mean
bit-identical curves.
"""

import argparse
import hashlib
import statistics
import time

from clirplug.fusion.tune import kappa_curve, kappa_grid
from clirplug.io.qrels import read_qrels
from clirplug.io.runs import read_run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs=2, required=True)
    parser.add_argument("--qrels", required=True)
    parser.add_argument("--methods", nargs="+", default=["borda", "rrf"])
    parser.add_argument("--step", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    runs, qrels = [read_run(path) for path in args.runs], read_qrels(args.qrels)
    print(f"read the runs and qrels: {time.perf_counter() - start:.1f} s ({sum(map(len, runs)):,} rows)")
    digest = hashlib.sha256()
    for method in args.methods:
        seconds = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            curve = kappa_curve(runs, qrels, method, kappa_grid(args.step), 1000, "MAP")
            seconds.append(time.perf_counter() - start)
        digest.update(repr(curve.values.tolist()).encode())
        print(f"{method}: median {statistics.median(seconds):.2f} s over {args.repeat}, best MAP {curve['MAP'].max():.4f}")
    print(f"curves sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
