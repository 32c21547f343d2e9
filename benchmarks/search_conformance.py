"""`clirplug search` against Anserini's own SimpleSearcher on every manclir-de topic of a split.

Usage: .venv/bin/python benchmarks/search_conformance.py [--index indexes/manclir-de] [--split dev]
Prints, per query field, how many queries and (query, rank) positions agree (docid, and score to
4 decimals), and the median time per query of both searchers.
"""

import argparse
import statistics
import time
from pathlib import Path

from clirplug.io.topics import read_topics
from clirplug.lucene.anserini import SimpleSearcher
from clirplug.lucene.search import Bm25Searcher


def timed(function, queries, hits):
    results, seconds = {}, []
    for qid, text in queries.items():
        start = time.perf_counter()
        results[qid] = function(text, hits)
        seconds.append(time.perf_counter() - start)
    return results, statistics.median(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", default="../shared/data/manclir-de")
    parser.add_argument("--index", default="indexes/manclir-de")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--hits", type=int, default=1000)
    args = parser.parse_args()
    topics = read_topics(Path(args.collection) / f"topics.{args.split}.jsonl")
    ours = Bm25Searcher(args.index)
    anserini = SimpleSearcher(args.index)

    print("| field | queries equal | positions equal | median s/query clirplug | median s/query SimpleSearcher |")
    print("|---|---|---|---|---|")
    for field in ("title", "desc"):
        queries = {t.id: getattr(t, field) for t in topics}
        mine, t_mine = timed(ours.search, queries, args.hits)
        theirs, t_theirs = timed(anserini.search, queries, args.hits)
        equal_queries = equal_positions = positions = 0
        for qid in queries:
            a = [(d, round(s, 4)) for d, s in mine[qid]]
            b = [(d, round(s, 4)) for d, s in theirs[qid]]
            equal_queries += a == b
            positions += max(len(a), len(b))
            equal_positions += sum(x == y for x, y in zip(a, b))
        print(f"| {field} | {equal_queries}/{len(queries)} | {equal_positions}/{positions} | {t_mine:.4f} | {t_theirs:.4f} |")


if __name__ == "__main__":
    main()
