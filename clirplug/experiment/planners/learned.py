"""The learned fusion in an experiment (``fuser: learned``): its inputs and weights learned on the tune split's runs.

Per field, a ``fusion-learn`` stage learns the model (:func:`clirplug.fusion.learned.learn`) from the candidate
runs' tune-split runs (cross-fitted where the config has folds) and writes it as
``<tune split>.<field>.<run>.learned.json``; a ``fusion-learned`` stage per split then fuses the chosen inputs'
runs. On the tune split it writes the out-of-fold run (each topic fused by the weights fitted without its fold),
so that the tune-split MAP the experiment recommends a system by is a held-out one.
"""

from __future__ import annotations

import json
import sys
import time

from clirplug.errors import ClirplugError
from clirplug.experiment.kinds import Context, stage_kind, write_run_with_sidecar
from clirplug.experiment.plan import Plan, Stage, run_file
from clirplug.experiment.systems import describes
from clirplug.methods import METHODS
from clirplug.system_file import system_path

GRID = {"depth": None, "l2": [0.001, 0.01, 0.1]}  # the default grid; depth: the experiment's hits


def learned_grid(grid, hits: int, where: str) -> dict:
    """The ``grid`` setting of a learned fusion checked: ``{depth: [ints in 1..hits], l2: [positive numbers]}``,
    each list non-empty, a missing key at its default (:data:`GRID`; depth: ``[hits]``)."""
    grid = {} if grid is None else grid
    if not isinstance(grid, dict) or set(grid) - set(GRID):
        raise ClirplugError(f"{where}.grid: expected a mapping with keys {', '.join(GRID)}, got {grid!r}")
    values = {"depth": grid.get("depth", [hits]), "l2": grid.get("l2", GRID["l2"])}
    checks = {"depth": (lambda v: isinstance(v, int) and 1 <= v <= hits, f"integers from 1 to hits ({hits})"),
              "l2": (lambda v: isinstance(v, int | float) and v > 0, "positive numbers")}
    for key, (good, what) in checks.items():
        listed = values[key]
        if not isinstance(listed, list) or not listed or not all(good(v) and not isinstance(v, bool) for v in listed):
            raise ClirplugError(f"{where}.grid.{key}: expected a non-empty list of {what}, got {listed!r}")
    return {"depth": list(values["depth"]), "l2": [float(v) for v in values["l2"]]}


def _learns_on_tune(plan: Plan, name: str, split: str) -> bool:
    """Whether run ``name``'s tune-split run scores topics its method learned from (boosting, BOW-FD; not a
    cross-fitted DT-MIRA), as :mod:`clirplug.experiment.systems` tells them apart."""
    c = plan.config
    stage = plan.stages[plan.run_stages[(name, split, c.fields[0])]]
    return METHODS[c.run(name).method].training is not None and not stage.settings.get("held_out_on_tune")


def plan_learned_fusion(plan: Plan, spec, splits) -> None:
    """The learned fusion of ``spec``: its ``runs``, or by default every run of the config that is not a fusion,
    refers to none, and whose tune-split run is held out (runs learning from the tune split's qrels without
    cross-fitting, boosting and BOW-FD, would be weighted by their in-sample MAP)."""
    c, s = plan.config, spec.settings
    where = f"{c.source}: runs.{spec.name}"
    tune_qrels = c.collection.qrels(c.tune_split)
    if not tune_qrels.is_file():
        raise ClirplugError(f"{where}: {tune_qrels}: no such file (the fusion is learned on it)")
    if s.measure != "MAP":
        raise ClirplugError(f"{where}.measure: the learned fusion maximizes MAP, got {s.measure!r}")
    grid = learned_grid(s.grid, c.hits, where)
    fusions = {other.name for other in c.runs if other.method == "fusion"}
    if s.runs:
        candidates = list(s.runs)
    else:
        candidates = [other.name for other in c.runs if other.name not in fusions and
                      getattr(other.settings, "candidates", None) not in fusions]
        for other in candidates:
            plan.runs_of(other, splits)
        candidates = [other for other in candidates if not _learns_on_tune(plan, other, splits[0])]
    if not candidates:
        raise ClirplugError(f"{where}: no run to fuse")
    for other in candidates:
        plan.runs_of(other, [c.tune_split, *splits])
    for fld in c.fields:
        tune_files = tuple(run_file(c, c.tune_split, fld, other) for other in candidates)
        tune_stages = tuple(plan.run_stages[(other, c.tune_split, fld)] for other in candidates)
        learn = Stage(f"learn.{spec.name}.{fld}", "fusion-learn",
                      {"run": spec.name, "field": fld, "split": c.tune_split, "runs": candidates, "grid": grid,
                       "pairs": s.pairs, "seed": s.seed, "folds": s.folds, "min_gain": s.min_gain},
                      inputs=(tune_qrels,), deps=tune_stages,
                      outputs=(c.run_dir / f"{c.tune_split}.{fld}.{spec.name}.learned.json",), inputs_from=tune_files)
        plan.add(learn)
        for split in [c.tune_split, *splits]:
            plan.run_stage({"name": spec.name, "method": "fusion", "split": split, "field": fld}, "fusion-learned",
                           {"runs": candidates}, inputs=(tune_qrels,) if split == c.tune_split else (),
                           deps=(learn.name, *(plan.run_stages[(other, split, fld)] for other in candidates)),
                           inputs_from=(learn.outputs[0], *(run_file(c, split, fld, other) for other in candidates)),
                           fuses_pages=True)


@describes("fusion-learned")
def learned_fusion_system(stage: Stage, ctx: Context, system: dict, tuned: dict) -> dict:
    """A learned fusion's system: the systems of its chosen inputs fused with the learned weights."""
    files = dict(zip(stage.settings["runs"], stage.inputs_from[1:]))
    return {**system, "method": "fusion", "searchers": [system_path(files[name]).name for name in tuned["inputs"]],
            "options": {"method": "learned", "weights": tuned["fuse_weights"], "depth": tuned["depth"]}}


@stage_kind("fusion-learn")
def fusion_learn_stage(stage: Stage, ctx: Context) -> dict:
    """The inputs, depth, regularisation and weights of a learned fusion (:func:`clirplug.fusion.learned.learn`)
    on the tune split's runs, written as JSON with the cross-validation that chose them."""
    from clirplug.atomic import atomic_open
    from clirplug.fusion.learned import learn
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run

    s = stage.settings
    runs = [read_run(path) for path in stage.inputs_from]

    def log(message):
        if ctx.progress:
            print(f"{s['run']} ({s['field']}): {message}", file=sys.stderr)

    model = learn(runs, s["runs"], read_qrels(stage.inputs[0]), s["grid"]["depth"], s["grid"]["l2"], s["folds"],
                  s["pairs"], s["seed"], s["min_gain"], log=log)
    with atomic_open(stage.outputs[0]) as handle:
        json.dump({**model, "split": s["split"], "field": s["field"], "measure": "MAP"}, handle, indent=1,
                  sort_keys=True)
        handle.write("\n")
    return {key: model[key] for key in ("inputs", "depth", "l2", "cv_map")}


@stage_kind("fusion-learned")
def fusion_learned_stage(stage: Stage, ctx: Context) -> dict:
    """The chosen inputs' runs fused by the learned weights, the topics of the same weights at once (a query's
    latency is its share of the seconds); on the tune split (whose qrels are the stage's input) each topic by the
    weights fitted without its cross-validation fold."""
    import pandas as pd

    from clirplug.fusion import fuse
    from clirplug.fusion.learned import out_of_fold
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run, run_frame

    model = json.loads(stage.inputs_from[0].read_text(encoding="utf-8"))
    files = dict(zip(stage.settings["runs"], stage.inputs_from[1:]))
    runs = [read_run(files[name]) for name in model["inputs"]]
    held_out = out_of_fold(model, read_qrels(stage.inputs[0])["qid"].astype(str)) if stage.inputs else {}
    qids = sorted(set().union(*(run["qid"].unique().tolist() for run in runs)))
    by_weights: dict[str, list[str]] = {}  # the topics fused by the same weights: all of them, or a fold's
    for qid in qids:
        by_weights.setdefault(json.dumps(held_out.get(qid, model["fuse_weights"])), []).append(qid)
    start = time.perf_counter()
    parts = [fuse("learned", [run[run["qid"].isin(group)] for run in runs], weights=json.loads(weights),
                  depth=model["depth"]) for weights, group in by_weights.items()]
    frame = pd.concat(parts, ignore_index=True) if parts else run_frame([])
    latencies = dict.fromkeys(qids, (time.perf_counter() - start) / max(len(qids), 1))
    return write_run_with_sidecar(stage, frame, latencies, tuned={
        "inputs": model["inputs"], "weights": model["weights"], "fuse_weights": model["fuse_weights"],
        "depth": model["depth"], "l2": model["l2"], "tuned_on": model["split"], "out_of_fold": bool(held_out)})
