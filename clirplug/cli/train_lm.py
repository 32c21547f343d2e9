"""``clirplug train lm``: estimate an interpolated modified Kneser-Ney n-gram model as ARPA.

Text is turned into MT tokens with ``clirplug.mt.preprocess.preprocess`` (so the LM's words
are the decoder's target words). The run records its inputs and settings in
``stages/lm.json`` beside the output and is skipped when they have not changed.
"""

import argparse
import sys
from pathlib import Path

from clirplug.errors import ClirplugError

HELP = "estimate an n-gram language model (interpolated modified Kneser-Ney, ARPA)"


def _order(text):
    value = int(text)
    if not 1 <= value <= 9:
        raise argparse.ArgumentTypeError(f"expected an order between 1 and 9, got {text}")
    return value


def add_arguments(parser):
    parser.add_argument("--text", type=Path, action="append", default=[], metavar="FILE",
                        help="raw text, one segment a line (repeatable)")
    parser.add_argument("--jsonl", type=Path, action="append", default=[], metavar="FILE",
                        help="documents as JSON lines; their 'title' and 'contents', split into sentences (repeatable)")
    parser.add_argument("--lang", default="en", help="language of the text, for preprocessing (default: en)")
    parser.add_argument("--order", type=_order, default=4, help="n-gram order (default: 4)")
    parser.add_argument("--out", type=Path, required=True, help="ARPA file to write")
    parser.add_argument("--discount-fallback", action="store_true",
                        help="use discounts 0.5 1 1.5 where the counts-of-counts cannot give them (tiny text)")
    parser.add_argument("--force", action="store_true", help="estimate even when the model is up to date")


def _jsonl_sentences(path: Path, lang: str):
    from clirplug.cli.train_align import read_lines
    from clirplug.io.jsonl import json_records
    from clirplug.mt.preprocess import preprocess, split_sentences

    for _, document in json_records(read_lines(path), path):
        for field in ("title", "contents"):
            for sentence in split_sentences(str(document.get(field) or ""), lang):
                yield preprocess(sentence, lang)


def run(args):
    from clirplug.atomic import check_output
    from clirplug.cli.train_align import Stages

    if not args.text and not args.jsonl:
        raise ClirplugError("give at least one --text or --jsonl file")
    check_output(args.out, "--out")
    for path in args.text + args.jsonl:
        if not path.is_file():
            raise ClirplugError(f"{path}: no such file")

    def estimate():
        import time

        from tqdm import tqdm

        from clirplug.cli.train_align import read_lines
        from clirplug.mt.lm import FALLBACK_DISCOUNTS, estimate, write_arpa
        from clirplug.mt.preprocess import preprocess

        started = time.perf_counter()
        sentences = []
        for path in args.text:
            sentences.extend(preprocess(line, args.lang) for line in tqdm(read_lines(path), desc=path.name, leave=False))
        for path in args.jsonl:
            sentences.extend(tqdm(_jsonl_sentences(path, args.lang), desc=path.name, leave=False))
        model = estimate(sentences, args.order, FALLBACK_DISCOUNTS if args.discount_fallback else None)
        write_arpa(model, args.out)
        counts = " ".join(f"{n}-grams={len(words)}" for n, words in enumerate(model.word, 1))
        print(f"clirplug: {args.out}: {counts} from {sum(map(len, sentences))} tokens "
              f"in {time.perf_counter() - started:.0f} s", file=sys.stderr)

    settings = {"order": args.order, "lang": args.lang, "discount_fallback": args.discount_fallback}
    Stages(args.out.parent, args.force).run("lm", args.text + args.jsonl, settings, [args.out], estimate)
    return 0
