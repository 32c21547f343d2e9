"""Decoder benchmark on manclir-de: decoding time, forest sizes and BLEU; prints markdown.

Usage::

    nice .venv/bin/python benchmarks/decoder.py --model models/manclir-de [--kinds flat,hiero]
        [--weights-flat F] [--weights-hiero F] [--titles 249] [--desc-sentences 150]
        [--bleu-lines 300] [--systems wbw,flat,hiero] [--no-timing] [--profile PREFIX]

``--model`` is a model folder (``docs/models.md``) with ``grammar.flat.gz``, ``grammar.hiero.gz``,
``lm.arpa`` and ``lex.e_given_f.npz``; ``--grammars DIR`` reads the grammars from another folder
(e.g. copies already filtered to the benchmark's sentences). Only the rules whose source phrases
occur in the benchmark's sentences are loaded (grammar and LM loading are reported, not timed per
sentence). Weights: ``--weights-KIND`` or else ``DIR/weights.KIND`` or else the defaults. Nothing
is tuned here (``clirplug train weights`` does that, on train lines only).

Figures:

* decoding time per sentence, end to end (chart, cube pruning with the LM, forest built,
  Viterbi derivation and its yield; preprocessing and model loading excluded), median and p90,
  as process CPU time (the machine is shared, so wall time also counts other jobs) and wall
  time, for the first ``--titles`` dev titles and the first ``--desc-sentences`` sentences of the
  dev descs (``split_sentences``), with the pop limit; forest sizes (nodes, edges) of the same runs;
* peak memory of the same sentences, decoded again untimed under ``tracemalloc``: the largest
  per-sentence peak of Python allocations while one sentence is decoded (chart, LM states, forest;
  the loaded grammar and LM excluded), and the process's peak RSS (``ru_maxrss``, loading included)
  after each kind's runs;
* with ``--profile PREFIX``, a cProfile of decoding the same sentences once more (titles then desc
  sentences), written to ``PREFIX.KIND.prof`` (``python -m pstats``), its top entries by own time
  printed;
* BLEU (sacrebleu, tokenized lowercased text, ``tokenize="none"``) on the first ``--bleu-lines``
  lines of ``bitext.dev``: each line is split into sentences, translated sentence by sentence
  and joined, for (a) word by word: each source token's most probable ``p(e|f)`` translation
  (``lex.e_given_f``), unknown tokens copied; (b) the flat grammar and (c) the hiero grammar,
  each with its weights.
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

from clirplug.io.topics import read_topics
from clirplug.mt.decoder import Decoder
from clirplug.mt.features import DEFAULT_WEIGHTS, read_weights
from clirplug.mt.grammar import SourcePhrases, read_grammar
from clirplug.mt.lexicon import LexicalTable
from clirplug.mt.lm import LanguageModel
from clirplug.mt.preprocess import preprocess, preprocessor, split_sentences
from clirplug.mt.tune import corpus_bleu
from clirplug.resources import peak_rss_mb

REPO = Path(__file__).resolve().parents[1]


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def dev_sentences(tokenize, topics, titles: int, desc_sentences: int):
    """The timed sentences: the first ``titles`` dev titles and ``desc_sentences`` desc sentences, tokenized."""
    title_tokens = [tokens for tokens in (tokenize(t.title) for t in topics[:titles]) if tokens]
    descs = [tokens for t in topics for tokens in (tokenize(s) for s in split_sentences(t.desc, "de")) if tokens]
    return title_tokens, descs[:desc_sentences]


def time_decoding(decoder: Decoder, sentences):
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


def decoding_peaks(decoder: Decoder, sentences) -> list[float]:
    """Per sentence, the peak MB of Python allocations while it is decoded (``tracemalloc``)."""
    peaks = []
    tracemalloc.start()
    try:
        for tokens in sentences:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            forest = decoder.forest(tokens)
            forest.derivation_yield(forest.viterbi(decoder.weights))
            peaks.append((tracemalloc.get_traced_memory()[1] - base) / 2**20)
            del forest
    finally:
        tracemalloc.stop()
    return peaks


def profile_decoding(decoder: Decoder, sentences, path: Path) -> str:
    """cProfile of decoding ``sentences`` (forest, Viterbi, yield), dumped to ``path``; the top
    entries by own time as text."""
    profile = cProfile.Profile()
    profile.enable()
    for tokens in sentences:
        forest = decoder.forest(tokens)
        forest.derivation_yield(forest.viterbi(decoder.weights))
    profile.disable()
    profile.dump_stats(path)
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(12)
    return text.getvalue()


def add_sample_options(parser: argparse.ArgumentParser) -> None:
    """The model, data and timed sample options this script shares with benchmarks/decoder_ab.py."""
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "manclir-de")
    parser.add_argument("--kinds", default="flat,hiero")
    parser.add_argument("--titles", type=int, default=249)
    parser.add_argument("--desc-sentences", type=int, default=150)
    parser.add_argument("--pop-limit", type=int, default=200)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_sample_options(parser)
    parser.add_argument("--grammars", type=Path, help="folder of grammar.KIND.gz (default: --model)")
    parser.add_argument("--weights-flat", type=Path)
    parser.add_argument("--weights-hiero", type=Path)
    parser.add_argument("--bleu-lines", type=int, default=300)
    parser.add_argument("--systems", default="wbw,flat,hiero", help="BLEU rows to run (default: wbw,flat,hiero)")
    parser.add_argument("--no-timing", action="store_true", help="skip the timing table")
    parser.add_argument("--profile", help="write a cProfile of each kind's decoding to PREFIX.KIND.prof")
    args = parser.parse_args()
    systems = args.systems.split(",")
    kinds = [kind for kind in args.kinds.split(",") if kind in systems or not args.no_timing]

    tokenize = preprocessor("de", args.model)
    topics = read_topics(args.data / "topics.dev.jsonl")
    titles, descs = dev_sentences(tokenize, topics, args.titles, args.desc_sentences)
    src_lines = (args.data / "bitext.dev.de").read_text(encoding="utf-8").splitlines()[: args.bleu_lines]
    ref_lines = (args.data / "bitext.dev.en").read_text(encoding="utf-8").splitlines()[: args.bleu_lines]
    bleu_sentences = [[tokenize(s) for s in split_sentences(line, "de")] for line in src_lines]
    restriction = SourcePhrases([] if args.no_timing else titles + descs)
    if {"flat", "hiero"} & set(systems):
        restriction.add([tokens for line in bleu_sentences for tokens in line])

    started = time.time()
    lm = LanguageModel(args.model / "lm.arpa")
    print(f"- LM (order {lm.order}) loaded in {time.time() - started:.0f} s", file=sys.stderr)
    decoders, notes = {}, []
    for kind in kinds:
        weights_path = getattr(args, f"weights_{kind}") or args.model / f"weights.{kind}"
        weights = read_weights(weights_path) if weights_path.is_file() else {}
        started = time.time()
        rules = read_grammar((args.grammars or args.model) / f"grammar.{kind}.gz", restriction)
        decoders[kind] = Decoder(rules, lm, weights, pop_limit=args.pop_limit)
        notes.append(f"- {kind}: {len(rules)} rules usable on the benchmark's sentences "
                     f"({len(decoders[kind].rules_by_src)} source sides), loaded in {time.time() - started:.0f} s; "
                     f"weights {weights_path if weights else 'defaults'}")
        print(notes[-1], file=sys.stderr)

    notes.append(f"- peak RSS after loading: {peak_rss_mb():.0f} MB")
    rows, profiles = [], []
    for kind in [] if args.no_timing else kinds:
        for name, sentences in (("titles", titles), ("desc sentences", descs)):
            cpu, wall, nodes, edges = time_decoding(decoders[kind], sentences)
            peaks = decoding_peaks(decoders[kind], sentences)
            lengths = [len(s) for s in sentences]
            rows.append(f"| {kind}, {name} | {len(sentences)} | {statistics.median(lengths):.0f} | "
                        f"{statistics.median(cpu):.3f} / {percentile(cpu, 0.9):.3f} | "
                        f"{statistics.median(wall):.3f} / {percentile(wall, 0.9):.3f} | "
                        f"{statistics.median(nodes):.0f} / {percentile(nodes, 0.9)} | "
                        f"{statistics.median(edges):.0f} / {percentile(edges, 0.9)} | "
                        f"{statistics.median(peaks):.1f} / {max(peaks):.1f} |")
            print(rows[-1], file=sys.stderr)
        notes.append(f"- peak RSS after the {kind} runs: {peak_rss_mb():.0f} MB")
        if args.profile:
            path = Path(f"{args.profile}.{kind}.prof")
            profiles.append(f"cProfile of {kind} ({path}):\n\n```\n"
                            f"{profile_decoding(decoders[kind], titles + descs, path).strip()}\n```")
            print(profiles[-1], file=sys.stderr)

    references = [preprocess(line, "en") for line in ref_lines]
    bleu_rows = []
    if "wbw" in systems:
        table = LexicalTable.load(args.model / "lex.e_given_f.npz")
        hypotheses = []
        for line in bleu_sentences:
            words = []
            for tokens in line:
                for token in tokens:
                    options = table.translations(token)
                    words.append(max(options, key=lambda e: (options[e], e)) if options else token)
            hypotheses.append(words)
        bleu_rows.append(f"| (a) word by word, top p(e\\|f) | {corpus_bleu(hypotheses, references):.2f} | - |")
    for kind in [k for k in ("flat", "hiero") if k in systems]:
        decoder = decoders[kind]
        started = time.process_time()
        hypotheses = [[w for tokens in line for w in decoder.translate(tokens)[0].words] for line in bleu_sentences]
        seconds = time.process_time() - started
        label = "(b) flat grammar" if kind == "flat" else "(c) hiero grammar"
        bleu_rows.append(f"| {label} | {corpus_bleu(hypotheses, references):.2f} | {seconds:.0f} s |")
        print(bleu_rows[-1], file=sys.stderr)

    print("\n".join(notes))
    print(f"\nPop limit {args.pop_limit}, max span 10; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.\n")
    if rows:
        print("| queries | sentences | median words | CPU s median / p90 | wall s median / p90 | "
              "nodes median / p90 | edges median / p90 | peak MB median / max |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))
    for text in profiles:
        print(f"\n{text}")
    if bleu_rows:
        print(f"\nBLEU on the first {len(src_lines)} lines of bitext.dev (sentence by sentence):\n")
        print("| system | BLEU | decoding CPU time |")
        print("|---|---|---|")
        print("\n".join(bleu_rows))
    print("\nWeights:\n")
    for kind, decoder in decoders.items():
        changed = {k: round(v, 3) for k, v in sorted(decoder.weights.items())}
        print(f"- {kind}: `{json.dumps(changed)}`" + (" (defaults)" if decoder.weights == DEFAULT_WEIGHTS else ""))


if __name__ == "__main__":
    main()
