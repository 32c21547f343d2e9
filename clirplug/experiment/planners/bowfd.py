"""BOW-FD in an experiment: weights trained per field on the candidates of the tune split, then every split reranked."""

from __future__ import annotations

from clirplug.errors import ClirplugError
from clirplug.experiment.kinds import Context, stage_kind, train_for_run, write_run_with_sidecar
from clirplug.experiment.plan import Plan, Stage, run_file
from clirplug.experiment.systems import describes, index_entry, model_entry
from clirplug.system_file import relative, system_path


def plan_bowfd(plan: Plan, spec, splits) -> None:
    """BOW-FD: weights trained per field on the tune split's candidates, then each split's candidates reranked.

    With cross-fitting, the training forests of each fold's topics come from that fold's model.
    """
    c, s, training = plan.config, spec.settings, spec.training
    if c.collection.passages is not None:
        raise ClirplugError(f"{c.source}: runs.{spec.name}: BOW-FD does not run on a passage collection "
                            "(collection.passages): its weights are learned from page-judged candidates")
    options = {key: value for key, value in spec.options.items() if key not in ("ltr", "lex")}  # the reranker's
    tune_qrels = c.collection.qrels(c.tune_split)
    if not tune_qrels.is_file():
        raise ClirplugError(f"{c.source}: runs.{spec.name}: {tune_qrels}: no such file (BOW-FD trains on it)")
    plan.runs_of(s.candidates, [c.tune_split, *splits])
    index = plan.index()
    parts = plan.parts(c.tune_split)
    deps = tuple(dict.fromkeys(d for p in parts for d in plan.translation_deps(s.kind, p.fold) + p.deps)) + (index,)
    for fld in c.fields:
        weights = c.model_dir / f"bowfd.{spec.name}.{fld}.weights"
        arguments = {"model_dirs": [str(p.model_dir) for p in parts], "kind": s.kind, "src_lang": c.collection.lang,
                     "index": str(c.index_dir),
                     "topic_files": [str(p.topics) for p in parts], "qrels": str(tune_qrels),
                     "candidates": str(run_file(c, c.tune_split, fld, s.candidates)), "field": fld,
                     "output": str(weights)}
        train = plan.add(Stage(f"train.{spec.name}.{fld}", "bowfd-train",
                               {"run": spec.name, "arguments": arguments,
                                "settings": {**options, "ltr": training.ltr, "lex": training.lex}},
                               inputs=(tune_qrels, *(i for p in parts for i in p.inputs)),
                               deps=deps + (plan.run_stages[(s.candidates, c.tune_split, fld)],), outputs=(weights,),
                               inputs_from=tuple(i for p in parts for i in p.inputs_from)))
        method = "bowfd" if s.lm else "bowfd-nolm"  # the report's Table 2 ablation

        def plan_part(part, fld=fld, train=train, weights=weights):
            return plan.run_stage({"name": spec.name, "method": method, "split": part.name, "field": fld}, "bowfd",
                                  {"model": str(part.model_dir), "kind": s.kind, "lang": c.collection.lang,
                                   "lm": s.lm, "index": str(c.index_dir), "depth": s.depth, "options": options,
                                   "topics": str(part.topics)},
                                  inputs=part.inputs,
                                  deps=(train, plan.run_stages[(s.candidates, part.split, fld)],
                                        *plan.translation_deps(s.kind, part.fold), *part.deps),
                                  inputs_from=(weights, run_file(c, part.split, fld, s.candidates),
                                               *part.inputs_from))

        for split in splits:
            plan.split_run({"name": spec.name, "method": method, "split": split, "field": fld}, plan_part)


@describes("bowfd")
def bowfd_system(stage: Stage, ctx: Context, system: dict, tuned: dict) -> dict:
    """A BOW-FD run's system: its model, trained weights and scoring settings, reranking its candidates' system."""
    from clirplug.train.bowfd import BowfdSettings

    config, s, run = ctx.config, stage.settings, stage.written_run
    scoring = BowfdSettings.from_mapping(s["options"], f"runs.{run['name']}").scoring(run["field"])
    return {**system, "method": "bowfd", "index": index_entry(config), "model": model_entry(config, s),
            "files": {"weights": relative(stage.inputs_from[0], config.root)},
            "first_stage": system_path(stage.inputs_from[1]).name,
            "options": {"settings": {name: getattr(scoring, name) for name in scoring.names()}, "lm": s["lm"],
                        "depth": s["depth"]}}


@stage_kind("bowfd-train", version=4)
def bowfd_train_stage(stage: Stage, ctx: Context) -> dict:
    """BOW-FD weights on the tune split (:func:`clirplug.train.bowfd.train_bowfd`: v by grid, then LTR unless disabled)."""
    train_for_run(stage, ctx, "bowfd")
    return {}


@stage_kind("bowfd")
def bowfd_stage(stage: Stage, ctx: Context) -> dict:
    """BOW-FD reranking of the candidate run (:func:`clirplug.rerank.bowfd.rerank_run`, as ``clirplug rerank
    --method bowfd``), timed per query (forests, Viterbi per document batch)."""
    from clirplug.io.runs import read_run
    from clirplug.io.topics import read_topics
    from clirplug.lucene.reader import LuceneIndex
    from clirplug.mt.translator import Translator
    from clirplug.rerank.bowfd import BowfdWeights, rerank_run
    from clirplug.train.bowfd import BowfdSettings

    s = stage.settings
    weights_path, candidates_path = stage.inputs_from[:2]  # then, for a fold, its topics
    translator = ctx.get(f"{s['model']}|translator|{s['kind']}|{s['lang']}",
                         lambda: Translator(s["model"], kind=s["kind"], src_lang=s["lang"]))
    index = ctx.get(f"{s['index']}|reader", lambda: LuceneIndex(s["index"], progress=False))
    config = BowfdSettings.from_mapping(s["options"], f"runs.{stage.written_run['name']}").scoring(stage.written_run["field"])
    weights = BowfdWeights.load(weights_path, translator.feature_names)
    latencies: dict[str, float] = {}
    frame = rerank_run(read_topics(s["topics"]), read_run(candidates_path), model=translator, index=index,
                       config=config, weights=weights, lm=s["lm"], depth=s["depth"], progress=ctx.progress,
                       latencies=latencies)
    return write_run_with_sidecar(stage, frame, latencies,
                                  tuned={"v": weights.v, "ir_weights": len(weights.ir), "lex_weights": len(weights.lex),
                                         "weights_file": str(weights_path)})
