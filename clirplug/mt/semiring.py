"""Semirings for hypergraph inference (Huang 2008; Goodman 1999).

A semiring gives the two operations of the inside recursion over a hypergraph:
``plus`` combines alternative derivations (edges into the same node), ``times`` combines
the parts of one derivation (an edge's own weight and its tails' values). Values are
numpy scalars or arrays, so the same code serves one weight vector or a batch of them.

===========  =============  ================  =====  =====  =============================
semiring     plus           times             zero   one    use
===========  =============  ================  =====  =====  =============================
tropical     max            \\+               -inf   0      Viterbi (best derivation score)
log          log-sum-exp    \\+               -inf   0      inside/outside sums over derivations
real         \\+            ×                 0      1      derivation counts, brute checks
===========  =============  ================  =====  =====  =============================

Scores are log-domain model scores ``w·f`` (natural log for the log semiring: a derivation's
unnormalised probability is ``exp(w·f)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp


@dataclass(frozen=True)
class Semiring:
    """A commutative semiring ``(plus, times, zero, one)`` on numpy values.

    Attributes
    ----------
    name : str
        Registry name (``"tropical"``, ``"log"``, ``"real"``).
    plus, times : callable
        Binary element-wise operations.
    reduce_plus, reduce_times : callable
        ``f(array, axis)``: ``plus`` / ``times`` folded along ``axis``; an empty axis gives
        ``zero`` / ``one``.
    zero, one : float
        The identities of ``plus`` and ``times``; ``zero`` annihilates ``times``.
    """

    name: str
    plus: Callable
    times: Callable
    reduce_plus: Callable
    reduce_times: Callable
    zero: float
    one: float


def _max_reduce(values, axis=0):
    values = np.asarray(values, dtype=float)
    if values.shape[axis] == 0:
        return np.full(np.delete(values.shape, axis), -np.inf) if values.ndim > 1 else -np.inf
    return values.max(axis=axis)


def _logsumexp_reduce(values, axis=0):
    values = np.asarray(values, dtype=float)
    if values.shape[axis] == 0:
        return np.full(np.delete(values.shape, axis), -np.inf) if values.ndim > 1 else -np.inf
    return logsumexp(values, axis=axis)


def _sum_reduce(values, axis=0):
    return np.asarray(values, dtype=float).sum(axis=axis)


def _prod_reduce(values, axis=0):
    return np.asarray(values, dtype=float).prod(axis=axis)


TROPICAL = Semiring("tropical", np.maximum, np.add, _max_reduce, _sum_reduce, -np.inf, 0.0)
LOG = Semiring("log", np.logaddexp, np.add, _logsumexp_reduce, _sum_reduce, -np.inf, 0.0)
REAL = Semiring("real", np.add, np.multiply, _sum_reduce, _prod_reduce, 0.0, 1.0)

SEMIRINGS: dict[str, Semiring] = {s.name: s for s in (TROPICAL, LOG, REAL)}
