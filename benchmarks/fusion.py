"""Fusion of run pairs on manclir-de (the boosting paper's Table 3); prints markdown.

Usage: ``nice .venv/bin/python benchmarks/fusion.py --field title --pair dt-flat boost2g --pair psq-best boost2g
[--runs runs] [--methods borda rrf combmnz]``

Each ``--pair A B`` fuses ``runs/manclir-de.dev.A.<field>.trec`` and ``...B...`` by weighted
Borda count (Sokolov et al. 2013, Section 4) with kappa chosen by a grid (step 0.05) on the
train split: on ``runs/manclir-de.train.X.<field>.trec``, except for a run with a held-out
tuning run (a boosting run's), which covers only the train topics held out of its
training triples (``runs/manclir-de.train-heldout.X.<field>.trec``, qrels beside it, written by
``benchmarks/boosting.py --heldout-run``): kappa is then tuned on those topics only. The kappa
curve is written beside the fused dev run (``.kappa.tsv``/``.kappa.png``). Reported on dev:
MAP of each input and of the fusion, with paired randomization p-values of the fusion against
each input; RRF and CombMNZ (unweighted) for comparison.
"""

import argparse
from pathlib import Path

from clirplug.eval.measures import ALL, evaluate
from clirplug.eval.significance import randomization_test
from clirplug.fusion import fuse
from clirplug.fusion.tune import (
    best_kappa,
    kappa_curve,
    kappa_grid,
    plot_curve,
    write_curve,
)
from clirplug.io.qrels import read_qrels
from clirplug.io.runs import read_run, write_run

REPO = Path(__file__).resolve().parents[1]


def tuning_run(runs, name, field):
    """The train-split run of ``name`` and the qrels file restricting the topics it may be tuned on: its held-out
    run where there is one (a boosting run's), else its train run."""
    held_out = runs / f"manclir-de.train-heldout.{name}.{field}.trec"
    if held_out.is_file():
        return held_out, Path(f"{held_out}.qrels")
    return runs / f"manclir-de.train.{name}.{field}.trec", None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "manclir-de"))
    parser.add_argument("--runs", default=str(REPO / "runs"))
    parser.add_argument("--field", default="title")
    parser.add_argument("--pair", nargs=2, action="append", required=True, metavar=("A", "B"))
    parser.add_argument("--methods", nargs="+", default=["borda", "rrf", "combmnz"])
    args = parser.parse_args()
    runs, data = Path(args.runs), Path(args.data)
    dev_qrels, train_qrels = read_qrels(data / "qrels.dev.txt"), read_qrels(data / "qrels.train.txt")
    print(f"| {args.field}: A + B | tuned on | kappa | tuning MAP (A, B, fused) | dev MAP A | dev MAP B | method "
          "| dev MAP fused | p vs A | p vs B |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for a, b in args.pair:
        dev = [read_run(runs / f"manclir-de.dev.{name}.{args.field}.trec") for name in (a, b)]
        tuning, qrels = [], train_qrels
        for name in (a, b):
            path, restrict = tuning_run(runs, name, args.field)
            tuning.append(read_run(path))
            if restrict is not None:
                qrels = read_qrels(restrict)
        topics = set(qrels["qid"])
        curve = kappa_curve(tuning, qrels, "borda", kappa_grid(0.05), 1000, "MAP")
        kappa = best_kappa(curve)
        stem = runs / f"manclir-de.dev.fuse-{a}+{b}.{args.field}"
        write_curve(curve, f"{stem}.kappa.tsv")
        plot_curve(curve, f"{stem}.kappa.png", labels=(a, b), title=f"{args.field}: {a} + {b}, tuned on train")
        ends = dict(zip(curve["kappa"], curve["MAP"]))
        fused_runs = {"borda": fuse("borda", dev, weights=[kappa, 1 - kappa])}
        write_run(fused_runs["borda"], f"{stem}.trec", tag=f"fuse-{a}+{b}")
        for method in args.methods:
            if method != "borda":
                fused_runs[method] = fuse(method, dev)
        scores = evaluate(dev_qrels, {"A": dev[0], "B": dev[1], **fused_runs}, ["MAP"], per_query=True)
        per_query = scores[scores["qid"] != ALL].pivot_table(index="qid", columns="run", values="value", sort=True)
        mean = per_query.mean()
        tuned_on = f"{len(topics)} train topics" + (" (held out of boosting)" if len(topics) < 790 else "")
        for method in fused_runs:
            p_a = randomization_test(per_query[method].to_numpy(), per_query["A"].to_numpy())
            p_b = randomization_test(per_query[method].to_numpy(), per_query["B"].to_numpy())
            head = (f"| {a} + {b} | {tuned_on} | {kappa:g} | {ends[1.0]:.4f}, {ends[0.0]:.4f}, {curve['MAP'].max():.4f}"
                    f" | {mean['A']:.4f} | {mean['B']:.4f}") if method == "borda" else "| | | | | |"
            label = "weighted Borda" if method == "borda" else f"{method} (unweighted)"
            print(f"{head} | {label} | {mean[method]:.4f} | {p_a:.4f} | {p_b:.4f} |")


if __name__ == "__main__":
    main()
