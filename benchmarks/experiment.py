"""Wall time of `clirplug experiment CONFIG`, invoked twice: the second must skip every stage
and leave the run files byte for byte as they were.

Usage: nice .venv/bin/python benchmarks/experiment.py clirplug/data/demo.yaml [--root DIR] [--threads N] [--set K=V ...]
Prints a markdown table (invocation, wall seconds, stages run, run files, identical to the first).
"""

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.trec"))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--root", help="output root (default: a fresh temporary folder)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    root = Path(args.root or tempfile.mkdtemp(prefix="clirplug-experiment-"))
    command = [sys.executable, "-m", "clirplug", "experiment", args.config, "--root", str(root), "--quiet",
               "--threads", str(args.threads)] + [f"--set={o}" for o in args.overrides]
    rows, first = [], None
    for invocation in (1, 2):
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        if result.returncode != 0:
            sys.exit(f"invocation {invocation} failed:\n{result.stderr[-3000:]}")
        report = Path(result.stdout.strip().splitlines()[-1])
        ran = sum(" done in " in line for line in result.stderr.splitlines())
        files = digests(report.parent)
        first = first or files
        rows.append((invocation, seconds, ran, len(files), files == first))
    stages = json.loads(report.with_suffix(".json").read_text())["stages"]
    print(f"`{args.config}`, root {root}, --threads {args.threads}: {len(stages) + 1} stages\n")
    print("| invocation | wall s | stages run | run files | run files identical to the first |")
    print("|---|---|---|---|---|")
    for invocation, seconds, ran, count, same in rows:
        print(f"| {invocation} | {seconds:.1f} | {ran} | {count} | {'yes' if same else 'NO'} |")
    print("\n| stage | wall s | peak memory MB |\n|---|---|---|")
    for stage in sorted(stages, key=lambda s: -s["wall_seconds"])[:10]:
        print(f"| {stage['stage']} | {stage['wall_seconds']:.1f} | {stage['peak_rss_mb']:.0f} |")


if __name__ == "__main__":
    main()
