"""Weighted Borda count (Sokolov et al. 2013, Section 4; Aslam & Montague 2001)."""

from clirplug.fusion._common import check_depth, check_weights, combine, top, weighted
from clirplug.io.runs import SCORED_COLUMNS


def normalize(run, depth=1000, ranked=False):
    """Scores of each query's top ``depth`` documents shifted non-negative and divided by their sum.

    Each voter has one voting point per query to distribute (Sokolov et al. 2013, Section 4):
    ``f(q, d) / sum_d' f(q, d')`` over the top ``depth``. A query whose lowest score is
    negative first has all its scores shifted by minus that minimum, so its lowest
    document gets 0. A query whose scores sum to 0 gives every document 0. With ``ranked``, ``run`` is already
    :func:`~clirplug.fusion._common.top`'s frame of that depth and is not sorted again.

    Returns
    -------
    pandas.DataFrame
        Columns ``qid``, ``docid``, ``score`` (the normalized score).
    """
    frame = run.copy() if ranked else top(run, check_depth(depth))
    grouped = frame.groupby("qid", sort=False)["score"]
    shift = (-grouped.transform("min")).clip(lower=0.0)
    scores = frame["score"] + shift
    totals = scores.groupby(frame["qid"], sort=False).transform("sum")
    frame["score"] = (scores / totals.where(totals > 0)).fillna(0.0)
    return frame[SCORED_COLUMNS]


def fuse(runs, weights=None, depth=1000):
    """Weighted Borda count of ``runs``.

    ``f_agg(q, d) = sum_i weights[i] * f_i(q, d) / sum_d' f_i(q, d')``, the sums over
    each run's top ``depth`` (see ``normalize``); a document absent from a run's top
    ``depth`` counts 0 for it (Sokolov et al. 2013, Section 4). For two runs the weights
    are ``(kappa, 1 - kappa)``.

    Parameters
    ----------
    runs : sequence of pandas.DataFrame or dict
        Runs with columns ``qid``, ``docid``, ``score`` (or ``{qid: {docid: score}}``).
    weights : sequence of float, optional
        One non-negative weight per run; equal weights ``1 / len(runs)`` by default.
    depth : int
        K: the cut applied to each input and to the fused run (1000 in the paper).

    Returns
    -------
    pandas.DataFrame
        The fused run (``qid``, ``docid``, ``score``), sorted, at most ``depth`` per query.
    """
    weights = check_weights(weights, len(runs), 1.0 / max(len(runs), 1))
    return combine(weighted(parts(runs, depth), weights), depth)


def parts(runs, depth=1000):
    """Each run's contribution at weight 1: its ``normalize``-d top ``depth``."""
    return [normalize(run, depth) for run in runs]
