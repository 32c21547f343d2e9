"""Settings classes: one declaration gives the Python object, the YAML check and the CLI flags."""

import argparse
import dataclasses

import pytest

from clirplug.cli.options import add_settings, settings_from_args
from clirplug.errors import ClirplugError
from clirplug.methods import RUNS, TRAINING
from clirplug.settings import Settings, option

pytestmark = pytest.mark.cli

ALL = [step.settings for step in TRAINING.values()] + [method.settings for method in RUNS.values()]


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
    assert cls.from_mapping(settings.as_dict(), "x") == settings


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
    from clirplug.experiment.stages import PLANNERS

    assert list(PLANNERS) == list(RUNS)
    settings, options = RUNS["bowfd"].read({"depth": 50, "v": 0.4, "lm": False}, "runs.b")
    assert (settings.depth, settings.lm, settings.kind, options) == (50, False, "hiero", {"v": 0.4})
    settings, options = RUNS["fusion"].read({"runs": ["a", "b"], "grid_step": 1}, "runs.f")
    assert (settings.runs, settings.grid_step, settings.fuser, options) == (("a", "b"), 1.0, None, {})
    with pytest.raises(ClirplugError, match=r"runs.d.weights: expected one of bitext, queries, got 'query'"):
        RUNS["dt"].read({"weights": "query"}, "runs.d")
    with pytest.raises(ClirplugError, match=r"runs.d.depth: unknown setting"):
        RUNS["dt"].read({"depth": 3}, "runs.d")
    with pytest.raises(ClirplugError, match=r"runs.b.field: set by the experiment itself"):
        RUNS["boost"].read({"field": "desc"}, "runs.b")
    with pytest.raises(ClirplugError, match=r"runs.b.bags: must be at least 1, got 0"):
        RUNS["boost"].read({"bags": 0}, "runs.b")


# Where each setting of a run class is given on the command line: (command, flag), or None for the
# tuning grids, which only an experiment searches (on its tune split).
RUN_FLAGS = {
    "dt": {"kind": ("search", "--kind"), "weights": ("translate", "--weights")},
    "psq": {"psq": ("search", "--psq"), "kind": ("search", "--kind"), "grid": None},
    "boost": {"candidates": ("rerank", "--candidates")},
    "bowfd": {"candidates": ("rerank", "--candidates"), "kind": ("rerank", "--kind"), "ltr": ("train bowfd", "--ltr"),
              "lex": ("train bowfd", "--lex"), "lm": ("rerank", "--no-lm"), "depth": ("rerank", "--depth")},
    "fusion": {"runs": ("fuse", "--runs"), "fuser": ("fuse", "--method"), "grid_step": ("fuse", "--grid-step"),
               "measure": ("fuse", "--measure")},
    "dense": {"words": ("search", "--words"), "grid": None},
}


def test_every_run_setting_has_its_command_line_flag():
    """A setting added to a run class without a flag (or a flag renamed) fails here."""
    from clirplug.cli import build_parser

    def subcommands(parser):
        return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices

    commands = subcommands(build_parser())
    assert set(RUN_FLAGS) == set(RUNS)
    for method, flags in RUN_FLAGS.items():
        assert set(flags) == set(RUNS[method].settings.names()), method
        for name, where in flags.items():
            if where is None:
                continue
            command, flag = where
            parser = commands[command.split()[0]]
            for word in command.split()[1:]:
                parser = subcommands(parser)[word]
            assert flag in {option for action in parser._actions for option in action.option_strings}, (method, name)
