"""``clirplug demo`` is the demo experiment (what ``make demo`` runs), and the README finds the demo's files
through ``clirplug demo --path``, so its commands work from any directory."""

import re
from pathlib import Path

import pytest

from clirplug.cli import main
from clirplug.data import demo_config, demo_path

pytestmark = pytest.mark.cli

REPO = Path(__file__).resolve().parents[2]


def test_path_prints_the_packaged_collection(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--path"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert printed == demo_path() and (printed / "corpus.jsonl").is_file()
    assert list(tmp_path.iterdir()) == []


def test_demo_runs_the_demo_config_as_experiment_does(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["experiment", str(demo_config()), "--root", "demo-output", "--dry-run", "--quiet"]) == 0
    experiment = capsys.readouterr().out
    assert main(["demo", "--dry-run", "--quiet"]) == 0  # --root demo-output by default
    assert capsys.readouterr().out == experiment
    assert main(["demo", "--workdir", "demo-output", "--dry-run", "--quiet"]) == 0  # the old option name
    assert capsys.readouterr().out == experiment
    assert "index: would run" in experiment and "report: would run" in experiment


def test_demo_config_reads_the_packaged_collection():
    from clirplug.experiment.config import load_config

    config = load_config(demo_config())
    assert config.collection.path.resolve() == demo_path().resolve()
    assert demo_config().parent == demo_path().parent


def test_configs_demo_yaml_is_the_packaged_config_and_reads_its_collection():
    from clirplug.experiment.config import load_config

    link = REPO / "configs" / "demo.yaml"
    assert link.resolve() == demo_config().resolve()
    assert load_config(link).collection.path.resolve() == demo_path().resolve()  # relative to the link's target


def test_make_demo_runs_clirplug_demo():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    assert recipe.split() == ["$(BIN)/clirplug", "demo"]


def test_readme_commands_name_no_path_inside_the_repository():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    setup = readme[readme.index("## Set-up"):readme.index("## Use")]
    assert re.findall(r"^make \w+", setup, re.MULTILINE) == ["make demo", "make test"]
    commands = "\n".join(re.findall(r"```sh\n(.*?)```", readme[readme.index("## Use"):], re.DOTALL))
    assert "D=$(clirplug demo --path)" in commands
    assert re.findall(r"(?<![\w$/.])(?:\.venv/|clirplug/data|configs/)\S*", commands) == []
