"""An ir_datasets collection end to end: index, search, eval and an experiment on ``irds:hc4/fa`` ids.

ir_datasets itself reads the tiny hc4/fa of ``irds_home`` (tests/conftest.py); every command runs in
a subprocess whose ``IR_DATASETS_HOME`` points at it. Each ``irds:`` result must equal the one of the
same data given as files.
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.jvm


def clirplug(home, cwd, *args):
    result = subprocess.run([sys.executable, "-m", "clirplug", *args], capture_output=True, text=True, cwd=cwd,
                            env={**os.environ, "IR_DATASETS_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def hc4_index(irds_home, tmp_path_factory):
    folder = tmp_path_factory.mktemp("irds-index")
    out = clirplug(irds_home, folder, "index", "--corpus", "irds:hc4/fa", "--index", "hc4-fa", "--language", "en", "--quiet")
    return folder / "hc4-fa", out


def test_index_reads_the_documents_through_ir_datasets(irds_home, hc4_index, tmp_path):
    """The irds: index equals one built from the same documents written as clirplug JSONL."""
    index, out = hc4_index
    docs = [json.loads(line) for line in (irds_home / "hc4" / "fas" / "hc4_docs.jsonl").read_text(encoding="utf-8").splitlines()]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": d["id"], "title": d["title"], "contents": d["text"]}, ensure_ascii=False)
                              + "\n" for d in docs), encoding="utf-8")
    from_file = clirplug(irds_home, tmp_path, "index", "--corpus", str(corpus), "--index", "from-file", "--quiet")
    assert out.replace("hc4-fa", "X") == from_file.replace("from-file", "X")
    assert "5 documents" in out
    assert json.loads((index / "clirplug.json").read_text())["corpus"] == "irds:hc4/fa"


def test_search_and_eval_with_irds_topics_and_qrels(irds_home, hc4_index, tmp_path):
    """Topics and qrels through ir_datasets give the runs and scores of the same topics and qrels as files."""
    index, _ = hc4_index
    lines = (irds_home / "hc4" / "dev.topics.v1-0.jsonl").read_text(encoding="utf-8").splitlines()
    persian = {json.loads(line)["topic_id"]: json.loads(line)["topics"][1]["topic_title"] for line in lines}
    tsv = tmp_path / "topics.fa.tsv"
    tsv.write_text("".join(f"{qid}\t{title}\n" for qid, title in persian.items()), encoding="utf-8")
    clirplug(irds_home, tmp_path, "search", "--index", str(index), "--topics", "irds:hc4/fa/dev", "--topic-lang", "fa",
             "--output", "irds.trec", "--run-tag", "bm25", "--quiet")
    clirplug(irds_home, tmp_path, "search", "--index", str(index), "--topics", str(tsv), "--output", "file.trec",
             "--run-tag", "bm25", "--quiet")
    run = (tmp_path / "irds.trec").read_text()
    assert run == (tmp_path / "file.trec").read_text()
    assert run.splitlines()[0].split()[:3] == ["1001", "Q0", "fa-1"]  # both query words are in its title and text
    qrels = irds_home / "hc4" / "fas" / "dev.qrels.v1-0.txt"
    scores = clirplug(irds_home, tmp_path, "eval", "irds.trec", "--qrels", "irds:hc4/fa/dev", "--format", "json")
    assert scores == clirplug(irds_home, tmp_path, "eval", "irds.trec", "--qrels", str(qrels), "--format", "json")
    assert json.loads(scores)


def test_experiment_on_an_irds_collection(irds_home, tmp_path):
    """``collection: {irds: hc4/fa}`` writes the collection folder under the root, then runs as a folder would."""
    config = tmp_path / "hc4.yaml"
    config.write_text("collection: {irds: hc4/fa, lang: fa, doc_lang: en}\nsplits: [dev]\ntune_split: dev\n"
                      "measures: [MAP]\nbaseline: floor\ntranslations: {outputs: []}\n", encoding="utf-8")
    clirplug(irds_home, tmp_path, "experiment", str(config), "--root", "root", "--quiet")
    folder = tmp_path / "root" / "collections" / "hc4-fa"
    assert [json.loads(line)["id"] for line in (folder / "corpus.jsonl").read_text().splitlines()] == [
        "fa-1", "fa-2", "fa-3", "fa-4", "fa-5"]
    assert (folder / "qrels.dev.txt").read_text() == (irds_home / "hc4" / "fas" / "dev.qrels.v1-0.txt").read_text()
    assert [json.loads(line)["title"] for line in (folder / "topics.dev.jsonl").read_text().splitlines()] == [
        "زلزله ایران", "قیمت نفت"]
    report = json.loads((tmp_path / "root" / "runs" / "hc4" / "report.json").read_text())
    assert report["collection"]["irds"] == "hc4/fa" and report["collection"]["path"] == str(folder)
    floor = {row["field"]: row["value"] for row in report["scores"] if row["run"] == "floor" and row["measure"] == "MAP"}
    # by hand: the Persian titles rank fa-1 (both words), then fa-5 (one) for 1001, fa-3 first for 1002: AP 1 and 1
    assert floor["title"] == 1.0
    again = subprocess.run([sys.executable, "-m", "clirplug", "experiment", str(config), "--root", "root", "--quiet"],
                           capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "IR_DATASETS_HOME": str(irds_home)})
    assert again.returncode == 0 and "running" not in again.stderr  # a second run finds everything up to date
