"""The order in which the experiment runner starts ready stages."""

import pytest

from clirplug.experiment.plan import Stage
from clirplug.experiment.runner import chain_lengths, ordered

pytestmark = pytest.mark.unit


def _plan(edges: dict[str, tuple[str, ...]]) -> dict[str, Stage]:
    return {name: Stage(name, "copy", {}, deps=deps) for name, deps in edges.items()}


def test_chain_lengths_count_the_longest_chain_each_stage_heads():
    # index -> grammar -> weights -> translate -> run -> report, and index -> embed -> report
    plan = _plan({"index": (), "embed": ("index",), "grammar": ("index",), "weights": ("grammar",),
                  "translate": ("weights",), "run": ("translate", "index"), "report": ("run", "embed")})
    assert chain_lengths(ordered(plan)) == {"index": 6, "grammar": 5, "weights": 4, "translate": 3, "run": 2,
                                            "embed": 2, "report": 1}


def test_chain_lengths_ignore_stages_already_done():
    plan = _plan({"a": (), "b": ("a",), "c": ("b",)})
    todo = [stage for stage in ordered(plan) if stage.name != "a"]  # "a" up to date
    assert chain_lengths(todo) == {"b": 2, "c": 1}
