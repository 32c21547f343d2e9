"""Compiled (numba) trec_eval AP of each query of a fused run, from its rows' scores, without sorting them.

A relevant row's place follows from counting, among its query's rows, those scored higher and those tied
before or after it in docid order: its rank in the run (score descending, docid ascending) decides whether
the top ``depth`` cut keeps it, and its rank among the kept rows as trec_eval reads them (ties by docid
descending) is its AP position. As trec_eval does, AP is the sum, in rank order, of relevant-so-far / rank
at each relevant row, divided by the number of relevant documents: the values equal trec_eval's bit for bit,
and those of the numpy reference that runs without numba (:func:`clirplug.fusion.tune._sorted_average_precisions`).
"""

import numpy as np

from clirplug.compiled import compiled


@compiled
def average_precisions(scores, starts, relevant_rows, relevant_starts, depth, num_relevant):
    """AP of each query block ``starts[q]:starts[q + 1]`` of ``scores`` (rows in docid order within a block).

    ``relevant_rows[relevant_starts[q]:relevant_starts[q + 1]]`` are the block's relevant rows and
    ``num_relevant[q]`` its number of relevant documents in the qrels; a query without a relevant row in its
    top ``depth`` gets 0.
    """
    queries = len(starts) - 1
    out = np.zeros(queries)
    for q in range(queries):
        first, stop = starts[q], starts[q + 1]
        positions = np.empty(relevant_starts[q + 1] - relevant_starts[q], dtype=np.int64)
        kept = 0
        for j in range(relevant_starts[q], relevant_starts[q + 1]):
            row = relevant_rows[j]
            score = scores[row]
            higher = tied_before = tied_after = 0
            for other in range(first, stop):
                if scores[other] > score:
                    higher += 1
                elif scores[other] == score and other != row:
                    if other < row:
                        tied_before += 1
                    else:
                        tied_after += 1
            run_rank = higher + tied_before + 1
            if run_rank <= depth:
                positions[kept] = higher + min(tied_after, depth - run_rank) + 1
                kept += 1
        if kept:
            ranked = np.sort(positions[:kept])
            total = 0.0
            for i in range(kept):
                total += (i + 1) / ranked[i]
            out[q] = total / num_relevant[q]
    return out
