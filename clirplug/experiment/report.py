"""The experiment report: ``report.md``, ``report.tex``, ``report.csv``, ``report.json`` and figures beside the runs.

Scores are :func:`clirplug.eval.measures.evaluate` of the run files as written (what
``clirplug eval`` computes), on every split of the config that has qrels; significance is
the paired randomization test (:func:`clirplug.eval.significance.randomization_test`)
against the baseline run of the same split and field, over the queries of the qrels, with
Holm's adjustment (:func:`clirplug.eval.significance.holm`) over the runs tested against that
baseline on each measure; wins, ties and losses count the topics against the baseline. The
tables follow the papers (:data:`TABLES`): Table 1 of Hieber & Riezler (2015) (DT, PSQ, BOW-FD)
and their Table 2 (without the LM), Table 2 of Sokolov et al. (2013) (DT, PSQ, boosting) and their
Table 3 (fusions), DT beside its MIRA-reranked n-best lists (Nikoulina et al. 2012), plus the dense retrieval
baseline (no translation), each between the floor (untranslated queries) and the monolingual ceiling (the English
mate's title; for desc queries its desc opening, where the split's bitext aligns it), title and desc side by side.
Each table is one :class:`clirplug.experiment.tables.Table`, rendered to Markdown and to LaTeX (booktabs).
``report.json`` holds one record per run, per translation output and per stage, so that every number can be
recomputed from the files; :mod:`clirplug.experiment.figures` draws the figures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from clirplug.atomic import atomic_open
from clirplug.experiment import figures
from clirplug.experiment.kinds import stage_kind
from clirplug.experiment.plan import Stage, ranks_pages
from clirplug.experiment.tables import HOLM_MARKER, Cell, Table, latex_document, markdown, result_table, win_tie_loss
from clirplug.methods import METHODS

# table title -> (methods whose runs it shows between the floor and the ceiling,
#                 methods of which one must be present for the table to be shown)
TABLES = {
    "query translation (Hieber & Riezler 2015, Table 1)": (("dt", "psq", "bowfd"), ("dt", "psq", "bowfd")),
    # DT runs (query-genre weights among them: method dt) beside the MIRA-reranked n-best lists
    "query translation adapted for retrieval (Nikoulina et al. 2012)": (("dt", "dt-mira"), ("dt-mira",)),
    # bowfd runs with ``lm: false`` carry the method name bowfd-nolm
    "without the language model (Hieber & Riezler 2015, Table 2)": (("dt", "psq", "bowfd", "bowfd-nolm"),
                                                                     ("bowfd-nolm",)),
    "boosting (Sokolov et al. 2013, Table 2)": (("dt", "psq", "boost"), ("boost",)),
    "fusion (Sokolov et al. 2013, Table 3)": (("dt", "psq", "boost", "fusion"), ("fusion",)),
    # no translation: German queries and English documents in one multilingual-e5-small vector space
    "dense retrieval baseline (multilingual-e5-small)": (("dt", "psq", "boost", "dense"), ("dense",)),
}
# the methods that fuse runs: the report tests each fusion against its input runs
FUSING = tuple(name for name, method in METHODS.items() if "searchers" in method.needs)
CEILING_FIELD = "title"  # the ceiling of a field without its own (desc, where the split's bitext names no pages)
TIE = 1e-9  # per-topic values closer than this to the baseline's are a tie
PACKAGE = Path(__file__).resolve().parents[1]  # the clirplug package, home of the demo's config and collection


def _figure_stems(config, stages) -> dict[tuple, Path]:
    """The report's figures (without extension), known when planning: per scored split and field the
    per-topic differences, per scored split recall at depth, per kappa tuning and PSQ grid search its curve."""
    c, folder = config, config.run_dir / "figures"
    stems: dict[tuple, Path] = {}
    for split in c.splits:
        if c.collection.qrels(split).is_file():
            stems |= {("differences", split, fld): folder / f"{split}.{fld}.differences" for fld in c.fields}
            stems[("recall", split)] = folder / f"{split}.recall"
    for s in stages:
        if s.kind in ("fusion-tune", "psq-tune"):
            stems[(s.kind, s.name)] = folder / s.outputs[0].name.rsplit(".", 1)[0]
    return stems


def add_report_stage(plan) -> str:
    """The last stage: depends on every other stage, writes the report files and (with matplotlib) its figures."""
    c = plan.config
    settings = {"measures": list(c.measures), "splits": list(c.splits), "fields": list(c.fields),
                "baseline": c.baseline, "tables": {k: [list(v) for v in pair] for k, pair in TABLES.items()},
                "figures": figures.available()}
    qrels = tuple(c.collection.qrels(split) for split in c.splits if c.collection.qrels(split).is_file())
    outputs = tuple(c.run_dir / f"report.{ext}" for ext in ("md", "csv", "json", "tex"))
    if settings["figures"]:
        outputs += tuple(p for stem in _figure_stems(c, plan.stages.values()).values() for p in figures.paths(stem))
    return plan.add(Stage("report", "report", settings, inputs=qrels, deps=tuple(plan.stages), outputs=outputs))


def _records(config, names):
    from clirplug.experiment.records import read_record

    return {name: read_record(config, Stage(name, "", {})) for name in names}


def _rel(path, base: Path) -> str:
    path = Path(path)
    return str(path.relative_to(base)) if path.is_relative_to(base) else str(path)


def shown(path, root) -> str:
    """``path`` as the report's header shows it: relative to the experiment root, the clirplug package's own
    files (the demo's) from ``clirplug/``, others relative to the root (``../``)."""
    path, root = Path(path).resolve(), Path(root).resolve()
    for base in (root, PACKAGE.parent):
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return os.path.relpath(path, root)


def score_runs(config, run_stages):
    """Per split and field: evaluate the runs (per query) and test each against the baseline.

    Returns the score rows, dicts ``split, field, run, method, measure, value, p_value, p_holm,
    share_of_ceiling, p_vs_inputs, topics, wins, ties, losses`` (``p_vs_inputs``: a fusion's p-value
    against each of its input runs, else None; ``p_holm`` adjusts the ``p_value`` of the runs of one
    split, field and measure together; ``topics`` the queries of the qrels; ``wins, ties, losses`` the
    topics where the run's value is above, within :data:`TIE` of, below the baseline's, None for the
    runs not tested), and the per-query values: ``(split, field) -> frame`` (qid by ``(run, measure)``).
    """
    from clirplug.eval.measures import ALL, evaluate
    from clirplug.eval.significance import holm, randomization_test
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run

    rows, per_split = [], {}
    for split in config.splits:
        qrels_path = config.collection.qrels(split)
        if not qrels_path.is_file():
            continue  # runs written, not scored
        qrels = read_qrels(qrels_path)
        ceilings = {s.run["field"]: s for s in run_stages if s.run["split"] == split and s.run["method"] == "ceiling"}
        for fld in config.fields:
            ceiling = ceilings.get(fld, ceilings.get(CEILING_FIELD))
            ceiling_values = {}
            if ceiling:
                result = evaluate(qrels, {"ceiling": read_run(ceiling.outputs[0])}, list(config.measures))
                ceiling_values = dict(zip(result["measure"], result["value"]))
            stages = [s for s in run_stages if s.run["split"] == split and s.run["field"] == fld]
            if not stages:
                continue
            runs = {s.run["name"]: read_run(s.outputs[0]) for s in stages}
            methods = {s.run["name"]: s.run["method"] for s in stages}
            inputs = {s.run["name"]: s.settings["runs"] for s in stages if s.run["method"] in FUSING}
            if ceiling and "ceiling" not in runs:
                runs["ceiling"], methods["ceiling"] = read_run(ceiling.outputs[0]), "ceiling"
            result = evaluate(qrels, runs, list(config.measures), per_query=True)
            per_query = result[result["qid"] != ALL].pivot_table(index="qid", columns=["run", "measure"],
                                                                 values="value", sort=True)
            per_split[(split, fld)] = per_query
            baseline = config.baseline if config.baseline in runs else None
            block = []
            for record in result[result["qid"] == ALL].itertuples(index=False):
                p_value, counts = None, (None, None, None)
                if baseline is not None and record.run not in (baseline, "ceiling"):
                    values = per_query[(record.run, record.measure)].to_numpy()
                    base = per_query[(baseline, record.measure)].to_numpy()
                    p_value = float(randomization_test(values, base))
                    wins, losses = int((values - base > TIE).sum()), int((values - base < -TIE).sum())
                    counts = (wins, len(values) - wins - losses, losses)
                top = ceiling_values.get(record.measure)
                against = {other: float(randomization_test(per_query[(record.run, record.measure)].to_numpy(),
                                                           per_query[(other, record.measure)].to_numpy()))
                           for other in inputs.get(record.run, ()) if other in runs}
                block.append({"split": split, "field": fld, "run": record.run, "method": methods[record.run],
                              "measure": record.measure, "value": float(record.value), "p_value": p_value,
                              "p_holm": None, "share_of_ceiling": float(record.value / top) if top else None,
                              "p_vs_inputs": against or None, "topics": len(per_query),
                              **dict(zip(("wins", "ties", "losses"), counts))})
            for measure in config.measures:  # one family per measure: the runs tested against the baseline
                family = [r for r in block if r["measure"] == measure and r["p_value"] is not None]
                for r, adjusted in zip(family, holm([r["p_value"] for r in family])):
                    r["p_holm"] = float(adjusted)
            rows += block
    return rows, per_split


def _paper_tables(config, run_stages, split) -> list[tuple[str, list[str]]]:
    """(title, run names) of each table of :data:`TABLES` shown for ``split``."""
    shown_tables = []
    for title, (methods, required) in TABLES.items():
        runs = [s.run for s in run_stages if s.run["split"] == split and s.run["method"] in methods]
        if any(run["method"] in required for run in runs):
            shown_tables.append((title, list(dict.fromkeys(run["name"] for run in runs))))
    return shown_tables


def result_tables(config, run_stages, scores) -> list[Table]:
    """The papers' tables of every scored split, named Table 1, 2, ... in order."""
    tables: list[Table] = []
    for split in config.splits:
        if any(r["split"] == split for r in scores):
            for title, runs in _paper_tables(config, run_stages, split):
                tables.append(result_table(f"Table {len(tables) + 1}", title, scores, split, runs,
                                           list(config.fields), list(config.measures), config.baseline))
    return tables


def fusion_table(name: str, scores, measure) -> Table | None:
    """Each fusion against each of its inputs on ``measure`` (`*`: the fusion differs at p < alpha)."""
    from clirplug.eval.significance import marker

    fused = [r for r in scores if r["measure"] == measure and r["p_vs_inputs"]]
    if not fused:
        return None
    value = {(r["split"], r["field"], r["run"]): r["value"] for r in scores if r["measure"] == measure}
    rows = tuple((Cell(r["split"]), Cell(r["field"]), Cell(r["run"]), Cell(f"{r['value']:.4f}"), Cell(other),
                  Cell(f"{value[(r['split'], r['field'], other)]:.4f}"), Cell(f"{p:.4f}", marker(p)))
                 for r in fused for other, p in r["p_vs_inputs"].items())
    return Table(name, f"fusions against their inputs ({measure})", "split",
                 ("field", "fusion", measure, "input", f"input {measure}", "p"), rows)


def _best_runs(config, run_stages, scores, split, fld) -> list[str]:
    """The best run on the first measure of each table of ``split`` (floor, baseline and ceiling aside)."""
    value = {r["run"]: r["value"] for r in scores
             if (r["split"], r["field"], r["measure"]) == (split, fld, config.measures[0])}
    best = []
    for _, runs in _paper_tables(config, run_stages, split):
        runs = [run for run in runs if run in value and run not in ("floor", "ceiling", config.baseline)]
        if runs:
            best.append(max(runs, key=lambda run: value[run]))
    return list(dict.fromkeys(best))


def draw_figures(config, stems, scores, per_split, run_stages, run_files, stages) -> None:
    """Write the figures of ``stems`` (:func:`_figure_stems`)."""
    import pandas as pd

    from clirplug.eval.measures import evaluate
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run

    measure, baseline = config.measures[0], config.baseline
    depths = [d for d in figures.DEPTHS if d <= config.hits]
    counts = {(r["split"], r["field"], r["run"]): r for r in scores if r["measure"] == measure}
    for key, stem in stems.items():
        if key[0] == "differences":
            _, split, fld = key
            frame = per_split[(split, fld)]
            reference = baseline if (baseline, measure) in frame else "floor"  # no baseline run: no runs configured
            others = [run for run, m in frame.columns if m == measure and run != reference]
            # the best runs; without runs besides the floor and ceiling, the ceiling's gain over the floor
            runs = _best_runs(config, run_stages, scores, split, fld) or [r for r in others if r != "ceiling"] or others
            figures.topic_differences(stem, {
                run: (frame[(run, measure)] - frame[(reference, measure)],
                      f"{run} - {reference} ({split}, {fld}): W/T/L {win_tie_loss(counts[(split, fld, run)])}")
                for run in runs}, f"{'AP' if measure == 'MAP' else measure} per topic, run - {reference}")
        elif key[0] == "recall":
            split = key[1]
            qrels = read_qrels(config.collection.qrels(split))
            panels = {}
            for fld in config.fields:
                main = ["floor", baseline, *_best_runs(config, run_stages, scores, split, fld), "ceiling"]
                recall_runs = {run: read_run(run_files[(split, fld, run)]) for run in dict.fromkeys(main)
                        if (split, fld, run) in run_files}
                result = evaluate(qrels, recall_runs, [f"R@{d}" for d in depths])
                panels[f"{split}, {fld} queries"] = {run: result[result["run"] == run]["value"].tolist()
                                                     for run in recall_runs}
            figures.recall_curves(stem, panels, depths)
        elif key[0] == "fusion-tune":
            s = stages[key[1]].settings
            tsv, _, chosen = stages[key[1]].outputs
            chosen = json.loads(chosen.read_text(encoding="utf-8"))
            figures.kappa_curves(stem, pd.read_csv(tsv, sep="\t"), chosen, tuple(s["runs"]),
                                 f"{s['run']} ({s['field']} queries): {s['measure']} on {s['split']}; chosen "
                                 f"{chosen['method']}, kappa = {chosen['kappa']:.6g}, {s['measure']} "
                                 f"{chosen['best']:.4f}")
        else:
            s = stages[key[1]].settings
            record = json.loads(stages[key[1]].outputs[0].read_text(encoding="utf-8"))
            figures.psq_grid(stem, [(e["psq"], e[record["measure"]]) for e in record["evaluated"]], record["psq"],
                             record["measure"], f"{s['run']} ({s['field']} queries): {record['measure']} of the PSQ "
                             f"settings on {record['split']} (coordinate search); chosen {record['value']:.4f}")


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


def _oov_lines(oov: list[dict], dictionary: dict | None) -> list[str]:
    """The report's untranslated query words (``oov`` stages' metrics) per split and field, and how the segmenter
    cuts the dictionary's source terms."""
    lines = []
    if oov:
        lines += markdown(Table("Untranslated query words", "query tokens without a translation in the model's "
                                "lexical table (tune split: each fold's model); per topic in the files named",
                                "split", ("field", "topics", "tokens", "untranslated", "share", "topics with any",
                                          "file"),
                                tuple(tuple(map(Cell, (o["split"], o["field"], str(o["topics"]), str(o["tokens"]),
                                                       str(o["untranslated"]), f"{o['share']:.1%}",
                                                       str(o["topics_with_untranslated"]), f"`{o['file']}`")))
                                      for o in oov)))
    if dictionary:
        lines += [f"Dictionary: {dictionary['terms']} source terms; of the {dictionary['one_word_terms']} written as "
                  f"one word, the bitext's segmentation splits {dictionary['split']} into several tokens "
                  f"({dictionary.get('split_translated', 0)} of them with a translation for every token) and "
                  f"changes {dictionary['changed']}; training cuts every entry so, as it cuts the bitext and the "
                  "queries.", ""]
    return lines


@stage_kind("report", version=4)
def report_stage(stage: Stage, ctx) -> dict:
    """Write ``report.md``, ``report.tex``, ``report.csv``, ``report.json`` and the figures (module docstring)."""
    import csv
    import io

    from clirplug.eval.significance import ALPHA, MARKER, PERMUTATIONS

    config = ctx.config
    base = config.run_dir
    records = _records(config, stage.deps)
    run_stages = [ctx.plan_stages[name] for name in stage.deps if ranks_pages(ctx.plan_stages[name])]
    scores, per_split = score_runs(config, run_stages)
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
    oov = [{**r["metrics"], "file": _rel(ctx.plan_stages[name].outputs[0], base)}
           for name, r in records.items() if r and r["kind"] == "oov"]
    dictionary = next((r["metrics"] for r in records.values() if r and r["kind"] == "dictionary-segmentation"), None)
    stages_json = [{"stage": name, "kind": r["kind"], "wall_seconds": r["wall_seconds"],
                    "cpu_seconds": r.get("cpu_seconds"),  # None in records written before it was measured
                    "peak_rss_mb": r["peak_rss_mb"]}
                   for name, r in records.items() if r]

    tables = result_tables(config, run_stages, scores)
    fusions = fusion_table(f"Table {len(tables) + 1}", scores, measures[0])
    tables += [fusions] if fusions else []
    about = (f"Collection `{c.name}` (`{shown(c.path, config.root)}`): {c.lang} queries, {c.doc_lang} documents. "
             f"Config `{shown(config.source, config.root)}`; parameters tuned on the `{config.tune_split}` split. "
             f"Paths are relative to the experiment root; `report.json` lists every file behind the numbers.")
    legend = (f"Values followed by `{MARKER}` differ from the baseline run (`{config.baseline}`) at p < {ALPHA} "
              f"(two-sided paired randomization test over the topics with qrels, {PERMUTATIONS} permutations), by "
              f"`{MARKER}{HOLM_MARKER}` when they still do after Holm's adjustment over the runs of the table's "
              f"split and field tested on the same measure (`p_holm` in `report.csv`). W/T/L: the topics where "
              f"the run's {measures[0]} is above, within {TIE:g} of (a tie), below the baseline's. The share of "
              f"the ceiling divides {measures[0]} by the monolingual ceiling's of the same split and field: BM25 "
              f"with the English mate's title, and for desc queries, where the split's bitext names the pages of "
              f"its lines, with the mate's desc opening (the English side of the desc's opening bitext line; the "
              f"mate's title where the bitext aligns none).")
    md = [f"# Experiment {config.name}", "", about, "", legend, ""]
    recommended = (records.get("systems") or {}).get("metrics", {}).get("recommended", {})
    md[2:2] = _recommended_table(recommended, scores, measures, config.splits)
    for split in config.splits:
        if not c.qrels(split).is_file():
            md += [f"## Split `{split}`", "", f"No qrels (`{shown(c.qrels(split), config.root)}` absent): runs "
                   f"written, not scored.", ""]
    md += ["## Results", ""] + [line for table in tables for line in markdown(table)]

    stems = _figure_stems(config, [ctx.plan_stages[name] for name in stage.deps]) if stage.settings["figures"] else {}
    if stems:
        run_files = {(s.run["split"], s.run["field"], s.run["name"]): s.outputs[0] for s in run_stages}
        run_files |= {(split, fld, "ceiling"): path for (split, own, run), path in list(run_files.items())
                      if run == "ceiling" and own == CEILING_FIELD for fld in config.fields
                      if (split, fld, "ceiling") not in run_files}
        draw_figures(config, stems, scores, per_split, run_stages, run_files, ctx.plan_stages)
        md += ["## Figures", "", "Each as PNG (shown) and PDF beside it, in `figures/`.", ""]
        md += [f"![{stem.name}]({_rel(figures.paths(stem)[0], base)})" for stem in stems.values()]
        md.append("")
    if translations:
        md += markdown(Table("Translation outputs", "BLEU and seconds per sentence", "output",
                             ("file", "sentences", "BLEU", "s/sentence median", "p90"),
                             tuple(tuple(map(Cell, (t["output"], f"`{t['file']}`", str(t["sentences"]),
                                                    f"{t['bleu']:.2f}", f"{t['seconds_per_sentence_median']:.4f}",
                                                    f"{t['seconds_per_sentence_p90']:.4f}"))) for t in translations)))
    md += _oov_lines(oov, dictionary)
    md += markdown(Table("Query latency", "seconds per query", "run",
                         ("split", "field", "queries", "median s", "p90 s"),
                         tuple(tuple(map(Cell, (r["run"], r["split"], r["field"], str(r["queries"]),
                                                f"{r['latency_median_seconds'] or 0:.4f}",
                                                f"{r['latency_p90_seconds'] or 0:.4f}"))) for r in runs_json)))
    md += markdown(Table("Stages", "wall and CPU seconds, peak memory", "stage", ("wall s", "CPU s", "peak memory MB"),
                         tuple(tuple(map(Cell, (s["stage"], f"{s['wall_seconds']:.1f}",
                                                "-" if s["cpu_seconds"] is None else f"{s['cpu_seconds']:.1f}",
                                                f"{s['peak_rss_mb']:.0f}"))) for s in stages_json)))

    md_path, csv_path, json_path, tex_path = stage.outputs[:4]
    with atomic_open(md_path) as handle:
        handle.write("\n".join(md))
    with atomic_open(tex_path) as handle:
        handle.write(latex_document(tables, f"Experiment {config.name}. {about} {legend}"))
    buffer = io.StringIO()
    columns = ["split", "field", "run", "method", "measure", "value", "p_value", "p_holm", "share_of_ceiling",
               "p_vs_inputs", "topics", "wins", "ties", "losses"]
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
              "untranslated": oov, "dictionary_segmentation": dictionary, "stages": stages_json, "scores": scores}
    with atomic_open(json_path) as handle:
        json.dump(report, handle, indent=1)
        handle.write("\n")
    return {"scores": len(scores), "tables": len(tables), "figures": len(stems)}
