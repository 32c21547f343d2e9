"""matplotlib is the ``plots`` extra: imported on first use; without it, one line naming the extra or no figure."""

import sys

import pytest

from clirplug import plots
from clirplug.cli import main
from clirplug.errors import ClirplugError
from clirplug.experiment.figures import available

pytestmark = pytest.mark.cli


@pytest.fixture
def no_matplotlib(monkeypatch):
    """matplotlib as if it were not installed (``import matplotlib`` raises ImportError, find_spec finds nothing)."""
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_importing_clirplug_and_its_cli_imports_no_matplotlib():
    import subprocess

    code = ("import importlib, pkgutil, sys, clirplug, clirplug.cli, clirplug.experiment.runner, clirplug.fusion.tune\n"
            "from clirplug.experiment import planners\n"
            "for module in pkgutil.iter_modules(planners.__path__): importlib.import_module(f'{planners.__name__}.{module.name}')\n"
            "print('matplotlib' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_without_matplotlib_drawing_says_in_one_line_which_extra_to_install(no_matplotlib):
    assert not plots.available() and not available()
    with pytest.raises(ClirplugError) as error:
        plots.pyplot()
    assert "pip install 'clirplug[plots]'" in str(error.value) and "\n" not in str(error.value)


def test_fuse_tune_on_without_matplotlib_stops_before_any_work(no_matplotlib, tmp_path, capsys):
    (tmp_path / "a.trec").write_text("q1 Q0 d1 1 2.0 a\n")
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    runs = [str(tmp_path / "a.trec")] * 2
    assert main(["fuse", "--runs", *runs, "--tune-on", str(tmp_path / "qrels"), "--output", str(tmp_path / "o.trec")]) == 2
    err = capsys.readouterr().err
    assert "clirplug[plots]" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.trec").exists() and not (tmp_path / "o.trec.kappa.tsv").exists()


def test_an_experiment_without_matplotlib_plans_no_kappa_png(no_matplotlib):
    from clirplug.data import demo_config
    from clirplug.experiment.config import load_config
    from clirplug.experiment.plan import build_plan
    from clirplug.experiment.report import add_report_stage

    plan = build_plan(load_config(demo_config()))
    add_report_stage(plan)
    tunes = [s for s in plan.stages.values() if s.kind == "fusion-tune"]
    assert tunes and all([p.suffix for p in s.outputs] == [".tsv", ".json"] for s in tunes)
    report = plan.stages["report"]
    assert not report.settings["figures"] and all(p.suffix not in (".png", ".pdf") for p in report.outputs)
