"""BOW-FD on a collection's dev split: the paper's Table 1 and Table 2 (-LM) and reranking speed.

Usage (each BOW-FD weights file comes from `clirplug train bowfd` on the train split):

    nice .venv/bin/python benchmarks/bowfd.py --model models/manclir-de --index indexes/manclir-de \\
        --collection ../shared/data/manclir-de --dt runs/manclir-de.dev.dt.{field}.trec \\
        --psq runs/manclir-de.dev.psq.{field}.trec [--v-weights W] [--ltr-weights W] [--lex-weights W] \\
        [--fields title desc] [--no-lm] [--out runs]

Candidates are the DT run's top ``--depth`` documents (``--candidates`` to choose another run).
Writes ``<out>/<collection>.dev.bowfd*.<field>.trec`` and prints markdown: MAP, nDCG and
PRES@1000 with markers for p < 0.05 (paired randomization test) against DT (d) and PSQ (p);
the -LM table (BOW-FD and DT decoded without the LM); the reranking time per query once the
forests exist (median and p90 over queries, scoring only) and the share of candidates that
pre-filtering skips.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from clirplug.eval.measures import evaluate
from clirplug.eval.significance import randomization_test
from clirplug.io.qrels import read_qrels
from clirplug.io.runs import read_run, sort_run, write_run
from clirplug.io.topics import read_topics, topic_field
from clirplug.lucene.reader import LuceneIndex
from clirplug.mt.translator import Translator
from clirplug.rerank.bowfd import BowFD, BowfdConfig, BowfdWeights, NoLMForests

MEASURES = ["MAP", "nDCG", "PRES@1000"]


def rerank_timed(model, topics, candidates, depth, field):
    """BOW-FD over every topic; the run frame, scoring seconds per topic and pre-filter counts."""
    import pandas as pd
    from tqdm import tqdm

    ranked = sort_run(candidates)
    groups = {qid: frame["docid"].tolist()[:depth] for qid, frame in ranked.groupby("qid", sort=False)}
    rows, seconds, skipped, total, prepare = [], [], 0, 0, []
    for topic in tqdm(topics, desc=f"BOW-FD {field}", unit=" topics", file=sys.stderr):
        if topic.id not in groups:
            continue
        docs, docids = model.doc_rows(groups[topic.id])
        start = time.perf_counter()
        sentences = model.prepare(topic_field(topic, field), field)
        prepare.append(time.perf_counter() - start)
        if not sentences or not docids:
            continue
        start = time.perf_counter()
        scores, results = model.score(sentences, docs)
        seconds.append((time.perf_counter() - start, len(docids)))
        skipped += sum(int((~r.active).sum()) for r in results)
        total += len(docids) * len(results)
        rows.extend(zip([topic.id] * len(docids), docids, scores.tolist()))
    return sort_run(pd.DataFrame(rows, columns=["qid", "docid", "score"])), seconds, skipped / max(total, 1), prepare


def dt_from_forests(translator, forests, topics, field, index):
    """DT with the 1-best of the given forests (BM25 k1=0.9 b=0.4, 1000 hits, as `clirplug search --method dt`)."""
    from clirplug.lucene.search import bm25_search
    from clirplug.mt.kbest import kbest

    queries = {}
    for topic in topics:
        words = []
        for tokens in translator.topic_sentences(topic, field):
            forest = forests.forest(tokens)
            best = kbest(forest, translator.weights, 1)
            if best:
                words.extend(forest.derivation_yield(best[0])[0])
        queries[topic.id] = " ".join(words)
    return bm25_search(index, queries, hits=1000, progress=False)


def table(qrels, runs, baselines):
    """Markdown rows: each run's measures with markers against the baselines (name -> marker)."""
    frame = evaluate(qrels, runs, MEASURES, per_query=True)
    per_query = frame[frame["qid"] != "all"].pivot_table(index=["run", "qid"], columns="measure", values="value")
    means = frame[frame["qid"] == "all"].pivot(index="run", columns="measure", values="value")
    lines = ["| run | " + " | ".join(MEASURES) + " |", "|---|" + "---|" * len(MEASURES)]
    for name in runs:
        cells = []
        for measure in MEASURES:
            marks = ""
            for base, mark in baselines.items():
                if base != name and base in runs:
                    p = randomization_test(per_query.loc[name][measure].to_numpy(), per_query.loc[base][measure].to_numpy())
                    marks += mark if p < 0.05 else ""
            cells.append(f"{means.loc[name, measure]:.4f}{('^' + marks) if marks else ''}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--kind", default="hiero")
    parser.add_argument("--index", required=True)
    parser.add_argument("--collection", default="../shared/data/manclir-de")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--dt", help="DT run pattern with {field} (default: DT from the 1-best of the same forests)")
    parser.add_argument("--psq", help="PSQ run pattern with {field}")
    parser.add_argument("--candidates", help="candidate run pattern with {field} (default: --dt)")
    parser.add_argument("--v-weights", help="weights of BOW-FD with v chosen on train (`train bowfd --no-ltr`)")
    parser.add_argument("--v", type=float, default=None, help="v without a weights file (default: 1.6)")
    parser.add_argument("--ltr-weights")
    parser.add_argument("--lex-weights")
    parser.add_argument("--fields", nargs="+", default=["title", "desc"])
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--beam", type=int, default=None, help="incoming edges considered per node (default: all)")
    parser.add_argument("--no-lm", action="store_true", help="also the -LM ablation (Table 2)")
    parser.add_argument("--out", default="runs")
    parser.add_argument("--max-topics", type=int, help="a seeded sample of this many topics (all by default)")
    args = parser.parse_args()
    collection = Path(args.collection)
    topics = read_topics(collection / f"topics.{args.split}.jsonl")
    qrels = read_qrels(collection / f"qrels.{args.split}.txt")
    if args.max_topics and args.max_topics < len(topics):
        keep = np.random.default_rng(0).choice(len(topics), args.max_topics, replace=False)
        topics = [topics[i] for i in sorted(keep)]
        qrels = qrels[qrels["qid"].isin({t.id for t in topics})]
    translator = Translator(args.model, kind=args.kind)
    for field in args.fields:  # load only the grammar rules these topics can use (when a forest is missing)
        translator.restrict_topics(topics, field)
    index = LuceneIndex(args.index, progress=False)
    base = BowfdWeights.load(args.v_weights) if args.v_weights else BowfdWeights(smt={}, v=args.v or 1.6)
    base.smt = {**translator.weights, **base.smt}
    systems = {"BOW-FD": base}
    for name, path in (("BOW-FD+LTR", args.ltr_weights), ("BOW-FD+LEX+LTR", args.lex_weights)):
        if path:
            weights = BowfdWeights.load(path)
            weights.smt = {**translator.weights, **weights.smt}
            systems[name] = weights
    stem = collection.name
    print(f"{stem} {args.split}: {len(topics)} topics; candidates: top {args.depth} of "
          f"{Path(args.candidates or args.dt or 'DT').name}; v = {base.v:g}; BM25 k1 = 1.2, b = 0.75 (rsj idf); "
          f"beam {args.beam or 'none'}\n")
    for field in args.fields:
        if args.dt:
            runs = {"DT": read_run(args.dt.format(field=field))}
        else:
            runs = {"DT": dt_from_forests(translator, translator, topics, field, args.index)}
            write_run(runs["DT"], Path(args.out) / f"{stem}.{args.split}.dt-forest.{field}.trec", tag="dt-forest")
        if args.psq:
            runs["PSQ"] = read_run(args.psq.format(field=field))
        candidates = read_run(args.candidates.format(field=field)) if args.candidates else runs["DT"]
        timing = None
        for name, weights in systems.items():
            model = BowFD(translator, index, weights, BowfdConfig(field=field, beam=args.beam))
            frame, seconds, skipped, prepare = rerank_timed(model, topics, candidates, args.depth, field)
            runs[name] = frame
            write_run(frame, Path(args.out) / f"{stem}.{args.split}.{name.lower().replace('+', '-')}.{field}.trec",
                      tag=name)
            if timing is None:
                timing = (seconds, skipped, prepare)
        print(f"### {field}\n")
        print(table(qrels, runs, {"DT": "d", "PSQ": "p"}) + "\n")
        seconds, skipped, prepare = timing
        per_query = np.array([s for s, _ in seconds])
        full = np.array([s for s, n in seconds if n >= min(args.depth, 1000)])
        print(f"BOW-FD scoring time per query ({len(per_query)} queries, median {np.median([n for _, n in seconds]):.0f} "
              f"candidates): median {np.median(per_query):.3f} s, p90 {np.percentile(per_query, 90):.3f} s"
              + (f"; queries with {min(args.depth, 1000)} candidates ({len(full)}): median {np.median(full):.3f} s, "
                 f"p90 {np.percentile(full, 90):.3f} s" if len(full) else "")
              + f". Pre-filtering skips {100 * skipped:.1f}% of (sentence, candidate) passes. "
              f"Forest loading and term mapping per query: median {np.median(prepare):.3f} s.\n")
        if args.no_lm:
            forests = NoLMForests(translator)
            ablation = {"DT -LM": dt_from_forests(translator, forests, topics, field, args.index)}
            model = BowFD(forests, index, base, BowfdConfig(field=field))
            ablation["BOW-FD -LM"] = rerank_timed(model, topics, candidates, args.depth, field)[0]
            write_run(ablation["BOW-FD -LM"], Path(args.out) / f"{stem}.{args.split}.bowfd-nolm.{field}.trec", tag="bowfd-nolm")
            print(f"-LM ({field}; candidates as above):\n")
            print(table(qrels, {**runs, **ablation}, {"DT": "d", "PSQ": "p"}) + "\n")


if __name__ == "__main__":
    main()
