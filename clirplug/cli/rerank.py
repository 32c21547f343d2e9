"""``clirplug rerank``: rescore a candidate run (or the whole collection) with a learned reranker."""

HELP = "rerank a candidate run with a learned model (boost), or score the whole collection with it"


def add_arguments(parser):
    from clirplug.rerank import RERANKERS

    parser.add_argument("--method", required=True, choices=list(RERANKERS), help="reranker")
    parser.add_argument("--model", required=True, metavar="FILE", help="model written by `clirplug train <method>`")
    parser.add_argument("--topics", required=True, metavar="FILE", help="topics: JSONL, TREC SGML or TSV")
    parser.add_argument("--field", default=None, choices=["title", "desc", "narr"],
                        help="topic field used as the query (default: the one the model was trained on)")
    parser.add_argument("--corpus", required=True, metavar="PATH", help="the English collection (JSONL file or folder)")
    parser.add_argument("--index", metavar="DIR", help="Lucene index (not used yet: documents are read from --corpus)")
    parser.add_argument("--candidates", metavar="RUN",
                        help="TREC run whose documents are rescored; without it the whole collection is scored")
    parser.add_argument("--output", required=True, metavar="FILE", help="TREC run to write")
    parser.add_argument("--depth", type=int, default=1000, help="documents kept per query (default: 1000)")
    parser.add_argument("--run-tag", default=None, help="run tag (default: the output file's stem)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args):
    import importlib
    from pathlib import Path

    from clirplug.errors import ClirplugError
    from clirplug.io.runs import read_run, write_run
    from clirplug.io.topics import read_topics
    from clirplug.rerank import RERANKERS

    if args.depth < 1:
        raise ClirplugError(f"--depth must be at least 1, got {args.depth}")
    method = importlib.import_module(RERANKERS[args.method])
    topics = read_topics(args.topics)
    model = method.load(args.model)
    collection = method.read_collection(args.corpus, model, progress=not args.quiet)
    if args.candidates:
        frame = model.rerank(topics, collection, read_run(args.candidates), field=args.field, depth=args.depth,
                             progress=not args.quiet)
    else:
        frame = model.search(topics, collection, field=args.field, depth=args.depth, progress=not args.quiet)
    tag = args.run_tag or Path(args.output).name.removesuffix(".trec").removesuffix(".txt")
    write_run(frame, args.output, tag=tag, depth=args.depth)
    print(f"wrote {args.output}: {frame['qid'].nunique()} of {len(topics)} topics with results, {len(frame)} lines")
