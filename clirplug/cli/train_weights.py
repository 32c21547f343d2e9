"""``clirplug train weights``: tune a model folder's decoder weights for BLEU with PRO."""

HELP = "tune decoder weights on a bitext for BLEU (PRO, Hopkins & May 2011)"


def add_arguments(parser):
    parser.add_argument("--model", required=True, metavar="DIR", help="model folder (see docs/models.md)")
    parser.add_argument("--kind", choices=("hiero", "flat"), default="hiero", help="grammar (default: hiero)")
    parser.add_argument("--src", required=True, help="tuning source text, a sentence a line")
    parser.add_argument("--tgt", required=True, help="tuning reference text, line-aligned with --src")
    parser.add_argument("--lines", type=int, default=300, help="use the first N non-empty pairs (default: 300)")
    parser.add_argument("--max-words", type=int, default=40, help="skip longer source sentences (default: 40)")
    parser.add_argument("--nbest", type=int, default=100, help="distinct translations per sentence (default: 100)")
    parser.add_argument("--iterations", type=int, default=8, help="PRO iterations (default: 8)")
    parser.add_argument("--pop-limit", type=int, default=200, help="cube pruning pops per cell (default: 200)")
    parser.add_argument("--seed", type=int, default=0, help="pair sampling seed (default: 0)")
    parser.add_argument("--src-lang", default="de")
    parser.add_argument("--tgt-lang", default="en")
    parser.add_argument("--output", metavar="FILE", help="weights file (default: DIR/weights.KIND)")


def run(args):
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
    sources, references = read_tuning_set(Path(args.src), Path(args.tgt), translator.tokenize,
                                          lambda text: preprocess(text, args.tgt_lang), args.lines, args.max_words)
    if not sources:
        raise ClirplugError(f"{args.src}: no usable tuning sentences")
    translator.restrict(sources)
    decoder = translator.decoder

    def decode(weights):
        decoder.set_weights(weights)
        return [decoder.translate(tokens, args.nbest, unique=True)
                for tokens in tqdm(sources, desc="decode", unit="sentence", file=sys.stderr, leave=False)]

    output = Path(args.output) if args.output else Path(args.model) / f"weights.{args.kind}"

    def save(best, history):
        bleu = max(h["bleu"] for h in history)
        write_weights(best, output, f"PRO (Hopkins & May 2011) on {len(sources)} sentences of {args.src}: "
                                    f"tuning BLEU {bleu:.2f} after {len(history)} decoding passes, seed {args.seed}, "
                                    f"pop limit {args.pop_limit}, unique {args.nbest}-best")

    _, history = pro(decode, references, DEFAULT_WEIGHTS, iterations=args.iterations, seed=args.seed,
                        log=lambda message: print(message, file=sys.stderr), checkpoint=save)
    print(f"wrote {output} (tuning BLEU {max(h['bleu'] for h in history):.2f})", file=sys.stderr)


def read_tuning_set(src_path, tgt_path, tokenize_src, tokenize_tgt, lines: int, max_words: int):
    """The first ``lines`` line pairs with 1..``max_words`` source tokens, tokenized."""
    from clirplug.errors import ClirplugError

    try:
        src = src_path.read_text(encoding="utf-8").splitlines()
        tgt = tgt_path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ClirplugError(f"cannot read the tuning bitext: {error}") from error
    if len(src) != len(tgt):
        raise ClirplugError(f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}")
    sources, references = [], []
    for f, e in zip(src, tgt):
        tokens = tokenize_src(f)
        if 0 < len(tokens) <= max_words and e.strip():
            sources.append(tokens)
            references.append(tokenize_tgt(e))
            if len(sources) == lines:
                break
    return sources, references
