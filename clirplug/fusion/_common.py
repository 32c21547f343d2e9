"""Helpers shared by the fusion methods: weights, top-K cut, summing contributions."""

from clirplug.errors import ClirplugError
from clirplug.io.runs import RUN_COLUMNS, SCORED_COLUMNS, sort_run


def check_weights(weights, count, default):
    """Return ``weights`` as a list of ``count`` floats (``default`` each when None).

    Raises
    ------
    ClirplugError
        When the number of weights differs from the number of runs, or a weight is
        negative or not finite.
    """
    import math

    if count < 1:
        raise ClirplugError("fusion needs at least one run")
    if weights is None:
        return [default] * count
    weights = [float(weight) for weight in weights]
    if len(weights) != count:
        raise ClirplugError(f"got {len(weights)} fusion weight(s) for {count} run(s)")
    for weight in weights:
        if not math.isfinite(weight) or weight < 0:
            raise ClirplugError(f"fusion weights must be finite and non-negative, got {weight}")
    return weights


def kappa_weights(kappa, name="kappa"):
    """The weights ``(kappa, 1 - kappa)`` of two runs; ``name`` names a ``kappa`` outside [0, 1] in the error."""
    if isinstance(kappa, bool) or not isinstance(kappa, int | float) or not 0 <= kappa <= 1:
        raise ClirplugError(f"{name} must lie in [0, 1], got {kappa}")
    return [float(kappa), 1 - float(kappa)]


def check_depth(depth):
    """Raise ``ClirplugError`` unless ``depth`` is a positive integer."""
    if depth is None or int(depth) != depth or depth < 1:
        raise ClirplugError(f"fusion depth must be a positive integer, got {depth}")
    return int(depth)


def top(run, depth):
    """The top ``depth`` documents of each query of ``run``, ranked by ``sort_run`` (score descending)."""
    frame = sort_run(run)
    return frame[frame["rank"] <= depth][RUN_COLUMNS].reset_index(drop=True)


def combine(parts, depth, by_hits=False):
    """Sum the ``(qid, docid, score)`` frames of ``parts``; keep the top ``depth`` per query.

    A document missing from a part contributes 0 for it; with ``by_hits`` each sum is
    multiplied by the number of parts that hold the document (CombMNZ).
    """
    import pandas as pd

    frame = pd.concat(parts, ignore_index=True)
    fused = frame.groupby(["qid", "docid"], sort=False, as_index=False).agg(score=("score", "sum"), hits=("score", "size"))
    if by_hits:
        fused["score"] = fused["score"] * fused["hits"]
    return top(fused[SCORED_COLUMNS], depth)[SCORED_COLUMNS]


def weighted(parts, weights):
    """Copies of the ``parts`` frames with their scores multiplied by ``weights``."""
    out = []
    for part, weight in zip(parts, weights):
        part = part.copy()
        part["score"] = weight * part["score"]
        out.append(part)
    return out
