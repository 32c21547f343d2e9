"""A collection's corpus.jsonl may be a link file: one line naming another collection's documents."""

import shutil
from pathlib import Path

import pytest

from clirplug.corpus import followed_link, read_corpus
from clirplug.errors import ClirplugError
from clirplug.experiment.config import load_config

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "clirplug" / "data" / "demo.yaml"
DOCS = '{"id": "ls.1", "title": "list directory contents", "contents": "ls lists files"}\n'


def test_a_link_file_is_followed_to_the_documents(tmp_path):
    (tmp_path / "de").mkdir()
    (tmp_path / "ja").mkdir()
    (tmp_path / "de" / "corpus.jsonl").write_text(DOCS, encoding="utf-8")
    (tmp_path / "ja" / "corpus.jsonl").write_text("../de/corpus.jsonl", encoding="utf-8")
    assert followed_link(tmp_path / "ja" / "corpus.jsonl") == (tmp_path / "de" / "corpus.jsonl").resolve()
    assert [doc.id for doc in read_corpus(tmp_path / "ja" / "corpus.jsonl")] == ["ls.1"]
    assert followed_link(tmp_path / "de" / "corpus.jsonl") == tmp_path / "de" / "corpus.jsonl"


def test_a_link_file_naming_nothing_is_one_line_error(tmp_path):
    (tmp_path / "corpus.jsonl").write_text("../de/corpus.jsonl\n", encoding="utf-8")
    with pytest.raises(ClirplugError, match=r"corpus.jsonl: names .*de/corpus.jsonl, which does not exist"):
        list(read_corpus(tmp_path / "corpus.jsonl"))


def test_an_experiment_reads_the_documents_a_link_file_names(tmp_path):
    demo = REPO / "clirplug" / "data" / "demo"
    folder = tmp_path / "demo-ja"
    shutil.copytree(demo, folder)
    (folder / "corpus.jsonl").write_text(f"{demo / 'corpus.jsonl'}", encoding="utf-8")
    config = load_config(DEMO, [f"collection.path={folder}", f"root={tmp_path}"])
    assert config.collection.corpus == (demo / "corpus.jsonl").resolve()
