"""An experiment on a passage collection (``collection.passages``): the demo collection cut into passages, searched,
and scored as pages by their best passage (MaxP)."""

import json
from pathlib import Path

import pytest
import yaml

from clirplug.corpus import read_corpus
from clirplug.errors import ClirplugError
from clirplug.eval.measures import evaluate
from clirplug.experiment.config import load_config
from clirplug.experiment.plan import build_plan
from clirplug.experiment.runner import run_experiment
from clirplug.io.qrels import read_qrels
from clirplug.io.runs import read_run
from clirplug.passages import max_passage

from lucene_tiny import TINY_DOCS as TINY

pytestmark = pytest.mark.jvm

DEMO = Path(__file__).resolve().parents[2] / "clirplug" / "data" / "demo"
CONFIG = {
    "name": "demo-passages",
    "collection": {"path": str(DEMO), "name": "demo", "lang": "de", "passages": 50},
    "splits": ["dev"], "tune_split": "train", "folds": 2, "fields": ["title"], "measures": ["MAP"], "hits": 100,
    "baseline": "floor", "models": {"align": {"iterations": 2, "model1_iterations": 2}},
    "translations": {"outputs": []},
    "runs": {"psq": {}, "floor+psq": {"method": "fusion", "runs": ["floor", "psq"]}},
}


def _config(tmp_path, runs=None, **collection):
    raw = {**CONFIG, "root": str(tmp_path / "root"), "collection": {**CONFIG["collection"], **collection}}
    if runs is not None:
        raw["runs"] = runs
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return load_config(path)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("passages")
    config = _config(tmp_path)
    return config, run_experiment(config, progress=False)


def test_the_collection_is_cut_into_passages_and_indexed(experiment):
    config, _ = experiment
    passages = list(read_corpus(config.passage_file))
    pages = {page.id: page for page in read_corpus(DEMO / "corpus.jsonl")}
    assert len(passages) > len(pages)
    assert all(len(p.contents.split()) <= 50 and p.title == pages[p.id.rpartition("#")[0]].title for p in passages)
    assert config.index_dir.name == "demo.passages-50" and (config.index_dir / "clirplug.json").is_file()


def test_page_runs_are_the_maxp_of_the_passage_runs_and_are_scored_with_the_page_qrels(experiment):
    config, _ = experiment
    qrels = read_qrels(DEMO / "qrels.dev.txt")
    report = json.loads((config.run_dir / "report.json").read_text(encoding="utf-8"))
    scored = {(r["run"], r["measure"]): r["value"] for r in report["scores"] if r["split"] == "dev"}
    for name in ("floor", "psq", "ceiling"):
        passages = read_run(config.run_dir / "passages" / f"dev.title.{name}.trec")
        pages = read_run(config.run_dir / f"dev.title.{name}.trec")
        assert passages["docid"].str.contains("#").all() and not pages["docid"].str.contains("#").any()
        expected = max_passage(passages, config.hits)
        assert pages[["qid", "docid", "rank", "score"]].equals(expected)
        value = float(evaluate(qrels, {"run": pages}, ["MAP"])["value"].iloc[0])
        assert scored[(name, "MAP")] == pytest.approx(value)
    assert scored[("psq", "MAP")] > 0.3 > scored[("floor", "MAP")]  # translated queries find the pages
    assert not (config.run_dir / "passages" / "dev.title.floor+psq.trec").exists()  # a fusion fuses page runs
    assert read_run(config.run_dir / "dev.title.floor+psq.trec")["docid"].isin(
        read_run(config.run_dir / "dev.title.psq.trec")["docid"]).any()


def test_a_second_run_is_up_to_date(experiment):
    config, _ = experiment
    assert {o.status for o in run_experiment(config, progress=False)} == {"up to date"}


def test_methods_reading_the_corpus_read_the_passages(tmp_path):
    config = _config(tmp_path, runs={"dense": {"words": 16}, "boost": {"candidates": "floor", "iterations": 2}})
    plan = build_plan(config)
    embed = plan.stages["dense-embed.w16"]
    assert embed.deps == ("passages",) and embed.inputs_from == (config.passage_file,)
    boost = plan.stages["passages.run.boost.dev.title"]
    assert boost.settings["corpus"] == str(config.passage_file) and boost.settings["hits"] == 1000
    assert config.run_dir / "passages" / "dev.title.floor.trec" in boost.inputs_from  # reranks passages
    assert plan.stages["run.boost.dev.title"].kind == "maxp"
    assert plan.stages["train.boost.title"].inputs[-1] == DEMO / "corpus.jsonl"  # trained on the judged pages


def test_bowfd_and_bad_passage_keys_are_refused_in_one_line(tmp_path):
    config = _config(tmp_path, runs={"dt": {"kind": "flat"}, "bowfd": {"candidates": "dt", "kind": "flat"}})
    with pytest.raises(ClirplugError, match=r"runs.bowfd: BOW-FD does not run on a passage collection"):
        build_plan(config)
    with pytest.raises(ClirplugError, match=r"collection.passages: must be at least 1, got 0"):
        _config(tmp_path, passages=0)
    with pytest.raises(ClirplugError, match=r"collection.passage_hits: needs collection.passages"):
        _config(tmp_path, passages=None, passage_hits=10)


def test_search_max_passage_ranks_the_pages_of_a_passage_index(tiny_corpus, tmp_path):
    from clirplug.cli import main
    from clirplug.lucene.index import build_index
    from clirplug.passages import write_passages

    passages = tmp_path / "passages.jsonl"
    write_passages(tiny_corpus, passages, words=4, progress=False)
    build_index(passages, tmp_path / "index", language="en", progress=False)
    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\tfile directory\nq2\tstandard output patterns\n", encoding="utf-8")
    common = ["search", "--index", str(tmp_path / "index"), "--topics", str(topics), "--hits", "50"]
    assert main([*common, "--output", str(tmp_path / "passages.trec")]) == 0
    assert main([*common, "--output", str(tmp_path / "pages.trec"), "--max-passage", "--max-passage-hits", "3"]) == 0
    pages = read_run(tmp_path / "pages.trec")
    assert pages[["qid", "docid", "rank", "score"]].equals(max_passage(read_run(tmp_path / "passages.trec"), 3))
    assert pages.groupby("qid").size().tolist() == [3, 2] and pages["docid"].isin({d["id"] for d in TINY}).all()
