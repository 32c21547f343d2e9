"""Semiring laws (as grasp's tests/test_semiring.py) on random values, per registered semiring."""

import numpy as np
import pytest

from clirplug.mt.semiring import LOG, REAL, SEMIRINGS, TROPICAL

pytestmark = pytest.mark.unit


def _values(semiring, rng):
    if semiring is REAL:
        return rng.uniform(0.0, 3.0, size=(3, 50))
    values = rng.normal(size=(3, 50)) * 5
    values[:, :5] = -np.inf  # the zero element takes part too
    return values


@pytest.mark.parametrize("semiring", list(SEMIRINGS.values()), ids=list(SEMIRINGS))
def test_semiring_laws(semiring):
    rng = np.random.default_rng(0)
    a, b, c = _values(semiring, rng)
    plus, times = semiring.plus, semiring.times
    def close(x, y):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)

    close(plus(a, b), plus(b, a))
    close(times(a, b), times(b, a))
    close(plus(plus(a, b), c), plus(a, plus(b, c)))
    close(times(times(a, b), c), times(a, times(b, c)))
    close(times(a, plus(b, c)), plus(times(a, b), times(a, c)))
    close(plus(a, semiring.zero), a)
    close(times(a, semiring.one), a)
    close(times(a, semiring.zero), np.full_like(a, semiring.zero))
    # the folds agree with the binary operations, and an empty fold is the identity
    close(semiring.reduce_plus(np.stack([a, b, c]), axis=0), plus(plus(a, b), c))
    close(semiring.reduce_times(np.stack([a, b, c]), axis=0), times(times(a, b), c))
    assert semiring.reduce_plus(np.empty(0), axis=0) == semiring.zero
    assert semiring.reduce_times(np.empty(0), axis=0) == semiring.one


def test_semiring_values_by_hand():
    assert TROPICAL.plus(2.0, 3.0) == 3.0 and TROPICAL.times(2.0, 3.0) == 5.0
    np.testing.assert_allclose(LOG.plus(np.log(2.0), np.log(3.0)), np.log(5.0))
    np.testing.assert_allclose(LOG.reduce_plus(np.log([1.0, 2.0, 3.0]), axis=0), np.log(6.0))
    assert REAL.reduce_times(np.array([2.0, 3.0, 4.0]), axis=0) == 24.0
