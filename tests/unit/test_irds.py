"""``irds:<id>`` topics and qrels read by ir_datasets itself from a tiny hc4/fa in its own layout.

ir_datasets fixes its home folder when it is imported, so each check runs in a subprocess with
``IR_DATASETS_HOME`` pointing at the fixture (``irds_home`` in tests/conftest.py).
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.cli

READ = """
import json, sys
from clirplug.io.qrels import read_qrels
from clirplug.io.topics import read_topics
what, spec, lang = sys.argv[1], sys.argv[2], sys.argv[3] or None
if what == "topics":
    print(json.dumps([list(t) for t in read_topics(spec, lang=lang)], ensure_ascii=False))
else:
    print(json.dumps(read_qrels(spec).values.tolist()))
"""


def _python(home, *args, **env):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          env={**os.environ, "IR_DATASETS_HOME": str(home), **env})


def _read(home, what, spec, lang=""):
    result = _python(home, "-c", READ, what, spec, lang)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("lang", ["", "en", "fa", "fas", "fa:mt"])
def test_irds_topics_equal_the_hc4_file_read_directly(irds_home, lang):
    """ir_datasets' hc4/fa/dev queries map to the same topics as clirplug's own reader of its topic file."""
    through_irds = _read(irds_home, "topics", "irds:hc4/fa/dev", lang)
    direct = _read(irds_home, "topics", str(irds_home / "hc4" / "dev.topics.v1-0.jsonl"), lang)
    assert through_irds == direct
    assert [topic[0] for topic in direct] == ["1001", "1002"]


def test_irds_topic_fields(irds_home):
    """Title and description of the English original, the human and the machine translation; HC4's narrative."""
    line = (irds_home / "hc4" / "dev.topics.v1-0.jsonl").read_text(encoding="utf-8").splitlines()[0]
    english, human, machine = ([entry["topic_title"], entry["topic_description"]] for entry in json.loads(line)["topics"])
    narr = "narrative of 1001 other news"
    assert _read(irds_home, "topics", "irds:hc4/fa/dev")[0] == ["1001", *english, narr]
    assert _read(irds_home, "topics", "irds:hc4/fa/dev", "fa")[0] == ["1001", *human, narr]
    assert _read(irds_home, "topics", "irds:hc4/fa/dev", "fas:mt")[0] == ["1001", *machine, narr]
    assert english[0] == "Iran earthquake" and human[0] != machine[0]


def test_irds_qrels_equal_the_qrels_file(irds_home):
    through_irds = _read(irds_home, "qrels", "irds:hc4/fa/dev")
    assert through_irds == _read(irds_home, "qrels", str(irds_home / "hc4" / "fas" / "dev.qrels.v1-0.txt"))
    assert through_irds[0] == ["1001", "fa-1", 3] and len(through_irds) == 5


@pytest.mark.parametrize("args, message", [
    (["eval", "run.trec", "--qrels", "irds:nosuch/collection"], "irds:nosuch/collection: unknown ir_datasets id"),
    (["eval", "run.trec", "--qrels", "irds:hc4/fa"], "irds:hc4/fa: this ir_datasets id has no qrels"),
    (["search", "--index", "x", "--topics", "irds:hc4/fa/dev", "--topic-lang", "ru", "--output", "r.trec",
      "--method", "boost", "--model", "m", "--corpus", "c"], "irds:hc4/fa/dev: no topics in rus (its topics: eng, fas)"),
    (["search", "--index", "x", "--topics", "irds:hc4/fa/dev", "--topic-lang", "farsi", "--output", "r.trec",
      "--method", "boost", "--model", "m", "--corpus", "c"], "topic language 'farsi': expected LANG or LANG:mt"),
])
def test_irds_errors_are_one_line(irds_home, tmp_path, args, message):
    result = subprocess.run([sys.executable, "-m", "clirplug", *args], capture_output=True, text=True, cwd=tmp_path,
                            env={**os.environ, "IR_DATASETS_HOME": str(irds_home)})
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith("clirplug: error: ")
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("collection, message", [
    ("{irds: hc4/fa, lang: en}\nsplits: [nosuch]", "exp.yaml: splits: irds:hc4/fa/nosuch: unknown ir_datasets id"),
    ("{irds: hc4/fa, lang: en}\ntune_split: dev\nsplits: [dev]\nbaseline: floor",
     None),
    ("{irds: hc4/fa, path: somewhere}", "exp.yaml: collection: give either path (a collection folder) or irds"),
    ("{irds: 3}", "exp.yaml: collection.irds: expected str, got 3"),
])
def test_experiment_irds_collection_checks(irds_home, tmp_path, collection, message):
    """Config errors name the key; a valid config's --dry-run writes the collection folder and lists the stages."""
    (tmp_path / "exp.yaml").write_text(f"collection: {collection}\ntranslations: {{outputs: []}}\n", encoding="utf-8")
    result = _python(irds_home, "-m", "clirplug", "experiment", str(tmp_path / "exp.yaml"), "--root", str(tmp_path / "r"),
                     "--dry-run", "--quiet")
    if message is None:
        assert result.returncode == 0, result.stderr
        assert "index: would run" in result.stdout
        assert (tmp_path / "r" / "collections" / "hc4-fa" / "topics.dev.jsonl").is_file()
    else:
        assert result.returncode == 2 and result.stderr.strip().startswith(f"clirplug: error: {tmp_path / message}")
        assert len(result.stderr.strip().splitlines()) == 1


def test_missing_extra_is_one_line(irds_home, tmp_path):
    """Without ir_datasets installed, an irds: id names the extra to install."""
    fake = tmp_path / "site" / "ir_datasets"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named ir_datasets')\n")
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    result = _python(irds_home, "-m", "clirplug", "eval", "run.trec", "--qrels", "irds:hc4/fa/dev", PYTHONPATH=path)
    assert result.returncode == 2
    assert result.stderr.strip() == ("clirplug: error: irds:hc4/fa/dev: ir_datasets is not installed "
                                     "(pip install 'clirplug[irds]')")
