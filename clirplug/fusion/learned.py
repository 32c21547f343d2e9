"""Learned fusion of many runs: a linear model over each run's features of each document, learned pairwise.

Each document of the union of the runs' top ``depth`` gets four features from each run (:data:`FEATURES`):
``score``, its min-max normalised score (CombSUM's, :func:`clirplug.fusion.comb.min_max`), ``borda``, its score
divided by the sum of the top ``depth``'s (the weighted Borda count's, :func:`clirplug.fusion.borda.normalize`),
``rr``, its reciprocal rank ``1 / (60 + rank)`` (RRF's), and ``hit``, 1 when the run's top ``depth`` holds it; a
run that misses the document gives it 0 for each (``hit`` is the "absent" indicator up to a per-query constant,
which ranks the same). The fused score is the weighted sum of the features: :func:`fuse` with
``len(FEATURES) * len(runs)`` weights (any sign), run by run in :data:`FEATURES` order. CombSUM, the weighted Borda
count and RRF of the same depth, with their weights, are special cases.

:func:`learn` chooses the runs and the weights on training topics:

* the weights minimise an L2-regularised logistic loss on pairs of documents of different relevance grades
  (RankNet/RankSVM-style pairwise learning; an unjudged document has grade 0), at most ``pairs`` pairs per
  topic sampled with ``seed``, the features standardised; Newton's method with a backtracking line search;
* ``depth`` and the regularisation ``l2`` are chosen on a grid by the cross-validated MAP over the training topics
  (``folds`` folds of :func:`clirplug.crossfit.fold_of`: the topics of a page share a fold), every run an input;
* the inputs by greedy forward selection: starting from none, the run whose addition gives the best
  cross-validated MAP is added while it gains at least ``min_gain``; a run that does not help on held-out topics
  is left out, and a system fusing fewer runs runs fewer searchers;
* the final weights are fitted on every training topic; each fold's, fitted without it, give the out-of-fold run
  (:func:`out_of_fold`), whose MAP is the cross-validated one the choices were made by.
"""

from __future__ import annotations

from dataclasses import dataclass

from clirplug.errors import ClirplugError
from clirplug.fusion._common import check_depth, top
from clirplug.fusion.rrf import RRF_K

FEATURES = ("score", "borda", "rr", "hit")
MAX_NEWTON = 50


def check_weights(weights, count: int) -> list[float]:
    """``weights`` as ``len(FEATURES) * count`` finite floats (:data:`FEATURES` of each run in turn); a ClirplugError otherwise."""
    import math

    if weights is None:
        raise ClirplugError(f"the learned fusion needs its weights: {len(FEATURES)} per run ({', '.join(FEATURES)})")
    weights = [float(weight) for weight in weights]
    if len(weights) != len(FEATURES) * count:
        raise ClirplugError(f"got {len(weights)} learned fusion weight(s) for {count} run(s): expected "
                            f"{len(FEATURES)} per run ({', '.join(FEATURES)})")
    if not all(math.isfinite(weight) for weight in weights):
        raise ClirplugError(f"learned fusion weights must be finite, got {weights}")
    return weights


@dataclass
class FeatureTable:
    """The union of the runs' top ``depth`` documents, one row per (qid, docid), rows ordered by qid then docid
    (:func:`clirplug.io.runs.sort_run`'s order of ties): ``values[row, run, feature]`` (:data:`FEATURES`)."""

    qids: object  # numpy array of str, one per row
    docids: object
    qid_codes: object  # int64, increasing with the qid
    values: object  # float64 (rows, runs, len(FEATURES))

    def scores(self, weights, runs=None, rows=None):
        """The fused score of each row (of the boolean mask ``rows``, all by default): ``weights`` (of
        :func:`check_weights`, for the ``runs`` indices, all by default) times the features, summed run by run and
        feature by feature in that order."""
        import numpy as np

        values = self.values if rows is None else self.values[rows]
        runs = range(values.shape[1]) if runs is None else runs
        total = np.zeros(len(values))
        position = 0
        for run in runs:
            for feature in range(len(FEATURES)):
                total += weights[position] * values[:, run, feature]
                position += 1
        return total


def feature_table(runs, depth: int = 1000) -> FeatureTable:
    """The :class:`FeatureTable` of ``runs`` (frames or ``{qid: {docid: score}}``) cut at ``depth``."""
    import numpy as np
    import pandas as pd

    from clirplug.fusion.borda import normalize
    from clirplug.fusion.comb import min_max
    from clirplug.io.runs import _codes

    depth = check_depth(depth)
    parts = []
    for i, run in enumerate(runs):
        ranked = top(run, depth)
        parts.append(pd.DataFrame({"qid": ranked["qid"].to_numpy(), "docid": ranked["docid"].to_numpy(), "run": i,
                                   "score": min_max(ranked, depth, ranked=True)["score"].to_numpy(),  # the same rows
                                   "borda": normalize(ranked, depth, ranked=True)["score"].to_numpy(),
                                   "rr": 1.0 / (RRF_K + ranked["rank"].to_numpy(dtype=np.float64))}))
    frame = pd.concat(parts, ignore_index=True)
    qid_codes, doc_codes = _codes(frame["qid"].tolist()), _codes(frame["docid"].tolist())
    keys = qid_codes * (int(doc_codes.max(initial=0)) + 1) + doc_codes
    unique, row = np.unique(keys, return_inverse=True)
    first = np.zeros(len(unique), dtype=np.int64)
    first[row[::-1]] = np.arange(len(row))[::-1]  # a line of each row, for its qid and docid
    values = np.zeros((len(unique), len(runs), len(FEATURES)))
    run = frame["run"].to_numpy()
    for feature, name in enumerate(FEATURES[:-1]):
        values[row, run, feature] = frame[name].to_numpy()
    values[row, run, FEATURES.index("hit")] = 1.0
    return FeatureTable(frame["qid"].to_numpy(dtype=object)[first], frame["docid"].to_numpy(dtype=object)[first],
                        qid_codes[first], values)


def fuse(runs, weights=None, depth=1000):
    """The runs fused by the linear model of ``weights`` (:func:`check_weights`: per run, the weights of
    :data:`FEATURES`) over the union of their top ``depth``, which is also the fused run's cut.

    Returns
    -------
    pandas.DataFrame
        The fused run (``qid``, ``docid``, ``score``), sorted, at most ``depth`` per query.
    """
    import pandas as pd

    from clirplug.io.runs import SCORED_COLUMNS

    weights = check_weights(weights, len(runs))
    table = feature_table(runs, depth)
    frame = pd.DataFrame({"qid": table.qids.astype(str), "docid": table.docids.astype(str),
                          "score": table.scores(weights)})
    return top(frame, depth)[SCORED_COLUMNS]


# ----------------------------------------------------------------------------- learning

@dataclass
class _Judged:
    """A feature table with the qrels: each row's grade, each query's relevant count, the evaluated queries."""

    table: FeatureTable
    grades: object  # float per row (0 unjudged)
    num_relevant: object  # per qid code
    queries: int  # the qrels' queries (MAP's denominator: a query without rows counts 0)
    depth: int


def _judged(runs, qrels, depth) -> _Judged:
    import numpy as np
    import pandas as pd

    qrels = qrels.assign(qid=qrels["qid"].astype(str), docid=qrels["docid"].astype(str))
    queries = sorted(set(qrels["qid"]))
    runs = [run[run["qid"].astype(str).isin(set(queries))] for run in runs]
    table = feature_table(runs, depth)
    grade = qrels.groupby(["qid", "docid"])["relevance"].max()
    keys = pd.MultiIndex.from_arrays([table.qids.astype(str), table.docids.astype(str)])
    grades = grade.reindex(keys).fillna(0).to_numpy(dtype=np.float64)
    relevant = qrels[qrels["relevance"] >= 1].groupby("qid")["docid"].nunique()
    qid_of_code = {code: qid for code, qid in zip(table.qid_codes, table.qids)}
    count = int(table.qid_codes.max(initial=-1)) + 1
    num_relevant = np.array([relevant.get(qid_of_code.get(code), 0) for code in range(count)], dtype=np.int64)
    return _Judged(table, grades, num_relevant, len(queries), depth)


def mean_average_precision(judged: _Judged, rows, scores) -> float:
    """trec_eval's MAP of the run of ``rows`` (a boolean mask of the table) scored ``scores``, cut at the depth,
    over the qrels' queries."""
    import numpy as np

    from clirplug.fusion.tune import average_precisions

    codes = judged.table.qid_codes[rows]
    if not len(codes):
        return 0.0
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1], True])
    relevant = judged.grades[rows] >= 1
    ap = average_precisions(scores[rows], starts, relevant, judged.depth, judged.num_relevant[codes[starts[:-1]]])
    return float(ap.sum() / judged.queries)


def sample_pairs(judged: _Judged, pairs: int, seed: int):
    """Row pairs ``(better, worse)`` of the same query with ``grade[better] > grade[worse]`` and ``better``
    relevant: every such pair of a query with at most ``pairs`` of them, else ``pairs`` drawn without replacement
    (a generator seeded with ``seed``, the queries in qid order)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    codes, grades = judged.table.qid_codes, judged.grades
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1], True])
    better, worse = [], []
    for first, stop in zip(starts[:-1], starts[1:]):
        block = grades[first:stop]
        order = np.argsort(block, kind="stable")
        below = np.searchsorted(block[order], block, side="left")  # rows of a lower grade: order[:below[i]]
        winners = np.flatnonzero((block >= 1) & (below > 0))
        counts = below[winners]
        total = int(counts.sum())
        if not total:
            continue
        chosen = np.arange(total) if total <= pairs else np.sort(rng.choice(total, size=pairs, replace=False))
        ends = np.cumsum(counts)
        which = np.searchsorted(ends, chosen, side="right")
        offsets = chosen - (ends[which] - counts[which])
        better.append(first + winners[which])
        worse.append(first + order[offsets])
    if not better:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(better), np.concatenate(worse)


def logistic_objective(weights, differences, l2: float) -> float:
    """The mean logistic loss of the pairs' feature ``differences`` (better minus worse) plus ``l2 / 2 |w|^2``."""
    import numpy as np

    return float(np.logaddexp(0.0, -_times(differences, weights)).mean() + 0.5 * l2 * float((weights ** 2).sum()))


def _times(matrix, vector):
    """``matrix @ vector`` without BLAS, whose threads crawl on a busy machine (an einsum: one thread)."""
    import numpy as np

    return np.einsum("nj,j->n", matrix, vector, optimize=False)


def fit_pairwise(differences, l2: float):
    """The weights minimising :func:`logistic_objective` over the standardised features (each column divided by
    its root mean square, 1 where that is 0), given back on the original scale: Newton's method, halving a step
    that does not lower the objective (the products by einsum, single-threaded: the same sums in the same order
    whatever the machine's BLAS threads)."""
    import numpy as np

    if l2 <= 0:
        raise ClirplugError(f"the learned fusion's l2 must be positive, got {l2}")
    scale = np.sqrt((differences ** 2).mean(axis=0)) if len(differences) else np.ones(differences.shape[1])
    scale[scale == 0] = 1.0
    z = differences / scale
    w = np.zeros(z.shape[1])
    value = logistic_objective(w, z, l2)
    for _ in range(MAX_NEWTON):
        if not len(z):
            break
        margin = _times(z, w)
        p = np.exp(-np.logaddexp(0.0, margin))  # sigmoid(-margin)
        gradient = -np.einsum("nj,n->j", z, p, optimize=False) / len(z) + l2 * w
        hessian = np.einsum("ni,nj->ij", z * (p * (1 - p))[:, None], z, optimize=False) / len(z) + l2 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        size = 1.0
        while True:
            candidate = w - size * step
            new = logistic_objective(candidate, z, l2)
            if new <= value or size < 1e-8:
                break
            size /= 2
        if new > value:
            break
        w, improved = candidate, value - new
        value = new
        if improved < 1e-12 or np.abs(size * step).max() < 1e-10:
            break
    return w / scale


class _Learner:
    """The cross-validation of one feature table: pairs sampled once (with their feature differences), folds of the
    qrels' topics."""

    def __init__(self, judged: _Judged, pairs: int, seed: int, folds: dict):
        import numpy as np

        self.judged = judged
        self.better, self.worse = sample_pairs(judged, pairs, seed)
        values = judged.table.values
        self.differences = values[self.better] - values[self.worse]  # (pair, run, feature): better minus worse
        self.hits = values[:, :, FEATURES.index("hit")] > 0  # (row, run): in the run's top depth
        code_fold = {code: folds.get(qid, -1) for code, qid in zip(judged.table.qid_codes, judged.table.qids)}
        self.row_fold = np.array([code_fold[code] for code in judged.table.qid_codes], dtype=np.int64)
        self.folds = range(max(folds.values()) + 1)

    def held(self, runs):
        """Whether each row is in the top ``depth`` of one of the ``runs`` (indices)."""
        return self.hits[:, list(runs)].any(axis=1)

    def fit(self, runs, l2, exclude_fold=None):
        """Weights of ``runs`` fitted on the pairs of rows held by them (and not of ``exclude_fold``)."""
        held = self.held(runs)
        keep = held[self.better] & held[self.worse]
        if exclude_fold is not None:
            keep &= self.row_fold[self.better] != exclude_fold
        differences = self.differences[keep][:, list(runs)]
        return fit_pairwise(differences.reshape(len(differences), -1), l2)  # columns: run by run, then feature

    def cross_validate(self, runs, l2):
        """The out-of-fold MAP of ``runs`` and each fold's weights."""
        import numpy as np

        table = self.judged.table
        scores = np.zeros(len(table.qids))
        fold_weights = []
        for fold in self.folds:
            weights = self.fit(runs, l2, exclude_fold=fold)
            fold_weights.append(weights)
            rows = self.row_fold == fold
            scores[rows] = table.scores(weights, runs, rows)
        return mean_average_precision(self.judged, self.held(runs), scores), fold_weights


def _rounded(values) -> list[float]:
    return [float(f"{value:.12g}") for value in values]


def learn(runs, names, qrels, depths=(1000,), l2s=(0.001,), folds: int = 5, pairs: int = 200, seed: int = 0,
          min_gain: float = 0.001, log=None) -> dict:
    """Choose the inputs, the depth, the regularisation and the weights of a learned fusion of ``runs`` (named
    ``names``) on the topics of ``qrels`` (module docstring).

    Returns a JSON-able dict: ``inputs`` (the chosen names, in selection order), ``weights`` (``name -> {feature:
    weight}``), ``fuse_weights`` (:func:`fuse`'s weights of the inputs in that order), ``depth``, ``l2``,
    ``cv_map``, ``grid`` (the cross-validated MAP of each depth and l2 with every run), ``selection`` (each step of
    the forward selection: the runs tried and their MAP), ``folds`` (the number) and ``fold_weights`` (each fold's
    weights, fitted without its topics, for :func:`out_of_fold`).
    """
    from clirplug.crossfit import fold_of

    if len(runs) != len(names) or not runs:
        raise ClirplugError(f"the learned fusion needs one name per run and at least one run, got {len(names)} "
                            f"name(s) for {len(runs)} run(s)")
    if not depths or not l2s:
        raise ClirplugError("the learned fusion's grid needs at least one depth and one l2")
    topics = sorted(set(qrels["qid"].astype(str)))
    if len(topics) < folds:
        raise ClirplugError(f"the learned fusion cross-validates over {folds} folds but has {len(topics)} topics")
    fold = fold_of(topics, folds)
    say = log or (lambda message: None)
    everything = list(range(len(runs)))
    grid, best, learner = [], None, None
    for depth in depths:
        candidate = _Learner(_judged(runs, qrels, depth), pairs, seed, fold)
        for l2 in l2s:
            value, _ = candidate.cross_validate(everything, l2)
            grid.append({"depth": depth, "l2": l2, "MAP": value})
            say(f"depth {depth}, l2 {l2:g}: cross-validated MAP {value:.4f} with every run")
            if best is None or value > best["MAP"]:
                best, learner = grid[-1], candidate  # only the best depth's table is kept
    depth, l2 = best["depth"], best["l2"]
    chosen: list[int] = []
    selection = []
    value, fold_weights = 0.0, []
    while len(chosen) < len(runs):
        tried = {}
        for candidate in everything:
            if candidate not in chosen:
                tried[candidate] = learner.cross_validate(chosen + [candidate], l2)
        pick = max(tried, key=lambda candidate: (tried[candidate][0], -candidate))
        selection.append({"tried": {names[c]: tried[c][0] for c in tried}, "best": names[pick]})
        if chosen and tried[pick][0] < value + min_gain:
            break
        chosen.append(pick)
        value, fold_weights = tried[pick]
        say(f"+ {names[pick]}: cross-validated MAP {value:.4f}")
    final = _rounded(learner.fit(chosen, l2))
    inputs = [names[i] for i in chosen]
    return {"inputs": inputs, "features": list(FEATURES), "fuse_weights": final,
            "weights": {name: dict(zip(FEATURES, final[len(FEATURES) * i: len(FEATURES) * (i + 1)]))
                        for i, name in enumerate(inputs)},
            "depth": depth, "l2": l2, "cv_map": value, "grid": grid, "selection": selection, "folds": folds,
            "fold_weights": [_rounded(weights) for weights in fold_weights], "pairs": pairs, "seed": seed,
            "min_gain": min_gain, "candidates": list(names)}


def out_of_fold(model: dict, topics) -> dict[str, list[float]]:
    """The weights of ``model`` (:func:`learn`) for each of its training ``topics`` (the qrels' qids): those
    fitted without the topic's fold (a topic of no fold is fused with the final weights, ``fuse_weights``)."""
    from clirplug.crossfit import fold_of

    return {qid: model["fold_weights"][fold] for qid, fold in fold_of(sorted(set(topics)), model["folds"]).items()}
