"""The experiment's systems: a system file beside each run, and the system recommended for each field.

A run's system file (:mod:`clirplug.system_file`) names its method, index, model, corpus, weight files and every
setting chosen on the tune split, with the systems it is built on; :func:`clirplug.api.load_system` loads it again.
The runs of the reported splits get one, but the ceiling (the English mates' titles are no system's queries) and
runs joined from cross-fitted parts (each part has its own model).

The recommended system of a field has the best MAP on the tune split's runs (cross-fitted: the tune topics
translated by models that never saw them), among the systems whose tune-split run exists (a fusion's: its inputs'
tune runs fused with its tuned method and kappa) and that learn nothing from the tune split's qrels (no boosting,
no BOW-FD, whose tune-split runs score their own training topics); ties (at the report's 4 decimals) go to the cheaper system:
fewer searchers, then fewer rerankers. It is written as ``recommended.<field>.json``, a system file.
"""

from __future__ import annotations

import json

from clirplug.experiment.stages import Stage, run_file, stage_kind
from clirplug.methods import METHODS
from clirplug.system_file import relative, root_of, system_path, write_system

MEASURE = "MAP"
DECIMALS = 4  # ties: equal at the report's precision


def _model(config, settings: dict, weights=None) -> dict:
    return {"folder": relative(settings["model"], config.root), "kind": settings["kind"], "src_lang": settings["lang"],
            "weights": None if weights is None else relative(weights, config.root)}


def _describe(stage: Stage, ctx) -> dict:
    """The system of a run stage (keys of :mod:`clirplug.system_file`, but ``format`` and ``root``)."""
    config, s, run = ctx.config, stage.settings, stage.run
    tuned = json.loads(stage.outputs[0].with_suffix(".json").read_text(encoding="utf-8"))["tuned"]
    index, corpus = relative(config.index_dir, config.root), relative(config.collection.corpus, config.root)
    system = {"name": run["name"], "field": run["field"], "tag": f"{run['name']}.{run['field']}", "hits": s["hits"],
              "index": None, "corpus": None, "model": None, "files": {}, "first_stage": None, "searchers": None}
    kind = stage.kind
    if kind == "floor":
        return {**system, "method": "bm25", "index": index, "options": {"bm25": s["bm25"]}}
    if kind == "dt":
        translate = ctx.plan_stages[stage.deps[1]].settings
        return {**system, "method": "dt", "index": index, "model": _model(config, translate, translate["weights"]),
                "options": {"field": run["field"], "bm25": s["bm25"]}}
    if kind == "psq":
        return {**system, "method": "psq", "index": index, "model": _model(config, s),
                "options": {"settings": tuned.get("psq", s["psq"]), "field": run["field"], "bm25": s["bm25"]}}
    if kind == "bowfd":
        from clirplug.train.bowfd import BowfdSettings

        scoring = BowfdSettings.from_mapping(s["options"], f"runs.{run['name']}").scoring(run["field"])
        return {**system, "method": "bowfd", "index": index, "model": _model(config, s),
                "files": {"weights": relative(stage.inputs_from[0], config.root)},
                "first_stage": system_path(stage.inputs_from[1]).name,
                "options": {"settings": {name: getattr(scoring, name) for name in scoring.names()}, "lm": s["lm"],
                            "depth": s["depth"]}}
    if kind == "boost":
        first = system_path(stage.inputs_from[1]).name if len(stage.inputs_from) > 1 else None
        return {**system, "method": "boost", "corpus": corpus, "first_stage": first,
                "files": {"model": relative(stage.inputs_from[0], config.root)},
                "options": {"field": run["field"], "depth": s["hits"]}}
    if kind == "fusion":
        return {**system, "method": "fusion", "searchers": [system_path(path).name for path in stage.inputs_from[1:]],
                "options": {"method": tuned["method"], "kappa": tuned["kappa"], "depth": s["hits"]}}
    if kind == "dense":
        return {**system, "method": "dense", "index": index, "corpus": corpus,
                "options": {"words": tuned.get("words", s.get("words"))}}
    raise AssertionError(f"{stage.name}: no system for stage kind {kind}")


def add_systems_stage(plan) -> str:
    """The stage writing the run's system files and each field's recommended system, after every other stage.

    Its settings list the run stages given a system (of the reported splits, but the ceiling and joined runs, and
    built on runs given one) and, per field, the runs compared for the recommendation: those of the first reported
    split with a tune-split run, or fusing runs that have one, but those built on a method that trains on the tune
    split (boosting, BOW-FD: their tune-split runs score the topics they learned from).
    """
    c = plan.config
    by_file = {stage.outputs[0]: stage for stage in plan.stages.values() if stage.run}

    def inputs(stage: Stage) -> list[Stage]:
        return [by_file[path] for path in stage.inputs_from if path in by_file]

    def with_system(stage: Stage) -> bool:
        return (stage.run["split"] in c.splits and stage.kind not in ("ceiling", "join")
                and all(map(with_system, inputs(stage))))

    def trained(stage: Stage) -> bool:  # learned from the tune split's qrels: in-sample there
        return getattr(METHODS.get(stage.kind), "training", None) is not None or any(map(trained, inputs(stage)))

    runs = [stage for stage in by_file.values() if with_system(stage)]
    tuned = {(name, fld) for name, split, fld in plan.run_stages if split == c.tune_split}
    compared = {}
    if c.collection.qrels(c.tune_split).is_file():
        for fld in c.fields:
            names = [stage.run["name"] for stage in runs if stage.run["split"] == c.splits[0] and stage.run["field"] == fld
                     and not trained(stage) and ((stage.run["name"], fld) in tuned or (stage.kind == "fusion" and all(
                         (run.run["name"], fld) in tuned for run in inputs(stage))))]
            if names:
                compared[fld] = names
    outputs = tuple(system_path(stage.outputs[0]) for stage in runs)
    outputs += tuple(c.run_dir / f"recommended.{fld}.json" for fld in compared)
    settings = {"measure": MEASURE, "split": c.tune_split, "decimals": DECIMALS, "compared": compared,
                "runs": [stage.name for stage in runs]}
    qrels = (c.collection.qrels(c.tune_split),) if compared else ()
    return plan.add(Stage("systems", "systems", settings, inputs=qrels, deps=tuple(plan.stages), outputs=outputs))


def _cost(file: str, systems: dict) -> tuple[int, int]:
    """(searchers, rerankers) of the system in ``file`` and of those it is built on."""
    system = systems[file]
    inputs = ([system["first_stage"]] if system["first_stage"] else []) + (system["searchers"] or [])
    costs = [_cost(other, systems) for other in inputs]
    return 1 + sum(c[0] for c in costs), METHODS[system["method"]].reranks + sum(c[1] for c in costs)


def _tune_value(config, fld: str, system: dict, systems: dict, qrels) -> float:
    """MAP of the system on the tune split: of its run there, or of a fusion's inputs' runs there fused."""
    from clirplug.eval.measures import evaluate
    from clirplug.fusion import fuse
    from clirplug.io.runs import read_run

    path = run_file(config, config.tune_split, fld, system["name"])
    if path.is_file():
        run = read_run(path)
    else:
        options = system["options"]
        inputs = [read_run(run_file(config, config.tune_split, fld, systems[other]["name"])) for other in system["searchers"]]
        run = fuse(options["method"], inputs, weights=[options["kappa"], 1 - options["kappa"]], depth=options["depth"])
    return float(evaluate(qrels, {"run": run}, [MEASURE])["value"].iloc[0])


@stage_kind("systems")
def systems_stage(stage: Stage, ctx) -> dict:
    """Write each run's system file and ``recommended.<field>.json`` (module docstring)."""
    from clirplug.io.qrels import read_qrels

    config, s = ctx.config, stage.settings
    runs = [ctx.plan_stages[name] for name in s["runs"]]
    systems = {system_path(run.outputs[0]).name: _describe(run, ctx) for run in runs}
    for file, system in systems.items():
        write_system(config.run_dir / file, {**system, "root": root_of(config.run_dir / file, config.root)})
    recommended, qrels = {}, read_qrels(stage.inputs[0]) if stage.inputs else None
    for fld, names in s["compared"].items():
        files = {name: system_path(run_file(config, config.splits[0], fld, name)).name for name in names}
        values = {name: _tune_value(config, fld, systems[files[name]], systems, qrels) for name in names}
        best = min(names, key=lambda name: (-round(values[name], DECIMALS), *_cost(files[name], systems), name))
        path = config.run_dir / f"recommended.{fld}.json"
        write_system(path, {**systems[files[best]], "root": root_of(path, config.root),
                            "recommended": {"split": config.tune_split, "measure": MEASURE, "values": values}})
        recommended[fld] = {"run": best, "file": path.name, "split": config.tune_split, MEASURE: values[best]}
    return {"systems": len(systems), "recommended": recommended}
