"""Decoder benchmark on manclir-de: decoding time, forest sizes and BLEU; prints markdown.

Usage::

    nice .venv/bin/python benchmarks/decoder.py --model DIR [--data ../shared/data/manclir-de]
        [--bleu-lines 500] [--tune-lines 150] [--tune-iterations 5] [--desc-sentences 200]

``DIR`` is a model folder (``docs/models.md``) holding ``grammar.flat.gz``,
``grammar.hiero.gz``, ``lm.arpa`` and ``lex.e_given_f.npz``. Missing tuned weights
``weights.<kind>`` are made with ``clirplug train weights`` (PRO, 50-best lists) on
``--tune-lines`` pairs of ``bitext.train`` (quality is never tuned on dev) taken from its end
(held out when the grammars were extracted from the first lines only).

Figures:

* decoding time per sentence, end to end (chart, cube pruning with the LM, Viterbi
  derivation and its yield; preprocessing and model loading excluded), median and p90, as
  process CPU time (the machine is shared, so wall time also counts other jobs) and wall time, for
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
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from clirplug.io.topics import read_topics
from clirplug.mt.features import read_weights
from clirplug.mt.lexicon import LexicalTable
from clirplug.mt.preprocess import preprocess, preprocessor, split_sentences
from clirplug.mt.translator import Translator
from clirplug.mt.tune import corpus_bleu


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ensure_weights(model: Path, kind: str, data: Path, lines: int, iterations: int) -> str:
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
                    "--kind", kind, "--src", str(tune_src), "--tgt", str(tune_tgt), "--lines", str(lines),
                    "--iterations", str(iterations), "--nbest", "50"],
                   check=True)
    return f"tuned in {time.time() - started:.0f} s"


def time_decoding(translator: Translator, sentences):
    decoder = translator.decoder
    cpu, wall, nodes, edges = [], [], [], []
    for tokens in sentences:
        started, started_cpu = time.perf_counter(), time.process_time()
        forest = decoder.forest(tokens)
        best = forest.viterbi(decoder.weights)
        forest.derivation_yield(best)
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
        nodes.append(forest.num_nodes)
        edges.append(forest.num_edges)
    return cpu, wall, nodes, edges


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
    parser.add_argument("--bleu-lines", type=int, default=500)
    parser.add_argument("--tune-lines", type=int, default=150)
    parser.add_argument("--tune-iterations", type=int, default=5)
    parser.add_argument("--desc-sentences", type=int, default=200)
    parser.add_argument("--pop-limit", type=int, default=200)
    parser.add_argument("--systems", default="wbw,flat,hiero", help="BLEU rows to run (default: wbw,flat,hiero)")
    parser.add_argument("--no-timing", action="store_true", help="skip the timing table")
    parser.add_argument("--untuned", action="store_true", help="never tune: use weights.KIND if present, else defaults")
    args = parser.parse_args()
    systems = args.systems.split(",")
    kinds = [kind for kind in ("flat", "hiero") if kind in systems or (kind == "hiero" and not args.no_timing)]

    tuning = {kind: "untuned" if args.untuned else ensure_weights(args.model, kind, args.data, args.tune_lines,
                                                                  args.tune_iterations)
              for kind in kinds}
    topics = read_topics(args.data / "topics.dev.jsonl")
    translators, load_seconds, sources = {}, {}, {}
    for kind in kinds:
        started = time.time()
        translators[kind] = Translator(args.model, kind, pop_limit=args.pop_limit, cache=False)
        sources[kind] = len(translators[kind].decoder.rules_by_src)
        load_seconds[kind] = time.time() - started

    rows = []
    for name, sentences in () if args.no_timing else (("titles", "title"), ("desc sentences", "desc")):
        hiero = translators["hiero"]
        sentences = [tokens for t in topics for tokens in hiero.sentences(getattr(t, sentences), split=sentences == "desc")]
        sentences = sentences[: args.desc_sentences] if name != "titles" else sentences
        cpu, wall, nodes, edges = time_decoding(hiero, sentences)
        lengths = [len(s) for s in sentences]
        rows.append(f"| hiero, {name} | {len(sentences)} | {statistics.median(lengths):.0f} | "
                    f"{statistics.median(cpu):.3f} / {percentile(cpu, 0.9):.3f} | "
                    f"{statistics.median(wall):.3f} / {percentile(wall, 0.9):.3f} | "
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

    bleu_rows = []
    if "wbw" in systems:
        bleu = corpus_bleu(translate_lines(word_by_word, src_lines), references)
        bleu_rows.append(f"| (a) word by word, top p(e\\|f) | {bleu:.2f} | - |")
    for kind in [k for k in ("flat", "hiero") if k in systems]:
        translator = translators[kind]
        decoder = translator.decoder

        def one_best(sentence, decoder=decoder, translator=translator):
            tokens = translator.tokenize(sentence)
            return list(decoder.translate(tokens)[0].words) if tokens else []

        started = time.time()
        hypotheses = translate_lines(one_best, src_lines)
        seconds = time.time() - started
        label = "(b) flat grammar" if kind == "flat" else "(c) hiero grammar"
        bleu_rows.append(f"| {label}, tuned ({tuning[kind]}) | {corpus_bleu(hypotheses, references):.2f} | {seconds:.0f} s |")

    weights = {kind: read_weights(args.model / f"weights.{kind}") for kind in kinds
               if (args.model / f"weights.{kind}").is_file()}
    for kind, translator in translators.items():
        print(f"- {kind}: {sources[kind]} source sides, loaded (with the LM of order "
              f"{translator.decoder.lm.context + 1}) in {load_seconds[kind]:.0f} s")
    print(f"\nPop limit {args.pop_limit}, max span 10; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.\n")
    print("| queries | sentences | median words | CPU s median / p90 | wall s median / p90 | "
          "nodes median / p90 | edges median / p90 |")
    print("|---|---|---|---|---|---|---|")
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
