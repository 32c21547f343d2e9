"""Paired randomization test: against exact enumeration of all sign vectors."""

import itertools

import numpy as np
import pytest

from clirplug.eval.significance import MARKER, marker, randomization_test

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
