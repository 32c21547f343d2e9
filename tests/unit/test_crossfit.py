"""Cross-fitting folds (clirplug.crossfit) and the PSQ coordinate search (clirplug.qt.psq_tune)."""

import itertools

import pytest

from clirplug.crossfit import fold_of, held_out_lines, page_name, read_ids
from clirplug.errors import ClirplugError
from clirplug.qt.psq_tables import PsqSettings
from clirplug.qt.psq_tune import coordinate_search, grid_axes, may_decode, with_value

pytestmark = pytest.mark.unit


def test_page_name_drops_the_section_only():
    assert page_name("printf.3") == "printf"
    assert page_name("vault.conf.5") == "vault.conf"
    assert page_name("garden01") == "garden01"


def test_folds_are_balanced_deterministic_and_keep_a_page_name_together():
    ids = [f"page{i}.{s}" for i in range(40) for s in (1, 3)] + [f"solo{i}.1" for i in range(11)]
    fold = fold_of(ids, 3)
    assert fold == fold_of(list(reversed(ids)), 3)  # the file order does not matter
    for i in range(40):
        assert fold[f"page{i}.1"] == fold[f"page{i}.3"]
    names_per_fold = [len({page_name(t) for t, k in fold.items() if k == f}) for f in range(3)]
    assert max(names_per_fold) - min(names_per_fold) <= 1
    with pytest.raises(ClirplugError, match="at least 2 folds"):
        fold_of(ids, 1)


def test_held_out_lines_are_those_of_the_fold_pages_and_of_pages_with_their_name():
    ids = ["ls.1", "cp.1", "-", "printf.3", "printf.1", "cat.1"]
    assert held_out_lines(ids, {"printf", "ls"}) == [True, False, False, True, True, False]


def test_read_ids_checks_length_and_lines(tmp_path):
    path = tmp_path / "bitext.train.ids"
    path.write_text("ls.1\n-\n", encoding="utf-8")
    assert read_ids(path, 2) == ["ls.1", "-"]
    with pytest.raises(ClirplugError, match="2 lines, but the bitext has 3"):
        read_ids(path, 3)
    path.write_text("ls.1\n\n", encoding="utf-8")
    with pytest.raises(ClirplugError, match=r"bitext.train.ids:2: expected a page id"):
        read_ids(path, 2)


GRID = {"lambda": ["1:0:0", "0:1:0", "0:0:1"], "pL": [0, 0.05, 0.2], "stop": ["none", "large"]}


def test_coordinate_search_equals_a_hand_written_search_and_calls_each_setting_once():
    def score(settings):  # a made-up measure: grammar best, then pL 0.05, then large
        return settings.weights["grammar"] + (settings.p_lower == 0.05) * 0.5 + (settings.stopwords == "large") * 0.25

    calls = []

    def measure(settings):
        calls.append(settings.spec())
        return score(settings)

    best, results = coordinate_search(measure, PsqSettings(), grid_axes(GRID))
    assert best == PsqSettings.parse("lambda=0:1:0,pL=0.05,stop=large")
    assert len(calls) == len(set(calls)) == len(results)
    # brute force over the whole grid agrees here, since the made-up measure is separable
    every = [PsqSettings.parse(f"lambda={lam},pL={pl},stop={stop}") for lam, pl, stop in itertools.product(*GRID.values())]
    assert score(best) == max(map(score, every))


def test_coordinate_search_keeps_the_current_point_on_ties():
    best, _ = coordinate_search(lambda settings: 1.0, PsqSettings(), grid_axes(GRID))
    assert best == PsqSettings()


def test_grid_axes_name_the_bad_key():
    with pytest.raises(ClirplugError, match=r"runs.psq.grid.pl: unknown --psq option"):
        grid_axes({"pl": [0.1]}, "runs.psq.grid")
    with pytest.raises(ClirplugError, match=r"grid.pC: .*pC"):
        grid_axes({"pC": [0.9, 1.5]})
    with pytest.raises(ClirplugError, match="non-empty list"):
        grid_axes({"stop": "large"})
    assert grid_axes({"lambda": [[0, 0, 1]]}) == [("lambda", ["0:0:1"])]


def test_may_decode_when_any_setting_needs_the_decoder():
    assert not may_decode(PsqSettings(), grid_axes({"pL": [0, 0.1]}))
    assert may_decode(PsqSettings(), grid_axes({"lambda": ["1:0:0", "0:0:1"]}))
    assert may_decode(PsqSettings(), grid_axes({"orphans": [0, 0.5]}))
    assert with_value(PsqSettings(), "pL", "0.1").p_lower == 0.1
