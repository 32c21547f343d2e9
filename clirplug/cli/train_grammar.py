"""``clirplug train grammar``: extract a flat phrase table or a Hiero grammar from a model folder."""

from pathlib import Path

from clirplug.lucene.languages import LANGUAGES

HELP = "extract a flat phrase table or a hierarchical (Hiero) grammar from an aligned model folder"


def add_arguments(parser):
    from clirplug.cli import add_output
    from clirplug.cli.options import add_settings
    from clirplug.mt import KINDS
    from clirplug.train.grammar import GrammarSettings

    data = parser.add_argument_group("data")
    data.add_argument("--kind", required=True, choices=KINDS, help="flat phrase pairs or Hiero rules")
    data.add_argument("--model", required=True, type=Path, metavar="DIR", help="model folder of `clirplug train align`")
    add_output(data, "grammar file (default: DIR/grammar.<kind>.gz; .gz compresses)", required=False)
    data.add_argument("--src-lang", default="de", choices=sorted(LANGUAGES), metavar="LANG", help="source language code (default: de)")
    data.add_argument("--tgt-lang", default="en", help="target language code (default: en)")
    data.add_argument("--filter", type=Path, metavar="TEXT",
                      help="keep only rules usable on some line of this raw source-language text (e.g. the queries)")
    add_settings(parser.add_argument_group("extraction limits and pruning"), GrammarSettings)
    parser.add_argument("--force", action="store_true", help="extract even when the grammar is up to date")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args):
    from clirplug.cli.options import settings_from_args
    from clirplug.train.grammar import GrammarSettings, train_grammar

    train_grammar(args.model, args.kind, settings_from_args(GrammarSettings, args), src_lang=args.src_lang,
                  tgt_lang=args.tgt_lang, output=args.output, filter=args.filter, force=args.force,
                  progress=not args.quiet)
    return 0
