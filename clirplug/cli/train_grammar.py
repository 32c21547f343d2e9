"""``clirplug train grammar``: extract a flat phrase table or a Hiero grammar from a model folder.

Reads ``DIR/corpus.<f>``, ``DIR/corpus.<e>`` and ``DIR/align.<f>-<e>`` (written by ``clirplug
train align``, see ``docs/models.md``) and writes ``DIR/grammar.<kind>.gz``. Like the other
stages it records its inputs and settings in ``DIR/stages/grammar-<kind>.json`` and is
skipped when they have not changed.
"""

import sys
from pathlib import Path

from clirplug.cli import positive_int
from clirplug.errors import ClirplugError

HELP = "extract a flat phrase table or a hierarchical (Hiero) grammar from an aligned model folder"


def add_arguments(parser):
    data = parser.add_argument_group("data")
    data.add_argument("--kind", required=True, choices=["flat", "hiero"], help="flat phrase pairs or Hiero rules")
    data.add_argument("--model", required=True, type=Path, metavar="DIR", help="model folder of `clirplug train align`")
    data.add_argument("--out", type=Path, help="grammar file (default: DIR/grammar.<kind>.gz; .gz compresses)")
    data.add_argument("--src-lang", default="de", help="source language code (default: de)")
    data.add_argument("--tgt-lang", default="en", help="target language code (default: en)")
    limits = parser.add_argument_group("extraction limits")
    limits.add_argument("--max-phrase", type=positive_int, default=5, help="flat: longest phrase, both sides (default: 5)")
    limits.add_argument("--max-initial", type=positive_int, default=10,
                        help="hiero: longest initial phrase, both sides (default: 10, Chiang 2007)")
    limits.add_argument("--max-terminals", type=positive_int, default=5,
                        help="hiero: most source terminals per rule (default: 5)")
    limits.add_argument("--max-symbols", type=positive_int, default=5,
                        help="hiero: most source terminals plus nonterminals per rule (default: 5, Chiang 2007)")
    limits.add_argument("--max-nonterminals", type=int, choices=[0, 1, 2], default=2,
                        help="hiero: most nonterminals per rule (default: 2)")
    pruning = parser.add_argument_group("pruning")
    pruning.add_argument("--top-n", type=positive_int, default=30,
                         help="keep the N targets of highest p(e|f) per source side (default: 30)")
    pruning.add_argument("--filter", type=Path, metavar="TEXT",
                         help="keep only rules usable on some line of this raw source-language text (e.g. the queries)")
    parser.add_argument("--force", action="store_true", help="extract even when the grammar is up to date")


def run(args):
    from clirplug.atomic import check_output
    from clirplug.cli.train_align import Stages

    if args.out is not None:
        check_output(args.out, "--out")
    model = args.model
    src, tgt = model / f"corpus.{args.src_lang}", model / f"corpus.{args.tgt_lang}"
    links = model / f"align.{args.src_lang}-{args.tgt_lang}"
    for path in (src, tgt, links, args.filter):
        if path is not None and not path.is_file():
            raise ClirplugError(f"{path}: no such file (run `clirplug train align --out {model}` first)")
    out = args.out or model / f"grammar.{args.kind}.gz"
    if args.kind == "flat":
        settings = {"max_phrase": args.max_phrase}
    else:
        settings = {"max_initial": args.max_initial, "max_terminals": args.max_terminals,
                    "max_nonterminals": args.max_nonterminals, "max_symbols": args.max_symbols}
    settings.update(kind=args.kind, top_n=args.top_n)

    def extract():
        import time

        from clirplug.mt.extract import extract_flat, extract_hiero, read_parallel

        started = time.perf_counter()
        text = read_parallel(src, tgt, links)
        print(f"clirplug: extracting {args.kind} rules from {len(text.src)} sentence pairs", file=sys.stderr)
        if args.kind == "flat":
            rules = extract_flat(text, args.max_phrase)
        else:
            rules = extract_hiero(text, args.max_initial, args.max_terminals, args.max_nonterminals, args.max_symbols)
        extracted = len(rules)
        rules = rules.top_n(args.top_n)
        if args.filter is not None:
            from clirplug.cli.train_align import read_lines
            from clirplug.mt.preprocess import preprocessor

            to_tokens = preprocessor(args.src_lang, model)
            rules = rules.for_sentences([to_tokens(line) for line in read_lines(args.filter)])
        rules.write(out)
        print(f"clirplug: {extracted} rules extracted, {len(rules)} written to {out} "
              f"in {time.perf_counter() - started:.0f} s", file=sys.stderr)

    inputs = [src, tgt, links] + ([args.filter] if args.filter else [])
    Stages(model, args.force).run(f"grammar-{args.kind}", inputs, settings, [out], extract)
    return 0
