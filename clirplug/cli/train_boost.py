"""``clirplug train boost``: learn a bagged RankBoost table of bilingual n-gram pairs (Sokolov et al. 2013)."""

HELP = "bagged RankBoost over hashed (German n-gram, English n-gram) pairs, from relevance judgements"


def add_arguments(parser):
    from clirplug.rerank.config import BETA_GRID, BoostConfig

    d = BoostConfig()
    parser.add_argument("--topics", required=True, metavar="FILE", help="training topics (the train split)")
    parser.add_argument("--qrels", required=True, metavar="FILE", help="their relevance judgements")
    parser.add_argument("--corpus", required=True, metavar="PATH", help="the English collection (JSONL file or folder)")
    parser.add_argument("--output", required=True, metavar="FILE", help="model file to write (.npz)")
    parser.add_argument("--field", default=d.field, choices=["title", "desc", "narr"], help=f"query field (default: {d.field})")
    parser.add_argument("--order", type=int, default=d.order, choices=[1, 2], help=f"n-gram order: 1 = Boost-1g, 2 = Boost-2g (default: {d.order})")
    parser.add_argument("--bits", type=int, default=d.bits, help=f"hash size b: 2**b buckets (default: {d.bits})")
    parser.add_argument("--iterations", type=int, default=d.iterations, help=f"T: features selected per bag (default: {d.iterations})")
    parser.add_argument("--bags", type=int, default=d.bags, help=f"S: bootstrap samples averaged (default: {d.bags})")
    parser.add_argument("--triples-per-query", type=int, default=d.triples_per_query,
                        help=f"training triples drawn: this many times the number of training topics (default: {d.triples_per_query})")
    parser.add_argument("--epsilon", type=float, default=d.epsilon, help=f"weight smoothing (default: {d.epsilon:g})")
    parser.add_argument("--doc-tokens", type=int, default=d.doc_tokens,
                        help=f"document tokens used, from the start of the page (default: {d.doc_tokens})")
    parser.add_argument("--min-triples", type=int, default=d.min_triples,
                        help=f"candidate features must occur in this many triples of a bag (default: {d.min_triples})")
    parser.add_argument("--seed", type=int, default=d.seed, help=f"seed of triple and bootstrap sampling (default: {d.seed})")
    parser.add_argument("--jobs", type=int, default=2, help="bags trained in parallel (default: 2)")
    beta = parser.add_mutually_exclusive_group()
    beta.add_argument("--beta", type=float, default=None, help="fixed identity-feature weight (no tuning, all topics train)")
    beta.add_argument("--beta-grid", type=float, nargs="+", default=list(BETA_GRID), metavar="B",
                      help=f"beta values tried on held-out train topics (default: {' '.join(f'{b:g}' for b in BETA_GRID)})")
    parser.add_argument("--holdout", type=float, default=0.2, help="share of train topics held out to tune beta (default: 0.2)")
    parser.add_argument("--show", type=int, default=20, help="print the first N features of the table (default: 20)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args):
    import json

    import numpy as np

    from clirplug.atomic import check_output
    from clirplug.corpus import read_corpus
    from clirplug.errors import ClirplugError
    from clirplug.io.qrels import read_qrels
    from clirplug.io.topics import read_topics
    from clirplug.rerank.boosting import Collection, train, tune_beta
    from clirplug.rerank.config import BoostConfig

    config = BoostConfig(order=args.order, bits=args.bits, iterations=args.iterations, bags=args.bags,
                         triples_per_query=args.triples_per_query, epsilon=args.epsilon, doc_tokens=args.doc_tokens,
                         field=args.field, min_triples=args.min_triples, seed=args.seed).check()
    if args.jobs < 1:
        raise ClirplugError(f"--jobs must be at least 1, got {args.jobs}")
    check_output(args.output)
    tuning = args.beta is None
    if tuning and not 0 < args.holdout < 1:
        raise ClirplugError(f"--holdout must lie strictly between 0 and 1, got {args.holdout}")
    topics, qrels = read_topics(args.topics), read_qrels(args.qrels)
    judged = set(qrels["qid"])
    topics = [topic for topic in topics if topic.id in judged]
    held = []
    if tuning:
        order = np.random.default_rng([config.seed, 2]).permutation(len(topics))
        held = [topics[i] for i in sorted(order[: max(1, int(round(args.holdout * len(topics))))])]
    collection = Collection.from_corpus(read_corpus(args.corpus), config.order, config.doc_tokens, config.hash_seed,
                                        progress=not args.quiet)
    model = train(topics, qrels, collection, config, jobs=args.jobs, progress=not args.quiet,
                  holdout=[t.id for t in held])
    if tuning:
        table = tune_beta(model, held, qrels, collection, args.beta_grid, progress=not args.quiet)
        model.stats["beta_tuning"] = {"held_out_topics": len(held), "map": table}
        print("beta on held-out train topics: " + ", ".join(f"{b:g}: MAP {m:.4f}" for b, m in table))
    else:
        model.beta = args.beta
    model.save(args.output)
    stats = model.stats
    print(f"wrote {args.output}: {len(model.features)} features, beta = {model.beta:g}; "
          f"{stats['distinct_pairs']} distinct training pairs in {stats['occupied_buckets']} buckets "
          f"({stats['colliding_pairs']} pairs share a bucket)")
    for bag in stats["bags"]:
        print("bag " + json.dumps(bag))
    if args.show:
        print("\n".join(model.table(args.show)))
