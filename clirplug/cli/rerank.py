"""``clirplug rerank``: rescore a candidate run (or the whole collection) with a learned reranker."""

HELP = "rerank a candidate run with a learned model (boost), or score the whole collection with it"


def add_arguments(parser):
    from clirplug.bm25 import BOWFD_B, BOWFD_K1
    from clirplug.rerank import RERANKERS

    parser.add_argument("--method", required=True, choices=list(RERANKERS), help="reranker")
    parser.add_argument("--model", required=True, metavar="PATH",
                        help="model written by `clirplug train <method>` (bowfd: the translation model folder)")
    parser.add_argument("--topics", required=True, metavar="FILE", help="topics: JSONL, TREC SGML or TSV")
    parser.add_argument("--field", default=None, choices=["title", "desc", "narr"],
                        help="topic field used as the query (default: the one the model was trained on)")
    parser.add_argument("--corpus", metavar="PATH", help="the English collection (JSONL file or folder; boost)")
    parser.add_argument("--index", metavar="DIR", help="Lucene index (bowfd; boost reads documents from --corpus)")
    parser.add_argument("--candidates", metavar="RUN",
                        help="TREC run whose documents are rescored; without it the whole collection is scored")
    parser.add_argument("--output", required=True, metavar="FILE", help="TREC run to write")
    parser.add_argument("--depth", type=int, default=1000, help="documents kept per query (default: 1000)")
    parser.add_argument("--run-tag", default=None, help="run tag (default: the output file's stem)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    bowfd = parser.add_argument_group("BOW-FD (--method bowfd; Hieber & Riezler 2015)")
    bowfd.add_argument("--weights", metavar="FILE", help="weights from `clirplug train bowfd` (default: v on every term)")
    bowfd.add_argument("--v", type=float, default=None, help="IR default weight v (default: the weights file's, else 1.6)")
    bowfd.add_argument("--k1", type=float, default=None, help=f"BM25 k1 of the IR features (default: {BOWFD_K1}, the paper's)")
    bowfd.add_argument("--b", type=float, default=None, help=f"BM25 b of the IR features (default: {BOWFD_B}, the paper's)")
    bowfd.add_argument("--beam", type=int, default=None, help="incoming edges considered per node (default: all)")
    bowfd.add_argument("--sentence-depth", type=int, default=None,
                       help="top-k of each sentence ranking; others take its minimum (default: 1000)")
    bowfd.add_argument("--kind", default="hiero", choices=["hiero", "flat"], help="grammar of the model (default: hiero)")
    bowfd.add_argument("--no-lm", action="store_true", help="decode without the language model (the -LM ablation)")
    bowfd.add_argument("--explain", metavar="FILE",
                       help="write each (query, document)'s winning derivation per sentence as JSON lines")


def run(args):
    import importlib
    from pathlib import Path

    from clirplug.atomic import check_output
    from clirplug.errors import ClirplugError
    from clirplug.io.runs import write_run
    from clirplug.io.topics import read_topics, require_field
    from clirplug.rerank import RERANKERS

    if args.depth < 1:
        raise ClirplugError(f"--depth must be at least 1, got {args.depth}")
    check_output(args.output)
    if args.explain:
        check_output(args.explain, "--explain")
    method = importlib.import_module(RERANKERS[args.method])
    topics = read_topics(args.topics)
    if args.field:
        require_field(topics, args.field, args.topics)
    if hasattr(method, "rerank_run"):
        frame = method.rerank_run(args, topics)
    elif not args.corpus:
        raise ClirplugError(f"--method {args.method} needs --corpus")
    else:
        frame = _load_and_rerank(method, args, topics)
    tag = args.run_tag or Path(args.output).name.removesuffix(".trec").removesuffix(".txt")
    write_run(frame, args.output, tag=tag, depth=args.depth)
    print(f"wrote {args.output}: {frame['qid'].nunique()} of {len(topics)} topics with results, {len(frame)} lines")


def _load_and_rerank(method, args, topics):
    """The ``load``/``read_collection`` interface (boost): rerank the candidates or search the collection."""
    from clirplug.io.runs import read_run

    model = method.load(args.model)
    collection = method.read_collection(args.corpus, model, progress=not args.quiet)
    if args.candidates:
        return model.rerank(topics, collection, read_run(args.candidates), field=args.field, depth=args.depth,
                            progress=not args.quiet)
    return model.search(topics, collection, field=args.field, depth=args.depth, progress=not args.quiet)
