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


def rerankers() -> dict:
    """The methods ``--method`` offers: the registry's rerankers (:data:`clirplug.methods.METHODS`), each with its
    one line of help."""
    from clirplug.methods import METHODS

    return {name: method.help for name, method in METHODS.items() if method.reranks}


def add_arguments(parser):
    from clirplug.cli.options import add_settings
    from clirplug.io.topics import FIELDS
    from clirplug.methods import BowfdRun
    from clirplug.rerank.config import DEFAULT_DEPTH, BowfdConfig

    parser.epilog = method_list("rerankers (--method)", rerankers())
    parser.add_argument("--method", required=True, choices=list(rerankers()), help="reranker (listed below)")
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
    parser.add_argument("--depth", type=int, default=None,
                        help="top candidates of each query reranked and written (default: the reranker's, e.g. "
                             f"bowfd {DEFAULT_DEPTH}, boost 1000)")
    add_run_file(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    bowfd = parser.add_argument_group("BOW-FD (--method bowfd; Hieber & Riezler 2015)")
    bowfd.add_argument("--weights", metavar="FILE", help="weights from 'clirplug train bowfd' (default: v on every term)")
    bowfd.add_argument("--v", type=float, default=None, help="IR default weight v (default: the weights file's, else 1.6)")
    add_settings(bowfd, BowfdConfig, skip=("field",))
    add_settings(bowfd, BowfdRun, only=("kind", "lm"))
    add_src_lang(bowfd)
    bowfd.add_argument("--explain", action=Output, metavar="FILE",
                       help="write each (query, document)'s winning derivation per sentence as JSON lines")


def run(args):
    """Call the reranker's library function (:meth:`clirplug.methods.Method.function`) with the candidates and
    each of its parameters that an option gives, by name; its own defaults for the others (``--depth`` too)."""
    import inspect

    from clirplug.cli.options import flag, settings_from_args
    from clirplug.errors import ClirplugError
    from clirplug.io.runs import read_run
    from clirplug.io.topics import read_topics, require_field
    from clirplug.methods import get_method
    from clirplug.rerank.config import BowfdConfig

    function = get_method(args.method).function()
    parameters = inspect.signature(function).parameters
    depth = parameters["depth"].default if args.depth is None else args.depth
    if depth < 1:
        raise ClirplugError(f"--depth must be at least 1, got {depth}")
    values = {**vars(args), "depth": depth, "progress": not args.quiet,
              "config": settings_from_args(BowfdConfig, args, field=args.field or "title")}
    given = {name: values[name] for name in parameters if values.get(name) is not None and name != "topics"}
    missing = [flag(name) for name, parameter in parameters.items()
               if parameter.default is inspect.Parameter.empty and name not in given and name != "topics"]
    if missing:
        raise ClirplugError(f"--method {args.method} needs {' and '.join(missing)}")
    topics = read_topics(args.topics, lang=args.topic_lang)
    # the field read: --field, else the one in the function's config (BOW-FD: title); a function reading its model's
    # (boosting) learns it once the model is loaded
    field = args.field or (values["config"].field if "config" in parameters else None)
    if field:
        require_field(topics, field, args.topics)
    given["candidates"] = None if args.candidates is None else read_run(args.candidates, empty=False)
    frame = function(topics, **given)
    write_run_file(frame, args, depth=depth,
                   summary=f"{frame['qid'].nunique()} of {len(topics)} topics with results, {len(frame)} lines")
