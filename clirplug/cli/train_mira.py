"""``clirplug train mira``: rerank the decoder's n-best query translations for retrieval (Nikoulina et al. 2012)."""

HELP = "MIRA weights that rerank the decoder's n-best query translations by retrieval AP (for --method dt-mira)"


def add_arguments(parser):
    from clirplug.bm25 import ANSERINI_B, ANSERINI_K1
    from clirplug.rerank.config import MIRA_C_GRID, MIRA_EPOCHS, MIRA_FOLDS, MIRA_NBEST

    parser.add_argument("--model", required=True, metavar="DIR", help="translation model folder (see docs/models.md)")
    parser.add_argument("--kind", default="flat", choices=["hiero", "flat"], help="grammar of the model (default: flat)")
    parser.add_argument("--index", required=True, metavar="DIR", help="Lucene index of the target collection")
    parser.add_argument("--topics", required=True, metavar="FILE", help="training topics (the train split)")
    parser.add_argument("--qrels", required=True, metavar="FILE", help="their relevance judgements")
    parser.add_argument("--field", default="title", choices=["title", "desc", "narr"],
                        help="query field; not title: sentence by sentence, as DT (default: title)")
    parser.add_argument("--output", required=True, metavar="FILE", help="model file to write (JSON)")
    parser.add_argument("--nbest", type=int, default=MIRA_NBEST, help=f"candidates per sentence (default: {MIRA_NBEST})")
    parser.add_argument("--C", dest="grid", type=float, nargs="+", default=list(MIRA_C_GRID), metavar="C",
                        help="clip values tried by cross-validation; 0 = the decoder's 1-best "
                             f"(default: {' '.join(f'{c:g}' for c in MIRA_C_GRID)})")
    parser.add_argument("--epochs", type=int, default=MIRA_EPOCHS, help=f"passes over the queries (default: {MIRA_EPOCHS})")
    parser.add_argument("--folds", type=int, default=MIRA_FOLDS, help=f"cross-validation folds (default: {MIRA_FOLDS})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the query orders and folds (default: 0)")
    parser.add_argument("--stopwords", metavar="FILE", help="target stopwords removed before search (as DT's --stopwords)")
    parser.add_argument("--hits", type=int, default=1000, help="search depth AP is computed over (default: 1000)")
    parser.add_argument("--k1", type=float, default=ANSERINI_K1, help=f"BM25 k1 (default: {ANSERINI_K1})")
    parser.add_argument("--b", type=float, default=ANSERINI_B, help=f"BM25 b (default: {ANSERINI_B})")
    parser.add_argument("--searches", metavar="FILE",
                        help="keep the AP of every candidate query searched here (gzipped JSON) and reuse it when the "
                             "qrels, index and search settings match: retraining then runs no search (features are "
                             "always recomputed)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args):
    from clirplug.atomic import check_output
    from clirplug.bm25 import check_bm25
    from clirplug.errors import ClirplugError
    from clirplug.io.qrels import read_qrels
    from clirplug.io.topics import read_topics
    from clirplug.lucene.reader import LuceneIndex
    from clirplug.lucene.search import Bm25Searcher
    from clirplug.mt.translator import Translator
    from clirplug.rerank.mira import train
    from clirplug.stopwords import read_stopwords

    for name, low in (("nbest", 2), ("epochs", 1), ("folds", 2), ("hits", 1)):
        if getattr(args, name) < low:
            raise ClirplugError(f"--{name} must be at least {low}, got {getattr(args, name)}")
    if any(not 0 <= c < float("inf") for c in args.grid):
        raise ClirplugError(f"--C values must be finite and non-negative, got {' '.join(map(str, args.grid))}")
    check_bm25(args.k1, args.b)
    check_output(args.output)
    if args.searches:
        check_output(args.searches, "--searches")
    topics, qrels = read_topics(args.topics), read_qrels(args.qrels)
    stopwords = read_stopwords(args.stopwords) if args.stopwords else ()
    translator = Translator(args.model, kind=args.kind)
    searcher = Bm25Searcher(args.index, args.k1, args.b)
    index = LuceneIndex(args.index, progress=not args.quiet)
    try:
        model = train(topics, qrels, translator, searcher, index, args.field, args.nbest, args.grid, args.epochs,
                      args.folds, args.seed, stopwords, args.hits, progress=not args.quiet,
                      searches_path=args.searches)
    finally:
        searcher.close()
        index.close()
    model.save(args.output)
    s = model.stats
    print(f"{s['topics']} topics, {s['instances']} instances ({s['informative_instances']} with differing APs), "
          f"{s['distinct_queries']} distinct queries, {s['searches']} searched now")
    print("cross-validation (C: mean held-out AP ± paired SE to the best): " + ", ".join(
        f"{c:g}: {v:.4f} ± {e:.4f}" for (c, v), e in zip(s["cross_validation"], s["cross_validation_se"])))
    print(f"C = {s['C']:g} (one-standard-error rule; the argmax is C = {s['C_argmax']:g}, {s['cv_ap_argmax']:.4f}); "
          f"train mean AP: decoder 1-best {s['train_ap_decoder_1best']:.4f}, reranked {s['train_ap_reranked']:.4f}, "
          f"oracle {s['train_ap_oracle']:.4f}")
    print(f"wrote {args.output}")
