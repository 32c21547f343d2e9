"""``clirplug train weights``: tune a model folder's decoder weights for BLEU with PRO."""

HELP = "tune decoder weights on a bitext or on parallel queries for BLEU (PRO, Hopkins & May 2011)"
# --field of --queries -> the options it needs, and why a topic can yield no pair
QUERY_INPUTS = {"title": ("corpus",), "desc": ("bitext_src", "bitext_tgt", "bitext_ids")}
SKIPPED = {"title": "no English mate in the corpus", "desc": "no opening line of the page in the bitext"}


def add_arguments(parser):
    parser.add_argument("--model", required=True, metavar="DIR", help="model folder (see docs/models.md)")
    parser.add_argument("--kind", choices=("hiero", "flat"), default="hiero", help="grammar (default: hiero)")
    parser.add_argument("--src", help="tuning source text, a sentence a line (or --queries, below)")
    parser.add_argument("--tgt", help="tuning reference text, line-aligned with --src")
    parser.add_argument("--lines", type=int, default=300, help="use the first N non-empty pairs (default: 300)")
    parser.add_argument("--max-words", type=int, default=40, help="skip longer source sentences (default: 40)")
    parser.add_argument("--nbest", type=int, default=100, help="distinct translations per sentence (default: 100)")
    parser.add_argument("--iterations", type=int, default=8, help="PRO iterations (default: 8)")
    parser.add_argument("--pop-limit", type=int, default=200, help="cube pruning pops per cell (default: 200)")
    parser.add_argument("--seed", type=int, default=0, help="pair sampling seed (default: 0)")
    parser.add_argument("--src-lang", default="de")
    parser.add_argument("--tgt-lang", default="en")
    parser.add_argument("--output", metavar="FILE", help="weights file (default: DIR/weights.KIND)")
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


def run(args):
    tune(args, *tuning_pairs(args))


def tune(args, pairs, origin):
    """PRO on the ``(source, reference)`` ``pairs`` (from :func:`tuning_pairs`), with the options of ``args``."""
    import sys
    from pathlib import Path

    from tqdm import tqdm

    from clirplug.errors import ClirplugError
    from clirplug.mt.features import DEFAULT_WEIGHTS, write_weights
    from clirplug.mt.preprocess import preprocess
    from clirplug.mt.translator import Translator
    from clirplug.mt.tune import pro

    translator = Translator(args.model, args.kind, DEFAULT_WEIGHTS, pop_limit=args.pop_limit,
                            src_lang=args.src_lang, cache=False)
    sources, references = tuning_set(pairs, translator.tokenize, lambda text: preprocess(text, args.tgt_lang),
                                     args.lines, args.max_words)
    if not sources:
        raise ClirplugError(f"{origin}: no usable tuning sentences")
    translator.restrict(sources)
    decoder = translator.decoder

    def decode(weights):
        decoder.set_weights(weights)
        return [decoder.translate(tokens, args.nbest, unique=True)
                for tokens in tqdm(sources, desc="decode", unit="sentence", file=sys.stderr, leave=False)]

    output = Path(args.output) if args.output else Path(args.model) / f"weights.{args.kind}"

    def save(best, history):
        bleu = max(h["bleu"] for h in history)
        write_weights(best, output, f"PRO (Hopkins & May 2011) on {len(sources)} sentences of {origin}: "
                                    f"tuning BLEU {bleu:.2f} after {len(history)} decoding passes, seed {args.seed}, "
                                    f"pop limit {args.pop_limit}, unique {args.nbest}-best")

    _, history = pro(decode, references, DEFAULT_WEIGHTS, iterations=args.iterations, seed=args.seed,
                        log=lambda message: print(message, file=sys.stderr), checkpoint=save)
    print(f"wrote {output} (tuning BLEU {max(h['bleu'] for h in history):.2f})", file=sys.stderr)


def tuning_pairs(args) -> tuple[list[tuple[str, str]], str]:
    """The ``(source, reference)`` lines to tune on, from ``--src/--tgt`` or ``--queries``, and their origin."""
    import sys
    from pathlib import Path

    from clirplug.errors import ClirplugError

    def flag(name):
        return "--" + name.replace("_", "-")

    if args.queries is None:
        if args.src is None or args.tgt is None:
            raise ClirplugError("give the tuning text as --src and --tgt, or as parallel queries (--queries)")
        for name in ("field", *QUERY_INPUTS["title"], *QUERY_INPUTS["desc"], "topic_ids"):
            if getattr(args, name) is not None:
                raise ClirplugError(f"{flag(name)} is an option of --queries, not of --src/--tgt")
        return read_tuning_pairs(Path(args.src), Path(args.tgt)), args.src
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

    from clirplug.cli.train_align import read_lines
    from clirplug.io.topics import read_topics
    from clirplug.mt.queries import parallel_queries

    topics = read_topics(args.queries)
    topic_ids = [line.strip() for line in read_lines(Path(args.topic_ids)) if line.strip()] if args.topic_ids else None
    bitext = (args.bitext_src, args.bitext_tgt, args.bitext_ids) if args.field == "desc" else None
    pairs = parallel_queries(topics, args.field, corpus=args.corpus, bitext=bitext, topic_ids=topic_ids)
    used = len(set(topic_ids)) if topic_ids is not None else len(topics)
    print(f"clirplug: {len(pairs)} parallel {args.field} queries from {args.queries}, {used - len(pairs)} of {used} "
          f"topics skipped ({SKIPPED[args.field]})", file=sys.stderr)
    return list(pairs.values()), f"the {args.field} queries of {args.queries}"


def read_tuning_pairs(src_path, tgt_path) -> list[tuple[str, str]]:
    """The line pairs of two line-aligned files."""
    from clirplug.errors import ClirplugError

    try:
        src = src_path.read_text(encoding="utf-8").splitlines()
        tgt = tgt_path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ClirplugError(f"cannot read the tuning bitext: {error}") from error
    if len(src) != len(tgt):
        raise ClirplugError(f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}")
    return list(zip(src, tgt))


def tuning_set(pairs, tokenize_src, tokenize_tgt, lines: int, max_words: int):
    """The first ``lines`` pairs with 1..``max_words`` source tokens, tokenized."""
    sources, references = [], []
    for f, e in pairs:
        tokens = tokenize_src(f)
        if 0 < len(tokens) <= max_words and e.strip():
            sources.append(tokens)
            references.append(tokenize_tgt(e))
            if len(sources) == lines:
                break
    return sources, references
