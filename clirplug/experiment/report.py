"""The experiment report: ``report.md``, ``report.csv`` and ``report.json`` beside the runs.

Scores are :func:`clirplug.eval.measures.evaluate` of the run files as written (what
``clirplug eval`` computes), on every split of the config that has qrels; significance is
the paired randomization test (:func:`clirplug.eval.significance.randomization_test`)
against the baseline run of the same split and field, over the queries of the qrels, with
Holm's adjustment (:func:`clirplug.eval.significance.holm`) over the runs tested against that
baseline on each measure. The
tables follow the papers: Table 1 of Hieber & Riezler (2015) (DT, PSQ, BOW-FD), Table 2 of
Sokolov et al. (2013) (DT, PSQ, boosting) and their Table 3 (fusions), plus the dense
retrieval baseline (no translation) beside DT, PSQ and boosting, each between the
floor (untranslated queries) and the monolingual ceiling (the English mate's title), with
the share of the ceiling every run reaches. ``report.json`` holds one record per run, per
translation output and per stage, so that every number can be recomputed from the files.
"""

from __future__ import annotations

import json
from pathlib import Path

from clirplug.atomic import atomic_open
from clirplug.experiment.stages import Stage, stage_kind

# table title -> (methods whose runs it shows between the floor and the ceiling,
#                 methods of which one must be present for the table to be shown)
TABLES = {
    "Table 1: query translation (Hieber & Riezler 2015)": (("dt", "psq", "bowfd"), ("dt", "psq", "bowfd")),
    # bowfd runs with ``lm: false`` carry the method name bowfd-nolm
    "Table 2: without the language model (Hieber & Riezler 2015)": (("dt", "psq", "bowfd", "bowfd-nolm"),
                                                                     ("bowfd-nolm",)),
    "Table 2: boosting (Sokolov et al. 2013)": (("dt", "psq", "boost"), ("boost",)),
    "Table 3: fusion (Sokolov et al. 2013)": (("dt", "psq", "boost", "fusion"), ("fusion",)),
    # no translation: German queries and English documents in one multilingual-e5-small vector space
    "Dense retrieval baseline (multilingual-e5-small)": (("dt", "psq", "boost", "dense"), ("dense",)),
}
CEILING_FIELD = "title"  # the ceiling's queries are the mates' titles, for both query fields
HOLM_MARKER = "†"  # after '*': significant also after Holm's adjustment (a dagger)


def add_report_stage(plan) -> str:
    """The last stage: depends on every other stage, writes the three report files."""
    c = plan.config
    settings = {"measures": list(c.measures), "splits": list(c.splits), "fields": list(c.fields),
                "baseline": c.baseline, "tables": {k: [list(v) for v in pair] for k, pair in TABLES.items()}}
    qrels = tuple(c.collection.qrels(split) for split in c.splits if c.collection.qrels(split).is_file())
    outputs = tuple(c.run_dir / f"report.{ext}" for ext in ("md", "csv", "json"))
    return plan.add(Stage("report", "report", settings, inputs=qrels, deps=tuple(plan.stages), outputs=outputs))


def _records(config, names):
    from clirplug.experiment.records import read_record

    return {name: read_record(config, Stage(name, "", {})) for name in names}


def _rel(path, base: Path) -> str:
    path = Path(path)
    return str(path.relative_to(base)) if path.is_relative_to(base) else str(path)


def score_runs(config, run_stages):
    """Per split and field: evaluate the runs (per query) and test each against the baseline.

    Returns a list of dicts ``split, field, run, method, measure, value, p_value, p_holm,
    share_of_ceiling, p_vs_inputs`` (a fusion's p-value against each of its input runs, else None);
    ``p_holm`` adjusts the ``p_value`` of the runs of one split, field and measure together.
    """
    from clirplug.eval.measures import ALL, evaluate
    from clirplug.eval.significance import holm, randomization_test
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run

    rows = []
    for split in config.splits:
        qrels_path = config.collection.qrels(split)
        if not qrels_path.is_file():
            continue  # runs written, not scored
        qrels = read_qrels(qrels_path)
        ceiling = [s for s in run_stages if s.run["split"] == split and s.run["method"] == "ceiling"]
        ceiling_values = {}
        if ceiling:
            result = evaluate(qrels, {"ceiling": read_run(ceiling[0].outputs[0])}, list(config.measures))
            ceiling_values = dict(zip(result["measure"], result["value"]))
        for fld in config.fields:
            stages = [s for s in run_stages if s.run["split"] == split and s.run["field"] == fld]
            if not stages:
                continue
            runs = {s.run["name"]: read_run(s.outputs[0]) for s in stages}
            methods = {s.run["name"]: s.run["method"] for s in stages}
            inputs = {s.run["name"]: s.settings["runs"] for s in stages if s.run["method"] == "fusion"}
            if ceiling and "ceiling" not in runs:
                runs["ceiling"], methods["ceiling"] = read_run(ceiling[0].outputs[0]), "ceiling"
            result = evaluate(qrels, runs, list(config.measures), per_query=True)
            per_query = result[result["qid"] != ALL].pivot_table(index="qid", columns=["run", "measure"],
                                                                 values="value", sort=True)
            baseline = config.baseline if config.baseline in runs else None
            block = []
            for record in result[result["qid"] == ALL].itertuples(index=False):
                p_value = None
                if baseline is not None and record.run not in (baseline, "ceiling"):
                    p_value = float(randomization_test(per_query[(record.run, record.measure)].to_numpy(),
                                                       per_query[(baseline, record.measure)].to_numpy()))
                top = ceiling_values.get(record.measure)
                against = {other: float(randomization_test(per_query[(record.run, record.measure)].to_numpy(),
                                                           per_query[(other, record.measure)].to_numpy()))
                           for other in inputs.get(record.run, ()) if other in runs}
                block.append({"split": split, "field": fld, "run": record.run, "method": methods[record.run],
                              "measure": record.measure, "value": float(record.value), "p_value": p_value,
                              "p_holm": None, "share_of_ceiling": float(record.value / top) if top else None,
                              "p_vs_inputs": against or None})
            for measure in config.measures:  # one family per measure: the runs tested against the baseline
                family = [r for r in block if r["measure"] == measure and r["p_value"] is not None]
                for r, adjusted in zip(family, holm([r["p_value"] for r in family])):
                    r["p_holm"] = float(adjusted)
            rows += block
    return rows


def _table(scores, split, fld, names, measures, baseline):
    from clirplug.eval.significance import marker

    cells = {(r["run"], r["measure"]): r for r in scores if r["split"] == split and r["field"] == fld}
    head = "| run | " + " | ".join(measures) + f" | {measures[0]} share of ceiling |"
    lines = [head, "|---|" + "---|" * (len(measures) + 1)]
    for name in names:
        if (name, measures[0]) not in cells:
            continue
        values = []
        for measure in measures:
            r = cells[(name, measure)]
            values.append(f"{r['value']:.4f}{marker(r['p_value'])}{HOLM_MARKER if marker(r['p_holm']) else ''}")
        share = cells[(name, measures[0])]["share_of_ceiling"]
        label = f"{name} (baseline)" if name == baseline else name
        lines.append(f"| {label} | " + " | ".join(values) + f" | {'' if share is None else f'{share:.1%}'} |")
    return lines


def _fusion_table(scores, splits, fields, measure) -> list[str]:
    """Each fusion against each of its inputs on ``measure`` (`*`: the fusion differs at p < alpha)."""
    from clirplug.eval.significance import marker

    fused = [r for r in scores if r["measure"] == measure and r["p_vs_inputs"]]
    if not fused:
        return []
    value = {(r["split"], r["field"], r["run"]): r["value"] for r in scores if r["measure"] == measure}
    lines = [f"## Fusions against their inputs ({measure})", "",
             f"| split | field | fusion | {measure} | input | input {measure} | p |", "|---|---|---|---|---|---|---|"]
    for split in splits:
        for fld in fields:
            for r in fused:
                if (r["split"], r["field"]) == (split, fld):
                    lines += [f"| {split} | {fld} | {r['run']} | {r['value']:.4f} | {other} | "
                              f"{value[(split, fld, other)]:.4f} | {p:.4f}{marker(p)} |"
                              for other, p in r["p_vs_inputs"].items()]
    return lines + [""]


def _recommended_table(recommended: dict, scores, measures, splits) -> list[str]:
    """The recommended system of each field (:mod:`clirplug.experiment.systems`) with its scores on each split."""
    if not recommended:
        return []
    value = {(r["split"], r["field"], r["run"], r["measure"]): r["value"] for r in scores}
    lines = ["## Recommended systems", "",
             "Per query field, the system with the best MAP on the tune split's cross-fitted runs (ties to the "
             "cheaper: fewer searchers, then fewer rerankers), as a system file that `clirplug search --system`, "
             "`clirplug serve --system` and `clirplug.load_system` load (docs/experiments.md, \"System files\").", "",
             "| field | system | file | tune MAP | split | " + " | ".join(measures) + " |",
             "|---|---|---|---|---|" + "---|" * len(measures)]
    for fld, r in recommended.items():
        for split in splits:
            if (split, fld, r["run"], measures[0]) in value:
                lines.append(f"| {fld} | {r['run']} | `{r['file']}` | {r['MAP']:.4f} ({r['split']}) | {split} | "
                             + " | ".join(f"{value[(split, fld, r['run'], m)]:.4f}" for m in measures) + " |")
    return lines + [""]


@stage_kind("report", version=4)
def report_stage(stage: Stage, ctx) -> dict:
    """Write ``report.md``, ``report.csv`` and ``report.json`` (see the module docstring)."""
    import csv
    import io

    from clirplug.eval.significance import ALPHA, MARKER, PERMUTATIONS

    config = ctx.config
    base = config.run_dir
    records = _records(config, stage.deps)
    run_stages = [ctx.plan_stages[name] for name in stage.deps if ctx.plan_stages[name].run]
    scores = score_runs(config, run_stages)
    measures = list(config.measures)
    c = config.collection

    runs_json = []
    for s in run_stages:
        sidecar = json.loads(s.outputs[0].with_suffix(".json").read_text(encoding="utf-8"))
        runs_json.append({"run": s.run["name"], "method": s.run["method"], "field": s.run["field"],
                          "split": s.run["split"], "file": _rel(s.outputs[0], base), "signature": sidecar["signature"],
                          "tuned": sidecar["tuned"], "queries": sidecar["queries"],
                          "latency_median_seconds": sidecar["latency_median"],
                          "latency_p90_seconds": sidecar["latency_p90"]})
    translations = [{"output": r["metrics"]["output"], "file": _rel(r["metrics"]["file"], base),
                     "sentences": r["metrics"]["sentences"], "bleu": r["metrics"]["bleu"],
                     "seconds_per_sentence_median": r["metrics"]["seconds_median"],
                     "seconds_per_sentence_p90": r["metrics"]["seconds_p90"]}
                    for name, r in records.items() if r and r["kind"] == "mt-eval"]
    stages_json = [{"stage": name, "kind": r["kind"], "wall_seconds": r["wall_seconds"],
                    "cpu_seconds": r.get("cpu_seconds"),  # None in records written before it was measured
                    "peak_rss_mb": r["peak_rss_mb"]}
                   for name, r in records.items() if r]

    md = [f"# Experiment {config.name}", "",
          (f"Collection `{c.name}` ({c.path}): {c.lang} queries, {c.doc_lang} documents. "
           f"Config `{config.source}`; parameters tuned on the `{config.tune_split}` split. "
           f"Runs in this folder; `report.json` lists every file behind the numbers."), "",
          (f"Values followed by `{MARKER}` differ from the baseline run (`{config.baseline}`) at p < {ALPHA} "
           f"(two-sided paired randomization test, {PERMUTATIONS} permutations), by `{MARKER}{HOLM_MARKER}` when "
           f"they still do after Holm's adjustment over the runs of the table's split and field tested on the "
           f"same measure (`p_holm` in `report.csv`). The share of the ceiling divides "
           f"by the monolingual ceiling (BM25 with the English mate's title) of the same split."), ""]
    recommended = (records.get("systems") or {}).get("metrics", {}).get("recommended", {})
    md[2:2] = _recommended_table(recommended, scores, measures, config.splits)
    for split in config.splits:
        if not c.qrels(split).is_file():
            md += [f"## Split `{split}`", "", f"No qrels ({c.qrels(split)} absent): runs written, not scored.", ""]
            continue
        for fld in config.fields:
            for title, (methods, required) in TABLES.items():
                shown = [s.run for s in run_stages
                         if s.run["split"] == split and s.run["field"] == fld and s.run["method"] in methods]
                if not any(run["method"] in required for run in shown):
                    continue
                names = [run["name"] for run in shown]
                rows = ["floor", *dict.fromkeys(names), "ceiling"]
                md += [f"## {title}: `{split}`, {fld} queries", ""]
                md += _table(scores, split, fld, rows, measures, config.baseline) + [""]
    md += _fusion_table(scores, config.splits, config.fields, measures[0])
    curves = [s for s in ctx.plan_stages.values() if s.kind == "fusion-tune" and s.name in stage.deps]
    if curves:
        md += ["## Kappa curves (fusion weight tuned on the tune split)", ""]
        for s in curves:
            metrics = records[s.name]["metrics"]
            md += [f"`{s.name}`: {metrics['method']}, kappa = {metrics['kappa']:g} ({_rel(s.outputs[0], base)})", "",
                   f"![{s.name}]({_rel(s.outputs[1], base)})", ""]
    if translations:
        md += ["## Translation outputs", "", "| output | file | sentences | BLEU | s/sentence median | p90 |",
               "|---|---|---|---|---|---|"]
        md += [f"| {t['output']} | `{t['file']}` | {t['sentences']} | {t['bleu']:.2f} | "
               f"{t['seconds_per_sentence_median']:.4f} | {t['seconds_per_sentence_p90']:.4f} |" for t in translations]
        md.append("")
    md += ["## Query latency", "", "| run | split | field | queries | median s | p90 s |", "|---|---|---|---|---|---|"]
    md += [f"| {r['run']} | {r['split']} | {r['field']} | {r['queries']} | {r['latency_median_seconds'] or 0:.4f} | "
           f"{r['latency_p90_seconds'] or 0:.4f} |" for r in runs_json]
    md += ["", "## Stages", "", "| stage | wall s | CPU s | peak memory MB |", "|---|---|---|---|"]
    md += [f"| {s['stage']} | {s['wall_seconds']:.1f} | "
           f"{'-' if s['cpu_seconds'] is None else format(s['cpu_seconds'], '.1f')} | {s['peak_rss_mb']:.0f} |"
           for s in stages_json]
    md.append("")

    md_path, csv_path, json_path = stage.outputs
    with atomic_open(md_path) as handle:
        handle.write("\n".join(md))
    buffer = io.StringIO()
    columns = ["split", "field", "run", "method", "measure", "value", "p_value", "p_holm", "share_of_ceiling",
               "p_vs_inputs"]
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({**r, "p_vs_inputs": ";".join(f"{k}:{v}" for k, v in (r["p_vs_inputs"] or {}).items())}
                     for r in scores)
    with atomic_open(csv_path) as handle:
        handle.write(buffer.getvalue())
    report = {"experiment": config.name, "config": config.source,
              "collection": {"name": c.name, "path": str(c.path), "lang": c.lang, "doc_lang": c.doc_lang,
                             **({"irds": c.irds} if c.irds else {})},
              "measures": measures, "baseline": config.baseline, "recommended": recommended, "runs": runs_json, "translations": translations,
              "stages": stages_json, "scores": scores}
    with atomic_open(json_path) as handle:
        json.dump(report, handle, indent=1)
        handle.write("\n")
    return {"scores": len(scores)}
