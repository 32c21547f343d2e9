"""Lazy k-best derivations of a hypergraph (Huang & Chiang 2005, Algorithm 3).

Each node ``v`` keeps its derivations found so far, ``D[v]`` (best first), and a heap of
candidates ``<e, j>``: edge ``e`` with the ``j_i``-th best derivation of its ``i``-th tail,
scored ``s_e + Σ_i score(D[tail_i][j_i])``. The next best derivation of ``v`` is the best
candidate; after popping ``<e, j>`` its neighbours ``<e, j + b^i>`` are pushed, asking the
tails for one more derivation only when needed (lazily). With monotone scores (``+``), the
derivations of every node come out in non-increasing score order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterator, Mapping

import numpy as np

from clirplug.mt.hypergraph import Derivation, Hypergraph, build_tree


class _KBest:
    def __init__(self, hg: Hypergraph, scores: np.ndarray):
        self.hg = hg
        self.scores = scores
        self.found: list[list[tuple[float, int, tuple[int, ...]]]] = [[] for _ in range(hg.num_nodes)]
        self.heaps: list[list | None] = [None] * hg.num_nodes
        self.seen: list[set] = [set() for _ in range(hg.num_nodes)]

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

    def tree(self, v: int, k: int) -> Derivation:
        def expand(item):
            score, e, ranks = self.found[item[0]][item[1]]
            return tuple(zip(self.hg.tails[e], ranks)), lambda children: Derivation(float(score), e, children)

        return build_tree((v, k), expand)


def kbest(hg: Hypergraph, weights: Mapping[str, float] | np.ndarray, k: int) -> list[Derivation]:
    """The ``k`` best derivations of the goal, best first (fewer if the forest has fewer).

    Ties are broken by edge id, then by the tails' ranks, so the list is deterministic.
    """
    if k < 1:
        return []
    search = _KBest(hg, hg.edge_scores(weights))
    search.kth(hg.goal, k - 1)
    return [search.tree(hg.goal, i) for i in range(len(search.found[hg.goal]))]


def unique_kbest(hg: Hypergraph, weights: Mapping[str, float] | np.ndarray, k: int,
                 key: Callable[[Derivation], Hashable], limit: int) -> list[Derivation]:
    """The ``k`` best derivations with distinct ``key`` (e.g. their yield), best first.

    cdec's unique k-best (``-r``): derivations are enumerated in :func:`kbest` order and the
    first one of each key is kept, until ``k`` are found or ``limit`` derivations were read.
    """
    if k < 1:
        return []
    search = _KBest(hg, hg.edge_scores(weights))
    kept, keys = [], set()
    for i in range(limit):
        search.kth(hg.goal, i)
        if len(search.found[hg.goal]) <= i:
            break
        derivation = search.tree(hg.goal, i)
        identity = key(derivation)
        if identity not in keys:
            keys.add(identity)
            kept.append(derivation)
            if len(kept) == k:
                break
    return kept
