"""System files (clirplug.system_file): paths follow the root when it moves; a bad file is one line naming it and
the key."""

import json

import pytest

from clirplug.errors import ClirplugError
from clirplug.system_file import read_system, relative, root_of, system_path, write_system

pytestmark = pytest.mark.unit

SYSTEM = {"name": "bowfd", "method": "bowfd", "field": "desc", "tag": "bowfd.desc", "hits": 1000,
          "index": "indexes/demo", "corpus": None, "files": {"weights": "models/demo/bowfd.bowfd.desc.weights"},
          "model": {"folder": "models/demo", "kind": "flat", "src_lang": "de", "weights": None},
          "options": {"depth": 50}, "first_stage": "dev.desc.dt.system.json", "searchers": None}


def test_the_paths_of_a_system_follow_its_root_when_moved(tmp_path):
    root = tmp_path / "root"
    file = system_path(root / "runs" / "demo" / "dev.desc.bowfd.trec")
    assert file.name == "dev.desc.bowfd.system.json"
    assert relative(root / "indexes" / "demo", root) == "indexes/demo"
    assert relative(tmp_path / "corpus.jsonl", root) == str(tmp_path / "corpus.jsonl")  # outside the root: absolute
    file.parent.mkdir(parents=True)
    write_system(file, {**SYSTEM, "root": root_of(file, root)})
    moved = tmp_path / "elsewhere"
    root.rename(moved)
    system = read_system(moved / "runs" / "demo" / file.name)
    assert system["index"] == str(moved / "runs" / "demo" / "../.." / "indexes/demo")
    assert system["files"]["weights"].startswith(str(moved))
    assert system["model"]["folder"].startswith(str(moved)) and system["model"]["weights"] is None
    assert system["first_stage"] == moved / "runs" / "demo" / "dev.desc.dt.system.json"


@pytest.mark.parametrize("change, message", [
    ({"format": 2}, "format: expected a clirplug system file of format 1"),
    ({"hits": "many"}, "hits: expected int, got 'many'"),
    ({"method": None}, "method: expected str, got None"),
    ({"files": {"weights": 3}}, "files.weights: expected a path, got 3"),
    ({"model": {"folder": "models/demo"}}, "model: expected {folder, kind, src_lang, weights}"),
    ({"searchers": [1]}, "searchers: expected the names of system files"),
])
def test_a_bad_system_file_is_one_line_naming_it_and_the_key(tmp_path, change, message):
    file = tmp_path / "x.system.json"
    file.write_text(json.dumps({"format": 1, "root": ".", **SYSTEM, **change}), encoding="utf-8")
    with pytest.raises(ClirplugError, match=rf"^{file}: ") as error:
        read_system(file)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_file_that_is_no_json_or_absent_is_named(tmp_path):
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ClirplugError, match="bad.json: not a JSON system file"):
        read_system(tmp_path / "bad.json")
    with pytest.raises(ClirplugError, match="absent.json: cannot read"):
        read_system(tmp_path / "absent.json")
