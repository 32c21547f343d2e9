"""PRES, the Patent Retrieval Evaluation Score (Magdy & Jones, SIGIR 2010).

PRES is normalized recall (Rnorm) computed over a collection of ``N_max + n`` documents:
the user reads at most ``N_max`` documents, and every relevant document not retrieved
in the top ``N_max`` is placed at the worst possible ranks, right after ``N_max``:

    PRES = 1 - (sum_i r_i / n - (n + 1) / 2) / N_max

with ``n`` the number of relevant documents of the query, ``r_i`` the rank of the i-th
relevant document, and, when only ``n_R`` of them are in the top ``N_max``, the missing
ones at ranks ``r_i = N_max + i`` for ``i = n_R + 1, ..., n``. PRES is 1 when all relevant
documents lead the ranking and 0 when none is retrieved. When ``n > N_max`` the best
achievable value is ``N_max / n``: PRES then lies between 0 and recall at ``N_max``.
"""

from clirplug.errors import ClirplugError
from clirplug.io.runs import sort_run


def pres(run, qrels, n_max: int):
    """PRES@n_max of every query of ``qrels`` (Magdy & Jones 2010, eq. for PRES).

    Parameters
    ----------
    run : pandas.DataFrame
        Columns ``qid``, ``docid``, ``score``; ordered with ``sort_run`` (trec_eval's
        order: score descending, ties by docid descending) before the cut at ``n_max``.
    qrels : pandas.DataFrame
        Columns ``qid``, ``docid``, ``relevance``; ``relevance >= 1`` is relevant.
    n_max : int
        The number of documents the user is willing to read (N_max).

    Returns
    -------
    pandas.Series
        PRES per qid of ``qrels`` (sorted by qid); 0 for a query without relevant
        documents or missing from the run. Queries only in the run are ignored.
    """
    return ranked_pres(sort_run(run, ties="trec_eval"), qrels, n_max)


def ranked_pres(ranked, qrels, n_max: int):
    """:func:`pres` of a run already in trec_eval's order with its ranks (``sort_run(run, ties="trec_eval")``,
    as :func:`clirplug.eval.measures.evaluate` holds it)."""
    import numpy as np
    import pandas as pd

    if n_max < 1:
        raise ClirplugError(f"PRES needs N_max >= 1, got {n_max}")
    qids = pd.Index(sorted(set(qrels["qid"].astype(str))), name="qid")
    relevant = qrels.loc[qrels["relevance"] >= 1, ["qid", "docid"]].astype(str)
    n = relevant.groupby("qid").size().reindex(qids, fill_value=0).to_numpy(dtype=np.float64)

    ranked = ranked[ranked["rank"] <= n_max]
    relevant_pairs = set(zip(relevant["qid"].tolist(), relevant["docid"].tolist()))
    pairs = zip(ranked["qid"].tolist(), ranked["docid"].tolist())
    is_relevant = np.fromiter(map(relevant_pairs.__contains__, pairs), dtype=bool, count=len(ranked))
    query = qids.get_indexer(ranked["qid"][is_relevant])  # a relevant pair's query is in the qrels
    ranks = ranked["rank"].to_numpy(dtype=np.float64)[is_relevant]
    rank_sum = np.bincount(query, weights=ranks, minlength=len(qids))
    n_found = np.bincount(query, minlength=len(qids)).astype(np.float64)

    # missing relevant documents at ranks N_max + i, i = n_found + 1 .. n
    missing_sum = (n - n_found) * n_max + (n * (n + 1) - n_found * (n_found + 1)) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        values = 1.0 - ((rank_sum + missing_sum) / n - (n + 1) / 2) / n_max
    return pd.Series(np.where(n > 0, values, 0.0), index=qids, name=f"PRES@{n_max}")
