"""``clirplug rerank``: rescore a candidate run (or the whole collection) with a learned reranker."""

from clirplug.cli import (
    TOPICS_HELP,
    Output,
    add_output,
    add_run_file,
    add_src_lang,
    add_topic_lang,
    method_list,
    write_run_file,
)

HELP = "rescore a candidate run with a reranker (BOW-FD, boosting), or score the whole collection"

# --method -> one line of --help; each method has a function in RUNNERS (below) that unpacks its options
# and calls its library function (clirplug.methods.RUNS: the module's rerank_run).
RERANKER_HELP = {
    "boost": "bagged RankBoost over n-gram pairs (--corpus; --candidates optional)",
    "bowfd": "BOW-FD: bag-of-words forced decoding (--index, --candidates)",
}


def add_arguments(parser):
    from clirplug.cli.options import add_settings
    from clirplug.io.topics import FIELDS
    from clirplug.methods import BowfdRun
    from clirplug.rerank.config import BowfdConfig

    parser.epilog = method_list("rerankers (--method)", RERANKER_HELP)
    parser.add_argument("--method", required=True, choices=list(RERANKER_HELP), help="reranker (listed below)")
    parser.add_argument("--model", required=True, metavar="PATH",
                        help="model written by 'clirplug train <method>' (bowfd: the translation model folder)")
    parser.add_argument("--topics", required=True, metavar="FILE", help=TOPICS_HELP)
    add_topic_lang(parser)
    parser.add_argument("--field", default=None, choices=FIELDS,
                        help="topic field used as the query (default: the one the model was trained on; bowfd: title)")
    parser.add_argument("--corpus", metavar="PATH", help="the target-language collection (JSONL file or folder; boost)")
    parser.add_argument("--index", metavar="DIR", help="Lucene index (bowfd; boost reads documents from --corpus)")
    parser.add_argument("--candidates", metavar="RUN",
                        help="TREC run whose documents are rescored; without it the whole collection is scored (boost)")
    add_output(parser, "TREC run to write (- for standard output)", stdout=True)
    parser.add_argument("--depth", type=int, default=1000,
                        help="top candidates of each query reranked and written (default: 1000)")
    add_run_file(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    bowfd = parser.add_argument_group("BOW-FD (--method bowfd; Hieber & Riezler 2015)")
    bowfd.add_argument("--weights", metavar="FILE", help="weights from 'clirplug train bowfd' (default: v on every term)")
    bowfd.add_argument("--v", type=float, default=None, help="IR default weight v (default: the weights file's, else 1.6)")
    add_settings(bowfd, BowfdConfig, skip=("field",))
    add_settings(bowfd, BowfdRun, only=("kind",))
    add_src_lang(bowfd)
    bowfd.add_argument("--no-lm", action="store_true", help="decode without the language model (the -LM ablation)")
    bowfd.add_argument("--explain", action=Output, metavar="FILE",
                       help="write each (query, document)'s winning derivation per sentence as JSON lines")


def _require(args, *options):
    """Refuse a reranker run without each of ``options`` (``"index"`` -> ``--index``)."""
    from clirplug.errors import ClirplugError

    missing = [f"--{option}" for option in options if not getattr(args, option)]
    if missing:
        raise ClirplugError(f"--method {args.method} needs {' and '.join(missing)}")


def _boost(args, topics):
    from clirplug.boost import rerank_run
    from clirplug.io.runs import read_run

    _require(args, "corpus")
    candidates = read_run(args.candidates, empty=False) if args.candidates else None
    return rerank_run(topics, candidates, model=args.model, corpus=args.corpus, field=args.field, depth=args.depth,
                      progress=not args.quiet)


def _bowfd(args, topics):
    from clirplug.cli.options import settings_from_args
    from clirplug.io.runs import read_run
    from clirplug.rerank.bowfd import BowfdConfig, rerank_run

    _require(args, "index", "candidates")
    config = settings_from_args(BowfdConfig, args, field=args.field or "title")
    return rerank_run(topics, read_run(args.candidates, empty=False), model=args.model, index=args.index, config=config,
                      weights=args.weights, v=args.v, kind=args.kind, src_lang=args.src_lang, lm=not args.no_lm,
                      depth=args.depth, explain=args.explain, progress=not args.quiet)


RUNNERS = {"boost": _boost, "bowfd": _bowfd}


def run(args):
    from clirplug.errors import ClirplugError
    from clirplug.io.topics import read_topics, require_field

    if args.depth < 1:
        raise ClirplugError(f"--depth must be at least 1, got {args.depth}")
    topics = read_topics(args.topics, lang=args.topic_lang)
    field = args.field or ("title" if args.method == "bowfd" else None)  # boost: the model's, known once loaded
    if field:
        require_field(topics, field, args.topics)
    frame = RUNNERS[args.method](args, topics)
    write_run_file(frame, args, depth=args.depth,
                   summary=f"{frame['qid'].nunique()} of {len(topics)} topics with results, {len(frame)} lines")
