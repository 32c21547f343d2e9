"""``clirplug index``: build a Lucene index from a JSONL corpus."""

from clirplug.cli import add_threads

HELP = "build a Lucene index (positions, document vectors, raw text) from JSONL documents"


def add_arguments(parser):
    parser.add_argument("--corpus", required=True, metavar="PATH",
                        help='JSONL file ({"id", "contents"[, "title"]}), .jsonl.gz, or a folder of them')
    parser.add_argument("--index", required=True, metavar="DIR", help="index folder to create, e.g. indexes/manclir-de")
    parser.add_argument("--language", default="en", choices=["en", "de", "fr", "es"],
                        help="language of the documents, for the Lucene analyzer (default: en)")
    add_threads(parser, "indexing threads (default: cores, at most 4)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args):
    from clirplug.cli import check_threads
    from clirplug.lucene.index import build_index

    check_threads(args.threads)
    stats = build_index(args.corpus, args.index, language=args.language, threads=args.threads, progress=not args.quiet)
    print(f"index {args.index}: {stats['documents']} documents, {stats['unique_terms']} unique terms, "
          f"{stats['total_terms']} terms, average length {stats['average_length']:.1f} ({stats['language']} analyzer)")
