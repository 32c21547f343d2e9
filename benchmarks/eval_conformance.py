"""Conformance of ``clirplug.eval`` with trec_eval's own expected outputs, and evaluation speed.

Prints a markdown block for docs/benchmarks.md ("Conformance with trec_eval"):
for each measure, the largest difference from trec_eval's printed value over the 3 queries
and the aggregate, and whether every value agrees once rounded to trec_eval's 4 decimals;
then the time to evaluate a 249-query x 1000-document run and to run the significance test.

Usage: python benchmarks/eval_conformance.py [../shared/conformance/trec_eval] [../shared/data/manclir-de]
"""

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from clirplug.eval.measures import DEFAULT_MEASURES, evaluate
from clirplug.eval.significance import randomization_test
from clirplug.io.qrels import read_qrels
from clirplug.io.runs import read_run

REPO = Path(__file__).resolve().parents[1]
CHECKS = [  # (trec_eval output file, trec_eval measure, clirplug measure)
    *[("out.test.aq", name, ours) for name, ours in (
        ("map", "MAP"), ("P_5", "P@5"), ("P_10", "P@10"), ("P_100", "P@100"), ("recip_rank", "RR"),
        ("Rprec", "Rprec"), ("bpref", "Bpref"), ("num_rel_ret", "NumRelRet"))],
    ("out.test.meas_params", "ndcg_cut_10", "nDCG@10"),
]


def conformance(folder):
    qrels, run = read_qrels(folder / "qrels.test"), read_run(folder / "results.test")
    frame = evaluate(qrels, {"test": run}, [ours for _, _, ours in CHECKS], per_query=True)
    ours = {(m, q): v for m, q, v in zip(frame["measure"], frame["qid"], frame["value"])}
    print("| trec_eval measure | clirplug measure | values (3 queries + all) | max abs difference | equal at 4 decimals |")
    print("|---|---|---|---|---|")
    for output, name, mine in CHECKS:
        expected = {}
        for line in (folder / output).read_text().splitlines():
            measure, qid, value = line.split()
            if measure == name:
                expected[qid] = value
        differences = [abs(ours[mine, qid] - float(value)) for qid, value in expected.items()]
        same = all(f"{ours[mine, qid]:.4f}" == f"{float(value):.4f}" for qid, value in expected.items())
        print(f"| {name} | {mine} | {len(expected)} | {max(differences):.2e} | {'yes' if same else 'NO'} |")


def speed(collection):
    qrels = read_qrels(collection / "qrels.dev.txt")
    corpus = [line.split('"id": "', 1)[1].split('"', 1)[0] for line in open(collection / "corpus.jsonl", encoding="utf-8")]
    rng = np.random.default_rng(0)
    qids = sorted(set(qrels["qid"]))
    rows = []
    for qid in qids:  # a synthetic 1000-deep run: judged documents mixed into random ones
        docs = list(dict.fromkeys(list(qrels.loc[qrels["qid"] == qid, "docid"]) + list(rng.choice(corpus, 1100))))[:1000]
        rows.append(pd.DataFrame({"qid": qid, "docid": docs, "score": rng.random(len(docs))}))
    runs = {"a": pd.concat(rows), "b": pd.concat(rows).assign(score=lambda f: f["score"] + rng.normal(0, 0.1, len(f)))}
    start = time.perf_counter()
    frame = evaluate(qrels, runs, DEFAULT_MEASURES, per_query=True)
    evaluated = time.perf_counter() - start
    table = frame[frame["qid"] != "all"].pivot_table(index="qid", columns=["run", "measure"], values="value")
    start = time.perf_counter()
    randomization_test(table["b"].to_numpy(), table["a"].to_numpy())
    tested = time.perf_counter() - start
    print(f"\n| task | time |\n|---|---|\n| evaluate 2 runs x {len(qids)} queries x 1000 docs, "
          f"{' '.join(DEFAULT_MEASURES)} | {evaluated:.2f} s |\n"
          f"| randomization test, {len(qids)} queries x {len(DEFAULT_MEASURES)} measures x 10,000 permutations | {tested:.2f} s |")


if __name__ == "__main__":
    shared = REPO.parent / "shared"
    conformance(Path(sys.argv[1]) if len(sys.argv) > 1 else shared / "conformance" / "trec_eval")
    speed(Path(sys.argv[2]) if len(sys.argv) > 2 else shared / "data" / "manclir-de")
