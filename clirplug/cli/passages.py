"""``clirplug passages``: cut a collection's pages into passages of at most N words, a JSONL corpus to index."""

from clirplug.cli import add_output

HELP = "cut a collection's pages into passages of at most N words (title kept; ids PAGE#k), a JSONL corpus"


def add_arguments(parser):
    from clirplug.passages import WORDS

    parser.add_argument("--corpus", required=True, metavar="PATH",
                        help='the pages: JSONL ({"id", "contents"[, "title"]}), .jsonl.gz, a folder of them, or irds:ID')
    add_output(parser, "JSONL file of the passages to write, e.g. passages.jsonl (then: clirplug index --corpus it)")
    parser.add_argument("--words", type=int, default=WORDS,
                        help=f"words of contents per passage at most; the page's title is kept with each (default: {WORDS})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args):
    from clirplug.passages import write_passages

    counts = write_passages(args.corpus, args.output, words=args.words, progress=not args.quiet)
    print(f"wrote {args.output}: {counts['passages']} passages of at most {args.words} words from "
          f"{counts['pages']} pages")
