"""A method registered at run time, with its own planner and stage kind, is planned and run by the experiment:
no clirplug module names it (docs/architecture.md, "Adding a method")."""

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from clirplug.experiment.config import load_config
from clirplug.experiment.kinds import Context, stage_kind, write_run_with_sidecar
from clirplug.experiment.plan import Plan, Stage, run_file
from clirplug.experiment.runner import run_experiment
from clirplug.experiment.systems import describes
from clirplug.io.runs import read_run, sort_run
from clirplug.methods import METHODS, Method
from clirplug.settings import Settings, option
from clirplug.system_file import system_path

pytestmark = pytest.mark.jvm

MINIFR = Path(__file__).resolve().parents[1] / "data" / "minifr"


@dataclass(frozen=True)
class HeadRun(Settings):
    """``head``: a run's top ``k`` documents per topic."""

    candidates: str = option("floor", "run whose documents are kept")
    k: int = option(3, "documents kept per topic", low=1)


def head(run, k: int):
    """The library function: the top ``k`` documents of each topic of ``run``."""
    return sort_run(run).groupby("qid", sort=False).head(k).reset_index(drop=True)


def plan_head(plan: Plan, spec, splits) -> None:
    """The planner: the candidates' runs, then one ``head`` stage per split and field."""
    c, s = plan.config, spec.settings
    plan.runs_of(s.candidates, splits)
    for split in splits:
        for fld in c.fields:
            plan.run_stage({"name": spec.name, "method": "head", "split": split, "field": fld}, "head", {"k": s.k},
                           deps=(plan.run_stages[(s.candidates, split, fld)],),
                           inputs_from=(run_file(c, split, fld, s.candidates),))


@stage_kind("head")
def head_stage(stage: Stage, ctx: Context) -> dict:
    frame = head(read_run(stage.inputs_from[0]), stage.settings["k"])
    return write_run_with_sidecar(stage, frame, dict.fromkeys(frame["qid"], 0.0))


@describes("head")
def head_system(stage: Stage, ctx: Context, system: dict, tuned: dict) -> dict:
    return {**system, "method": "head", "first_stage": system_path(stage.inputs_from[0]).name,
            "options": {"k": stage.settings["k"]}}


@pytest.fixture
def registered(monkeypatch):
    """``head`` in the registry for one test, as a plug-in module would add it (its searcher: any reranker)."""
    monkeypatch.setitem(METHODS, "head", Method(
        HeadRun, f"{__name__}:head", "clirplug.api:Reranker", ("first_stage",), "a first stage's top k", reranks=True,
        planner=f"{__name__}:plan_head"))
    # the report without figures (matplotlib as if not installed): the slow part of so small an experiment
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_a_method_registered_at_run_time_is_planned_and_run(registered, tmp_path):
    """Planned in this process, its stages run in spawned workers (jobs 2), which learn its stage kind and entry."""
    config_file = tmp_path / "exp.yaml"
    config_file.write_text(f"collection: {{path: {MINIFR}, lang: fr, name: minifr}}\nsplits: [dev]\nbaseline: floor\n"
                           "translations: {outputs: []}\nruns: {top2: {method: head, k: 2}}\n", encoding="utf-8")
    config = load_config(config_file, [f"root={tmp_path / 'root'}", "jobs=2"])
    outcomes = run_experiment(config, progress=False)
    assert {o.stage.name for o in outcomes if o.stage.kind == "head"} == {"run.top2.dev.title", "run.top2.dev.desc"}
    for fld in config.fields:
        floor, top2 = (read_run(run_file(config, "dev", fld, name)) for name in ("floor", "top2"))
        expected = sort_run(floor).groupby("qid", sort=False).head(2).reset_index(drop=True)
        assert len(top2) == 2 * floor["qid"].nunique()
        assert top2[["qid", "docid", "rank"]].equals(expected[["qid", "docid", "rank"]])
        system = json.loads(system_path(run_file(config, "dev", fld, "top2")).read_text(encoding="utf-8"))
        assert (system["method"], system["first_stage"], system["options"]) == ("head", f"dev.{fld}.floor.system.json",
                                                                                {"k": 2})
    report = json.loads((config.run_dir / "report.json").read_text(encoding="utf-8"))
    assert {r["method"] for r in report["scores"] if r["run"] == "top2"} == {"head"}
    assert all(o.status == "up to date" for o in run_experiment(config, progress=False))
