"""DT in an experiment: topics translated by the decoder (over ``--jobs`` workers), then searched with BM25."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from clirplug.errors import ClirplugError
from clirplug.executor import ExecutorSettings, make_executor
from clirplug.experiment.kinds import Context, bm25_searcher, bm25_stage, stage_kind, stdout_to_log
from clirplug.experiment.plan import Plan, Stage, bm25_settings
from clirplug.experiment.systems import describes, index_entry, model_entry
from clirplug.resources import peak_rss_mb


def plan_dt(plan: Plan, spec, splits) -> None:
    """DT: translate each topic field (``translate`` stage, ``--jobs`` processes), then BM25.

    ``weights: queries`` decodes with weights tuned on parallel queries (:func:`plan_query_weights`).
    """
    c, s = plan.config, spec.settings
    index = plan.index()
    tuned = {fld: plan_rm3_tune(plan, spec, fld) for fld in c.fields} if s.grid is not None else {}

    def plan_part(part, fld):
        translate = plan.stages[plan_translation(plan, s.kind, s.weights, part, fld)]
        deps, inputs_from = (index, translate.name), translate.outputs
        if fld in tuned:  # RM3's parameters chosen on the tune split
            deps, inputs_from = deps + (tuned[fld],), inputs_from + plan.stages[tuned[fld]].outputs
        return plan.run_stage({"name": spec.name, "method": "dt", "split": part.name, "field": fld}, "dt",
                              {**bm25_settings(c), "kind": s.kind, "weights": s.weights, **_rm3_settings(s)},
                              deps=deps, inputs_from=inputs_from)

    for split in splits:
        for fld in c.fields:
            plan.split_run({"name": spec.name, "method": "dt", "split": split, "field": fld},
                           lambda part, fld=fld: plan_part(part, fld))
    if s.weights == "queries":  # tuned on desc queries' bitext lines: the grammars keep their words
        plan.source_text(desc_queries=True)


def plan_translation(plan: Plan, kind: str, weights: str, part, fld: str) -> str:
    """The ``translate`` stage of a part's topic field: 1-best translations by the part's model (a fold's for a
    cross-fitted tune split) with the ``kind`` grammar, decoded with the bitext's weights or, for ``weights:
    queries``, those tuned on parallel queries (:func:`plan_query_weights`); DT and the runs reusing its
    translations (dense retrieval of the translated query) share it."""
    c = plan.config
    variant = kind + ("" if weights == "bitext" else ".queries")
    out = c.run_dir / "translations" / f"{part.name}.{fld}.{variant}.jsonl"
    deps, inputs_from, weights_file = plan.translation_deps(kind, part.fold) + part.deps, part.inputs_from, None
    if weights == "queries":
        tuned = plan.stages[plan_query_weights(plan, kind, fld)]
        deps, inputs_from, weights_file = deps + (tuned.name,), inputs_from + tuned.outputs, str(tuned.outputs[0])
    return plan.add(Stage(f"translate.{variant}.{part.name}.{fld}", "translate",
                          {"model": str(part.model_dir), "kind": kind, "lang": c.collection.lang, "field": fld,
                           "topics": str(part.topics), "weights": weights_file},
                          inputs=part.inputs, deps=deps, outputs=(out,), inputs_from=inputs_from))


def _rm3_settings(settings) -> dict:
    """A DT run's RM3, as stage settings: none without feedback (the stages' settings, so their cache keys, are
    those of before RM3), ``rm3: {fb_terms, fb_docs, original_query_weight}`` with it, ``rm3: {grid: [...]}`` when
    they are chosen on the tune split (:func:`plan_rm3_tune`)."""
    import dataclasses

    from clirplug.lucene.rm3 import rm3_grid

    if settings.prf == "none":
        return {}
    if settings.grid is not None:
        return {"rm3": {"grid": [dataclasses.asdict(rm3) for rm3 in rm3_grid(settings.grid)]}}
    return {"rm3": {"fb_terms": settings.fb_terms, "fb_docs": settings.fb_docs,
                    "original_query_weight": settings.original_query_weight}}


def plan_rm3_tune(plan: Plan, spec, fld: str) -> str:
    """RM3's parameters of a DT run with a ``grid``, chosen for field ``fld`` on the tune split: its translations
    (cross-fitted: each fold's topics by the fold's model) expanded with each setting of the grid, the best MAP
    kept (:func:`clirplug.qt.dt.choose_rm3`)."""
    import dataclasses

    from clirplug.lucene.rm3 import rm3_grid

    c, s = plan.config, spec.settings
    qrels = c.collection.qrels(c.tune_split)
    if not qrels.is_file():
        raise ClirplugError(f"{c.source}: runs.{spec.name}.grid: {qrels}: no such file (RM3's parameters are tuned on it)")
    translations = [plan.stages[plan_translation(plan, s.kind, s.weights, part, fld)] for part in plan.parts(c.tune_split)]
    grid = [dataclasses.asdict(rm3) for rm3 in rm3_grid(s.grid, lambda key: f"{c.source}: runs.{spec.name}.{key}")]
    return plan.add(Stage(f"tune.{spec.name}.{fld}", "rm3-tune",
                          {**bm25_settings(c), "grid": grid, "field": fld, "split": c.tune_split, "measure": "MAP",
                           **plan.search_hits()},
                          inputs=(qrels,), deps=(plan.index(), *(t.name for t in translations)),
                          outputs=(c.run_dir / f"{c.tune_split}.{fld}.{spec.name}.rm3.json",),
                          inputs_from=tuple(t.outputs[0] for t in translations)))


def _rm3_of(stage: Stage) -> tuple:
    """``(Rm3 or None, tuned)`` of a DT run stage: its RM3 settings, or those its tuning chose (its second input),
    with them as the sidecar's tuned settings; None without feedback."""
    from clirplug.lucene.rm3 import Rm3

    rm3 = stage.settings.get("rm3")
    if rm3 is None:
        return None, None
    if "grid" in rm3:
        chosen = json.loads(stage.inputs_from[1].read_text(encoding="utf-8"))["rm3"]
        return Rm3(**chosen), {"rm3": chosen}
    return Rm3(**rm3), None


def read_translations(*paths) -> tuple[dict[str, str], dict[str, float]]:
    """``(qid -> 1-best, qid -> translation seconds)`` of ``translate`` stages' files (JSON lines)."""
    queries, seconds = {}, {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            queries[record["id"]], seconds[record["id"]] = record["query"], record["seconds"]
    return queries, seconds


def plan_query_weights(plan: Plan, kind: str, fld: str) -> str:
    """Decoder weights tuned for BLEU on parallel queries of field ``fld`` (query-genre adaptation,
    Nikoulina et al. 2012): the tune split's topics paired with their English mates.

    With cross-fitting, the queries are those of fold 0, decoded by fold 0's model (which never saw
    their pages); the weights then serve every model of the experiment.
    """
    c = plan.config
    coll = c.collection
    part = plan.parts(c.tune_split)[0]
    out = c.model_dir / f"weights.{kind}.queries-{fld}"
    arguments = {"model": str(part.model_dir), "kind": kind, "queries": str(part.topics), "field": fld,
                 "src_lang": coll.lang, "tgt_lang": coll.doc_lang, "output": str(out)}
    inputs = part.inputs
    if fld == "title":
        arguments["corpus"] = str(coll.corpus)
        inputs += (coll.corpus,)
    else:
        ids = coll.bitext(c.tune_split, "ids")
        if not ids.is_file():
            raise ClirplugError(f"{c.source}: runs: weights: queries: {ids}: no such file (desc queries are paired with "
                                "the bitext lines of their page)")
        paths = (coll.bitext(c.tune_split, coll.lang), coll.bitext(c.tune_split, coll.doc_lang), ids)
        arguments["bitext"] = [str(path) for path in paths]
        inputs += paths
    options = c.models.get("weights", {})
    return plan.add(Stage(f"model.weights.{kind}.queries.{fld}", "query-weights",
                          {"arguments": arguments, "settings": options},
                          inputs=inputs, deps=plan.translation_deps(kind, part.fold) + part.deps, outputs=(out,),
                          inputs_from=part.inputs_from))


@describes("dt")
def dt_system(stage: Stage, ctx: Context, system: dict, tuned: dict) -> dict:
    """A DT run's system: the model and decoder weights of its translate stage, BM25 on the index."""
    translate = ctx.plan_stages[stage.deps[1]].settings
    return {**system, "method": "dt", "index": index_entry(ctx.config),
            "model": model_entry(ctx.config, translate, translate["weights"]),
            "options": {"field": stage.written_run["field"], "bm25": stage.settings["bm25"], **_rm3_options(stage, tuned)}}


def _rm3_options(stage: Stage, tuned: dict) -> dict:
    """A DT run's RM3 as searcher options: none without feedback, else ``prf`` and the parameters it ran with."""
    rm3 = tuned.get("rm3") or stage.settings.get("rm3")
    return {} if rm3 is None else {"prf": "rm3", **rm3}


@stage_kind("translate")
def translate_stage(stage: Stage, ctx: Context) -> dict:
    """1-best query translations of one split and field, topics spread over ``--jobs`` workers."""
    from clirplug.atomic import atomic_open
    from clirplug.io.topics import read_topics

    s = stage.settings
    topics = read_topics(s["topics"])
    queries, seconds, peak = translate_topics(topics, s["model"], s["kind"], s["lang"], s["field"], s["weights"],
                                              ctx.workers)
    with atomic_open(stage.outputs[0]) as out:
        for topic in topics:
            record = {"id": topic.id, "query": queries[topic.id], "seconds": round(seconds[topic.id], 6)}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return {"topics": len(topics), "worker_peak_rss_mb": peak}


def translate_topics(topics, model, kind: str, lang: str, field_name: str, weights, workers: ExecutorSettings):
    """``(qid -> 1-best, qid -> seconds, the workers' peak memory in MB)``: the topics dealt round-robin into
    ``workers.jobs`` chunks, one chunk a task (each loads the model restricted to its topics' words); the
    translations do not depend on the executor nor on the number of chunks."""
    chunks = max(1, min(workers.jobs, len(topics)))
    tasks = [(model, kind, lang, field_name, topics[i::chunks], weights) for i in range(chunks)]
    with make_executor(workers) as executor:
        results = executor.map(_translate_chunk, tasks)
    queries, seconds = {}, {}
    for part_queries, part_seconds, _ in results:
        queries.update(part_queries)
        seconds.update(part_seconds)
    return queries, seconds, max(peak for _, _, peak in results)


@stage_kind("dt")
def dt_stage(stage: Stage, ctx: Context) -> dict:
    """DT: BM25 with the 1-best translations (with ``rm3``, expanded by RM3); latency = translation + search
    seconds."""
    queries, seconds = read_translations(stage.inputs_from[0])
    rm3, tuned = _rm3_of(stage)
    return bm25_stage(ctx, stage, queries, seconds, rm3=rm3, tuned=tuned)


@stage_kind("rm3-tune")
def rm3_tune_stage(stage: Stage, ctx: Context) -> dict:
    """RM3's parameters of a DT run chosen on the tune split's translations (:func:`clirplug.qt.dt.choose_rm3`):
    the choice and every setting's measure as JSON."""
    from clirplug.atomic import atomic_open
    from clirplug.io.qrels import read_qrels
    from clirplug.lucene.rm3 import Rm3
    from clirplug.qt.dt import choose_rm3

    s = stage.settings
    queries = read_translations(*stage.inputs_from)[0]
    grid = [Rm3(**rm3) for rm3 in s["grid"]]
    best, values = choose_rm3(bm25_searcher(ctx, s["index"], s["bm25"]), queries, read_qrels(stage.inputs[0]), grid,
                              hits=s["hits"], measure=s["measure"], max_passage_hits=s.get("max_passage_hits"))
    chosen = dataclasses.asdict(best)
    with atomic_open(stage.outputs[0]) as handle:
        json.dump({"rm3": chosen, "measure": s["measure"], "value": max(values), "split": s["split"],
                   "evaluated": [{**rm3, s["measure"]: value} for rm3, value in zip(s["grid"], values)]},
                  handle, indent=1)
        handle.write("\n")
    return {**chosen, s["measure"]: max(values)}


def _translate_chunk(task):
    """Worker: the 1-best translation and the seconds of each of some topics (:func:`clirplug.mt.one_best.dt_queries`),
    and the worker's peak memory."""
    model_dir, kind, lang, field_name, topics, weights = task
    from clirplug.mt.features import read_weights
    from clirplug.mt.one_best import dt_queries
    from clirplug.mt.translator import Translator

    translator = Translator(model_dir, kind=kind, src_lang=lang, weights=read_weights(weights) if weights else None)
    seconds: dict[str, float] = {}
    queries = dt_queries(topics, field_name, translator, progress=False, latencies=seconds)
    return queries, seconds, peak_rss_mb()


@stage_kind("query-weights", version=3)
def query_weights_stage(stage: Stage, ctx: Context) -> dict:
    """Decoder weights tuned on parallel queries (:func:`clirplug.train.weights.query_pairs`).

    When the tune split yields no parallel query of the field (a collection whose bitext names no
    page), the model's own weights are written instead, and the log and the stage record say so.
    """
    from clirplug.mt.features import DEFAULT_WEIGHTS, read_weights, write_weights
    from clirplug.train.weights import WeightsSettings, query_pairs, train_weights

    s = stage.settings
    a = s["arguments"]
    settings = WeightsSettings.from_mapping(s["settings"], "models.weights")
    with stdout_to_log():
        pairs, origin = query_pairs(a["queries"], a["field"], corpus=a.get("corpus"), bitext=a.get("bitext"))
        if pairs:
            train_weights(a["model"], a["kind"], pairs, origin, settings, src_lang=a["src_lang"],
                          tgt_lang=a["tgt_lang"], output=a["output"], progress=ctx.progress)
            return {"queries": len(pairs)}
    base = Path(a["model"]) / f"weights.{a['kind']}"
    weights = {**DEFAULT_WEIGHTS, **(read_weights(base) if base.is_file() else {})}
    write_weights(weights, a["output"], comment=f"no parallel queries in {origin}: the weights of {a['model']}")
    print(f"clirplug: warning: no parallel queries in {origin}; {a['output']} keeps the model's weights", file=sys.stderr)
    return {"queries": 0, "fallback": "the model's weights"}
