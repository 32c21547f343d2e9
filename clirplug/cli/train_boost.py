"""``clirplug train boost``: learn a bagged RankBoost table of bilingual n-gram pairs (Sokolov et al. 2013)."""

HELP = "bagged RankBoost over hashed (German n-gram, English n-gram) pairs, from relevance judgements"


def add_arguments(parser):
    from clirplug.cli import add_executor, add_output, add_threads
    from clirplug.cli.options import add_settings
    from clirplug.train.boost import BoostSettings

    parser.add_argument("--topics", required=True, metavar="FILE", help="training topics (the train split)")
    parser.add_argument("--qrels", required=True, metavar="FILE", help="their relevance judgements")
    parser.add_argument("--corpus", required=True, metavar="PATH", help="the English collection (JSONL file or folder)")
    add_output(parser, "model file to write (.npz)")
    add_settings(parser, BoostSettings)
    add_threads(parser, "bags trained in parallel (default: 2)", default=2, aliases=["--jobs"])
    add_executor(parser)
    parser.add_argument("--show", type=int, default=20, help="print the first N features of the table (default: 20)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args):
    from clirplug.cli import executor_settings
    from clirplug.cli.options import settings_from_args
    from clirplug.train.boost import BoostSettings, train_boost

    train_boost(args.topics, args.qrels, args.corpus, args.output, settings_from_args(BoostSettings, args),
                jobs=executor_settings(args, args.threads), progress=not args.quiet, show=args.show)
    return 0
