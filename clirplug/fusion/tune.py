"""Choose the fusion weight kappa of two runs by a grid on training queries (Sokolov et al. 2013, Figures 1-3)."""

from clirplug.compiled import kernels
from clirplug.errors import ClirplugError

KAPPA_STEP = 0.05  # the default step of the kappa grid (``fusion.grid_step``, ``fuse --grid-step``)


def kappa_grid(step=KAPPA_STEP):
    """``0, step, 2 step, ..., 1`` (rounded to 10 decimals)."""
    if not 0 < step <= 1:
        raise ClirplugError(f"the kappa grid step must be in (0, 1], got {step}")
    count = int(round(1 / step))
    return [round(min(i * step, 1.0), 10) for i in range(count + 1)] + ([] if abs(count * step - 1) < 1e-9 else [1.0])


def kappa_curve(runs, qrels, method="borda", grid=None, depth=1000, measure="MAP", names=("run 1", "run 2")):
    """``measure`` of ``fuse(method, runs, (kappa, 1 - kappa))`` for each kappa of ``grid``.

    Only the queries of ``qrels`` are evaluated (tune on the train split's qrels).

    Parameters
    ----------
    runs : sequence of two pandas.DataFrame
    qrels : pandas.DataFrame
    method : str
        A name of ``clirplug.fusion.FUSERS``.
    grid : sequence of float, optional
        Kappa values, ``kappa_grid()`` by default.
    depth : int
    measure : str
        Any name ``clirplug.eval.measures.evaluate`` knows.
    names : pair of str
        The runs' names in errors (their files).

    Returns
    -------
    pandas.DataFrame
        Columns ``kappa`` and ``measure`` (one row per grid value, grid order).

    Raises
    ------
    ClirplugError
        When a run has no query of ``qrels`` (the curve would be flat at 0).
    """
    import pandas as pd

    from clirplug.eval.measures import evaluate, is_trec_ap, parse_measures
    from clirplug.fusion import get_parts
    from clirplug.fusion._common import check_depth

    if len(runs) != 2:
        raise ClirplugError(f"kappa tuning fuses exactly two runs, got {len(runs)}; give --weights for more")
    grid = kappa_grid() if grid is None else list(grid)
    queries = set(qrels["qid"].astype(str))
    runs = [run[run["qid"].astype(str).isin(queries)] for run in runs]
    for name, run in zip(names, runs):
        if run.empty:
            raise ClirplugError(f"{name}: no topic in common with the tuning qrels: kappa cannot be tuned on them")
    parts, by_hits = get_parts(method)
    table = _aligned(parts(runs, check_depth(depth)))
    parsed = parse_measures([measure])[0]
    if is_trec_ap(parsed):  # the common case, without building and evaluating a run per kappa
        return pd.DataFrame({"kappa": grid, measure: _map_curve(table, grid, depth, by_hits, qrels, parsed)})
    fused = {repr(kappa): _fused(table, kappa, depth, by_hits) for kappa in grid}
    result = evaluate(qrels, fused, [measure])
    return pd.DataFrame({"kappa": [float(name) for name in result["run"]], measure: result["value"].to_numpy()})


def _map_curve(table, grid, depth, by_hits, qrels, measure) -> list[float]:
    """MAP of each kappa of ``grid``, equal bit for bit to evaluating the runs :func:`_fused` gives (the same
    top ``depth`` cut, ties as trec_eval reads them, trec_eval's AP): by the compiled
    :func:`clirplug.fusion._ap_kernel.average_precisions`, which sorts no run, or without numba by
    :func:`_sorted_average_precisions`."""
    import numpy as np
    import pandas as pd

    from clirplug.eval.measures import aggregate

    qrels = qrels.assign(qid=qrels["qid"].astype(str), docid=qrels["docid"].astype(str))
    judged = qrels[qrels["relevance"] >= 1]
    marks = judged[["qid", "docid"]].drop_duplicates().assign(hit=True)
    rows = pd.DataFrame({"qid": table["qid"], "docid": table["docid"]})
    relevant = rows.merge(marks, on=["qid", "docid"], how="left")["hit"].notna().to_numpy()
    query_codes = table["qid_codes"]
    by_doc = np.lexsort((table["doc_codes"], query_codes))  # each query's rows together, in docid order
    blocks = query_codes[by_doc]
    starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1], True])
    qid_of_block = table["qid"][by_doc[starts[:-1]]].tolist()
    counts = judged.groupby("qid").size()
    num_relevant = np.array([counts.get(qid, 0) for qid in qid_of_block], dtype=np.int64)
    block_of = {qid: block for block, qid in enumerate(qid_of_block)}
    blocks_in_order = [block_of.get(qid) for qid in sorted(set(qrels["qid"]))]
    values = []
    for kappa in grid:
        scores = _kappa_scores(table, kappa, by_hits)[by_doc]
        ap = average_precisions(scores, starts, relevant[by_doc], depth, num_relevant).tolist()
        values.append(aggregate(measure, [0.0 if block is None else ap[block] for block in blocks_in_order]))
    return values


def average_precisions(scores, starts, relevant, depth, num_relevant):
    """trec_eval's AP of each query block ``starts[q]:starts[q + 1]`` of rows (in docid order within a block)
    scored ``scores``, cut at ``depth``; ``relevant`` marks the relevant rows, ``num_relevant[q]`` counts the
    block's relevant documents in the qrels: by the compiled kernel, or without numba by sorting."""
    import numpy as np

    kernel = _ap_kernel()
    if kernel is None:
        return _sorted_average_precisions(scores, starts, relevant, depth, num_relevant)
    relevant_rows = np.flatnonzero(relevant)
    relevant_starts = np.searchsorted(relevant_rows, starts)
    return kernel.average_precisions(scores, starts, relevant_rows, relevant_starts, depth, num_relevant)


def _ap_kernel():
    """The compiled AP (:mod:`clirplug.fusion._ap_kernel`), or None without numba: then numpy sorts each kappa's run."""
    return kernels("clirplug.fusion._ap_kernel")


def _sorted_average_precisions(scores, starts, relevant, depth, num_relevant):
    """The AP of each query block of :func:`clirplug.fusion._ap_kernel.average_precisions`, in numpy (its
    reference): each block sorted as :func:`_fused` orders it (two stable sorts), cut at ``depth``, its ties
    reversed into trec_eval's reading order, and AP summed as trec_eval sums it."""
    import numpy as np

    from clirplug.eval.measures import trec_average_precision
    from clirplug.io.runs import ranks_within

    block = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    order = np.argsort(-scores, kind="stable")  # rows are in docid order within a block: ties stay so
    order = order[np.argsort(block[order], kind="stable")]
    keep = order[ranks_within(block[order]) <= depth]
    keep = keep[_reverse_ties(block[keep], scores[keep])]
    ap = trec_average_precision(block[keep], relevant[keep], num_relevant)
    return np.array([ap.get(b, 0.0) for b in range(len(starts) - 1)])


def _reverse_ties(query_codes, scores):
    """The permutation that reverses each block of equal (query, score) rows: from docid ascending (a
    run's order) to docid descending (the order in which trec_eval reads ties)."""
    import numpy as np

    size = len(scores)
    starts = np.flatnonzero(np.r_[True, (query_codes[1:] != query_codes[:-1]) | (scores[1:] != scores[:-1])])
    lengths = np.diff(np.r_[starts, size])
    return np.repeat(2 * starts + lengths - 1, lengths) - np.arange(size)


def _aligned(parts):
    """The two runs' contributions side by side: one row per (qid, docid) held by either, 0 where absent,
    with integer codes ordered as :func:`clirplug.io.runs.sort_run` orders qids and docids."""
    import numpy as np
    import pandas as pd

    from clirplug.io.runs import _codes

    columns = {name: np.concatenate([part[name].to_numpy() for part in parts]) for name in ("qid", "docid", "score")}
    run = np.repeat(np.arange(len(parts)), [len(part) for part in parts])
    (qid_of, qids), (doc_of, docids) = (pd.factorize(columns[name]) for name in ("qid", "docid"))
    pairs, row = np.unique(qid_of.astype(np.int64) * len(docids) + doc_of, return_inverse=True)
    scores, held = np.zeros((len(pairs), len(parts))), np.zeros((len(pairs), len(parts)), dtype=bool)
    scores[row, run], held[row, run] = columns["score"], True  # a run holds a (qid, docid) once
    qid_rows, doc_rows = pairs // len(docids), pairs % len(docids)
    qid_codes, doc_codes = _codes(qids.tolist())[qid_rows], _codes(docids.tolist())[doc_rows]
    return {"qid": qids[qid_rows], "docid": docids[doc_rows], "hits": held.sum(axis=1), "scores": scores,
            "qid_codes": qid_codes, "doc_codes": doc_codes}


def _fused(table, kappa, depth, by_hits):
    """The run ``fuse`` gives for weights ``(kappa, 1 - kappa)``, from :func:`_aligned` contributions:
    the same sums, the same order (score descending, docid ascending) and the same top ``depth`` cut."""
    import numpy as np
    import pandas as pd

    from clirplug.io.runs import ranks_within

    scores = _kappa_scores(table, kappa, by_hits)
    order = np.lexsort((table["doc_codes"], -scores, table["qid_codes"]))
    keep = order[ranks_within(table["qid_codes"][order]) <= depth]
    return pd.DataFrame({"qid": table["qid"][keep], "docid": table["docid"][keep], "score": scores[keep]})


def _kappa_scores(table, kappa, by_hits):
    scores = kappa * table["scores"][:, 0] + (1 - kappa) * table["scores"][:, 1]
    return scores * table["hits"] if by_hits else scores


def best_kappa(curve):
    """The kappa with the highest value of ``curve`` (the one closest to 0.5 on ties)."""
    measure = curve.columns[1]
    best = curve[curve[measure] == curve[measure].max()]
    return float(best.iloc[(best["kappa"] - 0.5).abs().argsort().iloc[0]]["kappa"])


def choose_fusion(runs, qrels, methods=("borda",), grid=None, depth=1000, measure="MAP", names=("run 1", "run 2")):
    """The fusion method and kappa with the best ``measure`` of two runs on ``qrels``: each method's
    :func:`kappa_curve`, the method of the highest value (the first on ties) and its :func:`best_kappa`.

    Returns ``(method, kappa, curves)``: the curves in ``methods`` order, each with a ``method`` column.
    """
    methods = list(methods)
    if not methods:
        raise ClirplugError("choosing a fusion method needs at least one")
    curves = [kappa_curve(runs, qrels, method, grid, depth, measure, names).assign(method=method) for method in methods]
    best = max(range(len(curves)), key=lambda i: (curves[i][measure].max(), -i))
    return methods[best], best_kappa(curves[best]), curves


def write_curve(curve, path):
    """Write ``curve`` as a tab-separated table (``kappa``, measure, and ``method`` when it has one) atomically."""
    from clirplug.atomic import atomic_open

    measure = curve.columns[1]
    methods = curve["method"] if "method" in curve else None
    with atomic_open(path) as handle:
        handle.write(f"kappa\t{measure}" + ("\tmethod" if methods is not None else "") + "\n")
        for i, (kappa, value) in enumerate(zip(curve["kappa"], curve[measure])):
            handle.write(f"{kappa:.4f}\t{value:.4f}" + (f"\t{methods.iloc[i]}" if methods is not None else "") + "\n")


def plot_curve(curve, path, labels=("run 1", "run 2"), title=None):
    """Plot ``curve`` (measure against kappa) to a PNG, as the paper's Figures 1 to 3.

    kappa = 1 is the first run alone, kappa = 0 the second; the best kappa is marked.
    """
    from clirplug.atomic import atomic_path
    from clirplug.plots import pyplot

    plt = pyplot()

    measure = curve.columns[1]
    kappa = best_kappa(curve)
    figure, axes = plt.subplots(figsize=(5, 3.5), dpi=120)
    axes.plot(curve["kappa"], curve[measure], marker="o", markersize=3)
    axes.axvline(kappa, linestyle=":", color="grey")
    axes.set_xlabel(f"kappa  (0 = {labels[1]}, 1 = {labels[0]})")
    axes.set_ylabel(measure)
    axes.set_title(title or f"{measure} of the fusion, best kappa = {kappa:g}")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        figure.savefig(tmp, format="png")
    plt.close(figure)
