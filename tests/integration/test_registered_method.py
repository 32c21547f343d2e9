"""A method registered at run time (its library function, one registry entry, one planner and stage kind, and
its searcher: docs/architecture.md, "Adding a method") is planned and run by the experiment, and reached by every
front end, the command line, the Python API, the search service and PyTerrier: no clirplug module names it."""

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from clirplug.api import LuceneSearcher, Reranker
from clirplug.experiment.config import load_config
from clirplug.experiment.kinds import Context, stage_kind, write_run_with_sidecar
from clirplug.experiment.plan import Plan, Stage, run_file
from clirplug.experiment.runner import run_experiment
from clirplug.experiment.systems import describes, index_entry
from clirplug.io.runs import RUN_COLUMNS, read_run, sort_run
from clirplug.io.topics import read_topics, topic_field
from clirplug.methods import METHODS, Method
from clirplug.settings import Settings, option
from clirplug.system_file import system_path

pytestmark = pytest.mark.jvm

MINIFR = Path(__file__).resolve().parents[1] / "data" / "minifr"
TOPICS = MINIFR / "topics.dev.jsonl"


@dataclass(frozen=True)
class HeadRun(Settings):
    """``head``: a run's top ``k`` documents per topic."""

    candidates: str = option("floor", "run whose documents are kept")
    k: int = option(3, "documents kept per topic", low=1)


def head(run, k: int):
    """The library function: the top ``k`` documents of each topic of ``run``."""
    return sort_run(run).groupby("qid", sort=False).head(k).reset_index(drop=True)


class HeadSearcher(Reranker):
    """The searcher: the top ``k`` of a first stage, by default BM25 on the index."""

    def __init__(self, index, first_stage=None, *, k: int = 3):
        self.first_stage = LuceneSearcher(index) if first_stage is None else first_stage
        self.depth = self.k = k
        self._spec = {"index": index, "first_stage": first_stage, "k": k}

    def rescore(self, topics, candidates, k, progress):
        return head(candidates, self.k)


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
    return {**system, "method": "head", "index": index_entry(ctx.config),
            "first_stage": system_path(stage.inputs_from[0]).name, "options": {"k": stage.settings["k"]}}


HEAD = Method(HeadRun, f"{__name__}:head", f"{__name__}:HeadSearcher", ("index",), "a first stage's top k",
              reranks=True, planner=f"{__name__}:plan_head")


@pytest.fixture(scope="module")
def registered():
    """``head`` in the registry for this module's tests, as a plug-in module would add it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(METHODS, "head", HEAD)
        yield


@pytest.fixture(scope="module")
def experiment(registered, tmp_path_factory):
    """The experiment with a ``head`` run (k 2) of the floor; the report without figures (matplotlib as if not
    installed): the slow part of so small an experiment. Its config and outcomes."""
    folder = tmp_path_factory.mktemp("head")
    config_file = folder / "exp.yaml"
    config_file.write_text(f"collection: {{path: {MINIFR}, lang: fr, name: minifr}}\nsplits: [dev]\nbaseline: floor\n"
                           "translations: {outputs: []}\nruns: {top2: {method: head, k: 2}}\n", encoding="utf-8")
    config = load_config(config_file, [f"root={folder / 'root'}", "jobs=2"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "matplotlib", None)
        outcomes = run_experiment(config, progress=False)
        assert all(o.status == "up to date" for o in run_experiment(config, progress=False))
    return config, outcomes


def _bm25_top(config, k: int):
    """BM25's top ``k`` of the dev titles on the experiment's index (the reference of ``head`` alone)."""
    from clirplug import api

    topics = read_topics(TOPICS)
    frame = api.searcher("bm25", index=config.index_dir).batch_search_frame(
        [topic_field(t, "title") for t in topics], [t.id for t in topics], k=k)
    assert frame["qid"].nunique() > 1  # a reference that can tell rankings apart
    return frame[RUN_COLUMNS]


def _same_ranking(frame, expected) -> bool:
    columns = ["qid", "docid", "rank"]
    return frame[columns].reset_index(drop=True).equals(expected[columns].reset_index(drop=True))


def test_a_method_registered_at_run_time_is_planned_and_run(experiment):
    """Planned in this process, its stages run in spawned workers (jobs 2), which learn its stage kind and entry."""
    config, outcomes = experiment
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


def test_the_command_line_searches_with_it(experiment, tmp_path):
    """``clirplug search --method head`` (BM25's top 3), and ``--system`` of the experiment's run, byte for byte."""
    from clirplug.cli import main

    config, _ = experiment
    alone = tmp_path / "head.trec"
    assert main(["search", "--method", "head", "--index", str(config.index_dir), "--topics", str(TOPICS),
                 "--output", str(alone), "--quiet"]) == 0
    assert _same_ranking(read_run(alone), _bm25_top(config, 3))
    for fld in config.fields:
        again, made = tmp_path / f"top2.{fld}.trec", run_file(config, "dev", fld, "top2")
        assert main(["search", "--system", str(system_path(made)), "--topics", str(TOPICS), "--output", str(again),
                     "--quiet"]) == 0
        assert again.read_bytes() == made.read_bytes()


def test_the_api_builds_its_searcher(experiment):
    """``clirplug.searcher("head", ...)`` and ``clirplug.load_system`` of the experiment's run."""
    import clirplug

    config, _ = experiment
    topics = read_topics(TOPICS)
    queries, qids = [topic_field(t, "title") for t in topics], [t.id for t in topics]
    built = clirplug.searcher("head", index=config.index_dir, k=2)
    assert isinstance(built, HeadSearcher)
    assert _same_ranking(built.batch_search_frame(queries, qids, k=10), _bm25_top(config, 2))
    found = _bm25_top(config, 2)  # a French title finds English documents by its shared words only
    first = found["qid"].iloc[0]
    assert [hit.docid for hit in built.search(queries[qids.index(first)])] == list(found[found["qid"] == first]["docid"])
    for fld in config.fields:
        made = run_file(config, "dev", fld, "top2")
        loaded = clirplug.load_system(system_path(made))
        frame = loaded.batch_search_frame([topic_field(t, fld) for t in topics], qids, k=loaded.system.hits)
        assert _same_ranking(frame, read_run(made))


def test_the_service_serves_it(experiment):
    """``POST /search`` of ``clirplug serve --method head`` (its service as the command builds it, in process: BM25's
    top 3), of the service composed with ``head`` and its options by name, and of the experiment run's system
    file."""
    from fastapi.testclient import TestClient

    from clirplug.cli import build_parser
    from clirplug.cli.serve import searcher_options, service
    from clirplug.serve.app import create_app
    from clirplug.serve.service import SearchService

    config, _ = experiment
    topics = read_topics(TOPICS)
    made = run_file(config, "dev", "title", "top2")
    args = build_parser().parse_args(["serve", "--method", "head", "--index", str(config.index_dir)])
    services = {"head": service(args, searcher_options(args)),
                "top2.title": SearchService.from_system(system_path(made))}
    expected = {"head": _bm25_top(config, 3), "top2.title": read_run(made)}
    composed = SearchService("head", config.index_dir, {"head": {"k": 2}}).searcher
    assert (type(composed), composed.k) == (HeadSearcher, 2)
    with TestClient(create_app(*services.values())) as client:
        for name, reference in expected.items():
            batch = [{"qid": t.id, "query": topic_field(t, "title")} for t in topics]
            response = client.post("/search", json={"queries": batch, "k": 10, "system": name})
            assert response.status_code == 200, response.text
            rows = [(answer["qid"], hit["docid"], hit["rank"]) for answer in response.json()["results"]
                    for hit in answer["hits"]]
            assert rows == list(reference[["qid", "docid", "rank"]].itertuples(index=False, name=None))


def test_pyterrier_transforms_with_it(experiment):
    """``clirplug.pyterrier.transformer("head", ...)`` and ``from_system`` of the experiment's run."""
    import pandas as pd

    from clirplug.pyterrier import from_system, transformer

    config, _ = experiment
    topics = read_topics(TOPICS)
    made = run_file(config, "dev", "title", "top2")
    queries = pd.DataFrame({"qid": [t.id for t in topics], "query": [topic_field(t, "title") for t in topics]})
    for built, reference in ((transformer("head", index=config.index_dir, k=2), _bm25_top(config, 2)),
                             (from_system(system_path(made)), read_run(made))):
        result = built.transform(queries).rename(columns={"docno": "docid"})
        assert _same_ranking(sort_run(result[["qid", "docid", "score"]]), reference)
