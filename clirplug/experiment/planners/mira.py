"""DT-MIRA in an experiment: MIRA weights trained per field on the tune split's cross-fitted n-best lists, then
each split searched with the reranked 1-best (Nikoulina et al. 2012, §3.2)."""

from __future__ import annotations

from clirplug.errors import ClirplugError
from clirplug.experiment.kinds import (
    Context,
    bm25_searcher,
    stage_kind,
    train_for_run,
    write_run_with_sidecar,
)
from clirplug.experiment.plan import Plan, Stage, bm25_settings
from clirplug.experiment.systems import describes, index_entry, model_entry
from clirplug.system_file import relative


def plan_dt_mira(plan: Plan, spec, splits) -> None:
    """DT-MIRA: per field, MIRA weights trained on the tune split, then each split's n-best lists reranked.

    With cross-fitting the training n-best lists of each fold's topics come from that fold's model (as the
    query-genre weights' parallel queries, :func:`clirplug.experiment.planners.dt.plan_query_weights`, and BOW-FD's
    forests), and each fold's own run is reranked by weights trained on the other folds' topics: the tune split's
    runs (a fusion's kappa is tuned on them) are scored by weights that never saw their qrels.
    """
    c, s = plan.config, spec.settings
    tune_qrels = c.collection.qrels(c.tune_split)
    if not tune_qrels.is_file():
        raise ClirplugError(f"{c.source}: runs.{spec.name}: {tune_qrels}: no such file (MIRA trains on it)")
    index = plan.index()
    parts = plan.parts(c.tune_split)
    cross_fitted = parts[0].fold is not None
    deps = tuple(dict.fromkeys(d for p in parts for d in plan.translation_deps(s.kind, p.fold) + p.deps)) + (index,)
    for fld in c.fields:
        weights = c.model_dir / f"mira.{spec.name}.{fld}.json"
        held_out = tuple(c.model_dir / f"mira.{spec.name}.{fld}.f{p.fold}.json" for p in parts) if cross_fitted else ()
        searches = c.model_dir / f"mira.{spec.name}.{fld}.searches.json.gz"
        arguments = {"model": [str(p.model_dir) for p in parts], "kind": s.kind, "index": str(c.index_dir),
                     "topics": [str(p.topics) for p in parts], "qrels": str(tune_qrels), "field": fld,
                     "output": str(weights), "searches": str(searches),
                     "held_out": [str(path) for path in held_out] if cross_fitted else None,
                     "src_lang": c.collection.lang}
        train = plan.add(Stage(f"train.{spec.name}.{fld}", "mira-train",
                               {"run": spec.name, "arguments": arguments,
                                "settings": {**spec.options, "k1": c.bm25["k1"], "b": c.bm25["b"]}},
                               inputs=(tune_qrels, *(i for p in parts for i in p.inputs)), deps=deps,
                               outputs=(weights, *held_out, searches),
                               inputs_from=tuple(i for p in parts for i in p.inputs_from)))

        def plan_part(part, fld=fld, train=train, weights=weights, held_out=held_out):
            mira = held_out[part.fold] if part.fold is not None else weights
            return plan.run_stage({"name": spec.name, "method": "dt-mira", "split": part.name, "field": fld}, "dt-mira",
                                  {**bm25_settings(c), "model": str(part.model_dir), "kind": s.kind,
                                   "lang": c.collection.lang, "topics": str(part.topics),
                                   "held_out_on_tune": cross_fitted},
                                  inputs=part.inputs,
                                  deps=(train, index, *plan.translation_deps(s.kind, part.fold), *part.deps),
                                  inputs_from=(mira, *part.inputs_from))

        for split in splits:
            plan.split_run({"name": spec.name, "method": "dt-mira", "split": split, "field": fld}, plan_part)


@describes("dt-mira")
def dt_mira_system(stage: Stage, ctx: Context, system: dict, tuned: dict) -> dict:
    """A DT-MIRA run's system: the model, its MIRA weights, BM25 on the index."""
    s = stage.settings
    return {**system, "method": "dt-mira", "index": index_entry(ctx.config), "model": model_entry(ctx.config, s),
            "files": {"mira": relative(stage.inputs_from[0], ctx.config.root)},
            "options": {"field": stage.written_run["field"], "bm25": s["bm25"]}}


@stage_kind("mira-train")
def mira_train_stage(stage: Stage, ctx: Context) -> dict:
    """MIRA weights on the tune split's n-best lists (:func:`clirplug.train.mira.train_mira`), and without each
    fold's topics."""
    from clirplug.qt.mira import MiraModel

    train_for_run(stage, ctx, "mira")
    s = stage.settings
    stats = MiraModel.load(s["arguments"]["output"]).stats
    return {key: stats[key] for key in ("topics", "instances", "informative_instances", "C", "C_argmax",
                                        "train_ap_decoder_1best", "train_ap_reranked", "train_ap_oracle")} | {
        "C_held_out": [MiraModel.load(path).stats["C"] for path in s["arguments"]["held_out"] or ()]}


@stage_kind("dt-mira")
def dt_mira_stage(stage: Stage, ctx: Context) -> dict:
    """DT-MIRA (:func:`clirplug.qt.mira.mira_queries`, as ``clirplug search --method dt-mira``): each sentence's
    n-best list reranked by the MIRA weights, then BM25; latency = n-best decoding and reranking + search seconds."""
    from clirplug.io.topics import read_topics
    from clirplug.lucene.reader import LuceneIndex
    from clirplug.mt.translator import Translator
    from clirplug.qt.mira import mira_queries, mira_weights

    s = stage.settings
    weights = mira_weights(stage.inputs_from[0], s["kind"], ())
    translator = ctx.get(f"{s['model']}|translator|{s['kind']}|{s['lang']}|mira",
                         lambda: Translator(s["model"], kind=s["kind"], src_lang=s["lang"]))
    reader = ctx.get(f"{s['index']}|reader", lambda: LuceneIndex(s["index"], progress=False)) \
        if weights.uses_index else None
    latencies: dict[str, float] = {}
    queries = mira_queries(read_topics(s["topics"]), stage.written_run["field"], translator, weights, (), reader,
                           ctx.progress, latencies)
    frame = bm25_searcher(ctx, s["index"], s["bm25"]).search_all(queries, s["hits"], ctx.progress, latencies)
    return write_run_with_sidecar(stage, frame, latencies,
                                  tuned={"C": weights.settings.get("C"), "weights_file": str(stage.inputs_from[0])})
