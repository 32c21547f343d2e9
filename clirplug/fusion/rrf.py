"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009)."""

from clirplug.fusion._common import check_depth, check_weights, combine, top, weighted
from clirplug.io.runs import SCORED_COLUMNS

# k = 60: the constant of Cormack et al. (2009), also Pyserini's and ranx's default.
RRF_K = 60


def fuse(runs, weights=None, depth=1000, k=RRF_K):
    """Reciprocal rank fusion: ``score(q, d) = sum_i weights[i] / (k + rank_i(q, d))``.

    Ranks start at 1 in the order of ``clirplug.io.runs.sort_run`` (score descending);
    a document outside a run's top ``depth`` contributes 0 for that run.

    Parameters
    ----------
    runs : sequence of pandas.DataFrame or dict
    weights : sequence of float, optional
        One weight per run, 1 each by default.
    depth : int
        Cut applied to each input and to the fused run.
    k : float
        The smoothing constant (60, Cormack et al. 2009).

    Returns
    -------
    pandas.DataFrame
        The fused run (``qid``, ``docid``, ``score``).
    """
    weights = check_weights(weights, len(runs), 1.0)
    return combine(weighted(parts(runs, check_depth(depth), k), weights), depth)


def parts(runs, depth=1000, k=RRF_K):
    """Each run's contribution at weight 1: ``1 / (k + rank)`` over its top ``depth``."""
    out = []
    for run in runs:
        part = top(run, depth)
        part["score"] = 1.0 / (k + part["rank"].astype("float64"))
        out.append(part[SCORED_COLUMNS])
    return out
