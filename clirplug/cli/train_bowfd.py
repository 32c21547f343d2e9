"""``clirplug train bowfd``: the IR default weight v by grid search, then pairwise learning to rank (Hieber & Riezler 2015)."""

HELP = "BOW-FD weights: v by grid search on held-out train topics, then pairwise LTR (hinge, Adadelta, IPM)"


def add_arguments(parser):
    from clirplug.bm25 import BOWFD_B, BOWFD_K1

    parser.add_argument("--model", required=True, nargs="+", metavar="DIR",
                        help="translation model folder (see docs/models.md); several, one per --topics file, to "
                             "translate each file's topics by its own model (cross-fitting)")
    parser.add_argument("--kind", default="hiero", choices=["hiero", "flat"], help="grammar of the model (default: hiero)")
    parser.add_argument("--index", required=True, metavar="DIR", help="Lucene index of the target collection")
    parser.add_argument("--topics", required=True, nargs="+", metavar="FILE",
                        help="training topics (the train split), or one file per --model")
    parser.add_argument("--qrels", required=True, metavar="FILE", help="their relevance judgements")
    parser.add_argument("--candidates", required=True, metavar="RUN",
                        help="first-stage run on the training topics: negatives and held-out reranking come from it")
    parser.add_argument("--field", default="title", choices=["title", "desc", "narr"], help="query field (default: title)")
    parser.add_argument("--output", required=True, metavar="FILE", help="weights file to write (readable text)")
    parser.add_argument("--v", type=float, default=None, help="fixed IR default weight (no grid search)")
    parser.add_argument("--v-grid", type=float, nargs="+", metavar="V",
                        default=[0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.6, 0.8, 1.2, 1.6, 2.4, 3.2],
                        help="v values tried on the held-out topics (default: 0.025 to 3.2; the paper's range is [0, 3], "
                             "tuned decoder weights with small norms call for small v; a best v at an edge is "
                             "halved or doubled up to 4 times while it improves)")
    parser.add_argument("--no-ltr", action="store_true", help="stop after choosing v (BOW-FD without LTR)")
    parser.add_argument("--lex", action="store_true", help="add the LEX sparse alignment/insertion/deletion features")
    parser.add_argument("--train-smt", action="store_true", help="also train the SMT weights (the paper freezes them)")
    parser.add_argument("--epochs", type=int, default=10, help="maximum epochs (default: 10)")
    parser.add_argument("--patience", type=int, default=3, help="stop after this many epochs without a better held-out MAP")
    parser.add_argument("--negatives", type=int, default=5,
                        help="unjudged top candidates paired with each relevant document (default: 5)")
    parser.add_argument("--depth", type=int, default=100, help="candidates reranked per held-out topic (default: 100)")
    parser.add_argument("--holdout", type=float, default=0.2, help="share of training topics held out (default: 0.2)")
    parser.add_argument("--max-topics", type=int, default=None, help="train on at most this many topics (a seeded sample)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the held-out split and topic sample")
    parser.add_argument("--shards", type=int, default=2,
                        help="shards of the training topics for iterative parameter mixing (default: 2)")
    parser.add_argument("--jobs", type=int, default=2,
                        help="worker processes training the shards; the weights do not depend on it (default: 2)")
    parser.add_argument("--k1", type=float, default=None, help=f"BM25 k1 of the IR features (default: {BOWFD_K1})")
    parser.add_argument("--b", type=float, default=None, help=f"BM25 b of the IR features (default: {BOWFD_B})")
    parser.add_argument("--beam", type=int, default=None, help="incoming edges considered per node (default: all)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args):
    import sys

    import numpy as np
    from tqdm import tqdm

    from clirplug.bm25 import BOWFD_B, BOWFD_K1
    from clirplug.errors import ClirplugError
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run, sort_run
    from clirplug.io.topics import read_topics, topic_field
    from clirplug.lucene.reader import LuceneIndex
    from clirplug.mt.translator import Translator
    from clirplug.rerank.bowfd import (
        DEFAULT_V,
        BowFD,
        BowfdConfig,
        BowfdWeights,
    )
    from clirplug.rerank.bowfd_train import (
        FeatureSpace,
        HeldOut,
        TrainConfig,
        build_query,
        choose_v,
        config_comment,
        train,
        training_documents,
    )

    config = TrainConfig(epochs=args.epochs, patience=args.patience, negatives=args.negatives,
                         train_smt=args.train_smt, shards=args.shards, jobs=args.jobs).check()
    if not 0 <= args.holdout < 1:
        raise ClirplugError(f"--holdout must lie in [0, 1), got {args.holdout}")
    if args.depth < 1:
        raise ClirplugError(f"--depth must be at least 1, got {args.depth}")
    if len(args.model) not in (1, len(args.topics)):
        raise ClirplugError(f"--model names {len(args.model)} folders but --topics {len(args.topics)} files: "
                            "give one model, or one per topics file")
    translators = [Translator(model, kind=args.kind) for model in args.model]
    start = BowfdWeights(smt=dict(translators[0].weights), v=args.v if args.v is not None else DEFAULT_V, lex_enabled=args.lex)
    scoring = BowfdConfig(k1=args.k1 if args.k1 is not None else BOWFD_K1,
                          b=args.b if args.b is not None else BOWFD_B, beam=args.beam, field=args.field).check()
    index = LuceneIndex(args.index, progress=not args.quiet)
    qrels = read_qrels(args.qrels)
    judged = {qid: dict(zip(group["docid"], group["relevance"].astype(int))) for qid, group in qrels.groupby("qid")}
    candidates = {qid: group["docid"].tolist() for qid, group in sort_run(read_run(args.candidates)).groupby("qid")}
    part_of, topics = {}, []
    for part, path in enumerate(args.topics):
        for topic in read_topics(path):
            if topic.id in judged and topic.id in candidates and topic.id not in part_of:
                part_of[topic.id] = part if len(translators) > 1 else 0
                topics.append(topic)
    if not topics:
        raise ClirplugError(f"{' '.join(args.topics)}: no topic has both judgements in {args.qrels} "
                            f"and candidates in {args.candidates}")
    rng = np.random.default_rng(args.seed)
    if args.max_topics and args.max_topics < len(topics):
        topics = [topics[i] for i in sorted(rng.choice(len(topics), args.max_topics, replace=False))]
    models = []
    for part, translator in enumerate(translators):
        translator.restrict_topics([t for t in topics if part_of[t.id] == part], args.field)
        models.append(BowFD(translator, index, start, scoring))
    held_ids = set()
    if args.holdout > 0:
        count = max(1, round(args.holdout * len(topics)))
        held_ids = {topics[i].id for i in rng.permutation(len(topics))[:count]}
    space = FeatureSpace()
    train_queries, held_out = [], []
    for topic in tqdm(topics, desc="forests and BM25", unit=" topics", disable=args.quiet, file=sys.stderr):
        grades = judged[topic.id]
        text = topic_field(topic, args.field)
        if topic.id in held_ids:
            docids = candidates[topic.id][:args.depth]
            query = build_query(models[part_of[topic.id]], topic.id, text, docids,
                                np.array([grades.get(d, 0) for d in docids], float), space)
            if query is not None:
                held_out.append(HeldOut(query, sum(1 for g in grades.values() if g > 0)))
        else:
            docids, relevance = training_documents(candidates[topic.id], grades, config.negatives)
            query = build_query(models[part_of[topic.id]], topic.id, text, docids, relevance, space)
            if query is not None and query.pairs:
                train_queries.append(query)
    comment = {"field": args.field, "k1": scoring.k1, "b": scoring.b, "beam": scoring.beam, "lex": args.lex,
               "train_topics": len(train_queries), "held_out_topics": len(held_out), "depth": args.depth,
               "seed": args.seed}
    if args.v is None:
        if not held_out:
            raise ClirplugError("choosing v needs held-out topics: give --holdout > 0 or a fixed --v")
        table = choose_v(held_out, space, start, args.v_grid, scoring.sentence_depth)
        start.v = max(table, key=lambda row: row[1])[0]  # the first best on ties
        print("v on held-out train topics: " + ", ".join(f"{v:g}: MAP {m:.4f}" for v, m in table))
        comment["v_grid"] = " ".join(f"{v:g}:{m:.4f}" for v, m in table)
    weights = start
    if not args.no_ltr:
        if not train_queries:
            raise ClirplugError("no training topic has a preference pair (relevant documents found in the index)")
        weights, history = train(train_queries, held_out, space, start, config, scoring.sentence_depth,
                                 progress=not args.quiet)
        comment["history"] = " | ".join(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                                 for k, v in record.items()) for record in history)
    weights.save(args.output, comment=config_comment(config, comment))
    print(f"wrote {args.output}: v = {weights.v:g}, {len(weights.ir)} term weights, {len(weights.lex)} LEX weights")
