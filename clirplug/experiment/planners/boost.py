"""Boosting in an experiment: bagged RankBoost trained per field on the tune split, then each split scored or reranked."""

from __future__ import annotations

from clirplug.errors import ClirplugError
from clirplug.experiment.kinds import Context, stage_kind, train_for_run, write_run_with_sidecar
from clirplug.experiment.plan import Plan, Stage
from clirplug.experiment.systems import corpus_entry, describes
from clirplug.system_file import relative, system_path


def plan_boost(plan: Plan, spec, splits) -> None:
    """Boosting: train on the tune split per field, then score (or rerank ``candidates``) each split."""
    c, s = plan.config, spec.settings
    corpus = plan.corpus()  # the model is trained on the pages (the qrels judge pages), scores what is searched
    tune_qrels = c.collection.qrels(c.tune_split)
    if not tune_qrels.is_file():
        raise ClirplugError(f"{c.source}: runs.{spec.name}: {tune_qrels}: no such file (boosting trains on it)")
    for fld in c.fields:
        model = c.model_dir / f"boost.{spec.name}.{fld}.npz"
        arguments = {"topics": str(c.collection.topics(c.tune_split)), "qrels": str(tune_qrels),
                     "corpus": str(c.collection.corpus), "output": str(model)}
        train = plan.add(Stage(f"train.{spec.name}.{fld}", "boost-train",
                               {"run": spec.name, "arguments": arguments,
                                "settings": {**spec.options, "field": fld, "src_lang": c.collection.lang}},
                               inputs=(c.collection.topics(c.tune_split), tune_qrels, c.collection.corpus),
                               outputs=(model,)))
        for split in splits:
            deps, inputs_from = [train, *corpus.deps], [model]
            if s.candidates:
                plan.runs_of(s.candidates, [split])
                candidates, candidates_file = plan.ranking(s.candidates, split, fld)
                deps.append(candidates)
                inputs_from.append(candidates_file)
            plan.run_stage({"name": spec.name, "method": "boost", "split": split, "field": fld}, "boost",
                           {"corpus": str(corpus.path), "candidates": s.candidates},
                           inputs=(c.collection.topics(split),), deps=tuple(deps), inputs_from=tuple(inputs_from))


@describes("boost")
def boost_system(stage: Stage, ctx: Context, system: dict, tuned: dict) -> dict:
    """A boosting run's system: its model and the corpus, reranking its candidates' system if it has some."""
    config = ctx.config
    first = system_path(stage.inputs_from[1]).name if len(stage.inputs_from) > 1 else None
    return {**system, "method": "boost", "corpus": corpus_entry(config), "first_stage": first,
            "files": {"model": relative(stage.inputs_from[0], config.root)},
            "options": {"field": stage.written_run["field"], "depth": stage.settings["hits"]}}


@stage_kind("boost-train", version=3)
def boost_train_stage(stage: Stage, ctx: Context) -> dict:
    """Bagged RankBoost on the tune split (:func:`clirplug.train.boost.train_boost`; beta tuned on held-out topics)."""
    train_for_run(stage, ctx, "boost")
    ctx.forget(str(stage.outputs[0]))
    return {}


@stage_kind("boost")
def boost_stage(stage: Stage, ctx: Context) -> dict:
    """Boosting run (:func:`clirplug.boost.rerank_run`): the whole collection scored, or the candidates of
    another run reranked."""
    from clirplug import boost
    from clirplug.io.runs import read_run
    from clirplug.io.topics import read_topics

    s = stage.settings
    model_path = stage.inputs_from[0]
    model = ctx.get(str(model_path), lambda: boost.load(model_path))
    collection = ctx.get(f"{s['corpus']}|boost|{model.config.order}|{model.config.doc_tokens}|{model.config.hash_seed}",
                         lambda: boost.read_collection(s["corpus"], model))
    candidates = read_run(stage.inputs_from[1]) if len(stage.inputs_from) > 1 else None
    latencies: dict[str, float] = {}
    frame = boost.rerank_run(read_topics(stage.inputs[0]), candidates, model=model, corpus=collection,
                             field=stage.written_run["field"], depth=s["hits"], progress=ctx.progress, latencies=latencies)
    return write_run_with_sidecar(stage, frame, latencies, tuned={"beta": float(model.beta)})
