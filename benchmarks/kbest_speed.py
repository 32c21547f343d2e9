"""k-best lists of hiero forests: the compiled search (``clirplug.mt.kbest_kernel``) against the Python reference.

Usage::

    .venv/bin/python benchmarks/kbest_speed.py --model ROOT/models/manclir-de [--topics 30] [--field desc]

Decodes the forests of the first ``--topics`` dev topics' sentences once (the model's hiero grammar, LM and
weights), then reads from each forest, by the Python search and by the compiled one in turn (which goes first
alternates by sentence): the ``n`` best derivations (``kbest``) and the best derivation of each of the ``n`` best
distinct yields among the ``20 n`` best (``unique_kbest``, PRO's and PSQ's lists), for n = 10 and 100. Prints CPU
milliseconds per sentence (median, p90, total) and the ratio of the totals; every list of derivations (trees and
scores, to the bit) must be the same from both, or the script fails.
"""

import argparse
import statistics
import time
from pathlib import Path

from clirplug.io.topics import read_topics
from clirplug.mt import kbest
from clirplug.mt.decoder import UNIQUE_FACTOR
from clirplug.mt.translator import Translator

REPO = Path(__file__).resolve().parents[1]


def _key(derivation):
    return derivation.edge, derivation.score.hex(), tuple(map(_key, derivation.children))


def _timed(function):
    start = time.process_time()
    result = function()
    return time.process_time() - start, [_key(d) for d in result]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model folder with grammar.hiero.gz, lm and weights.hiero")
    parser.add_argument("--topics", type=int, default=30)
    parser.add_argument("--field", default="desc", choices=("title", "desc"))
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "manclir-de"))
    args = parser.parse_args()
    topics = read_topics(Path(args.data) / "topics.dev.jsonl")[: args.topics]
    translator = Translator(args.model, kind="hiero", src_lang="de", cache=False)
    translator.restrict_topics(topics, args.field)
    sentences = [s for topic in topics for s in translator.topic_sentences(topic, args.field)]
    forests = [translator.decoder.forest(tokens) for tokens in sentences]
    weights = translator.weights
    compiled = kbest._kernel
    kbest.unique_kbest(forests[0], weights, 10, 10 * UNIQUE_FACTOR)  # compiled code loaded before timing
    print(f"{len(forests)} forests of {args.field} sentences, {sum(f.num_edges for f in forests):,} edges\n")
    print("| list | Python ms median / p90 / total | compiled ms median / p90 / total | total ratio |")
    print("|---|---|---|---|")
    for name, search in (("kbest", lambda f, n: kbest.kbest(f, weights, n)),
                         ("unique_kbest", lambda f, n: kbest.unique_kbest(f, weights, n, n * UNIQUE_FACTOR))):
        for n in (10, 100):
            seconds = {"python": [], "compiled": []}
            for i, forest in enumerate(forests):
                found = {}
                for which in (("python", "compiled") if i % 2 == 0 else ("compiled", "python")):
                    kbest._kernel = compiled if which == "compiled" else (lambda: None)
                    spent, found[which] = _timed(lambda: search(forest, n))
                    seconds[which].append(spent)
                kbest._kernel = compiled
                if found["python"] != found["compiled"]:
                    raise SystemExit(f"sentence {i}: the {name} {n}-best lists differ")
            cells = []
            for which in ("python", "compiled"):
                values = sorted(seconds[which])
                cells.append(f"{1000 * statistics.median(values):.2f} / {1000 * values[int(0.9 * (len(values) - 1))]:.2f}"
                             f" / {1000 * sum(values):.0f}")
            print(f"| {name} {n} | {cells[0]} | {cells[1]} | {sum(seconds['python']) / sum(seconds['compiled']):.2f} |")


if __name__ == "__main__":
    main()
