"""Paired randomization test (Smucker, Allan & Carterette, CIKM 2007) and its markers.

Under the null hypothesis the two systems are exchangeable on every query, so the sign
of each per-query difference is arbitrary. The test draws ``permutations`` random sign
vectors (one matrix, shared by all comparisons, from a fixed seed) and counts how often
the absolute mean of the re-signed differences reaches the observed one (two-sided).
The p-value is ``(1 + count) / (1 + permutations)`` (Phipson & Smyth 2010), which never
reports 0 for a finite sample of permutations.

Marker convention (as Hieber & Riezler 2015 mark significance with a superscript): in
tables, a run's value is followed by ``*`` when it differs from the baseline's at
``p < 0.05``.
"""

import numpy as np

PERMUTATIONS = 10_000
SEED = 20070806  # fixed default: every p-value is reproducible
ALPHA = 0.05
MARKER = "*"


def randomization_test(system, baseline, permutations: int = PERMUTATIONS, seed: int = SEED):
    """Two-sided paired randomization test of the mean per-query difference.

    Parameters
    ----------
    system, baseline : array_like, shape (n_queries,) or (n_queries, k)
        Per-query values over the same queries in the same order; with ``k`` columns,
        ``k`` tests run at once with the same sign matrix.
    permutations : int
        Number of random sign vectors (10,000 by default).
    seed : int
        Seed of the sign matrix.

    Returns
    -------
    float or numpy.ndarray
        The p-value(s): ``(1 + #{|mean(s * d)| >= |mean(d)|}) / (1 + permutations)``.
    """
    system, baseline = np.asarray(system, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if system.shape != baseline.shape:
        raise ValueError(f"paired samples differ in shape: {system.shape} vs {baseline.shape}")
    differences = system - baseline
    scalar = differences.ndim == 1
    differences = differences.reshape(len(differences), -1)
    signs = np.random.default_rng(seed).integers(0, 2, size=(permutations, len(differences)), dtype=np.int8)
    signs = (2 * signs - 1).astype(np.float64)
    observed = np.abs(differences.sum(axis=0))
    resampled = np.abs(signs @ differences)  # (permutations, k); sums, as n is constant
    # a relative tolerance so that sign patterns equal to the observed one always count
    tolerance = 1e-9 * np.maximum(np.abs(differences).sum(axis=0), 1e-300)
    count = (resampled >= observed - tolerance).sum(axis=0)
    p_values = (1 + count) / (1 + permutations)
    return float(p_values[0]) if scalar else p_values


def marker(p_value, alpha: float = ALPHA) -> str:
    """The table marker for ``p_value``: ``MARKER`` when ``p_value < alpha``, else ``""``."""
    return MARKER if p_value is not None and p_value < alpha else ""
