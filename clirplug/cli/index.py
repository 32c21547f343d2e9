"""``clirplug index``: build a Lucene index from a JSONL corpus or an ir_datasets collection."""

from clirplug.cli import add_threads
from clirplug.lucene.languages import LANGUAGES

HELP = "build a Lucene index (positions, document vectors, raw text) from JSONL documents or an ir_datasets id"


def add_arguments(parser):
    parser.add_argument("--corpus", metavar="PATH",
                        help='JSONL file ({"id", "contents"[, "title"]}), .jsonl.gz, a folder of them, or irds:ID '
                             '(the documents of an ir_datasets id, e.g. irds:hc4/fa)')
    parser.add_argument("--index", required=True, metavar="DIR", help="index folder to create, e.g. indexes/manclir-de (with --existing: the index)")
    parser.add_argument("--language", default=None, choices=sorted(LANGUAGES),
                        help="language of the documents, for the Lucene analyzer (default: en; for irds:ID, the "
                             "documents' language)")
    parser.add_argument("--existing", action="store_true",
                        help="--index is a Lucene index built without clirplug (e.g. by Pyserini): record the "
                             "--language of its analyzer in it instead of building one")
    add_threads(parser, "indexing threads (default: cores, at most 4)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _default_language(corpus) -> str:
    """en, or the language ir_datasets states for the documents of ``irds:ID``."""
    from clirplug.errors import ClirplugError
    from clirplug.irds import irds_document_language, irds_id
    from clirplug.lucene.index import LANGUAGES

    dataset_id = irds_id(corpus)
    language = irds_document_language(dataset_id) if dataset_id is not None else None
    if language is None:
        return "en"
    if language not in LANGUAGES:
        raise ClirplugError(f"--corpus {corpus}: its documents are in {language!r}, which has no Lucene analyzer in "
                            f"clirplug; choose one with --language ({', '.join(LANGUAGES)})")
    return language


def run(args):
    from clirplug.cli import check_threads
    from clirplug.errors import ClirplugError
    from clirplug.lucene.index import build_index, record_language

    check_threads(args.threads)
    if args.existing:
        if args.corpus or args.language is None:
            raise ClirplugError("--existing takes --language LANG (the analyzer the index was built with) and no --corpus")
        stats = record_language(args.index, args.language)
    elif not args.corpus:
        raise ClirplugError("--corpus is required to build an index (or --existing, to use one built elsewhere)")
    else:
        stats = build_index(args.corpus, args.index, language=args.language or _default_language(args.corpus),
                            threads=args.threads, progress=not args.quiet)
    print(f"index {args.index}: {stats['documents']} documents, {stats['unique_terms']} unique terms, "
          f"{stats['total_terms']} terms, average length {stats['average_length']:.1f} ({stats['language']} analyzer)")
