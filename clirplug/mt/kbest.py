"""Lazy k-best derivations of a hypergraph (Huang & Chiang 2005, Algorithm 3).

Each node ``v`` keeps its derivations found so far, ``D[v]`` (best first), and a heap of
candidates ``<e, j>``: edge ``e`` with the ``j_i``-th best derivation of its ``i``-th tail,
scored ``s_e + Σ_i score(D[tail_i][j_i])``. The next best derivation of ``v`` is the best
candidate; after popping ``<e, j>`` its neighbours ``<e, j + b^i>`` are pushed, asking the
tails for one more derivation only when needed (lazily). With monotone scores (``+``), the
derivations of every node come out in non-increasing score order.

The search is compiled (:mod:`clirplug.mt.kbest_kernel`, numba installed) for forests whose edges have at most two
tails, with the same derivations; :class:`_KBest` is the reference.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping

import numpy as np

from clirplug.compiled import kernels
from clirplug.mt.hypergraph import Derivation, Hypergraph, build_tree


class _KBest:
    def __init__(self, hg: Hypergraph, scores: np.ndarray):
        self.hg = hg
        self.scores = scores
        self.found: list[list[tuple[float, int, tuple[int, ...]]]] = [[] for _ in range(hg.num_nodes)]
        self.heaps: list[list | None] = [None] * hg.num_nodes
        self.seen: list[set] = [set() for _ in range(hg.num_nodes)]
        self.yields: dict[tuple[int, int], tuple[str, ...]] = {}

    def candidate(self, e: int, ranks: tuple[int, ...]):
        total = self.scores[e] + sum(self.found[t][r][0] for t, r in zip(self.hg.tails[e], ranks))
        return (-total, e, ranks)

    def kth(self, v: int, k: int) -> None:
        """Make sure ``found[v]`` holds its ``k+1`` best derivations (or all it has).

        The lazy recursion of Algorithm 3 runs on an explicit stack: each step is a generator
        that yields ``(tail, rank)`` when it needs that tail's derivations first, so the depth of
        a forest (a long sentence's glue chain) never reaches Python's recursion limit.
        """
        stack = [self._kth(v, k)]
        while stack:
            request = next(stack[-1], None)
            if request is None:
                stack.pop()
            else:
                stack.append(self._kth(*request))

    def _kth(self, v: int, k: int) -> Iterator[tuple[int, int]]:
        found = self.found[v]
        if len(found) > k:
            return
        if self.heaps[v] is None:
            heap = []
            for e in range(self.hg.offsets[v], self.hg.offsets[v + 1]):
                ranks = (0,) * len(self.hg.tails[e])
                for t in self.hg.tails[e]:
                    if not self.found[t]:
                        yield t, 0
                heap.append(self.candidate(e, ranks))
                self.seen[v].add((e, ranks))
            heapq.heapify(heap)
            self.heaps[v] = heap
        heap = self.heaps[v]
        while len(found) <= k:
            if found:  # push the successors of the last derivation found
                _, e, ranks = found[-1]
                for i, t in enumerate(self.hg.tails[e]):
                    successor = ranks[:i] + (ranks[i] + 1,) + ranks[i + 1:]
                    if len(self.found[t]) <= successor[i]:
                        yield t, successor[i]
                    if successor[i] < len(self.found[t]) and (e, successor) not in self.seen[v]:
                        self.seen[v].add((e, successor))
                        heapq.heappush(heap, self.candidate(e, successor))
            if not heap:
                break
            negative, e, ranks = heapq.heappop(heap)
            found.append((-negative, e, ranks))

    def derivation(self, v: int, k: int) -> tuple[float, int, tuple[int, ...]]:
        """``v``'s ``k``-th best derivation found: its score, edge and the ranks of its tails' derivations."""
        return self.found[v][k]

    def tree(self, v: int, k: int) -> Derivation:
        """``v``'s ``k``-th best derivation found, as a tree."""
        return _tree(self.hg, self.derivation, v, k)

    def words(self, v: int, k: int) -> tuple[str, ...]:
        """The yield of ``v``'s ``k``-th best derivation (:meth:`Hypergraph.derivation_yield`'s words),
        memoised per ``(node, rank)``: derivations share their subderivations, so each is read once."""
        memo, found, tails, templates = self.yields, self.found, self.hg.tails, self.hg.templates
        stack = [(v, k)]
        while stack:
            item = stack[-1]
            if item in memo:
                stack.pop()
                continue
            _, e, ranks = found[item[0]][item[1]]
            children = tuple(zip(tails[e], ranks))
            missing = [child for child in children if child not in memo]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            words: list[str] = []
            for token in templates[e]:
                if token.__class__ is str:
                    words.append(token)
                else:
                    words.extend(memo[children[token]])
            memo[item] = tuple(words)
        return memo[(v, k)]


def _tree(hg: Hypergraph, derivation, v: int, k: int) -> Derivation:
    """``v``'s ``k``-th best derivation as a tree, ``derivation(node, rank)`` giving a found derivation's score,
    edge and the ranks of its tails' derivations."""
    def expand(item):
        score, e, ranks = derivation(*item)
        return tuple(zip(hg.tails[e], ranks)), lambda children: Derivation(float(score), e, children)

    return build_tree((v, k), expand)


class _CompiledKBest:
    """The derivations :func:`kbest` (``limit`` 0) or :func:`unique_kbest` keeps, by the compiled search
    (:mod:`clirplug.mt.kbest_kernel`): ``kept``, the goal's ranks, read from its arrays as :class:`_KBest`'s."""

    def __init__(self, hg: Hypergraph, scores: np.ndarray, k: int, limit: int = 0):
        self.hg = hg
        templates = _templates(hg) if limit > 0 else (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
        kept, score, self.edge, self.ranks, self.starts, self.order = _kernel().lazy_kbest(
            hg.offsets, hg.tail_matrix, scores, hg.goal, k, limit, *templates)
        self.kept, self.scores_found = kept.tolist(), score.tolist()

    def derivation(self, v: int, k: int) -> tuple[float, int, tuple[int, ...]]:
        row = int(self.order[self.starts[v] + k])
        e = int(self.edge[row])
        return self.scores_found[row], e, tuple(self.ranks[row, : len(self.hg.tails[e])].tolist())

    def tree(self, v: int, k: int) -> Derivation:
        return _tree(self.hg, self.derivation, v, k)


def _templates(hg: Hypergraph) -> tuple[np.ndarray, np.ndarray]:
    """The edges' yield templates as :func:`~clirplug.mt.kbest_kernel.lazy_kbest` reads them: bounds and items
    (a word's number, ``-1 - i`` for tail ``i``)."""
    numbers: dict[str, int] = {}
    converted: dict[int, list[int]] = {}  # by the template's id: edges of one rule share its template
    items, lengths = [], []
    for template in hg.templates:
        values = converted.get(id(template))
        if values is None:
            values = converted[id(template)] = [numbers.setdefault(token, len(numbers)) if token.__class__ is str
                                                else -1 - token for token in template]
        items.extend(values)
        lengths.append(len(values))
    bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    return bounds, np.array(items, dtype=np.int64)


def _compiled(hg: Hypergraph) -> bool:
    """Whether the compiled search applies: numba installed, at most 2 tails an edge, every node with an edge."""
    return hg.tail_matrix.shape[1] <= 2 and hg.num_nodes > 0 and bool(np.all(np.diff(hg.offsets) > 0)) \
        and _kernel() is not None


def _kernel():
    """The module :mod:`clirplug.mt.kbest_kernel`, or None without numba."""
    return kernels("clirplug.mt.kbest_kernel")


def kbest(hg: Hypergraph, weights: Mapping[str, float] | np.ndarray, k: int) -> list[Derivation]:
    """The ``k`` best derivations of the goal, best first (fewer if the forest has fewer).

    Ties are broken by edge id, then by the tails' ranks, so the list is deterministic.
    """
    if k < 1:
        return []
    scores = hg.edge_scores(weights)
    if k == 1:
        best = _first(hg, scores)
        if best is not None:
            return [best]
    if _compiled(hg):
        search = _CompiledKBest(hg, scores, k)
        return [search.tree(hg.goal, i) for i in search.kept]
    search = _KBest(hg, scores)
    search.kth(hg.goal, k - 1)
    return [search.tree(hg.goal, i) for i in range(len(search.found[hg.goal]))]


def _first(hg: Hypergraph, scores: np.ndarray) -> Derivation | None:
    """The best derivation of :func:`kbest`, one level of nodes at a time (numpy), or None when
    only the lazy search is sure to match it (a node without edges, a NaN value).

    Each edge's value is summed as :meth:`_KBest.candidate` does, ``s_e + ((0.0 + β(t_1)) + β(t_2))``
    (a padded tail adds 0.0, which changes nothing), and a node's best edge is the first of its
    highest values, as the heap's ``(-value, edge)`` order picks it: the same derivation and scores,
    float for float, without a heap per node.
    """
    counts = np.diff(hg.offsets)
    if np.any(counts == 0):
        return None
    beta = np.zeros(hg.num_nodes + 1)  # beta[num_nodes] = 0.0: the tails' padding
    best = np.empty(hg.num_nodes, dtype=np.int64)
    for level in range(len(hg.level_bounds) - 1):
        first, last = int(hg.level_bounds[level]), int(hg.level_bounds[level + 1])
        lo, hi = int(hg.offsets[first]), int(hg.offsets[last])
        tails = np.zeros(hi - lo)
        for column in hg.tail_matrix[lo:hi].T:
            tails = tails + beta[column]
        values = scores[lo:hi] + tails
        if np.isnan(values).any():
            return None
        starts = hg.offsets[first:last] - lo
        top = np.maximum.reduceat(values, starts)
        hit = np.flatnonzero(values == np.repeat(top, counts[first:last]))
        firsts = hit[np.searchsorted(hit, starts)]  # each node's first edge reaching its maximum
        best[first:last] = lo + firsts
        beta[first:last] = values[firsts]
    return hg.derivation_from_backpointers(best, beta)


def unique_kbest(hg: Hypergraph, weights: Mapping[str, float] | np.ndarray, k: int, limit: int) -> list[Derivation]:
    """The ``k`` best derivations with distinct yields (target words), best first.

    cdec's unique k-best (``-r``): derivations are enumerated in :func:`kbest` order and the
    first one of each yield is kept, until ``k`` are found or ``limit`` derivations were read.
    Only the kept derivations are built as trees; the others' yields are assembled from
    their subderivations' (:meth:`_KBest.words`).
    """
    if k < 1 or limit < 1:
        return []
    if _compiled(hg):
        search = _CompiledKBest(hg, hg.edge_scores(weights), k, limit)
        return [search.tree(hg.goal, i) for i in search.kept]
    search = _KBest(hg, hg.edge_scores(weights))
    kept, keys = [], set()
    for i in range(limit):
        search.kth(hg.goal, i)
        if len(search.found[hg.goal]) <= i:
            break
        words = search.words(hg.goal, i)
        if words not in keys:
            keys.add(words)
            kept.append(search.tree(hg.goal, i))
            if len(kept) == k:
                break
    return kept
