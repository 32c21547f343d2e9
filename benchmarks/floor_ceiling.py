"""The real-data floor and ceiling on manclir-de: BM25 with untranslated German queries,
and with the English mates' titles (the relevance-2 document's title) as queries.

Usage: .venv/bin/python benchmarks/floor_ceiling.py [--collection ../shared/data/manclir-de] [--split dev]
Builds indexes/manclir-de if absent, writes runs/manclir-de.<split>.<run>.trec, prints a markdown table.
"""

import argparse
from pathlib import Path

from clirplug.eval.measures import evaluate
from clirplug.io.qrels import read_qrels
from clirplug.io.runs import write_run
from clirplug.io.topics import read_topics
from clirplug.lucene.index import build_index
from clirplug.lucene.search import Bm25Searcher
from clirplug.monolingual import floor_and_ceiling_queries

MEASURES = ["MAP", "nDCG@10", "R@100", "PRES@100"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", default="../shared/data/manclir-de")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--index", default="indexes/manclir-de")
    args = parser.parse_args()
    collection = Path(args.collection)
    if not Path(args.index).exists():
        build_index(collection / "corpus.jsonl", args.index, language="en")
    topics = read_topics(collection / f"topics.{args.split}.jsonl")
    qrels = read_qrels(collection / f"qrels.{args.split}.txt")
    searcher = Bm25Searcher(args.index)
    queries = floor_and_ceiling_queries(topics, qrels, collection / "corpus.jsonl")
    runs = {}
    for name, texts in queries.items():
        runs[name] = searcher.search_all(texts, hits=1000)
        write_run(runs[name], f"runs/manclir-de.{args.split}.{name}.trec", tag=name)
    table = evaluate(qrels, runs, MEASURES).pivot(index="run", columns="measure", values="value")[MEASURES]
    print(f"manclir-de {args.split}: {len(topics)} topics, BM25 k1=0.9 b=0.4, 1000 hits\n")
    print("| run | " + " | ".join(MEASURES) + " |")
    print("|---|" + "---|" * len(MEASURES))
    for name, row in table.iterrows():
        print(f"| {name} | " + " | ".join(f"{row[m]:.4f}" for m in MEASURES) + " |")


if __name__ == "__main__":
    main()
