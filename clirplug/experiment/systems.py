"""The experiment's systems: a system file beside each run, and the system recommended for each field.

A run's system file (:mod:`clirplug.system_file`) names its method, index, model, corpus, weight files and every
setting chosen on the tune split, with the systems it is built on; :func:`clirplug.api.load_system` loads it again.
The runs of the reported splits get one, but the ceiling (the English mates' titles are no system's queries) and
runs joined from cross-fitted parts (each part has its own model).

The recommended system of a field has the best MAP on the tune split's runs (cross-fitted: the tune topics
translated by models that never saw them), among the systems whose tune-split run exists (a fusion's: its inputs'
tune runs fused with its tuned method and kappa) and that learn nothing from the tune split's qrels (no boosting,
no BOW-FD, whose tune-split runs score their own training topics; a cross-fitted DT-MIRA's do not: each fold's is
reranked by weights trained on the other folds); ties (at the report's 4 decimals) go to the cheaper system: fewer
searchers, then fewer rerankers. It is written as ``recommended.<field>.json``, a system file.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from clirplug.experiment.kinds import stage_kind
from clirplug.experiment.plan import Stage, ranks_pages, run_file
from clirplug.methods import METHODS
from clirplug.system_file import relative, root_of, system_path, write_system

MEASURE = "MAP"
DECIMALS = 4  # ties: equal at the report's precision

# run stage kind -> ``describe(stage, ctx, system, tuned) -> system``: the system of a run stage of that kind, from
# ``system`` (its name, field, tag and hits; index, corpus, model, files, first_stage and searchers None) and the
# ``tuned`` settings of its sidecar. A run stage of a kind without one (the ceiling, joined parts) has no system.
DESCRIBERS: dict[str, Callable] = {}


def describes(kind: str):
    """Register the function describing the systems of run stages of ``kind`` (:data:`DESCRIBERS`)."""

    def register(function):
        DESCRIBERS[kind] = function
        return function

    return register


def index_entry(config) -> str:
    """The experiment's index in a system file."""
    return relative(config.index_dir, config.root)


def corpus_entry(config) -> str:
    """The collection's documents in a system file."""
    return relative(config.collection.corpus, config.root)


def model_entry(config, settings: dict, weights=None) -> dict:
    """The model of a stage's ``model``, ``kind`` and ``lang`` settings (decoding with ``weights``) in a system file."""
    return {"folder": relative(settings["model"], config.root), "kind": settings["kind"], "src_lang": settings["lang"],
            "weights": None if weights is None else relative(weights, config.root)}


@describes("floor")
def _floor_system(stage: Stage, ctx, system: dict, tuned: dict) -> dict:
    return {**system, "method": "bm25", "index": index_entry(ctx.config), "options": {"bm25": stage.settings["bm25"]}}


def _describe(stage: Stage, ctx) -> dict:
    """The system of a run stage (keys of :mod:`clirplug.system_file`, but ``format`` and ``root``)."""
    s, run = stage.settings, stage.written_run
    tuned = json.loads(stage.outputs[0].with_suffix(".json").read_text(encoding="utf-8"))["tuned"]
    system = {"name": run["name"], "field": run["field"], "tag": f"{run['name']}.{run['field']}", "hits": s["hits"],
              "index": None, "corpus": None, "model": None, "files": {}, "first_stage": None, "searchers": None}
    return DESCRIBERS[stage.kind](stage, ctx, system, tuned)


def _method(config, stage: Stage):
    """The registry entry of a run stage's ``runs:`` entry; None for the floor and the ceiling."""
    spec = next((spec for spec in config.runs if spec.name == stage.written_run["name"]), None)
    return None if spec is None else METHODS[spec.method]


def add_systems_stage(plan) -> str:
    """The stage writing the run's system files and each field's recommended system, after every other stage.

    Its settings list the run stages given a system (of the reported splits, but the ceiling and joined runs, and
    built on runs given one) and, per field, the runs compared for the recommendation: those of the first reported
    split with a tune-split run, or fusing runs that have one, but those built on a method that trains on the tune
    split (boosting, BOW-FD: their tune-split runs score the topics they learned from) unless its run stages say
    ``held_out_on_tune`` (cross-fitted DT-MIRA: each fold's run reranked by weights trained on the other folds).
    """
    c = plan.config
    by_file = {stage.outputs[0]: stage for stage in plan.stages.values() if ranks_pages(stage)}

    def inputs(stage: Stage) -> list[Stage]:
        return [by_file[path] for path in stage.inputs_from if path in by_file]

    def with_system(stage: Stage) -> bool:
        return stage.written_run["split"] in c.splits and stage.kind in DESCRIBERS and all(map(with_system, inputs(stage)))

    def trained(stage: Stage) -> bool:  # learned from the tune split's qrels: in-sample there
        learns = getattr(_method(c, stage), "training", None) is not None and not stage.settings.get("held_out_on_tune")
        return learns or any(map(trained, inputs(stage)))

    def fuses(stage: Stage) -> bool:  # compared by its inputs' tune-split runs fused
        return "searchers" in getattr(_method(c, stage), "needs", ())

    runs = [stage for stage in by_file.values() if with_system(stage)]
    tuned = {(name, fld) for name, split, fld in plan.run_stages if split == c.tune_split}
    compared = {}
    if c.collection.qrels(c.tune_split).is_file():
        for fld in c.fields:
            names = [stage.written_run["name"] for stage in runs if stage.written_run["split"] == c.splits[0] and stage.written_run["field"] == fld
                     and not trained(stage) and ((stage.written_run["name"], fld) in tuned or (fuses(stage) and all(
                         (run.written_run["name"], fld) in tuned for run in inputs(stage))))]
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


def _tune_value(config, fld: str, system: dict, stage: Stage, systems: dict, qrels) -> float:
    """MAP of the system on the tune split: of its run there; for a fusion, the best of its kappa tuning (its
    inputs' tune runs fused with the chosen method and kappa), or those runs fused again when kappa was tuned on
    another measure. ``stage`` is the system's run stage."""
    from clirplug.eval.measures import evaluate
    from clirplug.fusion import fuse
    from clirplug.io.runs import read_run

    path = run_file(config, config.tune_split, fld, system["name"])
    if path.is_file():
        run = read_run(path)
    else:
        tuning = json.loads(stage.inputs_from[0].read_text(encoding="utf-8"))  # the kappa tuning (plan_fusion)
        if tuning["measure"] == MEASURE and tuning["split"] == config.tune_split:
            return tuning["best"]
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
    by_file = {run.outputs[0]: run for run in runs}
    for fld, names in s["compared"].items():
        stages = {name: by_file[run_file(config, config.splits[0], fld, name)] for name in names}
        files = {name: system_path(stages[name].outputs[0]).name for name in names}
        values = {name: _tune_value(config, fld, systems[files[name]], stages[name], systems, qrels) for name in names}
        best = min(names, key=lambda name: (-round(values[name], DECIMALS), *_cost(files[name], systems), name))
        path = config.run_dir / f"recommended.{fld}.json"
        write_system(path, {**systems[files[best]], "root": root_of(path, config.root),
                            "recommended": {"split": config.tune_split, "measure": MEASURE, "values": values}})
        recommended[fld] = {"run": best, "file": path.name, "split": config.tune_split, MEASURE: values[best]}
    return {"systems": len(systems), "recommended": recommended}
