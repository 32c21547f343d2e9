"""PSQ on manclir-de: tuning on train, quality on dev, latency against Lucene BM25.

Usage:
  .venv/bin/python benchmarks/psq.py tune     # grid on train (MAP), writes runs/psq.<variant>.<field>.params.json
  .venv/bin/python benchmarks/psq.py report   # dev runs of the tuned settings, table with floor/ceiling/DT
  .venv/bin/python benchmarks/psq.py latency  # PSQ vs a weighted Lucene BooleanQuery, same expanded terms

Variants are the PSQ distributions the model folder supports: ``token`` (Pr_token) always;
``grammar``, ``nbest`` (one per alignment heuristic) and ``interp`` when the folder has a
grammar and an LM. The grid (λ, p_L, p_C, stopwords) is searched on the train split only;
the dev split is only reported.
"""

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

from clirplug.eval.measures import evaluate
from clirplug.eval.significance import randomization_test
from clirplug.io.qrels import read_qrels
from clirplug.io.runs import read_run, write_run
from clirplug.io.topics import read_topics
from clirplug.qt.psq import PsqScorer, psq_queries, psq_search
from clirplug.qt.psq_tables import HEURISTICS, PsqBuilder, PsqSettings

MEASURES = ["MAP", "nDCG@10", "PRES@100", "R@100"]
FIELDS = ("title", "desc")
P_LOWER = (0.0, 0.01, 0.05, 0.1, 0.2)
P_CUMULATIVE = (0.9, 0.95)
STOP = ("none", "small", "large")
INTERPOLATIONS = ((0.2, 0.4, 0.4), (1 / 3, 1 / 3, 1 / 3), (0.5, 0.25, 0.25), (0.0, 0.5, 0.5), (0.2, 0.0, 0.8),
                  (0.2, 0.8, 0.0))


class Args:
    """The attributes ``psq_run`` reads, for in-process runs."""

    def __init__(self, model, field, kind="hiero", src_lang="de"):
        self.table, self.model, self.field, self.kind, self.src_lang = None, model, field, kind, src_lang


def variants(model: Path) -> dict[str, list[dict]]:
    """``variant -> [settings overrides]`` the model folder supports."""
    out = {"token": [{"weights": {"token": 1.0, "grammar": 0.0, "nbest": 0.0}}]}
    if (model / "grammar.hiero.gz").is_file() and (model / "lm.arpa").is_file():
        for heuristic in HEURISTICS:
            out[f"grammar.{heuristic}"] = [{"weights": {"token": 0.0, "grammar": 1.0, "nbest": 0.0},
                                            "heuristic": heuristic}]
            out[f"nbest.{heuristic}"] = [{"weights": {"token": 0.0, "grammar": 0.0, "nbest": 1.0},
                                          "heuristic": heuristic}]
            out[f"interp.{heuristic}"] = [{"weights": dict(zip(("token", "grammar", "nbest"), lam)),
                                           "heuristic": heuristic} for lam in INTERPOLATIONS]
    return out


def builder_for(model: Path, settings: PsqSettings, cache: dict):
    """A PsqBuilder sharing the loaded model parts across settings."""
    from clirplug.qt.psq import builder_from_args

    key = tuple(sorted(k for k, w in settings.weights.items() if w > 0))
    if key not in cache:
        cache[key] = builder_from_args(Args(model, "title"), settings)
    builder, tokenize = cache[key]
    return PsqBuilder(settings, builder.token, builder.grammar, builder.translate), tokenize


def run_settings(scorer, topics, model, field, settings, cache):
    builder, tokenize = builder_for(model, settings, cache)
    queries = psq_queries(Args(model, field), topics, builder, tokenize)
    return psq_search(scorer, queries, hits=1000, progress=False)


def tune(args):
    collection, model = Path(args.collection), Path(args.model)
    topics = read_topics(collection / "topics.train.jsonl")
    qrels = read_qrels(collection / "qrels.train.txt")
    scorer = PsqScorer(args.index)
    cache: dict = {}
    for variant, overrides in variants(model).items():
        for field in FIELDS:
            results = []
            grid = list(itertools.product(overrides, P_LOWER, P_CUMULATIVE, STOP))
            start = time.time()
            for override, p_lower, p_cumulative, stop in grid:
                settings = PsqSettings(**{**override, "p_lower": p_lower, "p_cumulative": p_cumulative,
                                          "stopwords": stop})
                run = run_settings(scorer, topics, model, field, settings, cache)
                value = float(evaluate(qrels, {"r": run}, ["MAP"])["value"].iloc[0])
                results.append((value, settings.spec()))
            results.sort(key=lambda item: (-item[0], item[1]))
            best_map, best_spec = results[0]
            record = {"variant": variant, "field": field, "split": "train", "measure": "MAP",
                      "train_map": round(best_map, 4), "psq": best_spec, "grid_size": len(grid),
                      "k1": scorer.k1, "b": scorer.b, "seconds": round(time.time() - start, 1),
                      "top5": [{"map": round(v, 4), "psq": s} for v, s in results[:5]]}
            path = Path("runs") / f"psq.{variant}.{field}.params.json"
            path.write_text(json.dumps(record, indent=1) + "\n")
            print(f"| {variant} | {field} | {best_map:.4f} | `{best_spec}` | {len(grid)} |", flush=True)


def p_values(per_query, name, baseline) -> str:
    """Paired randomization p-values of run ``name`` against ``baseline``, one per measure."""
    runs = set(per_query["run"])
    if baseline not in runs or name in (baseline, "ceiling"):
        return ""
    mine = per_query[per_query["run"] == name].sort_values(["measure", "qid"])
    base = per_query[per_query["run"] == baseline].sort_values(["measure", "qid"])
    return " / ".join(f"{randomization_test(mine[mine['measure'] == m]['value'].to_numpy(), base[base['measure'] == m]['value'].to_numpy()):.4f}"
                      for m in MEASURES)


def report(args):
    collection, model = Path(args.collection), Path(args.model)
    topics = read_topics(collection / "topics.dev.jsonl")
    qrels = read_qrels(collection / "qrels.dev.txt")
    scorer = PsqScorer(args.index)
    cache: dict = {}
    rows = []
    for field in FIELDS:
        runs = {"floor": read_run(f"runs/manclir-de.dev.floor.{field}.trec"),
                "ceiling": read_run("runs/manclir-de.dev.ceiling.title.trec")}
        dt_path = Path(args.dt.format(field=field))
        if dt_path.is_file():
            runs["DT"] = read_run(dt_path)
        for params in sorted(Path("runs").glob(f"psq.*.{field}.params.json")):
            record = json.loads(params.read_text())
            settings = PsqSettings.parse(record["psq"])
            run = run_settings(scorer, topics, model, field, settings, cache)
            name = f"PSQ {record['variant']}"
            write_run(run, f"runs/manclir-de.dev.psq.{record['variant']}.{field}.trec", tag=f"psq.{record['variant']}")
            runs[name] = run
        table = evaluate(qrels, runs, MEASURES, per_query=True)
        per_query = table[table["qid"] != "all"]
        means = table[table["qid"] == "all"].pivot(index="run", columns="measure", values="value")
        ceiling_map = means.loc["ceiling", "MAP"]
        for name in runs:
            values = " | ".join(f"{means.loc[name, m]:.4f}" for m in MEASURES)
            share = means.loc[name, "MAP"] / ceiling_map
            p_dt, p_floor = p_values(per_query, name, "DT"), p_values(per_query, name, "floor")
            rows.append(f"| {field} | {name} | {values} | {share:.0%} | {p_dt} | {p_floor} |")
    names = " / ".join(MEASURES)
    print(f"| field | run | {' | '.join(MEASURES)} | MAP / ceiling | p vs DT ({names}) | p vs floor ({names}) |")
    print("|---|---|" + "---|" * len(MEASURES) + "---|---|---|")
    print("\n".join(rows))


def boolean_query(expressions, weights):
    """Lucene BooleanQuery of SHOULD clauses ``BoostQuery(TermQuery|PhraseQuery, weight)``."""
    from clirplug.lucene._jvm import jclass
    from clirplug.lucene.reader import FIELD

    term_cls, term_query = jclass("org.apache.lucene.index.Term"), jclass("org.apache.lucene.search.TermQuery")
    boost_query = jclass("org.apache.lucene.search.BoostQuery")
    should = jclass("org.apache.lucene.search.BooleanClause$Occur").SHOULD
    builder = jclass("org.apache.lucene.search.BooleanQuery$Builder")()
    for expression, weight in zip(expressions, weights):
        if len(expression) == 1:
            clause = term_query(term_cls(FIELD, expression[0][0]))
        else:
            phrase = jclass("org.apache.lucene.search.PhraseQuery$Builder")()
            for term, position in expression:
                phrase.add(term_cls(FIELD, term), position)
            clause = phrase.build()
        builder.add(boost_query(clause, float(weight)), should)
    return builder.build()


def latency(args):
    from clirplug.lucene._jvm import jclass
    from clirplug.lucene.search import Bm25Searcher

    collection, model = Path(args.collection), Path(args.model)
    topics = read_topics(collection / "topics.dev.jsonl")
    jclass("org.apache.lucene.search.IndexSearcher").setMaxClauseCount(1 << 16)
    print("| index | field | queries | expanded terms (median) | PSQ median ms | Lucene BooleanQuery median ms | ratio |")
    print("|---|---|---|---|---|---|---|")
    for index in args.indexes:
        start = time.time()
        scorer = PsqScorer(index)
        scorer.index.matrix_csc  # noqa: B018 - load the cached matrix before timing
        load = time.time() - start
        searcher = Bm25Searcher(index)
        for field in FIELDS:
            record = json.loads((Path("runs") / f"psq.token.{field}.params.json").read_text())
            builder, tokenize = builder_for(model, PsqSettings.parse(record["psq"]), {})
            queries = psq_queries(Args(model, field), topics, builder, tokenize)
            psq_ms, lucene_ms, sizes = [], [], []
            for dists in queries.values():
                query = scorer.expressions(dists)
                if not query:
                    continue
                merged: dict = {}
                for dist in query:
                    for expression, p in dist.items():
                        merged[expression] = merged.get(expression, 0.0) + p
                lucene_query = boolean_query(list(merged), list(merged.values()))
                sizes.append(len(merged))
                t0 = time.perf_counter()
                scorer.top(*scorer.score(query), 1000)
                t1 = time.perf_counter()
                searcher.search_query(lucene_query, 1000)
                t2 = time.perf_counter()
                psq_ms.append(1000 * (t1 - t0))
                lucene_ms.append(1000 * (t2 - t1))
            a, b = statistics.median(psq_ms), statistics.median(lucene_ms)
            print(f"| {Path(index).name} (load {load:.1f} s) | {field} | {len(psq_ms)} | {statistics.median(sizes):.0f} "
                  f"| {a:.1f} | {b:.1f} | {a / b:.2f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["tune", "report", "latency"])
    parser.add_argument("--collection", default="../shared/data/manclir-de")
    parser.add_argument("--index", default="indexes/manclir-de")
    parser.add_argument("--indexes", nargs="+", default=["indexes/manclir-de", "indexes/manclir-large"],
                        help="indexes for the latency comparison")
    parser.add_argument("--model", default="models/manclir-de")
    parser.add_argument("--dt", default="runs/manclir-de.dev.dt.{field}.trec", help="DT dev run, {field} = title/desc")
    args = parser.parse_args()
    {"tune": tune, "report": report, "latency": latency}[args.what](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
