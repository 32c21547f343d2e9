"""Dense retrieval through a Lucene HNSW index against exact search: recall and median query latency.

Usage::

    .venv/bin/python benchmarks/dense_lucene.py --index INDEX --corpus CORPUS --topics TOPICS.jsonl
        [--fields title desc] [--words 48] [--hnsw 16:100:1000 ...]

The documents' e5 vectors are those of ``clirplug search --method dense`` (cached beside ``INDEX``, embedded
unless present). Each topic field is embedded once as e5 queries; each query vector is searched exactly
(:func:`clirplug.dense.cosines` over every document, the oracle) and through the HNSW index of every
``--hnsw M:EFC:EFSEARCH`` (built unless present; build seconds reported when built here). Prints, per
configuration, recall@100 (100 hits asked) and recall@1000 (1000 hits asked) against the exact top 100
and 1000 over all queries of all fields, the median and p90 milliseconds of a 1000-hit search (the query
already embedded; HNSW's after a warm-up pass, as Java compiles its search on the first calls), and the
index's size.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from clirplug import dense
from clirplug.io.topics import read_topics, topic_field
from clirplug.lucene.vectors import hnsw_index_name


def configuration(text: str) -> tuple[int, int, int]:
    m, efc, ef = (int(part) for part in text.split(":"))
    return m, efc, ef


def timed_searches(searcher, vectors, hits: int) -> tuple[list, list[float]]:
    """The docids of each vector's top ``hits`` and each search's milliseconds."""
    ranked, millis = [], []
    for vector in vectors:
        start = time.perf_counter()
        result = searcher.search_vector(vector, hits)
        millis.append(1000 * (time.perf_counter() - start))
        ranked.append([docid for docid, _ in result])
    return ranked, millis


def recall(found, exact, depth: int) -> float:
    """Of every query's exact top ``depth``, the share in ``found``'s top ``depth`` (micro-averaged)."""
    hit = sum(len(set(f[:depth]) & set(e[:depth])) for f, e in zip(found, exact))
    return hit / sum(len(e[:depth]) for e in exact)


def p90(values) -> float:
    return float(np.percentile(values, 90))


def folder_size(path: Path) -> int:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", required=True, help="the Lucene index beside which the vectors are cached")
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--topics", required=True)
    parser.add_argument("--fields", nargs="+", default=["title", "desc"])
    parser.add_argument("--words", type=int, default=dense.DEFAULT_WORDS)
    parser.add_argument("--hnsw", type=configuration, nargs="+", default=[(16, 100, 1000)], metavar="M:EFC:EF")
    args = parser.parse_args()

    model = dense.load_model()
    folder = dense.embed_corpus(args.corpus, dense.cache_folder(args.index, args.corpus, args.words), args.words,
                                model)
    topics = read_topics(args.topics)
    texts = [topic_field(topic, field) for field in args.fields for topic in topics]
    vectors = dense.embed_queries(model, [text for text in texts if text.strip()])
    exact = dense.DenseSearcher(folder, model)
    print(f"{len(exact.docids)} documents, {len(vectors)} queries ({', '.join(args.fields)} of {args.topics}); "
          f"vectors: {folder}", file=sys.stderr)
    exact_100, _ = timed_searches(exact, vectors, 100)
    exact_1000, exact_ms = timed_searches(exact, vectors, 1000)
    print("| search | M | efConstruction | efSearch | recall@100 | recall@1000 | median ms | p90 ms | build s | "
          "index MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| exact | | | | 1 | 1 | {statistics.median(exact_ms):.2f} | {p90(exact_ms):.2f} | | "
          f"{(folder / dense.EMBEDDINGS).stat().st_size / 2**20:.1f} |")
    for m, efc, ef in args.hnsw:
        index = folder / hnsw_index_name(m, efc)
        built = index.is_dir()
        start = time.perf_counter()
        searcher = dense.DenseSearcher(folder, model, search="hnsw", m=m, ef_construction=efc, ef_search=ef,
                                       progress=True)
        build = "" if built else f"{time.perf_counter() - start:.1f}"
        timed_searches(searcher, vectors, 1000)  # a warm-up: Java compiles the search on its first calls
        found_100, _ = timed_searches(searcher, vectors, 100)
        found_1000, millis = timed_searches(searcher, vectors, 1000)
        print(f"| hnsw | {m} | {efc} | {ef} | {recall(found_100, exact_100, 100):.4f} | "
              f"{recall(found_1000, exact_1000, 1000):.4f} | {statistics.median(millis):.2f} | {p90(millis):.2f} | "
              f"{build} | {folder_size(index) / 2**20:.1f} |", flush=True)
        searcher.vector_index.close()


if __name__ == "__main__":
    main()
