"""BM25 over pages against BM25 over their passages scored as pages by the best passage (MaxP).

Usage::

    nice -n 10 .venv/bin/python benchmarks/maxp.py --pages indexes/manclir-large \\
        --passages indexes/manclir-large.passages-100 --corpus ../shared/data/manclir-large/corpus-large.jsonl.gz \\
        --topics ../shared/data/manclir-de/topics.dev.jsonl --qrels ../shared/data/manclir-de/qrels.dev.txt

Two query sets: the topics' (German) titles, untranslated (the experiment's floor), and the English title of each
topic's mate page (its ceiling). The pages are searched ``--hits`` deep; the passages ``--passage-hits`` deep and
the ``--hits`` best pages kept (:func:`clirplug.passages.max_passage`). Prints a markdown table of MAP, nDCG,
R@1000 and the median search latency per query (MaxP included).
"""

import argparse
import statistics
import time

import pandas as pd

from clirplug.eval.measures import evaluate
from clirplug.io.qrels import read_qrels
from clirplug.io.topics import read_topics, topic_field
from clirplug.lucene.search import Bm25Searcher
from clirplug.monolingual import mate_title_queries
from clirplug.passages import max_passage

MEASURES = ["MAP", "nDCG", "R@1000"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("pages", "passages", "corpus", "topics", "qrels"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--hits", type=int, default=1000)
    parser.add_argument("--passage-hits", type=int, default=10000)
    parser.add_argument("--k1", type=float, default=0.9)
    parser.add_argument("--b", type=float, default=0.4)
    args = parser.parse_args()
    qrels = read_qrels(args.qrels)
    query_sets = {"German titles (floor)": {t.id: topic_field(t, "title") for t in read_topics(args.topics)},
                  "English mate titles (ceiling)": mate_title_queries(qrels, args.corpus)}
    print("| queries | searched | MAP | nDCG | R@1000 | median ms |\n|---|---|---|---|---|---|")
    for label, queries in query_sets.items():
        for searched, index, hits in (("pages", args.pages, args.hits), ("passages, MaxP", args.passages, args.passage_hits)):
            searcher = Bm25Searcher(index, args.k1, args.b)
            searcher.search(next(iter(queries.values())), 10)  # warm-up
            latencies, parts = {}, []
            for qid, text in queries.items():
                start = time.perf_counter()
                run = searcher.search_all({qid: text}, hits, progress=False)
                parts.append(max_passage(run, args.hits) if index == args.passages else run)
                latencies[qid] = time.perf_counter() - start
            run = pd.concat(parts, ignore_index=True)
            values = evaluate(qrels[qrels["qid"].isin(list(queries))], {"run": run}, MEASURES)
            value = dict(zip(values["measure"], values["value"]))
            print(f"| {label} | {searched} | " + " | ".join(f"{value[m]:.4f}" for m in MEASURES)
                  + f" | {1000 * statistics.median(latencies.values()):.1f} |", flush=True)
            searcher.close()


if __name__ == "__main__":
    main()
