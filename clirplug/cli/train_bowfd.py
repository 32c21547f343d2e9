"""``clirplug train bowfd``: the IR default weight v by grid search, then pairwise learning to rank (Hieber & Riezler 2015)."""

HELP = "BOW-FD weights: v by grid search on held-out train topics, then pairwise LTR (hinge, Adadelta, IPM)"


def add_arguments(parser):
    from clirplug.cli import add_executor, add_output, add_src_lang, add_threads
    from clirplug.cli.options import add_settings
    from clirplug.io.topics import FIELDS
    from clirplug.methods import BowfdRun
    from clirplug.train.bowfd import BowfdSettings

    parser.add_argument("--model", required=True, nargs="+", metavar="DIR",
                        help="translation model folder (see docs/models.md); several, one per --topics file, to "
                             "translate each file's topics by its own model (cross-fitting)")
    add_settings(parser, BowfdRun, only=("kind",))
    add_src_lang(parser)
    parser.add_argument("--index", required=True, metavar="DIR", help="Lucene index of the target collection")
    parser.add_argument("--topics", required=True, nargs="+", metavar="FILE",
                        help="training topics (the train split), or one file per --model")
    parser.add_argument("--qrels", required=True, metavar="FILE", help="their relevance judgements")
    parser.add_argument("--candidates", required=True, metavar="RUN",
                        help="first-stage run on the training topics: negatives and held-out reranking come from it")
    parser.add_argument("--field", default="title", choices=FIELDS, help="query field (default: title)")
    add_output(parser, "weights file to write (readable text)")
    add_settings(parser, BowfdSettings)
    add_threads(parser, "workers training the shards; the weights do not depend on it (default: 2)", default=2,
                aliases=["--jobs"])
    add_executor(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args):
    from clirplug.cli import executor_settings
    from clirplug.cli.options import settings_from_args
    from clirplug.train.bowfd import BowfdSettings, train_bowfd

    train_bowfd(args.model, args.kind, args.index, args.topics, args.qrels, args.candidates, args.field, args.output,
                settings_from_args(BowfdSettings, args), src_lang=args.src_lang, jobs=executor_settings(args, args.threads), progress=not args.quiet)
    return 0
