"""``clirplug serve``: keep an index and a model loaded and answer searches over HTTP, with a search page."""

from clirplug.cli import add_src_lang, add_threads, method_list

HELP = "answer searches over HTTP (JSON at /search, a search page at /) with an index and a model kept loaded"

# The flag giving each need of a method (clirplug.methods.NEEDS), to name it in errors.
FLAGS = {"index": "--index", "model": "--model", "corpus": "--corpus", "first_stage": "--first-stage",
         "searchers": "--fuse"}


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def add_arguments(parser):
    from clirplug.cli.options import add_settings
    from clirplug.fusion import FUSERS
    from clirplug.methods import METHODS, Bm25Run, BowfdRun, DenseRun, DtRun
    from clirplug.rerank.config import DEFAULT_DEPTH

    parser.epilog = method_list("methods (--method)", {name: method.help for name, method in METHODS.items()}) + (
        "\nGET /search?q=TEXT&k=10 answers one query, POST /search a batch "
        '{"queries": [{"qid": ..., "query": ...}], "k": 10};\nsee docs/cli.md.\n')
    parser.add_argument("--index", metavar="DIR", help="Lucene index built by 'clirplug index' (required without --system)")
    parser.add_argument("--system", action="append", metavar="FILE",
                        help="serve a system file (an experiment's <run>.system.json or recommended.<field>.json) "
                             "instead of --method and its options; repeated: several systems, a search names one by "
                             "its run tag, system=TAG (the first by default)")
    parser.add_argument("--method", default="bm25", choices=list(METHODS), help="retrieval method (default: bm25)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on (default: 8080; 0: a free one)")
    parser.add_argument("--time-budget", type=float, default=30.0, metavar="SECONDS",
                        help="a request still waiting or searching after this long is answered 503 and its search "
                             "stopped (default: 30)")
    parser.add_argument("--max-body", type=int, default=1 << 20, metavar="BYTES",
                        help="larger request bodies are refused with 413 (default: 1048576)")
    add_settings(parser, Bm25Run)
    model = parser.add_argument_group("translation (dt, dt-mira, psq, bowfd)")
    model.add_argument("--model", metavar="DIR", help="model folder trained by 'clirplug train' (docs/models.md)")
    add_settings(model, DtRun, only=("kind",))
    add_src_lang(model, "query language, for tokenization (default: de)")
    model.add_argument("--psq", default="", metavar="SPEC", help="psq: the PSQ options, as 'clirplug search --psq'")
    model.add_argument("--stopwords", metavar="FILE",
                       help="dt, dt-mira: target-language stopwords removed from the 1-best")
    model.add_argument("--mira", metavar="FILE", help="dt-mira: n-best reranking weights from 'clirplug train mira'")
    add_settings(model, DtRun, only=("prf", "fb_terms", "fb_docs", "original_query_weight"))
    rerank = parser.add_argument_group("rerankers (bowfd, boost)")
    rerank.add_argument("--first-stage", choices=list(METHODS), metavar="METHOD",
                        help="the method whose top --depth is reranked (default: dt for bowfd; boost without it "
                             "scores the whole collection)")
    rerank.add_argument("--depth", type=int, default=None,
                        help="candidates reranked per query (default: the reranker's, e.g. bowfd "
                             f"{DEFAULT_DEPTH}, boost 1000)")
    rerank.add_argument("--weights", metavar="FILE",
                        help="bowfd: weights from 'clirplug train bowfd' (default: v on every term)")
    rerank.add_argument("--v", type=float, default=None,
                        help="bowfd: IR default weight v (default: the weights file's, else 1.6)")
    add_settings(rerank, BowfdRun, only=("lm",))
    rerank.add_argument("--boost-model", metavar="FILE", help="boost: the model from 'clirplug train boost'")
    corpus = parser.add_argument_group("dense retrieval and boosting (dense, boost)")
    corpus.add_argument("--corpus", metavar="PATH", help="the collection's JSONL documents (a file or folder)")
    add_settings(corpus, DenseRun, skip=("grid", "kind"))
    add_threads(corpus, "dense: threads of the embedding model (default: all cores)")
    fusion = parser.add_argument_group("fusion (--method fusion)")
    fusion.add_argument("--fuse", type=_names, metavar="A,B",
                        help="the methods whose rankings are fused, e.g. dt,dense (each with its own options above)")
    fusion.add_argument("--fuser", default="borda", choices=list(FUSERS), help="fusion method (default: borda)")
    fusion.add_argument("--kappa", type=float, default=None,
                        help="two methods: weights (kappa, 1 - kappa) (default: the fusion method's)")


def _require_web_stack():
    import importlib.util

    from clirplug.errors import ClirplugError

    missing = [name for name in ("fastapi", "pydantic", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise ClirplugError(f"clirplug serve needs {', '.join(missing)}: pip install 'clirplug[serve]'")


def searcher_options(args) -> dict:
    """Each method's searcher arguments (:func:`clirplug.api.compose`) from the flags of its registry entry
    (:func:`clirplug.cli.options.searcher_arguments`; ``--boost-model`` is the model file of a method that needs no
    translation model), checked."""
    from clirplug.cli import check_threads
    from clirplug.cli.options import searcher_arguments, settings_from_args
    from clirplug.errors import ClirplugError
    from clirplug.methods import METHODS, Bm25Run

    if args.depth is not None and args.depth < 1:
        raise ClirplugError(f"--depth must be at least 1, got {args.depth}")
    check_threads(args.threads)
    settings_from_args(Bm25Run, args)
    values = {**vars(args), "model_file": args.boost_model}
    return {name: searcher_arguments(name, values) for name in METHODS}


def service(args, options: dict):
    """The :class:`~clirplug.serve.service.SearchService` of the flags: ``--method`` composed through the registry
    with ``options`` (:func:`searcher_options`)."""
    from clirplug.serve.service import SearchService

    return SearchService(args.method, args.index, options, model=args.model, corpus=args.corpus, kind=args.kind,
                         src_lang=args.src_lang, name_of=lambda need: FLAGS.get(need, need))


def systems(files) -> list:
    """The :class:`~clirplug.serve.service.SearchService` of each system file, each name once."""
    from clirplug.errors import ClirplugError
    from clirplug.serve.service import SearchService

    services = []
    for file in files:
        services.append(SearchService.from_system(file))
        if [s.method for s in services].count(services[-1].method) > 1:
            raise ClirplugError(f"{file}: tag: a system tagged {services[-1].method!r} is served already")
    return services


def run(args):
    from clirplug.errors import ClirplugError
    from clirplug.lucene.index import check_index

    _require_web_stack()
    from clirplug.serve.app import Limits, bind, create_app, serve

    if not 0 <= args.port <= 65535:
        raise ClirplugError(f"--port must be from 0 to 65535, got {args.port}")
    limits = Limits(max_body=args.max_body, time_budget=args.time_budget)
    if not args.system:
        if not args.index:
            raise ClirplugError("clirplug serve needs --index DIR (or --system FILE)")
        options = searcher_options(args)
        check_index(args.index)
    sock = bind(args.host, args.port)  # before loading: a busy port fails at once
    searching = systems(args.system) if args.system else [service(args, options)]
    for served in searching:
        served.warm_up()
    host, port = sock.getsockname()[:2]
    print(f"clirplug serve: {', '.join(s.method for s in searching)} on http://{host}:{port}/ (Ctrl-C stops)",
          flush=True)
    serve(create_app(*searching, limits=limits), sock)
    print("clirplug serve: stopped")
    import gc

    gc.freeze()  # the process ends now: the collector need not walk the loaded models once more on the way out
