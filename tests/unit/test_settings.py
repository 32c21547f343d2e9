"""Settings classes: one declaration gives the Python object, the YAML check and the CLI flags."""

import argparse
import dataclasses
import inspect

import pytest

from clirplug.cli.options import add_settings, settings_from_args
from clirplug.errors import ClirplugError
from clirplug.methods import METHODS, RUNS, TRAINING, Bm25Run
from clirplug.mt.align_config import AlignConfig
from clirplug.qt.psq_tables import PsqSettings
from clirplug.rerank.config import BowfdConfig
from clirplug.settings import Settings, option

pytestmark = pytest.mark.cli

ALL = [step.settings for step in TRAINING.values()] + [method.settings for method in METHODS.values()] \
    + [PsqSettings, BowfdConfig, AlignConfig]


@dataclasses.dataclass(frozen=True)
class Example(Settings):
    count: int = option(3, "how many", low=1)
    scale: float = option(0.5, "how much", low=0.0, high=1.0)
    name: str = option("a", "which", choices=("a", "b"))
    grid: tuple[float, ...] = option((0.1, 0.2), "values tried", above=0.0)
    cap: int | None = option(None, "optional limit", low=1)
    on: bool = option(True, "a switch")


def test_values_are_converted_and_checked_on_construction():
    assert Example(scale=1).scale == 1.0 and isinstance(Example(scale=1).scale, float)
    assert Example(grid=[1, 2]).grid == (1.0, 2.0)
    for bad, message in [({"count": 0}, "count: must be at least 1, got 0"),
                         ({"scale": 1.5}, "scale: must be at most 1.0"),
                         ({"name": "c"}, "name: expected one of a, b, got 'c'"),
                         ({"grid": [0.1, 0]}, "grid: must be above 0.0"),
                         ({"grid": []}, "grid: expected a non-empty list"),
                         ({"count": 2.5}, "count: expected int, got 2.5"),
                         ({"count": True}, "count: expected int, got True"),
                         ({"on": "yes"}, "on: expected bool"),
                         ({"scale": float("nan")}, "scale: expected a finite number")]:
        with pytest.raises(ClirplugError, match=message.replace("(", r"\(").replace(")", r"\)")):
            Example(**bad)


def test_frozen_and_replace_checks_again():
    settings = Example()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.count = 4
    assert settings.replace(count=4).count == 4
    with pytest.raises(ClirplugError, match="count: must be at least 1"):
        settings.replace(count=0)


def test_yaml_mapping_names_the_key():
    assert Example.from_mapping({"count": 5}, "runs.x") == Example(count=5)
    assert Example.from_mapping(None, "runs.x") == Example()
    with pytest.raises(ClirplugError, match=r"runs\.x\.colour: unknown setting \(known: count, scale"):
        Example.from_mapping({"colour": 1}, "runs.x")
    with pytest.raises(ClirplugError, match=r"runs\.x\.count: must be at least 1, got 0"):
        Example.from_mapping({"count": 0}, "runs.x")
    with pytest.raises(ClirplugError, match=r"runs\.x: expected a mapping"):
        Example.from_mapping([1], "runs.x")


def test_command_line_flags_come_from_the_class_and_give_the_same_object():
    parser = argparse.ArgumentParser()
    add_settings(parser, Example)
    assert settings_from_args(Example, parser.parse_args([])) == Example()
    args = parser.parse_args(["--count", "7", "--grid", "0.3", "0.4", "--no-on", "--cap", "2", "--name", "b"])
    assert settings_from_args(Example, args) == Example(count=7, grid=(0.3, 0.4), on=False, cap=2, name="b")
    with pytest.raises(ClirplugError, match="--count: must be at least 1, got 0"):
        settings_from_args(Example, parser.parse_args(["--count", "0"]))


@pytest.mark.parametrize("cls", ALL, ids=lambda cls: cls.__name__)
def test_every_method_and_training_step_has_documented_valid_defaults_and_a_flag_per_setting(cls):
    settings = cls()  # the defaults pass their own checks
    assert all(f.metadata.get("help") for f in dataclasses.fields(cls))
    parser = argparse.ArgumentParser()
    add_settings(parser, cls)
    flags = {action.dest for action in parser._actions}
    assert set(cls.names()) <= flags
    assert settings_from_args(cls, parser.parse_args([])) == settings
    as_yaml = {f.name: list(v) if isinstance(v := getattr(settings, f.name), tuple) else v
               for f in dataclasses.fields(cls)}  # as YAML would give them: lists, not tuples
    assert cls.from_mapping(as_yaml, "x") == settings


def test_training_commands_offer_every_setting_of_their_step():
    from clirplug.cli import build_parser

    parser = build_parser()
    train = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["train"]
    steps = next(a for a in train._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert list(steps) == list(TRAINING)
    for name, step in TRAINING.items():
        dests = {action.dest for action in steps[name]._actions}
        assert set(step.settings.names()) <= dests, name


def test_bm25_parameters_use_the_one_bm25_check():
    with pytest.raises(ClirplugError, match="BM25 k1 must be a finite number >= 0"):
        TRAINING["mira"].settings(k1=-1)
    with pytest.raises(ClirplugError, match=r"BM25 b must lie in \[0, 1\]"):
        TRAINING["bowfd"].settings(b=2)


def test_every_method_of_runs_has_a_planner_and_reads_its_yaml_entry():
    for name, method in METHODS.items():
        assert (method.planner is not None) == (name in RUNS), name
        if method.planner is not None:
            planner = method.planner_function()
            assert callable(planner) and method.planner == f"{planner.__module__}:{planner.__name__}"
            assert list(inspect.signature(planner).parameters) == ["plan", "spec", "splits"]
    settings, options, training = RUNS["bowfd"].read({"depth": 50, "v": 0.4, "lm": False}, "runs.b")
    assert (settings.depth, settings.lm, settings.kind, options) == (50, False, "hiero", {"v": 0.4})
    assert training == TRAINING["bowfd"].settings(v=0.4)  # the entry's depth is the reranking's
    settings, options, training = RUNS["fusion"].read({"runs": ["a", "b"], "grid_step": 1}, "runs.f")
    assert (settings.runs, settings.grid_step, settings.fuser, options, training) == (("a", "b"), 1.0, None, {}, None)
    with pytest.raises(ClirplugError, match=r"runs.d.weights: expected one of bitext, queries, got 'query'"):
        RUNS["dt"].read({"weights": "query"}, "runs.d")
    with pytest.raises(ClirplugError, match=r"runs.d.depth: unknown setting"):
        RUNS["dt"].read({"depth": 3}, "runs.d")
    with pytest.raises(ClirplugError, match=r"runs.b.field: set by the experiment itself"):
        RUNS["boost"].read({"field": "desc"}, "runs.b")
    with pytest.raises(ClirplugError, match=r"runs.b.bags: must be at least 1, got 0"):
        RUNS["boost"].read({"bags": 0}, "runs.b")


def test_bowfd_scoring_defaults_are_the_paper_s_and_bad_values_name_their_flag():
    from clirplug.bm25 import BOWFD_B, BOWFD_K1
    from clirplug.cli import build_parser
    from clirplug.rerank.config import DEFAULT_SENTENCE_DEPTH

    assert BowfdConfig() == BowfdConfig(k1=BOWFD_K1, b=BOWFD_B, beam=None, sentence_depth=DEFAULT_SENTENCE_DEPTH,
                                        field="title")
    for bad, message in [({"beam": 0}, "beam: must be at least 1, got 0"),
                         ({"sentence_depth": 0}, "sentence_depth: must be at least 1, got 0"),
                         ({"field": "abstract"}, "field: expected one of title, desc, narr, got 'abstract'"),
                         ({"k1": -1.0}, "BM25 k1 must be a finite number >= 0")]:
        with pytest.raises(ClirplugError, match=message):
            BowfdConfig(**bad)
    args = build_parser().parse_args(["rerank", "--method", "bowfd", "--model", "m", "--topics", "t", "--output", "o",
                                      "--beam", "0"])
    with pytest.raises(ClirplugError, match="--beam: must be at least 1, got 0"):
        settings_from_args(BowfdConfig, args, field="title")


def test_align_settings_are_the_aligner_s_plus_their_own_without_repeating_a_default():
    from clirplug.train.align import AlignSettings

    assert issubclass(AlignSettings, AlignConfig)
    assert all(AlignSettings.__dataclass_fields__[name] is AlignConfig.__dataclass_fields__[name]
               for name in AlignConfig.names())
    assert (AlignConfig().model1_iterations, AlignConfig().iterations, AlignConfig().p0) == (5, 5, 0.08)
    with pytest.raises(ClirplugError, match="p0: must be below 1.0, got 1.0"):
        AlignConfig(p0=1.0)
    with pytest.raises(ClirplugError, match="models.align.iterations: at least one EM iteration is needed"):
        AlignSettings.from_mapping({"iterations": 0, "model1_iterations": 0}, "models.align")


def test_bm25_settings_take_anserini_s_defaults_and_the_bm25_check():
    from clirplug.bm25 import ANSERINI_B, ANSERINI_K1

    bm25 = METHODS["bm25"].settings
    assert bm25() == bm25(k1=ANSERINI_K1, b=ANSERINI_B)
    with pytest.raises(ClirplugError, match=r"BM25 b must lie in \[0, 1\]"):
        bm25(b=2)


@pytest.mark.parametrize("config, expected", [
    ("clirplug/data/demo.yaml", {"bowfd": False, "bowfd+ltr": True, "bowfd-nolm": False}),
    ("configs/manclir-de.yaml", {"bowfd": False, "bowfd+ltr": True, "bowfd+lex+ltr": True, "bowfd-nolm": False}),
])
def test_bowfd_learning_to_rank_has_one_default_and_the_shipped_configs_say_which_they_run(config, expected):
    """ltr is a training option (default: on, as ``clirplug train bowfd``); BOW-FD runs without it say so."""
    import yaml
    from test_code_rules import REPO

    from clirplug.train.bowfd import BowfdSettings

    assert "ltr" not in RUNS["bowfd"].settings.names() and BowfdSettings().ltr is True
    runs = yaml.safe_load((REPO / config).read_text(encoding="utf-8"))["runs"]
    found = {}
    for name, entry in runs.items():
        entry = dict(entry or {})
        if entry.pop("method", name) == "bowfd":
            found[name] = RUNS["bowfd"].read(entry, f"runs.{name}")[2].ltr
    assert found == expected


def test_an_experiments_bm25_mapping_is_read_into_bm25run_and_errors_name_the_key():
    from pathlib import Path

    import clirplug
    from clirplug.experiment.config import validate

    raw = {"name": "x", "collection": {"path": str(Path(clirplug.__file__).parent / "data" / "demo")}}
    assert validate({**raw, "bm25": {"k1": 1}}, "cfg.yaml").bm25 == {"k1": 1.0, "b": Bm25Run().b}
    with pytest.raises(ClirplugError, match=r"^cfg\.yaml: bm25\.b: BM25 b must lie in \[0, 1\], got 2\.0$"):
        validate({**raw, "bm25": {"b": 2.0}}, "cfg.yaml")
    with pytest.raises(ClirplugError, match=r"^cfg\.yaml: bm25\.c: unknown setting"):
        validate({**raw, "bm25": {"c": 1}}, "cfg.yaml")
