"""``clirplug serve``: keep an index and a model loaded and answer searches over HTTP, with a search page."""

from clirplug.cli import add_src_lang, method_list

HELP = "answer searches over HTTP (JSON at /search, a search page at /) with an index and a model kept loaded"


def add_arguments(parser):
    from clirplug.cli.options import add_settings
    from clirplug.methods import Bm25Run, DtRun
    from clirplug.serve.service import METHODS

    parser.epilog = method_list("methods (--method)", METHODS) + (
        "\nGET /search?q=TEXT&k=10 answers one query, POST /search a batch "
        '{"queries": [{"qid": ..., "query": ...}], "k": 10};\nsee docs/cli.md.\n')
    parser.add_argument("--index", required=True, metavar="DIR", help="Lucene index built by 'clirplug index'")
    parser.add_argument("--method", default="bm25", choices=list(METHODS), help="retrieval method (default: bm25)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on (default: 8080; 0: a free one)")
    add_settings(parser, Bm25Run)
    model = parser.add_argument_group("translation (dt, psq, bowfd)")
    model.add_argument("--model", metavar="DIR", help="model folder trained by 'clirplug train' (docs/models.md)")
    add_settings(model, DtRun, only=("kind",))
    add_src_lang(model, "query language, for tokenization (default: de)")
    model.add_argument("--psq", default="", metavar="SPEC", help="psq: the PSQ options, as 'clirplug search --psq'")
    model.add_argument("--stopwords", metavar="FILE", help="dt, bowfd: target-language stopwords removed from the 1-best")
    bowfd = parser.add_argument_group("BOW-FD (--method bowfd: reranks the DT top --depth)")
    bowfd.add_argument("--depth", type=int, default=100, help="DT candidates reranked per query (default: 100)")
    bowfd.add_argument("--weights", metavar="FILE", help="weights from 'clirplug train bowfd' (default: v on every term)")
    bowfd.add_argument("--v", type=float, default=None, help="IR default weight v (default: the weights file's, else 1.6)")
    bowfd.add_argument("--no-lm", action="store_true", help="decode without the language model (the -LM ablation)")


def _require_web_stack():
    import importlib.util

    from clirplug.errors import ClirplugError

    missing = [name for name in ("starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise ClirplugError(f"clirplug serve needs {' and '.join(missing)}: pip install 'clirplug[serve]'")


def run(args):
    from clirplug.cli.options import settings_from_args
    from clirplug.errors import ClirplugError
    from clirplug.lucene.index import check_index
    from clirplug.methods import Bm25Run
    from clirplug.qt.psq_tables import PsqSettings
    from clirplug.serve.service import SearchService
    from clirplug.stopwords import read_stopwords

    _require_web_stack()
    from clirplug.serve.app import bind, create_app, serve

    if not 0 <= args.port <= 65535:
        raise ClirplugError(f"--port must be from 0 to 65535, got {args.port}")
    if args.depth < 1:
        raise ClirplugError(f"--depth must be at least 1, got {args.depth}")
    settings_from_args(Bm25Run, args)
    check_index(args.index)
    sock = bind(args.host, args.port)  # before loading: a busy port fails at once
    service = SearchService(args.method, args.index, args.model, kind=args.kind, src_lang=args.src_lang, k1=args.k1,
                            b=args.b, psq=PsqSettings.parse(args.psq),
                            stopwords=sorted(read_stopwords(args.stopwords)) if args.stopwords else (),
                            weights=args.weights, v=args.v, lm=not args.no_lm, depth=args.depth)
    host, port = sock.getsockname()[:2]
    print(f"clirplug serve: {args.method} on http://{host}:{port}/ (Ctrl-C stops)", flush=True)
    serve(create_app(service), sock)
    print("clirplug serve: stopped")
