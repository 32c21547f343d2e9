"""The Viterbi recursion of a :class:`~clirplug.mt.hypergraph.ViterbiPlan` over linear edge scores, compiled with numba.

:meth:`ViterbiPlan.linear` in numpy (a sparse product, then a few array steps per level) is the
reference and the test oracle; :func:`linear_viterbi` does the same float operations in the same
order, row by row, without the per-level overhead that dominates when there are few columns
(BOW-FD training scores two documents per step). Only sums and maxima occur: no rounding differs.
"""

import numba
import numpy as np

from clirplug.compiled import compiled


@numba.njit(inline="always")
def _row_product(out, indptr, indices, data, row, matrix):
    """``out = Σ_j data[j] matrix[indices[j]]`` over the CSR row ``row``, summed from zero in CSR order."""
    out[:] = 0
    for j in range(indptr[row], indptr[row + 1]):
        coefficient, column = data[j], indices[j]
        for d in range(out.shape[0]):
            out[d] += coefficient * matrix[column, d]


@compiled
def linear_viterbi(base, f_indptr, f_indices, f_data, t_indptr, t_indices, t_data, adds_tails, first_rank,
                   row_node, num_nodes, goal, weights, keep_best):
    """Viterbi scores of the columns of ``weights`` (``T × D``) and, with ``keep_best``, each node's best row.

    Row ``i`` (an edge, in the plan's order) scores ``(Σ_j f_data[j] weights[f_indices[j], d] + base[i])
    + Σ_k t_data[k] β[t_indices[k], d]`` (the tail sum only where ``adds_tails``; the sums run in CSR order
    from zero, as scipy's sparse products); a node's value ``β`` is the max over its rows, and its best row
    the first reaching it (``first_rank`` marks each node's first row). Returns the goal's ``β`` (``D``)
    and the ``N × D`` best rows (``0 × D`` without ``keep_best``).
    """
    width = weights.shape[1]
    beta = np.full((num_nodes, width), -np.inf, dtype=weights.dtype)
    best = np.empty((num_nodes if keep_best else 0, width), dtype=np.int64)
    value = np.empty(width, dtype=weights.dtype)
    tails = np.empty(width, dtype=weights.dtype)
    for i in range(base.shape[0]):
        _row_product(value, f_indptr, f_indices, f_data, i, weights)
        for d in range(width):
            value[d] = value[d] + base[i]
        if adds_tails[i]:
            _row_product(tails, t_indptr, t_indices, t_data, i, beta)
            for d in range(width):
                value[d] = value[d] + tails[d]
        node = row_node[i]
        if first_rank[i]:
            for d in range(width):
                beta[node, d] = value[d]
                if keep_best:
                    best[node, d] = i
        else:
            for d in range(width):
                if value[d] > beta[node, d]:
                    beta[node, d] = value[d]
                    if keep_best:
                        best[node, d] = i
    return beta[goal].copy(), best
