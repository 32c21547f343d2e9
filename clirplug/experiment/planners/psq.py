"""PSQ in an experiment: its settings tuned on the tune split by a coordinate search over a grid, then each split searched."""

from __future__ import annotations

import json
import sys
import time

from clirplug.errors import ClirplugError
from clirplug.experiment.kinds import Context, stage_kind, write_run_with_sidecar
from clirplug.experiment.plan import Plan, Stage, bm25_settings
from clirplug.experiment.systems import describes, index_entry, model_entry


def plan_psq(plan: Plan, spec, splits) -> None:
    """PSQ over the index with the model folder's tables; with a ``grid``, settings tuned per field on the tune split."""
    from clirplug.qt.psq_tables import PsqSettings
    from clirplug.qt.psq_tune import grid_axes, may_decode

    c, s = plan.config, spec.settings
    start = PsqSettings.read(s.psq, f"{c.source}: runs.{spec.name}.psq")
    axes = grid_axes(s.grid, f"{c.source}: runs.{spec.name}.grid") if s.grid else []
    decodes = may_decode(start, axes)
    index = plan.index()

    def model_deps(part):
        return (plan.translation_deps(s.kind, part.fold) if decodes else (plan.model("align", fold=part.fold),)) \
            + part.deps + (index,)

    tuned = {}
    if axes:
        qrels = c.collection.qrels(c.tune_split)
        if not qrels.is_file():
            raise ClirplugError(f"{c.source}: runs.{spec.name}.grid: {qrels}: no such file (PSQ settings are tuned on it)")
        parts = plan.parts(c.tune_split)
        for fld in c.fields:
            tune = Stage(f"tune.{spec.name}.{fld}", "psq-tune",
                         {**bm25_settings(c), "run": spec.name, "field": fld, "split": c.tune_split,
                          "psq": start.spec(), "grid": axes,
                          "kind": s.kind, "lang": c.collection.lang, "measure": "MAP", **plan.search_hits(),
                          "parts": [{"split": p.name, "topics": str(p.topics), "model": str(p.model_dir)} for p in parts]},
                         inputs=(qrels, *(i for p in parts for i in p.inputs)),
                         deps=tuple(dict.fromkeys(d for p in parts for d in model_deps(p))),
                         outputs=(c.run_dir / f"{c.tune_split}.{fld}.{spec.name}.psq.json",),
                         inputs_from=tuple(i for p in parts for i in p.inputs_from))
            tuned[fld] = plan.add(tune)

    def plan_part(part, fld):
        deps, inputs_from = model_deps(part), part.inputs_from
        if fld in tuned:
            deps, inputs_from = deps + (tuned[fld],), inputs_from + plan.stages[tuned[fld]].outputs
        return plan.run_stage({"name": spec.name, "method": "psq", "split": part.name, "field": fld}, "psq",
                              {**bm25_settings(c), "psq": start.spec(), "kind": s.kind, "model": str(part.model_dir),
                               "lang": c.collection.lang, "topics": str(part.topics), "tuned": fld in tuned},
                              inputs=part.inputs, deps=deps, inputs_from=inputs_from)

    for split in splits:
        for fld in c.fields:
            plan.split_run({"name": spec.name, "method": "psq", "split": split, "field": fld},
                           lambda part, fld=fld: plan_part(part, fld))


@describes("psq")
def psq_system(stage: Stage, ctx: Context, system: dict, tuned: dict) -> dict:
    """A PSQ run's system: the model folder's tables with the run's (or the tuned) settings, BM25 on the index."""
    s = stage.settings
    return {**system, "method": "psq", "index": index_entry(ctx.config), "model": model_entry(ctx.config, s),
            "options": {"settings": tuned.get("psq", s["psq"]), "field": stage.written_run["field"], "bm25": s["bm25"]}}


def _psq_scorer(ctx: Context, s: dict):
    from clirplug.qt.psq import PsqScorer

    return ctx.get(f"{s['index']}|psq|{s['bm25']['k1']}|{s['bm25']['b']}",
                   lambda: PsqScorer(s["index"], s["bm25"]["k1"], s["bm25"]["b"], progress=ctx.progress))


def _psq_builders(ctx: Context, model: str, kind: str, topics_path: str, lang: str):
    """The PSQ builders of a model for the topics of one file, shared by the tuning and the run stages
    (grammar and decoder restricted to those topics' words, per-sentence tables kept)."""
    from clirplug.io.topics import read_topics
    from clirplug.qt.psq_tune import Builders

    return ctx.get(f"{model}|psq|{kind}|{topics_path}", lambda: Builders(model, kind, read_topics(topics_path), lang))


@stage_kind("psq-tune", version=1)
def psq_tune_stage(stage: Stage, ctx: Context) -> dict:
    """PSQ settings by a coordinate search over the grid on the tune split (:mod:`clirplug.qt.psq_tune`)."""
    import pandas as pd

    from clirplug.atomic import atomic_open
    from clirplug.eval.measures import evaluate, is_trec_ap, parse_measures
    from clirplug.io.qrels import read_qrels
    from clirplug.passages import max_passage
    from clirplug.qt.psq_tables import PsqSettings
    from clirplug.qt.psq_tune import TuningAP, coordinate_search, run_settings, settings_queries

    s = stage.settings
    qrels = read_qrels(stage.inputs[0])
    scorer = _psq_scorer(ctx, s)
    builders = [_psq_builders(ctx, p["model"], s["kind"], p["topics"], s["lang"]) for p in s["parts"]]
    started = time.perf_counter()
    # MAP: each topic's AP, a query searched and evaluated once over the grid (passages: as their pages)
    by_topic = TuningAP(scorer, qrels, s["hits"], s.get("max_passage_hits")) \
        if is_trec_ap(parse_measures([s["measure"]])[0]) else None

    def measure(settings):
        if by_topic is not None:
            value = by_topic.mean({qid: query for b in builders
                                   for qid, query in settings_queries(b, s["field"], settings).items()})
        else:
            run = pd.concat([run_settings(scorer, b, s["field"], settings, hits=s["hits"]) for b in builders],
                            ignore_index=True)
            if "max_passage_hits" in s:  # a passage collection: the pages by their best passage
                run = max_passage(run, s["max_passage_hits"])
            value = float(evaluate(qrels, {"run": run}, [s["measure"]])["value"].iloc[0])
        if ctx.progress:
            print(f"{stage.name}: {s['measure']} {value:.4f} {settings.spec()}", file=sys.stderr, flush=True)
        return value

    best, results = coordinate_search(measure, PsqSettings.parse(s["psq"]), s["grid"])
    record = {"psq": best.spec(), "measure": s["measure"], "value": results[best.spec()], "split": s["split"],
              "parts": [p["split"] for p in s["parts"]], "grid": {key: values for key, values in s["grid"]},
              "evaluated": [{"psq": spec, s["measure"]: value} for spec, value in results.items()]}
    with atomic_open(stage.outputs[0]) as handle:
        json.dump(record, handle, indent=1)
        handle.write("\n")
    return {"psq": best.spec(), s["measure"]: results[best.spec()], "evaluated": len(results),
            "seconds": round(time.perf_counter() - started, 1)}


@stage_kind("psq", version=2)
def psq_stage(stage: Stage, ctx: Context) -> dict:
    """PSQ (:func:`clirplug.qt.psq_tune.run_settings`) with the model folder's tables and the run's (or the
    tuned) ``--psq`` settings; a query's latency is its distributions built, then searched."""
    from clirplug.qt.psq_tables import PsqSettings
    from clirplug.qt.psq_tune import run_settings

    s = stage.settings
    spec = json.loads(stage.inputs_from[-1].read_text(encoding="utf-8"))["psq"] if s["tuned"] else s["psq"]
    builders = _psq_builders(ctx, s["model"], s["kind"], s["topics"], s["lang"])
    latencies: dict[str, float] = {}
    frame = run_settings(_psq_scorer(ctx, s), builders, stage.written_run["field"], PsqSettings.parse(spec), hits=s["hits"],
                         progress=ctx.progress, latencies=latencies)
    return write_run_with_sidecar(stage, frame, latencies, tuned={"psq": spec} if s["tuned"] else None)
