"""The lazy k-best search of :mod:`clirplug.mt.kbest` compiled with numba, for forests whose edges have at most
two tails (every forest the compiled decoder builds).

:class:`~clirplug.mt.kbest._KBest` in Python is the reference and the test oracle: the same Algorithm 3 of
Huang & Chiang (2005), the same candidates, scored by the same float operations in the same order
(``s_e + ((0.0 + D[t_1]) + D[t_2])``) and popped in the same ``(-score, edge, ranks)`` order, which is total
(a candidate is pushed once), so each node's derivations come out as the reference finds them, rank for rank.
The recursion runs on an explicit stack: a node asks its tails for derivations before it uses them.

Each node's derivations and candidate heap are growable lists in shared arrays (:func:`_append`).
"""

import numba
import numpy as np

from clirplug.compiled import compiled


@numba.njit(inline="always")
def _append(pool, used, start, size, capacity, owner, value):
    """Append ``value`` to list ``owner`` (items ``pool[start[owner]:start[owner] + size[owner]]``); a full list
    moves to the pool's end with twice the room. Returns the pool (a new array when it grew) and its use."""
    if size[owner] == capacity[owner]:
        room = 2 * capacity[owner]
        if used + room > pool.shape[0]:
            pool = _grown_to(pool, max(2 * pool.shape[0], used + room))
        pool[used : used + size[owner]] = pool[start[owner] : start[owner] + size[owner]]
        start[owner], capacity[owner] = used, room
        used += room
    pool[start[owner] + size[owner]] = value
    size[owner] += 1
    return pool, used


@numba.njit(inline="always")
def _before(a, b, key, edge, first, second):
    """Whether candidate ``a`` pops before ``b``: by ``(-score, edge, ranks)``."""
    if key[a] != key[b]:
        return key[a] < key[b]
    if edge[a] != edge[b]:
        return edge[a] < edge[b]
    if first[a] != first[b]:
        return first[a] < first[b]
    return second[a] < second[b]


@numba.njit(inline="always")
def _candidate(key, edge, first, second, row, value, e, rank_1, rank_2):
    """Write candidate ``row`` (its pop key ``value``, edge and tails' ranks) into the candidate arrays, grown when
    full; returns them."""
    if row == key.shape[0]:
        key, edge, first, second = _grown(key), _grown(edge), _grown(first), _grown(second)
    key[row], edge[row], first[row], second[row] = value, e, rank_1, rank_2
    return key, edge, first, second


@numba.njit
def _sift_up(heap, base, i, key, edge, first, second):
    item = heap[base + i]
    while i > 0:
        parent = (i - 1) // 2
        if not _before(item, heap[base + parent], key, edge, first, second):
            break
        heap[base + i] = heap[base + parent]
        i = parent
    heap[base + i] = item


@numba.njit
def _sift_down(heap, base, size, i, key, edge, first, second):
    item = heap[base + i]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _before(heap[base + child + 1], heap[base + child], key, edge, first, second):
            child += 1
        if not _before(heap[base + child], item, key, edge, first, second):
            break
        heap[base + i] = heap[base + child]
        i = child
    heap[base + i] = item


@compiled
def lazy_kbest(offsets, tail_matrix, scores, goal, k, limit, t_indptr, t_items):
    """The goal's ``k`` best derivations, or with ``limit`` (> 0) the first of each of its ``k`` best distinct
    yields among its ``limit`` best derivations, and the derivations of every node the search visits.

    ``tail_matrix`` (``E × A``, ``A <= 2``) pads tails with the node count; edge ``e``'s yield template is
    ``t_items[t_indptr[e]:t_indptr[e + 1]]``, a word's number or ``-1 - i`` for tail ``i``'s yield (used with a
    ``limit`` only). Returns the goal's ranks kept, the derivations' arrays (score, edge, the ranks of its tails'
    derivations ``ranks[row, i]``, 0 beyond the edge's tails), each node's ``starts`` (``N + 1``) and
    ``order``: node ``v``'s derivations, best first, are the rows ``order[starts[v]:starts[v + 1]]``.
    """
    n = offsets.shape[0] - 1
    width = tail_matrix.shape[1]
    # derivations (rows) and candidates, each in arrays grown by doubling
    score, edge, ranks, rows = np.empty(1024), np.empty(1024, dtype=np.int64), np.zeros((1024, 2), dtype=np.int64), 0
    key, c_edge = np.empty(1024), np.empty(1024, dtype=np.int64)
    c_first, c_second, candidates = np.empty(1024, dtype=np.int64), np.empty(1024, dtype=np.int64), 0
    # each node's derivations (rows, best first) and heap (candidates), lists in two pools
    found, found_used = np.empty(2 * n + 16, dtype=np.int64), n
    f_start, f_size, f_capacity = np.arange(n), np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64)
    heap, heap_used = np.empty(2 * n + 16, dtype=np.int64), 0
    h_start, h_size, h_capacity = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    seen = {(np.int64(-1), np.int64(0), np.int64(0))}  # the (edge, ranks) pushed; typed by an item of no edge
    started = np.zeros(n, dtype=np.bool_)  # the node's heap holds its edges' first candidates
    pending = np.zeros(n, dtype=np.bool_)  # the successors of the node's last derivation are not pushed yet
    exhausted = np.zeros(n, dtype=np.bool_)
    stack_node, stack_rank = np.empty(64, dtype=np.int64), np.empty(64, dtype=np.int64)
    successor = np.zeros(2, dtype=np.int64)
    # the yields of derivations (rows), words in a pool; the distinct yields of the goal, chained by hash
    y_start, y_size = np.full(1024, -1, dtype=np.int64), np.zeros(1024, dtype=np.int64)
    words, words_used = np.empty(4096, dtype=np.int64), 0
    by_hash = {np.uint64(0): np.int64(-1)}  # a yield's hash -> its first kept yield (-1: none)
    chained = np.empty(max(k, 1), dtype=np.int64)  # the next kept yield of the same hash
    kept = np.empty(max(k, 1), dtype=np.int64)
    n_kept = 0
    rank = 0
    while True:  # the goal's derivation of rank ``rank``
        stack_node[0], stack_rank[0], depth = goal, rank, 1
        while depth:
            u, want = stack_node[depth - 1], stack_rank[depth - 1]
            if f_size[u] > want or exhausted[u]:
                depth -= 1
                continue
            need, need_rank = -1, 0
            if not started[u]:
                for e in range(offsets[u], offsets[u + 1]):
                    for i in range(width):
                        t = tail_matrix[e, i]
                        if t < n and f_size[t] == 0 and not exhausted[t]:
                            need = t
                            break
                    if need >= 0:
                        break
                if need < 0:
                    h_start[u], h_capacity[u] = heap_used, offsets[u + 1] - offsets[u]
                    if heap_used + h_capacity[u] > heap.shape[0]:
                        heap = _grown_to(heap, max(2 * heap.shape[0], heap_used + h_capacity[u]))
                    heap_used += h_capacity[u]
                    for e in range(offsets[u], offsets[u + 1]):
                        total, usable = 0.0, True
                        for i in range(width):
                            t = tail_matrix[e, i]
                            if t < n:
                                if f_size[t] == 0:
                                    usable = False
                                    break
                                total += score[found[f_start[t]]]
                        if usable:
                            key, c_edge, c_first, c_second = _candidate(key, c_edge, c_first, c_second, candidates,
                                                                        -(scores[e] + total), e, 0, 0)
                            seen.add((np.int64(e), np.int64(0), np.int64(0)))
                            heap[h_start[u] + h_size[u]] = candidates
                            h_size[u] += 1
                            candidates += 1
                    for i in range(h_size[u] // 2 - 1, -1, -1):  # heapify
                        _sift_down(heap, h_start[u], h_size[u], i, key, c_edge, c_first, c_second)
                    started[u] = True
            elif pending[u]:
                last = found[f_start[u] + f_size[u] - 1]
                e = edge[last]
                for i in range(width):
                    t = tail_matrix[e, i]
                    if t < n and f_size[t] <= ranks[last, i] + 1 and not exhausted[t]:
                        need, need_rank = t, ranks[last, i] + 1
                        break
                if need < 0:
                    for i in range(width):
                        t = tail_matrix[e, i]
                        if t < n and ranks[last, i] + 1 < f_size[t]:
                            successor[0], successor[1] = ranks[last, 0], ranks[last, 1]
                            successor[i] += 1
                            item = (np.int64(e), successor[0], successor[1])
                            if item not in seen:
                                seen.add(item)
                                total = 0.0
                                for j in range(width):
                                    tail = tail_matrix[e, j]
                                    if tail < n:
                                        total += score[found[f_start[tail] + successor[j]]]
                                key, c_edge, c_first, c_second = _candidate(
                                    key, c_edge, c_first, c_second, candidates, -(scores[e] + total), e,
                                    successor[0], successor[1])
                                heap, heap_used = _append(heap, heap_used, h_start, h_size, h_capacity, u, candidates)
                                _sift_up(heap, h_start[u], h_size[u] - 1, key, c_edge, c_first, c_second)
                                candidates += 1
                    pending[u] = False
            if need >= 0:
                if depth == stack_node.shape[0]:
                    stack_node, stack_rank = _grown(stack_node), _grown(stack_rank)
                stack_node[depth], stack_rank[depth] = need, need_rank
                depth += 1
                continue
            if h_size[u] == 0:
                exhausted[u] = True
                continue
            best = heap[h_start[u]]
            h_size[u] -= 1
            if h_size[u]:
                heap[h_start[u]] = heap[h_start[u] + h_size[u]]
                _sift_down(heap, h_start[u], h_size[u], 0, key, c_edge, c_first, c_second)
            if rows == score.shape[0]:
                score, edge, ranks = _grown(score), _grown(edge), _grown(ranks)
            score[rows], edge[rows], ranks[rows, 0], ranks[rows, 1] = -key[best], c_edge[best], c_first[best], c_second[best]
            found, found_used = _append(found, found_used, f_start, f_size, f_capacity, u, rows)
            rows += 1
            pending[u] = True
        if f_size[goal] <= rank:
            break
        if limit <= 0:
            kept[n_kept] = rank
            n_kept += 1
        else:
            row = found[f_start[goal] + rank]
            y_start, y_size, words, words_used = _yield(row, found, f_start, edge, ranks, tail_matrix, t_indptr,
                                                        t_items, y_start, y_size, words, words_used, rows)
            value = _hash(words, y_start[row], y_size[row])
            first = by_hash[value] if value in by_hash else -1
            other = first
            while other >= 0 and not _same(words, y_start, y_size, found[f_start[goal] + kept[other]], row):
                other = chained[other]
            if other < 0:  # a new yield
                kept[n_kept], chained[n_kept] = rank, first
                by_hash[value] = n_kept
                n_kept += 1
        if n_kept == k or rank + 1 == (limit if limit > 0 else k):
            break
        rank += 1
    starts = np.zeros(n + 1, dtype=np.int64)
    order = np.empty(rows, dtype=np.int64)
    for v in range(n):
        starts[v + 1] = starts[v] + f_size[v]
        order[starts[v] : starts[v + 1]] = found[f_start[v] : f_start[v] + f_size[v]]
    return kept[:n_kept].copy(), score[:rows].copy(), edge[:rows].copy(), ranks[:rows].copy(), starts, order


@numba.njit
def _grown(values):
    """``values`` in an array twice as long (the rest zero)."""
    grown = np.zeros((2 * values.shape[0],) + values.shape[1:], dtype=values.dtype)
    grown[: values.shape[0]] = values
    return grown


@numba.njit
def _yield(row, found, f_start, edge, ranks, tail_matrix, t_indptr, t_items, y_start, y_size, words, words_used, rows):
    """Write the yield of derivation ``row`` (and of its subderivations without one) to the pool ``words``:
    ``words[y_start[row]:y_start[row] + y_size[row]]``. Returns the arrays, grown where needed, and the pool's use."""
    if y_start.shape[0] < rows:
        grown = np.full(max(2 * y_start.shape[0], rows), -1, dtype=np.int64)
        grown[: y_start.shape[0]] = y_start
        y_start, y_size = grown, _grown_to(y_size, grown.shape[0])
    stack, depth = np.empty(64, dtype=np.int64), 1
    stack[0] = row
    while depth:
        r = stack[depth - 1]
        if y_start[r] >= 0:
            depth -= 1
            continue
        e, length, missing = edge[r], 0, False
        for j in range(t_indptr[e], t_indptr[e + 1]):
            if t_items[j] >= 0:
                length += 1
            else:
                tail = -1 - t_items[j]
                child = found[f_start[tail_matrix[e, tail]] + ranks[r, tail]]
                if y_start[child] < 0:
                    if depth == stack.shape[0]:
                        stack = _grown(stack)
                    stack[depth] = child
                    depth += 1
                    missing = True
                length += y_size[child]
        if missing:
            continue
        depth -= 1
        if words_used + length > words.shape[0]:
            words = _grown_to(words, max(2 * words.shape[0], words_used + length))
        y_start[r], y_size[r] = words_used, length
        for j in range(t_indptr[e], t_indptr[e + 1]):
            if t_items[j] >= 0:
                words[words_used] = t_items[j]
                words_used += 1
            else:
                tail = -1 - t_items[j]
                child = found[f_start[tail_matrix[e, tail]] + ranks[r, tail]]
                words[words_used : words_used + y_size[child]] = words[y_start[child] : y_start[child] + y_size[child]]
                words_used += y_size[child]
    return y_start, y_size, words, words_used


@numba.njit
def _hash(words, start, size):
    """FNV-1a of the words ``words[start:start + size]``."""
    value = np.uint64(14695981039346656037)
    for i in range(start, start + size):
        value = (value ^ np.uint64(words[i])) * np.uint64(1099511628211)
    return value


@numba.njit
def _same(words, y_start, y_size, a, b):
    """Whether derivations ``a`` and ``b`` have the same yield."""
    if y_size[a] != y_size[b]:
        return False
    for i in range(y_size[a]):
        if words[y_start[a] + i] != words[y_start[b] + i]:
            return False
    return True


@numba.njit
def _grown_to(values, length):
    """``values`` in an array of ``length`` (the rest zero)."""
    grown = np.zeros(length, dtype=values.dtype)
    grown[: values.shape[0]] = values
    return grown
