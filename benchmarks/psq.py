"""PSQ on manclir-de: tuning on train, quality on dev, identity with Lucene, latency against Lucene BM25.

Usage:
  .venv/bin/python benchmarks/psq.py tune [--variants ...] [--kind hiero]  # search on train (MAP), writes runs/psq.<name>.<field>.params.json
  .venv/bin/python benchmarks/psq.py report    # dev runs of the tuned settings, table with floor/ceiling/DT, p-values
  .venv/bin/python benchmarks/psq.py identity  # identity table vs Lucene BM25 on every dev title and desc
  .venv/bin/python benchmarks/psq.py latency   # PSQ (best on train) vs a weighted Lucene BooleanQuery, same expanded terms

Variants: ``token`` (Pr_token), and with a grammar and an LM in the model folder
``grammar.<h>`` (Pr_grammar), ``nbest.<h>`` (Pr_nbest) and ``interp.<h>`` (their interpolation
with Pr_token) for each alignment heuristic ``h``. ``token`` searches the full grid
p_L x p_C x stopwords; the others a coordinate search (one axis at a time, the others at their
best so far): ``grammar``/``nbest`` start from the token setting of the field and move
(``nbest`` only: the derivation score scale, then) p_L, p_C, stopwords (``nbest``: then the
orphan mass); ``interp`` starts from the ``nbest`` setting of the same heuristic and moves
λ over the simplex in steps of 1/4, then p_L, p_C and the orphan mass. Only the train split is searched; dev is
only reported. Pr_nbest needs the n-best lists of the train and dev topics, which are read
from the model's translation cache (decode them first with ``clirplug translate --nbest 10``).
A variant's name is the variant itself for the flat grammar and ``hiero.<variant>`` with
``--kind hiero`` (Pr_grammar and Pr_nbest from the Hiero grammar and its decodings).
"""

import argparse
import itertools
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from clirplug.eval.measures import evaluate
from clirplug.eval.significance import randomization_test
from clirplug.io.qrels import read_qrels
from clirplug.io.runs import read_run, write_run
from clirplug.io.topics import read_topics
from clirplug.qt.psq import PsqScorer, psq_queries
from clirplug.qt.psq_tables import COMPONENTS, HEURISTICS, PsqSettings
from clirplug.qt.psq_tune import Builders
from clirplug.qt.psq_tune import run_settings as tune_run

MEASURES = ["MAP", "nDCG@10", "PRES@100", "R@100"]
FIELDS = ("title", "desc")
P_LOWER = (0.0, 0.01, 0.05, 0.1, 0.2)
P_CUMULATIVE = (0.9, 0.95, 1.0)
STOP = ("none", "small", "large")
SCALES = (0.5, 1.0, 2.0, 4.0)
ORPHANS = (0.0, 0.2, 0.5, 0.8)
LAMBDAS = tuple(lam for lam in itertools.product((0, 0.25, 0.5, 0.75, 1), repeat=3) if sum(lam) == 1)


def variants(model: Path, kind: str) -> list[str]:
    """The variants the model folder supports, in tuning order."""
    out = ["token"]
    if (model / f"grammar.{kind}.gz").is_file() and (model / "lm.arpa").is_file():
        for component in ("grammar", "nbest", "interp"):
            out.extend(f"{component}.{h}" for h in HEURISTICS)
    return out


def run_settings(scorer, topics, builders, field, settings):
    return tune_run(scorer, builders, field, settings, topics)


def name(variant: str, kind: str) -> str:
    """The name of a variant tuned with grammar ``kind`` (see the module docstring)."""
    return variant if kind == "flat" else f"{kind}.{variant}"


def start_point(variant: str, field: str, kind: str) -> PsqSettings:
    """Where the coordinate search of ``variant`` starts (see the module docstring)."""
    component, _, heuristic = variant.partition(".")
    if component == "interp":
        nbest = Path(f"runs/psq.{name(f'nbest.{heuristic}', kind)}.{field}.params.json")
        return PsqSettings.parse(json.loads(nbest.read_text())["psq"])
    token = PsqSettings.parse(json.loads(Path(f"runs/psq.token.{field}.params.json").read_text())["psq"])
    return replace(token, lambdas=tuple(float(c == component) for c in COMPONENTS), heuristic=heuristic)


def axes(variant: str, lambdas=LAMBDAS, lambda_only=False):
    """``[(attribute, values)]`` searched one after the other."""
    component = variant.partition(".")[0]
    thresholds = [("p_lower", P_LOWER), ("p_cumulative", P_CUMULATIVE)]
    if component == "interp":
        return ([("lambdas", [tuple(lam) for lam in lambdas])] + ([] if lambda_only else thresholds)
                + [("orphans", ORPHANS)])
    if component == "nbest":
        return [("scale", SCALES)] + thresholds + [("stopwords", STOP), ("orphans", ORPHANS)]
    return thresholds + [("stopwords", STOP)]


def search(variant, field, scorer, topics, qrels, builders, lambdas=LAMBDAS, lambda_only=False) -> dict[str, float]:
    """Train MAP of every setting the search of ``variant`` evaluates, by ``--psq`` string."""
    results: dict[str, float] = {}

    def measure(settings):
        spec = settings.spec()
        if spec not in results:
            run = run_settings(scorer, topics, builders, field, settings)
            results[spec] = float(evaluate(qrels, {"r": run}, ["MAP"])["value"].iloc[0])
        return results[spec]

    if variant == "token":
        for p_lower, p_cumulative, stop in itertools.product(P_LOWER, P_CUMULATIVE, STOP):
            measure(PsqSettings(p_lower=p_lower, p_cumulative=p_cumulative, stopwords=stop))
    else:
        best = start_point(variant, field, builders.kind)
        for attribute, values in axes(variant, lambdas, lambda_only):  # max keeps the first of tied settings: the current point
            best = max([best] + [replace(best, **{attribute: v}) for v in values], key=measure)
    return results


def tune(args):
    collection, model = Path(args.collection), Path(args.model)
    topics = read_topics(collection / "topics.train.jsonl")
    qrels = read_qrels(collection / "qrels.train.txt")
    scorer = PsqScorer(args.index)
    builders = Builders(model, args.kind, topics + read_topics(collection / "topics.dev.jsonl"))
    for variant in args.variants or variants(model, args.kind):
        for field in args.fields:
            start = time.time()
            lambdas = [tuple(map(float, lam.split(":"))) for lam in args.lambdas] if args.lambdas else LAMBDAS
            results = search(variant, field, scorer, topics, qrels, builders, lambdas, args.lambda_only)
            ranked = sorted(results.items(), key=lambda item: (-item[1], item[0]))
            best_spec, best_map = ranked[0]
            record = {"variant": name(variant, args.kind), "field": field, "split": "train", "measure": "MAP", "kind": args.kind,
                      "train_map": round(best_map, 4), "psq": best_spec, "evaluated": len(results),
                      "k1": scorer.k1, "b": scorer.b, "seconds": round(time.time() - start, 1),
                      "top5": [{"map": round(v, 4), "psq": s} for s, v in ranked[:5]]}
            path = Path("runs") / f"psq.{record['variant']}.{field}.params.json"
            path.write_text(json.dumps(record, indent=1) + "\n")
            print(f"| {record['variant']} | {field} | {best_map:.4f} | `{best_spec}` | {len(results)} |", flush=True)


def best_variant(field: str) -> dict:
    """The tuned record with the highest train MAP for ``field`` (the PSQ configuration chosen on train)."""
    records = [json.loads(p.read_text()) for p in sorted(Path("runs").glob(f"psq.*.{field}.params.json"))]
    return max(records, key=lambda r: (r["train_map"], r["variant"] == "token"))


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
    builders = {kind: Builders(model, kind, topics) for kind in ("flat", "hiero")}  # loaded on first use
    rows = []
    for field in args.fields:
        runs = {"floor": read_run(f"runs/manclir-de.dev.floor.{field}.trec")}
        for name in ("dt-flat", "dt-hiero"):
            path = Path(f"runs/manclir-de.dev.{name}.{field}.trec")
            if path.is_file():
                runs[f"DT {name[3:]}"] = read_run(path)
        chosen = best_variant(field)["variant"]
        for params in sorted(Path("runs").glob(f"psq.*.{field}.params.json")):
            record = json.loads(params.read_text())
            if args.variants and record["variant"] not in args.variants:
                continue
            run = run_settings(scorer, topics, builders[record.get("kind", "flat")], field, PsqSettings.parse(record["psq"]))
            write_run(run, f"runs/manclir-de.dev.psq.{record['variant']}.{field}.trec", tag=f"psq.{record['variant']}")
            runs[f"PSQ {record['variant']}" + (" (best on train)" if record["variant"] == chosen else "")] = run
        runs["ceiling"] = read_run("runs/manclir-de.dev.ceiling.title.trec")
        table = evaluate(qrels, runs, MEASURES, per_query=True)
        per_query = table[table["qid"] != "all"]
        means = table[table["qid"] == "all"].pivot(index="run", columns="measure", values="value")
        ceiling_map = means.loc["ceiling", "MAP"]
        for name in runs:
            values = " | ".join(f"{means.loc[name, m]:.4f}" for m in MEASURES)
            share = means.loc[name, "MAP"] / ceiling_map
            p_dt, p_floor = p_values(per_query, name, "DT flat"), p_values(per_query, name, "floor")
            rows.append(f"| {field} | {name} | {values} | {share:.0%} | {p_dt} | {p_floor} |")
    names = " / ".join(MEASURES)
    print(f"| field | run | {' | '.join(MEASURES)} | MAP / ceiling | p vs DT flat ({names}) | p vs floor ({names}) |")
    print("|---|---|" + "---|" * len(MEASURES) + "---|---|---|")
    print("\n".join(rows))


def identity(args):
    """Identity table vs Lucene BM25 on every dev title and desc: same ranking, scores within 1e-4."""
    import numpy as np

    from clirplug.lucene.search import Bm25Searcher, anserini_score_ties

    scorer, searcher = PsqScorer(args.index), Bm25Searcher(args.index)
    topics = read_topics(Path(args.collection) / "topics.dev.jsonl")
    print("| field | queries | same top-1000 docids in order | max score difference |")
    print("|---|---|---|---|")
    for field in FIELDS:
        same, worst = 0, 0.0
        for topic in topics:
            text = getattr(topic, field)
            ours = scorer.top(*scorer.score([{((t, 0),): 1.0} for t in scorer.index.analyze(text)]), 1000)
            lucene = searcher.search(text, 1000)
            adjusted = anserini_score_ties(np.array([s for _, s in ours], dtype=np.float32))
            same += [d for d, _ in ours] == [d for d, _ in lucene]
            if len(ours) == len(lucene) and ours:
                worst = max(worst, float(np.abs(adjusted - np.array([s for _, s in lucene])).max()))
        print(f"| {field} | {len(topics)} | {same} | {worst:.2e} |", flush=True)
    searcher.close()


def latency(args):
    from clirplug.lucene.query import weighted_query
    from clirplug.lucene.search import Bm25Searcher

    collection, model = Path(args.collection), Path(args.model)
    topics = read_topics(collection / "topics.dev.jsonl")
    print("| index | field | queries | expanded terms (median) | PSQ median ms | Lucene BooleanQuery median ms | ratio |")
    print("|---|---|---|---|---|---|---|")
    for index in args.indexes:
        start = time.time()
        scorer = PsqScorer(index)
        scorer.index.matrix_csc  # noqa: B018 - load the cached matrix before timing
        load = time.time() - start
        searcher = Bm25Searcher(index)
        for field in FIELDS:
            record = best_variant(field)  # the PSQ configuration chosen on train
            kind = record.get("kind", "flat")
            builders = Builders(model, kind, topics)
            builder, tokenize = builders(PsqSettings.parse(record["psq"]), field)
            queries = psq_queries(builders.source(field), topics, builder, tokenize)
            psq_ms, lucene_ms, sizes = [], [], []
            for dists in queries.values():
                query = scorer.expressions(dists)
                if not query:
                    continue
                merged: dict = {}
                for dist in query:
                    for expression, p in dist.items():
                        merged[expression] = merged.get(expression, 0.0) + p
                lucene_query = weighted_query(list(merged), list(merged.values()))
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
    parser.add_argument("what", choices=["tune", "report", "identity", "latency"])
    parser.add_argument("--collection", default="../shared/data/manclir-de")
    parser.add_argument("--index", default="indexes/manclir-de")
    parser.add_argument("--indexes", nargs="+", default=["indexes/manclir-de", "indexes/manclir-large"],
                        help="indexes for the latency comparison")
    parser.add_argument("--model", default="models/manclir-de")
    parser.add_argument("--kind", default="flat", choices=("flat", "hiero"), help="grammar of Pr_grammar and Pr_nbest")
    parser.add_argument("--variants", nargs="+", help="variants to tune (default: all the model supports) or to report "
                        "(default: all tuned)")
    parser.add_argument("--fields", nargs="+", default=list(FIELDS), choices=FIELDS)
    parser.add_argument("--lambdas", nargs="+", metavar="T:G:N", help="interp: the λ grid (default: simplex, step 1/4)")
    parser.add_argument("--lambda-only", action="store_true", help="interp: search λ only (p_L, p_C of the nbest start)")
    args = parser.parse_args()
    {"tune": tune, "report": report, "identity": identity, "latency": latency}[args.what](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
