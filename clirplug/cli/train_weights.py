"""``clirplug train weights``: tune a model folder's decoder weights for BLEU with PRO."""

from clirplug.lucene.languages import LANGUAGES

HELP = "tune decoder weights on a bitext or on parallel queries for BLEU (PRO, Hopkins & May 2011)"
# --field of --queries -> the options it needs
QUERY_INPUTS = {"title": ("corpus",), "desc": ("bitext_src", "bitext_tgt", "bitext_ids")}


def add_arguments(parser):
    from clirplug.cli import add_output
    from clirplug.cli.options import add_settings
    from clirplug.mt import KINDS
    from clirplug.train.weights import WeightsSettings

    parser.add_argument("--model", required=True, metavar="DIR", help="model folder (see docs/models.md)")
    parser.add_argument("--kind", choices=KINDS, default="hiero", help="grammar (default: hiero)")
    parser.add_argument("--src", help="tuning source text, a sentence a line (or --queries, below)")
    parser.add_argument("--tgt", help="tuning reference text, line-aligned with --src")
    parser.add_argument("--src-lang", default="de", choices=sorted(LANGUAGES), metavar="LANG", help="source language code (default: de)")
    parser.add_argument("--tgt-lang", default="en", help="target language code (default: en)")
    add_output(parser, "weights file (default: DIR/weights.KIND)", required=False)
    add_settings(parser, WeightsSettings)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    queries = parser.add_argument_group(
        "parallel queries", "query-genre tuning (Nikoulina et al. 2012): tune on topics paired with their English "
                            "mates instead of --src/--tgt (see docs/models.md)")
    queries.add_argument("--queries", metavar="TOPICS", help="topic file (e.g. topics.train.jsonl)")
    queries.add_argument("--field", choices=tuple(QUERY_INPUTS),
                         help="title: paired with the mate's title (needs --corpus); "
                              "desc: with the mate's opening bitext line (needs --bitext-src/-tgt/-ids)")
    queries.add_argument("--corpus", metavar="CORPUS", help="the documents, the mates' titles")
    queries.add_argument("--bitext-src", metavar="FILE", help="bitext source side (bitext.<split>.de)")
    queries.add_argument("--bitext-tgt", metavar="FILE", help="bitext target side (bitext.<split>.en)")
    queries.add_argument("--bitext-ids", metavar="FILE", help="page id of each bitext line (bitext.<split>.ids)")
    queries.add_argument("--topic-ids", metavar="FILE", help="use only these topics, an id a line (e.g. one fold)")


def _tuning_pairs(args):
    """The tuning pairs of ``--src/--tgt`` or ``--queries``, and their origin; flag combinations checked."""
    from clirplug.cli.options import flag
    from clirplug.errors import ClirplugError
    from clirplug.train.weights import bitext_pairs, query_pairs

    if args.queries is None:
        if args.src is None or args.tgt is None:
            raise ClirplugError("give the tuning text as --src and --tgt, or as parallel queries (--queries)")
        for name in ("field", *QUERY_INPUTS["title"], *QUERY_INPUTS["desc"], "topic_ids"):
            if getattr(args, name) is not None:
                raise ClirplugError(f"{flag(name)} is an option of --queries, not of --src/--tgt")
        return bitext_pairs(args.src, args.tgt), args.src
    if args.src is not None or args.tgt is not None:
        raise ClirplugError("--src/--tgt and --queries are alternatives: give one of them")
    if args.field is None:
        raise ClirplugError(f"--queries needs --field ({' or '.join(QUERY_INPUTS)})")
    for field, names in QUERY_INPUTS.items():
        for name in names:
            if field == args.field and getattr(args, name) is None:
                raise ClirplugError(f"--field {args.field} needs {flag(name)}")
            if field != args.field and getattr(args, name) is not None:
                raise ClirplugError(f"{flag(name)} is not used by --field {args.field}")
    bitext = (args.bitext_src, args.bitext_tgt, args.bitext_ids) if args.field == "desc" else None
    return query_pairs(args.queries, args.field, corpus=args.corpus, bitext=bitext, topic_ids=args.topic_ids)


def run(args):
    from clirplug.cli.options import settings_from_args
    from clirplug.train.weights import WeightsSettings, train_weights

    settings = settings_from_args(WeightsSettings, args)
    pairs, origin = _tuning_pairs(args)
    train_weights(args.model, args.kind, pairs, origin, settings, src_lang=args.src_lang, tgt_lang=args.tgt_lang,
                  output=args.output, progress=not args.quiet)
    return 0
