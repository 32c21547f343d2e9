"""RM3's speed: clirplug's search with RM3 (the relevance model in numpy, ``clirplug.lucene.feedback``) against
Anserini's own ``SimpleSearcher`` with ``set_rm3``, on the same queries, with the same results checked.

Usage::

    .venv/bin/python benchmarks/rm3_speed.py --index ROOT/indexes/manclir-de \
        --queries ROOT/runs/manclir-de/translations/train.f0.desc.flat.jsonl [--first 200] [--hits 1000]

The queries are DT's translations (a ``translate`` stage's JSON lines). Each side searches every query once to warm
up, then again timed, one side after the other, Anserini's defaults (10 terms of the 10 best documents, weight 0.5).
Prints the median and p90 milliseconds a query of each side, their ratio, and how many queries' (docid, score)
lists differ (0 expected).
"""

import argparse
import json
import statistics
import time
from pathlib import Path


def timed(search, queries) -> tuple[list, list[float]]:
    results, seconds = [], []
    for query in queries:
        start = time.perf_counter()
        results.append(search(query))
        seconds.append(time.perf_counter() - start)
    return results, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--queries", required=True, help="a translate stage's JSON lines (id, query)")
    parser.add_argument("--first", type=int, default=200)
    parser.add_argument("--hits", type=int, default=1000)
    args = parser.parse_args()

    from clirplug.lucene.anserini import SimpleSearcher
    from clirplug.lucene.rm3 import Rm3
    from clirplug.lucene.search import Bm25Searcher

    lines = Path(args.queries).read_text(encoding="utf-8").splitlines()[: args.first]
    queries = [json.loads(line)["query"] for line in lines]
    rm3 = Rm3()
    ours, anserini = Bm25Searcher(args.index, 0.9, 0.4), SimpleSearcher(args.index, 0.9, 0.4, rm3=rm3)
    sides = {"clirplug": lambda query: ours.search(query, args.hits, rm3),
             "Anserini": lambda query: anserini.search(query, args.hits)}
    results, medians = {}, {}
    for name, search in sides.items():
        timed(search, queries)  # warm-up: the JIT, and the index's document vectors read once
        results[name], seconds = timed(search, queries)
        ms = sorted(1000 * s for s in seconds)
        medians[name] = statistics.median(ms)
        print(f"{name}: {len(ms)} queries, median {medians[name]:.1f} ms, p90 {ms[int(0.9 * (len(ms) - 1))]:.1f} ms")
    print(f"Anserini / clirplug (medians): {medians['Anserini'] / medians['clirplug']:.2f}")
    print(f"queries whose results differ: {sum(a != b for a, b in zip(results['clirplug'], results['Anserini']))}")
    ours.close()
    anserini.close()


if __name__ == "__main__":
    main()
