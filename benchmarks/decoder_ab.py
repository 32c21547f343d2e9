"""Decoder A/B: the current decoder against the one of a git revision, interleaved, on manclir-de.

Usage::

    nice .venv/bin/python benchmarks/decoder_ab.py --model models/manclir-de --ref a3bc831
        [--kinds flat,hiero] [--titles 249] [--desc-sentences 150] [--repeat 1]

The reference's ``clirplug/mt/{decoder,hypergraph,semiring}.py`` are read from git (``git show
REV:PATH``) into a temporary folder and imported under other names, so both decoders run in one
process on the same rules, LM and weights (``DIR/weights.KIND`` or the defaults). Sentence by
sentence they alternate which goes first, so both see the same machine load. Per sentence, as in
``benchmarks/decoder.py``: the forest, its Viterbi derivation and yield, timed in process CPU time
(with ``--repeat N``: the fastest of N runs of each). Sentences: the first ``--titles`` dev titles
and the first ``--desc-sentences`` sentences of the dev descs, as ``benchmarks/decoder.py`` takes
them; only the rules usable on them are loaded.

Outputs must be equal: the forest (labels, edges, templates, alignments, rules and feature
values, floats compared exactly) and the Viterbi derivation's words and score. The script stops
with exit status 1 at the first difference. Prints a markdown table: CPU seconds per sentence
(median / p90) of each decoder, the median of the per-sentence ratios and the ratio of the totals.
"""

import argparse
import hashlib
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from decoder import (  # benchmarks/decoder.py: the same sentences, options and p90
    add_sample_options,
    dev_sentences,
    percentile,
)

from clirplug.io.topics import read_topics
from clirplug.mt import decoder as current
from clirplug.mt.features import DEFAULT_WEIGHTS, read_weights
from clirplug.mt.grammar import SourcePhrases, read_grammar
from clirplug.mt.lm import LanguageModel
from clirplug.mt.preprocess import preprocessor

REPO = Path(__file__).resolve().parents[1]


# module -> (file in the repository, the imports of it rewritten in the reference copies)
REFERENCE_FILES = {
    "_ref_semiring": ("clirplug/mt/semiring.py", "from clirplug.mt.semiring import"),
    "_ref_hypergraph": ("clirplug/mt/hypergraph.py", "from clirplug.mt.hypergraph import"),
    "_ref_decoder": ("clirplug/mt/decoder.py", "from clirplug.mt.decoder import"),
}


def reference_decoder(revision: str, folder: Path):
    """The decoder module of ``revision``, with its own hypergraph and semiring modules."""
    sources = {name: subprocess.run(["git", "-C", str(REPO), "show", f"{revision}:{path}"], check=True,
                                    capture_output=True, text=True).stdout
               for name, (path, _) in REFERENCE_FILES.items()}
    sys.path.insert(0, str(folder))
    for name, text in sources.items():
        for other, (_, statement) in REFERENCE_FILES.items():
            text = text.replace(statement, f"from {other} import")
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    for name in REFERENCE_FILES:  # dependencies first
        spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
        module = sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["_ref_decoder"]


def forest_digest(forest) -> str:
    """SHA-256 of everything a forest holds (floats by ``float.hex``)."""
    features = forest.features.tocsr()
    parts = [forest.labels, forest.heads.tolist(), forest.tails, forest.templates, forest.alignments,
             [repr(rule) for rule in forest.rules], forest.feature_names, features.indptr.tolist(),
             features.indices.tolist(), [v.hex() for v in features.data.tolist()], forest.levels.tolist()]
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def decode(decoder, tokens):
    """CPU seconds of forest + Viterbi + yield, and what is compared."""
    started = time.process_time()
    forest = decoder.forest(tokens)
    best = forest.viterbi(decoder.weights)
    words, _ = forest.derivation_yield(best)
    seconds = time.process_time() - started
    return seconds, (forest_digest(forest), words, best.score.hex())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_sample_options(parser)
    parser.add_argument("--ref", required=True, help="git revision of the reference decoder")
    parser.add_argument("--repeat", type=int, default=1, help="time each sentence N times, keep the fastest")
    args = parser.parse_args()

    tokenize = preprocessor("de", args.model)
    topics = read_topics(args.data / "topics.dev.jsonl")
    sets = dict(zip(("titles", "desc sentences"), dev_sentences(tokenize, topics, args.titles, args.desc_sentences)))
    lm = LanguageModel(args.model / "lm.arpa")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        reference = reference_decoder(args.ref, Path(folder))
        for kind in args.kinds.split(","):
            weights_path = args.model / f"weights.{kind}"
            weights = {**DEFAULT_WEIGHTS, **(read_weights(weights_path) if weights_path.is_file() else {})}
            restriction = SourcePhrases(sets["titles"] + sets["desc sentences"])
            rules = read_grammar(args.model / f"grammar.{kind}.gz", restriction)
            decoders = {"ref": reference.Decoder(rules, lm, weights, pop_limit=args.pop_limit),
                        "new": current.Decoder(rules, lm, weights, pop_limit=args.pop_limit)}
            for name, sentences in sets.items():
                times = {"ref": [], "new": []}
                for k, tokens in enumerate(sentences):
                    best, outputs = {"ref": float("inf"), "new": float("inf")}, {}
                    for _ in range(args.repeat):
                        for which in ("ref", "new") if k % 2 == 0 else ("new", "ref"):
                            seconds, outputs[which] = decode(decoders[which], tokens)
                            best[which] = min(best[which], seconds)
                    if outputs["ref"] != outputs["new"]:
                        sys.exit(f"{kind}, {name}: the outputs differ on {' '.join(tokens)!r}")
                    for which in times:
                        times[which].append(best[which])
                ratios = [r / n for r, n in zip(times["ref"], times["new"])]
                rows.append(f"| {kind}, {name} | {len(sentences)} | "
                            f"{statistics.median(times['ref']):.3f} / {percentile(times['ref'], 0.9):.3f} | "
                            f"{statistics.median(times['new']):.3f} / {percentile(times['new'], 0.9):.3f} | "
                            f"{statistics.median(ratios):.2f} | {sum(times['ref']) / sum(times['new']):.2f} | "
                            "identical |")
                print(rows[-1], file=sys.stderr)
    print(f"Reference {args.ref}, pop limit {args.pop_limit}, fastest of {args.repeat} run(s) per sentence.\n")
    print("| queries | sentences | ref CPU s median / p90 | new CPU s median / p90 | speed-up, median | "
          "speed-up, total | outputs |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
