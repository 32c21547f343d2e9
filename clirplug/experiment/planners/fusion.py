"""Fusion in an experiment: two runs fused with kappa (and the fusion method) chosen on the tune split."""

from __future__ import annotations

import json
import time

from clirplug import plots
from clirplug.errors import ClirplugError
from clirplug.experiment.kinds import Context, stage_kind, write_run_with_sidecar
from clirplug.experiment.plan import Plan, Stage, run_file
from clirplug.experiment.systems import describes
from clirplug.system_file import system_path


def plan_fusion(plan: Plan, spec, splits) -> None:
    """Two runs fused with weights (kappa, 1 - kappa), kappa tuned on the tune split (paper 001, Fig. 1-3);
    a list of fusion methods (``fuser: [borda, rrf]``) is a grid, the method chosen with kappa."""
    from clirplug.fusion import FUSERS, LEARNED

    c, s = plan.config, spec.settings
    if s.fuser == LEARNED:  # any number of runs, weights learned (clirplug.experiment.planners.learned)
        from clirplug.experiment.planners.learned import plan_learned_fusion

        return plan_learned_fusion(plan, spec, splits)
    if len(s.runs or ()) != 2:
        raise ClirplugError(f"{c.source}: runs.{spec.name}.runs: a tuned fusion takes exactly two runs")
    tune_qrels = c.collection.qrels(c.tune_split)
    if not tune_qrels.is_file():
        raise ClirplugError(f"{c.source}: runs.{spec.name}: {tune_qrels}: no such file (kappa is tuned on it)")
    fusers = [s.fuser or "borda"] if not isinstance(s.fuser, list) else s.fuser
    if not fusers or any(f not in FUSERS or f == LEARNED for f in fusers):
        raise ClirplugError(f"{c.source}: runs.{spec.name}.fuser: expected {LEARNED}, or one of "
                            f"{', '.join(f for f in FUSERS if f != LEARNED)} or a list of them (a grid), got {s.fuser!r}")
    for other in s.runs:
        plan.runs_of(other, [c.tune_split, *splits])
    drawn = plots.available()  # the kappa curve's PNG needs matplotlib (the plots extra)
    for fld in c.fields:
        prefix = f"{c.tune_split}.{fld}.{spec.name}.kappa"
        deps = tuple(plan.run_stages[(other, c.tune_split, fld)] for other in s.runs)
        tune = Stage(f"tune.{spec.name}.{fld}", "fusion-tune",
                     {"run": spec.name, "field": fld, "split": c.tune_split, "runs": list(s.runs),
                      "methods": fusers, "grid_step": s.grid_step, "measure": s.measure, "hits": c.hits},
                     inputs=(tune_qrels,), deps=deps,
                     outputs=tuple(c.run_dir / f"{prefix}.{ext}" for ext in ("tsv", "png", "json") if ext != "png" or drawn),
                     inputs_from=tuple(run_file(c, c.tune_split, fld, other) for other in s.runs))
        plan.add(tune)
        for split in splits:
            deps = (tune.name, *(plan.run_stages[(other, split, fld)] for other in s.runs))
            plan.run_stage({"name": spec.name, "method": "fusion", "split": split, "field": fld}, "fusion",
                           {"runs": list(s.runs)}, deps=deps,
                           inputs_from=(tune.outputs[-1], *(run_file(c, split, fld, other) for other in s.runs)),
                           fuses_pages=True)


@describes("fusion")
def fusion_system(stage: Stage, ctx: Context, system: dict, tuned: dict) -> dict:
    """A fusion's system: its input runs' systems fused with the tuned method and kappa."""
    return {**system, "method": "fusion", "searchers": [system_path(path).name for path in stage.inputs_from[1:]],
            "options": {"method": tuned["method"], "kappa": tuned["kappa"], "depth": stage.settings["hits"]}}


@stage_kind("fusion-tune", version=2)
def fusion_tune_stage(stage: Stage, ctx: Context) -> dict:
    """Kappa of a two-run fusion, with the fusion method among the run's, by a grid on the tune split
    (:func:`clirplug.fusion.tune.choose_fusion`): every curve in the TSV, the chosen one drawn."""
    import pandas as pd

    from clirplug.atomic import atomic_open
    from clirplug.fusion.tune import choose_fusion, kappa_grid, plot_curve, write_curve
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run

    s = stage.settings
    runs = [read_run(path) for path in stage.inputs_from]
    fuser, kappa, curves = choose_fusion(runs, read_qrels(stage.inputs[0]), s["methods"], kappa_grid(s["grid_step"]),
                                         s["hits"], s["measure"], names=tuple(map(str, stage.inputs_from)))
    chosen = curves[s["methods"].index(fuser)]
    tsv, *png, result = stage.outputs  # no PNG without matplotlib (plan_fusion)
    write_curve(pd.concat(curves, ignore_index=True), tsv)
    if png:
        plot_curve(chosen, png[0], labels=tuple(s["runs"]),
                   title=f"{s['run']} ({s['field']}): {s['measure']} on {s['split']}, {fuser}, best kappa = {kappa:g}")
    with atomic_open(result) as handle:
        json.dump({"kappa": kappa, "method": fuser, "measure": s["measure"], "split": s["split"], "runs": s["runs"],
                   "best": float(chosen[s["measure"]].max()),
                   "methods": {m: float(c[s["measure"]].max()) for m, c in zip(s["methods"], curves)}},
                  handle, indent=1, sort_keys=True)
    return {"kappa": kappa, "method": fuser}


@stage_kind("fusion")
def fusion_stage(stage: Stage, ctx: Context) -> dict:
    """Weighted fusion (:func:`clirplug.fusion.fuse`) with the tuned kappa, every query at once (each query's
    fusion is computed alone, in the same order of operations); a query's latency is its share of the seconds."""
    from clirplug.fusion import fuse
    from clirplug.fusion._common import kappa_weights
    from clirplug.io.runs import read_run

    tuned = json.loads(stage.inputs_from[0].read_text(encoding="utf-8"))
    kappa, method = tuned["kappa"], tuned["method"]
    weights = kappa_weights(kappa, f"{stage.inputs_from[0]}: kappa")
    runs = [read_run(path) for path in stage.inputs_from[1:]]
    start = time.perf_counter()
    frame = fuse(method, runs, weights=weights, depth=stage.settings["hits"])
    qids = sorted(set().union(*(run["qid"].unique().tolist() for run in runs)))
    share = (time.perf_counter() - start) / max(len(qids), 1)
    return write_run_with_sidecar(stage, frame, dict.fromkeys(qids, share),
                                  tuned={"kappa": kappa, "method": method, "tuned_on": tuned["split"]})
