"""Decoder benchmark on manclir-de: decoding time, forest sizes and BLEU; prints markdown.

Usage::

    nice .venv/bin/python benchmarks/decoder.py --model DIR [--data ../shared/data/manclir-de]
        [--bleu-lines 1000] [--tune-lines 300] [--desc-sentences 200]

``DIR`` is a model folder (``docs/models.md``) holding ``grammar.flat.gz``,
``grammar.hiero.gz``, ``lm.arpa`` and ``lex.e_given_f.npz``. Missing tuned weights
``weights.<kind>`` are made with ``clirplug train weights`` (PRO) on ``--tune-lines`` pairs
of ``bitext.train`` (quality is never tuned on dev), taken from its end.

Figures:

* decoding time per sentence, end to end (chart, cube pruning with the LM, Viterbi
  derivation and its yield; preprocessing and model loading excluded), median and p90, for
  the dev topics' titles and for their desc sentences (``split_sentences``), with the pop
  limit; forest sizes (nodes, edges) of the same runs;
* BLEU (sacrebleu, tokenized lowercased text, ``tokenize="none"``) on the first
  ``--bleu-lines`` lines of ``bitext.dev``: each line is split into sentences, translated
  sentence by sentence and joined, for (a) word by word: each source token's most probable
  ``p(e|f)`` translation (``lex.e_given_f``), unknown tokens copied; (b) the flat grammar and
  (c) the hiero grammar, each with its tuned weights.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from clirplug.io.topics import read_topics  # noqa: E402
from clirplug.mt.features import read_weights  # noqa: E402
from clirplug.mt.lexicon import LexicalTable  # noqa: E402
from clirplug.mt.preprocess import preprocess, preprocessor, split_sentences  # noqa: E402
from clirplug.mt.translator import Translator  # noqa: E402
from clirplug.mt.tune import corpus_bleu  # noqa: E402


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ensure_weights(model: Path, kind: str, data: Path, lines: int) -> str:
    """Tune ``weights.<kind>`` with PRO on the end of bitext.train unless it exists."""
    weights = model / f"weights.{kind}"
    if weights.is_file():
        return "reused"
    src = (data / "bitext.train.de").read_text(encoding="utf-8").splitlines()
    tgt = (data / "bitext.train.en").read_text(encoding="utf-8").splitlines()
    tune_src, tune_tgt = model / "tune.de", model / "tune.en"
    tune_src.write_text("\n".join(src[-3 * lines:]) + "\n", encoding="utf-8")
    tune_tgt.write_text("\n".join(tgt[-3 * lines:]) + "\n", encoding="utf-8")
    started = time.time()
    subprocess.run([str(REPO / ".venv" / "bin" / "clirplug"), "train", "weights", "--model", str(model),
                    "--kind", kind, "--src", str(tune_src), "--tgt", str(tune_tgt), "--lines", str(lines)],
                   check=True)
    return f"tuned in {time.time() - started:.0f} s"


def time_decoding(translator: Translator, sentences):
    decoder = translator.decoder
    times, nodes, edges = [], [], []
    for tokens in sentences:
        started = time.perf_counter()
        forest = decoder.forest(tokens)
        best = forest.viterbi(decoder.weights)
        forest.derivation_yield(best)
        times.append(time.perf_counter() - started)
        nodes.append(forest.num_nodes)
        edges.append(forest.num_edges)
    return times, nodes, edges


def translate_lines(translate_sentence, lines):
    out = []
    for line in lines:
        words = []
        for sentence in split_sentences(line, "de"):
            words.extend(translate_sentence(sentence))
        out.append(words)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "manclir-de")
    parser.add_argument("--bleu-lines", type=int, default=1000)
    parser.add_argument("--tune-lines", type=int, default=300)
    parser.add_argument("--desc-sentences", type=int, default=200)
    parser.add_argument("--pop-limit", type=int, default=200)
    args = parser.parse_args()

    tuning = {kind: ensure_weights(args.model, kind, args.data, args.tune_lines) for kind in ("flat", "hiero")}
    topics = read_topics(args.data / "topics.dev.jsonl")
    hiero = Translator(args.model, "hiero", pop_limit=args.pop_limit, cache=False)
    started = time.time()
    hiero.decoder
    load_seconds = time.time() - started
    titles = [tokens for t in topics for tokens in hiero.sentences(t.title, split=False)]
    descs = [tokens for t in topics for tokens in hiero.sentences(t.desc)][: args.desc_sentences]

    rows = []
    for name, sentences in (("titles", titles), ("desc sentences", descs)):
        times, nodes, edges = time_decoding(hiero, sentences)
        lengths = [len(s) for s in sentences]
        rows.append(f"| hiero, {name} | {len(sentences)} | {statistics.median(lengths):.0f} | "
                    f"{statistics.median(times):.3f} | {percentile(times, 0.9):.3f} | {max(times):.2f} | "
                    f"{statistics.median(nodes):.0f} / {percentile(nodes, 0.9)} | "
                    f"{statistics.median(edges):.0f} / {percentile(edges, 0.9)} |")

    src_lines = (args.data / "bitext.dev.de").read_text(encoding="utf-8").splitlines()[: args.bleu_lines]
    ref_lines = (args.data / "bitext.dev.en").read_text(encoding="utf-8").splitlines()[: args.bleu_lines]
    references = [preprocess(line, "en") for line in ref_lines]
    tokenize = preprocessor("de", args.model)
    table = LexicalTable.load(args.model / "lex.e_given_f.npz")

    def word_by_word(sentence):
        out = []
        for token in tokenize(sentence):
            options = table.translations(token)
            out.append(max(options, key=lambda e: (options[e], e)) if options else token)
        return out

    bleu_rows = [f"| (a) word by word, top p(e\\|f) | {corpus_bleu(translate_lines(word_by_word, src_lines), references):.2f} | - |"]
    for kind, translator in (("flat", Translator(args.model, "flat", pop_limit=args.pop_limit, cache=False)),
                             ("hiero", hiero)):
        decoder = translator.decoder

        def one_best(sentence, decoder=decoder, translator=translator):
            tokens = translator.tokenize(sentence)
            return list(decoder.translate(tokens)[0].words) if tokens else []

        started = time.time()
        hypotheses = translate_lines(one_best, src_lines)
        seconds = time.time() - started
        label = "(b) flat grammar" if kind == "flat" else "(c) hiero grammar"
        bleu_rows.append(f"| {label}, tuned ({tuning[kind]}) | {corpus_bleu(hypotheses, references):.2f} | {seconds:.0f} s |")

    weights = {kind: read_weights(args.model / f"weights.{kind}") for kind in ("flat", "hiero")}
    print(f"Pop limit {args.pop_limit}, max span 10, LM order {hiero.decoder.lm.context + 1}; "
          f"{len(hiero.decoder.rules_by_src)} hiero source sides loaded in {load_seconds:.1f} s.\n")
    print("| queries | sentences | median words | median s | p90 s | max s | nodes median / p90 | edges median / p90 |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nBLEU on the first {len(src_lines)} lines of bitext.dev (sentence by sentence):\n")
    print("| system | BLEU | decoding time |")
    print("|---|---|---|")
    print("\n".join(bleu_rows))
    print("\nTuned weights:\n")
    for kind, w in weights.items():
        print(f"- {kind}: `{json.dumps({k: round(v, 3) for k, v in sorted(w.items())})}`")


if __name__ == "__main__":
    main()
