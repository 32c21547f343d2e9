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

Several runs tested against one baseline are a family of tests: :func:`holm` adjusts their
p-values so that the chance of any false ``*`` in the family stays below ``alpha``.
Numpy is imported on first use, so that the command line lists ``--correction``'s choices
(:data:`CORRECTIONS`) without loading it.
"""

import functools

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
    import numpy as np

    system, baseline = np.asarray(system, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if system.shape != baseline.shape:
        raise ValueError(f"paired samples differ in shape: {system.shape} vs {baseline.shape}")
    differences = system - baseline
    scalar = differences.ndim == 1
    differences = differences.reshape(len(differences), -1)
    signs = _signs(permutations, len(differences), seed)
    observed = np.abs(differences.sum(axis=0))
    resampled = np.abs(signs @ differences)  # (permutations, k); sums, as n is constant
    # a relative tolerance so that sign patterns equal to the observed one always count
    tolerance = 1e-9 * np.maximum(np.abs(differences).sum(axis=0), 1e-300)
    count = (resampled >= observed - tolerance).sum(axis=0)
    p_values = (1 + count) / (1 + permutations)
    return float(p_values[0]) if scalar else p_values


@functools.lru_cache(maxsize=4)
def _signs(permutations: int, size: int, seed: int):
    """The ``(permutations, size)`` matrix of random signs (+1.0 or -1.0) of ``seed``, made once for all the
    tests over ``size`` queries (a report runs hundreds); read-only."""
    import numpy as np

    signs = np.random.default_rng(seed).integers(0, 2, size=(permutations, size), dtype=np.int8)
    signs = (2 * signs - 1).astype(np.float64)
    signs.flags.writeable = False
    return signs


def holm(p_values):
    """Holm's (1979) step-down adjustment of a family of p-values (Holm-Bonferroni).

    With the m p-values sorted ascending, the i-th (from 1) becomes
    ``max(j <= i) (m - j + 1) * p_(j)``, capped at 1; an adjusted p below ``alpha`` rejects
    with a family-wise error rate of at most ``alpha``, in any dependence between the tests.

    Parameters
    ----------
    p_values : array_like, shape (m,)
        The family's p-values, each in [0, 1].

    Returns
    -------
    numpy.ndarray
        The adjusted p-values, in the order of ``p_values``.
    """
    import numpy as np

    p_values = np.asarray(p_values, dtype=np.float64)
    if p_values.ndim != 1 or not ((p_values >= 0) & (p_values <= 1)).all():
        raise ValueError(f"expected a list of p-values in [0, 1], got {p_values.tolist()}")
    order = np.argsort(p_values, kind="stable")
    stepped = np.maximum.accumulate(p_values[order] * np.arange(len(p_values), 0, -1))
    adjusted = np.empty_like(p_values)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


# --correction name -> adjustment of a family of p-values (the runs tested against one baseline on one measure)
CORRECTIONS = {"holm": holm}


def marker(p_value, alpha: float = ALPHA) -> str:
    """The table marker for ``p_value``: ``MARKER`` when ``p_value < alpha``, else ``""``."""
    return MARKER if p_value is not None and p_value < alpha else ""
