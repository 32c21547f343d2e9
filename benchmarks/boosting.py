"""Boosting benchmark on manclir-de: training time and peak memory per bag, collisions, dev quality; prints markdown.

Usage: ``nice .venv/bin/python benchmarks/boosting.py [--data ../shared/data/manclir-de]
[--bags 2] [--iterations 1000] [--bits 30] [--field title] [--beta 0.2] [--jobs 2]``

Trains ``clirplug train boost``'s model on the train split (topics and qrels), with beta
fixed (``--beta``) or tuned on 20% of the train topics held out (``--beta tune``), then
scores the whole collection for the dev topics (the inverted-index search of
``clirplug rerank --method boost`` without candidates) and reports MAP, nDCG@10, P@10
and PRES@1000 on dev. Per bag: wall-clock seconds and the peak resident memory of the
worker process (one fresh process per bag), the number of distinct triples, candidate
features and non-zeros of the P and M incidence matrices.
"""

import argparse
import json
import time
from pathlib import Path

import pandas as pd

from clirplug.atomic import atomic_open
from clirplug.boost import BoostModel, Collection, train, tune_beta
from clirplug.corpus import read_corpus
from clirplug.eval.measures import evaluate
from clirplug.io.qrels import read_qrels
from clirplug.io.runs import write_run
from clirplug.io.topics import read_topics, topic_field
from clirplug.rerank.config import BETA_GRID, BoostConfig

REPO = Path(__file__).resolve().parents[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "manclir-de"))
    parser.add_argument("--bags", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--bits", type=int, default=30)
    parser.add_argument("--order", type=int, default=2)
    parser.add_argument("--field", default="title")
    parser.add_argument("--doc-tokens", type=int, default=300)
    parser.add_argument("--triples-per-query", type=int, default=10)
    parser.add_argument("--beta", default="tune", help="a number, or 'tune' (20%% of train topics held out)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--save", help="also write the model here")
    parser.add_argument("--model", help="skip training: evaluate this saved model on dev")
    parser.add_argument("--query-field", help="topic field of the evaluated queries (default: the training field)")
    parser.add_argument("--run", help="also write the dev run (whole-collection search) here")
    parser.add_argument("--heldout-run", help="also write the run of the held-out train topics here (and their qrels"
                                              " beside it, + '.qrels'), to tune fusion weights on")
    args = parser.parse_args()
    data = Path(args.data)
    config = BoostConfig(order=args.order, bits=args.bits, iterations=args.iterations, bags=args.bags,
                         triples_per_query=args.triples_per_query, doc_tokens=args.doc_tokens, field=args.field).check()
    loaded = BoostModel.load(args.model) if args.model else None
    if loaded is not None:
        config = loaded.config
    start = time.perf_counter()
    collection = Collection.from_corpus(read_corpus(data / "corpus.jsonl"), config.order, config.doc_tokens)
    read_seconds = time.perf_counter() - start
    topics, qrels = read_topics(data / "topics.train.jsonl"), read_qrels(data / "qrels.train.txt")
    held = []
    if args.beta == "tune":
        import numpy as np

        order = np.random.default_rng([config.seed, 2]).permutation(len(topics))
        held = [topics[i] for i in sorted(order[: round(0.2 * len(topics))])]
    if loaded is not None:
        model, train_seconds = loaded, None
        beta_table = [tuple(row) for row in model.stats.get("beta_tuning", {}).get("map", [])]
        if model.stats.get("training_queries") != len(topics) - len(held):
            raise SystemExit(f"{args.model}: not trained without the 20% of train topics this script holds out")
    else:
        start = time.perf_counter()
        model = train(topics, qrels, collection, config, jobs=args.jobs, holdout=[t.id for t in held])
        train_seconds = time.perf_counter() - start
        if held:
            beta_table = tune_beta(model, held, qrels, collection, BETA_GRID)
            model.stats["beta_tuning"] = {"held_out_topics": len(held), "map": beta_table}
        else:
            model.beta, beta_table = float(args.beta), []
    query_field = args.query_field or config.field
    if args.save:
        model.save(args.save)
    if args.heldout_run:  # the held-out train topics were never boosting triples: fusion weights are tuned on them
        write_run(model.search(held, collection, field=query_field, depth=1000), args.heldout_run, tag="boost")
        held_ids = {t.id for t in held}
        held_qrels = qrels[qrels["qid"].isin(held_ids)]
        with atomic_open(args.heldout_run + ".qrels") as out:
            out.writelines(f"{q} 0 {d} {r}\n" for q, d, r in zip(held_qrels["qid"], held_qrels["docid"],
                                                                  held_qrels["relevance"]))
    dev_topics, dev_qrels = read_topics(data / "topics.dev.jsonl"), read_qrels(data / "qrels.dev.txt")
    start = time.perf_counter()
    run = model.search(dev_topics, collection, field=query_field, depth=1000)
    search_seconds = time.perf_counter() - start
    if args.run:
        write_run(run, args.run, tag="boost")
    scores = evaluate(dev_qrels, {"boost": run}, ["MAP", "nDCG@10", "P@10", "PRES@1000"])
    stats = model.stats

    print(f"Config: `{json.dumps({k: v for k, v in vars(config).items()})}`, beta = {model.beta:g}"
          f" ({'from ' + args.model if args.model else 'tuned on ' + str(len(held)) + ' held-out train topics' if held else 'fixed'}),"
          f" queries: {query_field},"
          f" jobs = {args.jobs}\n")
    print(f"- collection: {len(collection.docids)} documents, {len(collection.strings)} target n-grams,"
          f" read in {read_seconds:.0f} s")
    timing = f"{train_seconds:.0f} s wall-clock" if train_seconds is not None else "time: see the training run"
    print(f"- training: {stats['training_queries']} topics, {stats['triples']} triples; {len(model.features)}"
          f" features in the averaged model; {timing} for {config.bags} bags")
    print(f"- hashing (b = {config.bits}): {stats['distinct_pairs']} distinct (source, target) n-gram pairs in the"
          f" training (q, d) pairs occupy {stats['occupied_buckets']} buckets; {stats['colliding_pairs']} pairs"
          f" ({100 * stats['colliding_pairs'] / max(stats['distinct_pairs'], 1):.2f}%) share a bucket")
    if beta_table:
        print("- beta on held-out train topics (MAP): " + ", ".join(f"{b:g}: {m:.4f}" for b, m in beta_table))
    print(f"- dev search (whole collection, {len(dev_topics)} topics): {search_seconds:.0f} s\n")
    print("| bag | distinct triples | candidate features | non-zeros P+M | features selected | seconds | peak RSS (MB) |")
    print("|---|---|---|---|---|---|---|")
    for bag in stats["bags"]:
        print(f"| {bag['bag']} | {bag['triples']} | {bag['active_features']} | {bag['nonzeros']} | {bag['selected']}"
              f" | {bag['seconds']} | {bag['peak_rss_mb']:.0f} |")
    print("\n| dev measure | value |\n|---|---|")
    for measure, value in zip(scores["measure"], scores["value"]):
        print(f"| {measure} | {value:.4f} |")
    print("\nTop of the table (t = first iteration chosen, w = bag-averaged weight):\n\n```")
    print("\n".join(model.table(20)))
    print("```", flush=True)  # the slow ablation below (a second whole-collection pass) cannot lose these figures
    # the two parts of f on their own: f = learned + beta * identity
    parts = {t.id: model.score_parts(topic_field(t, query_field), collection) for t in dev_topics}
    ablation = {name: pd.concat([pd.DataFrame({"qid": qid, "docid": collection.docids, "score": pick(learned, identity)})
                                 .nlargest(1000, "score", keep="first") for qid, (learned, identity) in parts.items()])
                for name, pick in (("learned pairs only (beta = 0)", lambda a, b: a), ("identity features only", lambda a, b: b))}
    ablation_scores = evaluate(dev_qrels, ablation, ["MAP", "PRES@1000"])
    print("\n| dev run | MAP | PRES@1000 |\n|---|---|---|")
    values = {(r, m): v for r, m, v in zip(scores["run"], scores["measure"], scores["value"])}
    print(f"| Boost, beta = {model.beta:g} | {values['boost', 'MAP']:.4f} | {values['boost', 'PRES@1000']:.4f} |")
    values = {(r, m): v for r, m, v in zip(ablation_scores["run"], ablation_scores["measure"], ablation_scores["value"])}
    for name in ablation:
        print(f"| {name} | {values[name, 'MAP']:.4f} | {values[name, 'PRES@1000']:.4f} |")


if __name__ == "__main__":
    main()
