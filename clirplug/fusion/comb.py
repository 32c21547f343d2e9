"""CombSUM and CombMNZ (Fox & Shaw, TREC-2 1994) over min-max normalized scores (Lee, SIGIR 1997)."""

from clirplug.fusion._common import check_depth, check_weights, combine, top, weighted
from clirplug.io.runs import SCORED_COLUMNS


def min_max(run, depth=1000, ranked=False):
    """Each query's top ``depth`` scores mapped to [0, 1] by ``(s - min) / (max - min)`` (Lee 1997).

    A query whose scores are all equal (one document, or ties only) maps them to 1. With ``ranked``, ``run`` is
    already :func:`~clirplug.fusion._common.top`'s frame of that depth and is not sorted again.
    """
    frame = run.copy() if ranked else top(run, check_depth(depth))
    grouped = frame.groupby("qid", sort=False)["score"]
    low, high = grouped.transform("min"), grouped.transform("max")
    span = high - low
    frame["score"] = ((frame["score"] - low) / span.where(span > 0)).fillna(1.0)
    return frame[SCORED_COLUMNS]


def _fuse(runs, weights, depth, by_hits):
    weights = check_weights(weights, len(runs), 1.0)
    return combine(weighted(parts(runs, check_depth(depth)), weights), depth, by_hits)


def parts(runs, depth=1000):
    """Each run's contribution at weight 1: its ``min_max``-normalized top ``depth``."""
    return [min_max(run, depth) for run in runs]


def combsum(runs, weights=None, depth=1000):
    """CombSUM: ``sum_i weights[i] * minmax_i(q, d)``; absent documents count 0.

    Parameters
    ----------
    runs : sequence of pandas.DataFrame or dict
        Runs with columns ``qid``, ``docid``, ``score`` (or ``{qid: {docid: score}}``).
    weights : sequence of float, optional
        One weight per run, 1 each by default.
    depth : int
        Cut applied to each input and to the fused run.

    Returns
    -------
    pandas.DataFrame
        The fused run (``qid``, ``docid``, ``score``).
    """
    return _fuse(runs, weights, depth, by_hits=False)


def combmnz(runs, weights=None, depth=1000):
    """CombMNZ: CombSUM times the number of runs whose top ``depth`` holds the document.

    Parameters and result as for ``combsum``.
    """
    return _fuse(runs, weights, depth, by_hits=True)
