"""Paired randomization test against exact enumeration of all sign vectors; Holm's adjustment by hand and
against statsmodels."""

import itertools

import numpy as np
import pytest

from clirplug.eval.significance import CORRECTIONS, MARKER, holm, marker, randomization_test

pytestmark = pytest.mark.unit


def exact_p_value(system, baseline):
    """All 2^n sign flips: the exact two-sided permutation p-value of the mean difference."""
    differences = np.asarray(system) - np.asarray(baseline)
    observed = abs(differences.sum())
    flips = [abs(np.dot(signs, differences)) >= observed - 1e-12
             for signs in itertools.product((1, -1), repeat=len(differences))]
    return np.mean(flips)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_monte_carlo_agrees_with_exact_enumeration(seed):
    rng = np.random.default_rng(seed)
    system, baseline = rng.random(12), rng.random(12)
    system[:6] += 0.15
    exact = exact_p_value(system, baseline)
    assert randomization_test(system, baseline) == pytest.approx(exact, abs=0.015)  # ~3 standard errors


def test_identical_systems_give_one_and_a_consistent_gain_a_tiny_p():
    values = np.linspace(0, 1, 30)
    assert randomization_test(values, values) == 1.0
    p = randomization_test(values + 0.01, values)
    assert p == pytest.approx(1 / 10_001)  # exact p is 2 / 2^30: no random vector reaches it


def test_two_sided_deterministic_and_vectorized():
    rng = np.random.default_rng(3)
    a, b, c = rng.random((3, 249))
    p_ab = randomization_test(a, b)
    assert p_ab == randomization_test(b, a) == randomization_test(a, b)
    both = randomization_test(np.column_stack([a, c]), np.column_stack([b, b]))
    assert both.tolist() == [p_ab, randomization_test(c, b)]
    assert abs(randomization_test(a, b, seed=1) - randomization_test(a, b, seed=2)) < 0.03  # Monte-Carlo noise only


def test_p_value_never_zero():
    assert randomization_test([1.0] * 5, [0.0] * 5, permutations=100) > 0


def test_marker():
    assert marker(0.049) == MARKER and marker(0.05) == "" and marker(None) == ""


# p-values -> Holm-adjusted, by hand: sort ascending, multiply the i-th (from 1) by m - i + 1, carry the running
# maximum (step-down), cap at 1, put back in input order
HOLM_CASES = [
    # sorted 0.005 0.01 0.03 0.04 -> 4*0.005, 3*0.01, 2*0.03, max(2*0.03, 1*0.04)
    ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
    ([0.6, 0.7, 0.1], [1.0, 1.0, 0.3]),  # 2*0.6 capped at 1; 1*0.7 raised to the running maximum
    ([0.02, 0.02], [0.04, 0.04]),  # ties: 2*0.02, then max(0.04, 1*0.02)
    ([0.2], [0.2]),  # a family of one is left alone
    ([], []),
]


@pytest.mark.parametrize("p_values, adjusted", HOLM_CASES)
def test_holm_by_hand(p_values, adjusted):
    assert holm(p_values).tolist() == pytest.approx(adjusted, abs=1e-15)


def test_holm_equals_statsmodels_multipletests():
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    rng = np.random.default_rng(7)
    for size in (2, 3, 8, 25):
        p_values = rng.random(size) ** 3  # many small ones
        p_values[1] = p_values[0]  # with a tie
        assert holm(p_values) == pytest.approx(multipletests(p_values, method="holm")[1], abs=1e-15)


def test_holm_controls_what_it_adjusts():
    p_values = np.array([0.04, 0.001, 0.5, 0.012])
    adjusted = holm(p_values)
    assert (adjusted >= p_values).all() and (adjusted <= 1).all()
    order = np.argsort(p_values)
    assert (np.diff(adjusted[order]) >= 0).all()  # the order of the p-values is kept
    assert CORRECTIONS["holm"] is holm
    with pytest.raises(ValueError, match=r"p-values in \[0, 1\]"):
        holm([0.5, 1.5])
