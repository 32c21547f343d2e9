"""``clirplug train align``: preprocess a bitext, align it both ways, symmetrize, write lexical tables."""

from pathlib import Path

from clirplug.lucene.languages import LANGUAGES

HELP = "word-align a bitext (IBM Model 1 + fast_align IBM2, both directions, symmetrized)"


def add_arguments(parser):
    from clirplug.cli import add_output
    from clirplug.cli.options import add_settings
    from clirplug.train.align import AlignSettings

    data = parser.add_argument_group("data")
    data.add_argument("--src", required=True, type=Path, help="source side (e.g. German), one segment a line")
    data.add_argument("--tgt", required=True, type=Path, help="target side (e.g. English), line-aligned")
    add_output(data, "model folder (created; see docs/models.md)", metavar="DIR", folder=True)
    data.add_argument("--src-lang", default="de", choices=sorted(LANGUAGES), metavar="LANG", help="source language code (default: de)")
    data.add_argument("--tgt-lang", default="en", help="target language code (default: en)")
    data.add_argument("--dictionary", type=Path,
                      help="TSV 'source<TAB>target' entries added to EM as extra sentence pairs")
    add_settings(parser.add_argument_group("preprocessing and alignment (defaults: fast_align -d -o -v)"),
                 AlignSettings)
    parser.add_argument("--force", action="store_true", help="rerun every stage even when up to date")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args):
    from clirplug.cli.options import settings_from_args
    from clirplug.train.align import AlignSettings, train_align

    train_align(args.src, args.tgt, args.output, settings_from_args(AlignSettings, args), src_lang=args.src_lang,
                tgt_lang=args.tgt_lang, dictionary=args.dictionary, force=args.force,
                progress=not args.quiet)
    return 0
