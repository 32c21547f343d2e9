"""Boosting speed: the compiled kernels against the numpy reference code, on a subset of manclir-de; prints markdown.

Usage: ``nice .venv/bin/python benchmarks/boost_speed.py --model models/manclir-de/boost.boost.desc.npz
[--data ../shared/data/manclir-de] [--topics 160] [--iterations 300] [--score-topics 20]``

Both code paths of :mod:`clirplug.boost` run in fresh processes (one per path and task, for
their peak memory), with the options of ``--model`` (a trained model: its field, order, bits,
seeds): training is one bag as ``clirplug train boost`` trains it (triples of the first
``--topics`` judged train topics, their bootstrap sample, the P/M incidence, ``--iterations``
RankBoost steps) followed by the collision and unhashing statistics of the whole model
(``training_pairs``); scoring is the whole-collection search of the first ``--score-topics``
dev topics with ``--model``. Reported: wall and CPU seconds, training seconds per 1,000
iterations, scoring latency per topic (median, p90), peak resident memory, and whether the two
paths give the same chosen features, weights and runs (sha256).
"""

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from clirplug import boost

REPO = Path(__file__).resolve().parents[1]


def _collection(data, config):
    from clirplug.corpus import read_corpus

    return boost.Collection.from_corpus(read_corpus(data / "corpus.jsonl"), config.order, config.doc_tokens,
                                        config.hash_seed)


def _train(args, model):
    from clirplug.io.qrels import read_qrels
    from clirplug.io.topics import read_topics, topic_field

    config = model.config
    collection = _collection(args.data, config)
    qrels = read_qrels(args.data / "qrels.train.txt")
    judgements = {}
    for qid, docid, relevance in zip(qrels["qid"], qrels["docid"], qrels["relevance"]):
        if docid in collection.row:
            judgements.setdefault(qid, {})[collection.row[docid]] = int(relevance)
    queries = [t for t in read_topics(args.data / "topics.train.jsonl")
               if any(r > 0 for r in judgements.get(t.id, {}).values())][:args.topics]
    grams = [boost.query_ngrams(topic_field(t, config.field), config.order, config.src_lang) for t in queries]
    hashes = [boost.ngram_hashes(g, config.hash_seed) for g in grams]
    q, pos, neg, d0 = boost.sample_triples(judgements, [t.id for t in queries], collection.docids,
                                           config.triples_per_query * len(queries), np.random.default_rng([config.seed, 0]))
    sample = np.random.default_rng([config.seed, 1, 0]).integers(len(q), size=len(q))
    bag = boost.merge_duplicates(q[sample], pos[sample], neg[sample], d0[sample])
    few = slice(0, 3)  # compile (or load) the kernels before the clock starts
    boost.RankBoost(*boost.pair_matrices(hashes, collection, q[few], pos[few], neg[few], config.bits, config.hash_seed)[:2],
                    d0[few]).fit(2)
    boost.training_pairs(grams, hashes, collection, q[few], pos[few], np.zeros(1, np.int64), config.bits, config.hash_seed)
    times = {}
    start = (time.perf_counter(), time.process_time())

    def lap(name):
        nonlocal start
        now = (time.perf_counter(), time.process_time())
        times[name] = (now[0] - start[0], now[1] - start[1])
        start = now

    positive, negative, features = boost.pair_matrices(hashes, collection, *bag[:3], config.bits, config.hash_seed,
                                                       config.min_triples)
    lap("incidence")
    booster = boost.RankBoost(positive, negative, bag[3], config.epsilon)
    chosen, weights = booster.fit(args.iterations)
    lap("rankboost")
    del booster, positive, negative
    boost.training_pairs(grams, hashes, collection, np.concatenate([q, q]), np.concatenate([pos, neg]),
                         np.unique(features[chosen]), config.bits, config.hash_seed)
    lap("training pairs")
    digest = hashlib.sha256(features[chosen].tobytes() + weights.tobytes()).hexdigest()
    return {"times": times, "triples": len(bag[0]), "features": len(features), "steps": len(chosen), "sha256": digest}


def _score(args, model):
    from clirplug.io.topics import read_topics

    collection = _collection(args.data, model.config)
    topics = read_topics(args.data / "topics.dev.jsonl")[:args.score_topics]
    model.search(topics[:1], collection)  # compiles (or loads) the kernels
    latencies, frames = [], []
    for topic in topics:
        start = time.perf_counter()
        frames.append(model.search([topic], collection))
        latencies.append(time.perf_counter() - start)
    text = "".join(f"{r.qid} {r.docid} {r.rank} {r.score!r}\n" for f in frames for r in f.itertuples())
    return {"latencies": latencies, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def worker(args):
    if args.worker[0] == "reference":
        boost._kernels = lambda: None
    model = boost.BoostModel.load(args.model)
    result = (_train if args.worker[1] == "train" else _score)(args, model)
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "manclir-de")
    parser.add_argument("--model", required=True, help="a trained boosting model (its options and weights are used)")
    parser.add_argument("--topics", type=int, default=160, help="judged train topics whose triples train one bag")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--score-topics", type=int, default=20)
    parser.add_argument("--paths", nargs="+", default=["reference", "kernels"], choices=["reference", "kernels"])
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    results = {}
    for path in args.paths:
        for task in ("train", "score"):
            command = [sys.executable, __file__, "--worker", path, task, "--data", str(args.data), "--model",
                       args.model, "--topics", str(args.topics), "--iterations", str(args.iterations),
                       "--score-topics", str(args.score_topics)]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(done.stderr)
            results[path, task] = json.loads(done.stdout.splitlines()[-1])
    print(f"{args.topics} train topics ({results[args.paths[0], 'train']['triples']} distinct triples, "
          f"{results[args.paths[0], 'train']['features']} candidate features), {args.iterations} iterations; "
          f"{args.score_topics} dev topics scored against the whole collection\n")
    print("| code | incidence s (CPU) | RankBoost s / 1,000 it. (CPU) | training pairs s (CPU) | training peak MB "
          "| scoring ms / topic median | p90 | scoring peak MB |")
    print("|---|---|---|---|---|---|---|---|")
    for path in args.paths:
        train, score = results[path, "train"], results[path, "score"]
        times = train["times"]
        per_1000 = [1000 * t / max(train["steps"], 1) for t in times["rankboost"]]
        ms = 1000 * np.array(score["latencies"])
        print(f"| {path} | {times['incidence'][0]:.1f} ({times['incidence'][1]:.1f}) "
              f"| {per_1000[0]:.1f} ({per_1000[1]:.1f}) "
              f"| {times['training pairs'][0]:.1f} ({times['training pairs'][1]:.1f}) | {train['peak_mb']:.0f} "
              f"| {np.median(ms):.0f} | {np.percentile(ms, 90):.0f} | {score['peak_mb']:.0f} |")
    for task in ("train", "score"):
        digests = {results[path, task]["sha256"] for path in args.paths}
        print(f"\n{task}: {'identical' if len(digests) == 1 else 'DIFFERENT'} outputs ({', '.join(sorted(digests))[:20]}…)")


if __name__ == "__main__":
    main()
