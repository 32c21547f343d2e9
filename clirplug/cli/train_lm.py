"""``clirplug train lm``: estimate an interpolated modified Kneser-Ney n-gram model as ARPA."""

from pathlib import Path

HELP = "estimate an n-gram language model (interpolated modified Kneser-Ney, ARPA)"


def add_arguments(parser):
    from clirplug.cli import add_output
    from clirplug.cli.options import add_settings
    from clirplug.train.lm import LmSettings

    parser.add_argument("--text", type=Path, action="append", default=[], metavar="FILE",
                        help="raw text, one segment a line (repeatable)")
    parser.add_argument("--jsonl", type=Path, action="append", default=[], metavar="FILE",
                        help="documents as JSON lines; their 'title' and 'contents', split into sentences (repeatable)")
    parser.add_argument("--lang", default="en", help="language of the text, for preprocessing (default: en)")
    add_output(parser, "ARPA file to write")
    add_settings(parser, LmSettings)
    parser.add_argument("--force", action="store_true", help="estimate even when the model is up to date")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args):
    from clirplug.cli.options import settings_from_args
    from clirplug.train.lm import LmSettings, train_lm

    train_lm(args.output, settings_from_args(LmSettings, args), texts=args.text, jsonl=args.jsonl,
             lang=args.lang, force=args.force, progress=not args.quiet)
    return 0
