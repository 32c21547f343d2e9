"""Directed acyclic hypergraphs (translation forests) and inference over them.

A hypergraph (Huang & Chiang 2005, §2; Hieber & Riezler 2015, §3) has nodes and hyperedges;
an edge ``e = (head, tails)`` derives ``head`` from its tail nodes and carries

* a sparse feature vector (row ``e`` of the ``E × F`` matrix :attr:`Hypergraph.features`), so a
  weight vector ``w`` scores every edge at once as ``F·w``;
* a *target template*: a tuple of terminals (``str``) and tail indices (``int``, 0-based), the
  synchronous right-hand side that builds the head's yield from the tails' yields;
* an *alignment*: ``(source position, template position)`` links of the template's terminals
  to absolute source positions;
* an opaque ``rule`` reference (the grammar rule it instantiates, or ``None``).

Nothing here knows about translation: the decoder fills templates and alignments, other users
may leave them empty. The built graph is array friendly: nodes are numbered in topological
order (every tail before its head) grouped in *levels* (a node's level is one more than the
highest level of any of its tails), edges are sorted by head, so node ``v``'s incoming edges
are ``range(offsets[v], offsets[v+1])``, and ``tail_matrix`` pads tails with the sentinel
``num_nodes``. :class:`ViterbiPlan` uses this to run the Viterbi recursion for many
weightings at once (a few numpy steps per level), as the BOW-FD reranker does per document.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import gzip
import json
from collections.abc import Callable, Mapping
from itertools import chain, compress
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order

from clirplug.atomic import atomic_open
from clirplug.compiled import kernels
from clirplug.errors import ClirplugError
from clirplug.mt.semiring import LOG, TROPICAL, Semiring


class Derivation(NamedTuple):
    """A derivation tree: the edge at its root and one subderivation per tail, with its score."""

    score: float
    edge: int
    children: tuple[Derivation, ...]


class HypergraphBuilder:
    """Collect nodes and edges in any order; :meth:`build` sorts and prunes them."""

    def __init__(self):
        self.labels: list[Any] = []
        self.edges: list[tuple[int, tuple[int, ...], Mapping, Mapping | None, tuple, tuple, Any]] = []

    def add_node(self, label: Any = None) -> int:
        """Add a node with a JSON-able ``label``; return its (provisional) id."""
        self.labels.append(label)
        return len(self.labels) - 1

    def add_edge(self, head: int, tails=(), features: Mapping[str, float] | None = None,
                 template=(), alignment=(), rule: Any = None, extra: Mapping[str, float] | None = None) -> int:
        """Add the edge ``head <- tails`` (see the module docstring for the fields); return its id.

        The edge's features are ``features`` plus ``extra``. ``features`` is kept by reference,
        not copied: edges with equal features (those of one rule) should share one mapping,
        which :meth:`build` converts once; per-edge values (an LM increment) go in ``extra``.
        """
        self.edges.append((head, tuple(tails), features if features is not None else {}, extra,
                           tuple(template), tuple(alignment), rule))
        return len(self.edges) - 1

    def build(self, goal: int) -> Hypergraph:
        """The hypergraph of the derivations of ``goal``.

        Nodes without any complete derivation and nodes and edges that do not take part in a
        derivation of ``goal`` are dropped; the rest is renumbered (see the module docstring).

        Raises
        ------
        ValueError
            When ``goal`` has no derivation or the graph has a cycle.
        """
        n, edges = len(self.labels), self.edges
        heads = np.fromiter(map(itemgetter(0), edges), dtype=np.int64, count=len(edges))
        tails = _tail_matrix(list(map(itemgetter(1), edges)), n)
        if np.all((tails < heads[:, None]) | (tails == n)):  # every tail before its head
            reached, usable = _sweep_topological(heads, tails, n, goal)
        else:
            incoming: list[list[int]] = [[] for _ in range(n)]
            for e, edge in enumerate(edges):
                incoming[edge[0]].append(e)
            order, usable_list = self._sweep_general(incoming, goal)
            reached = np.zeros(n, dtype=bool)
            reached[order] = True
            usable = np.array(usable_list, dtype=bool)
        kept = np.flatnonzero(usable & reached[heads])  # a reached head reaches all its usable edges' tails
        level = _levels(heads[kept], tails[kept], n)
        nodes = np.flatnonzero(reached)
        order = nodes[np.argsort(level[nodes], kind="stable")]  # keeps the creation order within a level
        position = np.full(n + 1, -1, dtype=np.int64)
        position[order] = np.arange(len(order))
        position[n] = len(order)
        kept = kept[np.lexsort((kept, position[heads[kept]]))]
        picked = list(map(edges.__getitem__, kept.tolist()))
        _, old_tails, features, extras, templates, alignments, rules = zip(*picked) if picked else ((),) * 7
        return Hypergraph(
            labels=list(map(self.labels.__getitem__, order.tolist())),
            heads=position[heads[kept]],
            tails=_renumbered(old_tails, position[tails[kept]]),
            features=features,
            extras=extras,
            templates=templates,
            alignments=alignments,
            rules=rules,
            levels=level[order],
        )

    def _sweep_general(self, incoming, goal):
        """Any creation order: alive bottom-up by a work list, then DFS post-order from the goal."""
        edges, n = self.edges, len(self.labels)
        outgoing: list[list[int]] = [[] for _ in range(n)]
        missing = [0] * len(edges)
        alive = [False] * n
        ready = []
        for e, edge in enumerate(edges):
            distinct = set(edge[1])
            for t in distinct:
                outgoing[t].append(e)
            missing[e] = len(distinct)
            if not distinct:
                ready.append(e)
        usable = [False] * len(edges)
        while ready:  # a node is alive once one incoming edge has all tails alive
            e = ready.pop()
            usable[e] = True
            head = edges[e][0]
            if not alive[head]:
                alive[head] = True
                for f in outgoing[head]:
                    missing[f] -= 1
                    if missing[f] == 0:
                        ready.append(f)
        if not alive[goal]:
            raise ValueError("the goal node has no derivation")
        state = [0] * n  # 0 new, 1 on the stack, 2 done
        order: list[int] = []

        def children(v):
            return iter([t for e in incoming[v] if usable[e] for t in edges[e][1]])

        stack = [(goal, children(goal))]
        state[goal] = 1
        while stack:
            node, tails = stack[-1]
            for t in tails:
                if state[t] == 1:
                    raise ValueError("the hypergraph has a cycle")
                if state[t] == 0:
                    state[t] = 1
                    stack.append((t, children(t)))
                    break
            else:
                stack.pop()
                state[node] = 2
                order.append(node)
        return order, usable


def _tail_matrix(tails, pad: int) -> np.ndarray:
    """The ``E × A`` matrix of the tail tuples, padded with ``pad``."""
    lengths = np.fromiter(map(len, tails), dtype=np.int64, count=len(tails))
    matrix = np.full((len(tails), int(lengths.max(initial=0))), pad, dtype=np.int64)
    if matrix.size:
        flat = np.fromiter(chain.from_iterable(tails), dtype=np.int64, count=int(lengths.sum()))
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        matrix[np.repeat(np.arange(len(tails)), lengths), np.arange(len(flat)) - starts] = flat
    return matrix


def _renumbered(tails, matrix: np.ndarray) -> list[tuple[int, ...]]:
    """The tail tuples ``tails`` with their nodes renumbered, ``matrix`` holding the new
    numbers (rows padded as by :func:`_tail_matrix`)."""
    return _row_tuples(matrix, np.fromiter(map(len, tails), dtype=np.int64, count=len(tails)))


def _tail_tuples(matrix: np.ndarray, pad: int) -> list[tuple[int, ...]]:
    """The tail tuples of a matrix padded with ``pad`` (the inverse of :func:`_tail_matrix`)."""
    return _row_tuples(matrix, np.count_nonzero(matrix != pad, axis=1))


def _row_tuples(matrix: np.ndarray, lengths: np.ndarray) -> list[tuple[int, ...]]:
    """Each row's first ``lengths[row]`` values as a tuple."""
    out: list = [()] * len(lengths)
    for length in np.unique(lengths[lengths > 0]).tolist():
        rows = np.flatnonzero(lengths == length)
        for row, values in zip(rows.tolist(), zip(*(matrix[rows, k].tolist() for k in range(length)))):
            out[row] = values
    return out


def _sweep_topological(heads, tails, n, goal):
    """Alive and reachable nodes when every tail precedes its head (``tails`` padded with ``n``).

    In that case a node is alive exactly when it has an incoming edge whose tails are alive, which
    a fixpoint from "dead = no incoming edge" settles (one round when no node is dead, as in the
    decoder's forests); the nodes reachable from ``goal`` through usable edges follow by breadth-first search.
    """
    alive = np.zeros(n + 1, dtype=bool)
    alive[n] = True
    alive[heads] = True
    while True:
        usable = ~_row_max(~alive[tails], False)  # every tail alive
        now = np.zeros(n + 1, dtype=bool)
        now[n] = True
        now[heads[usable]] = True
        if np.array_equal(now, alive):
            break
        alive = now
    if not alive[goal]:
        raise ValueError("the goal node has no derivation")
    rows = np.repeat(heads[usable], tails.shape[1])
    cols = tails[usable].ravel()
    real = cols < n
    graph = sp.csr_matrix((np.ones(int(real.sum())), (rows[real], cols[real])), shape=(n, n))
    reached = np.zeros(n, dtype=bool)
    reached[breadth_first_order(graph, goal, directed=True, return_predecessors=False)] = True
    return reached, usable


def _levels(heads, tails, n) -> np.ndarray:
    """Each node's level over the edges ``heads <- tails`` (padded with ``n``): 0 without an
    edge, else one more than the highest level of any tail of its edges (longest path, by rounds)."""
    level = np.zeros(n + 1, dtype=np.int64)
    level[n] = -1
    while True:
        now = np.zeros(n + 1, dtype=np.int64)
        now[n] = -1
        np.maximum.at(now, heads, _row_max(level[tails], -1) + 1)
        if np.array_equal(now, level):
            return level[:n]
        level = now


def _row_max(matrix: np.ndarray, initial) -> np.ndarray:
    """Each row's maximum (at least ``initial``) of a matrix of few columns, a column at a time (numpy's
    ``max(axis=1)`` over rows of two or three values is many times slower)."""
    out = np.full(matrix.shape[0], initial, dtype=matrix.dtype)
    for column in matrix.T:
        np.maximum(out, column, out=out)
    return out


def _feature_matrix(features, extras, m):
    """The ``m × F`` CSR matrix of ``features[e] + extras[e]`` and the sorted feature names.

    Each distinct ``features`` mapping (by identity) is converted once.
    """
    ids = list(map(id, features))
    distinct = dict(zip(ids, features))  # first occurrence order
    unique = list(distinct.values())
    row = dict(zip(distinct, range(len(distinct))))
    row_of = np.fromiter(map(row.__getitem__, ids), dtype=np.int64, count=m)
    extra_edges = list(compress(range(m), extras))  # the edges with a non-empty extra
    extra_dicts = list(compress(extras, extras))
    names = sorted(set().union(*unique, *extra_dicts))
    index = {name: i for i, name in enumerate(names)}

    def csr(rows, dicts, shape_rows):
        counts = np.fromiter(map(len, dicts), dtype=np.int64, count=len(dicts))
        total = int(counts.sum())
        r = np.repeat(np.asarray(rows, dtype=np.int64), counts)
        c = np.fromiter(map(index.__getitem__, chain.from_iterable(dicts)), dtype=np.int64, count=total)
        v = np.fromiter(map(float, chain.from_iterable(d.values() for d in dicts)), dtype=float, count=total)
        return sp.csr_matrix((v, (r, c)), shape=(shape_rows, len(names)))

    matrix = csr(range(len(unique)), unique, len(unique))[row_of]
    if extra_edges:
        matrix = matrix + csr(extra_edges, extra_dicts, m)
    return sp.csr_matrix(matrix), tuple(names)


class Hypergraph:
    """An immutable, topologically sorted hypergraph; its goal is the last node.

    Build one with :class:`HypergraphBuilder` (or :meth:`from_json`). Attributes:
    ``labels`` (per node), ``heads`` (int array), ``tails`` (tuples), ``templates``,
    ``alignments``, ``rules`` (per edge), ``features`` (``E × F`` CSR matrix),
    ``feature_names``, ``offsets`` (``N+1``: node ``v``'s incoming edges are
    ``offsets[v]:offsets[v+1]``), ``tail_matrix`` (``E × A``, padded with ``N``), ``levels``.
    """

    def __init__(self, labels, heads, tails, features, templates, alignments, rules, levels, extras=None):
        labels, tails = list(labels), list(map(tuple, tails))
        m = len(tails)
        matrix, names = _feature_matrix(features, extras or [None] * m, m)
        self._assign(labels, heads, tails, _tail_matrix(tails, len(labels)), matrix, names, templates, alignments,
                     rules, levels)

    @classmethod
    def from_arrays(cls, labels, heads, tail_matrix, features, feature_names, templates, alignments, rules,
                    levels) -> Hypergraph:
        """The hypergraph of the attributes another one holds (``tail_matrix`` padded with the node count,
        ``features`` its CSR matrix over ``feature_names``), as :mod:`clirplug.mt.forest_file` stores them."""
        graph = cls.__new__(cls)
        graph._assign(labels, heads, _tail_tuples(tail_matrix, len(labels)), tail_matrix, features,
                      tuple(feature_names), templates, alignments, rules, levels)
        return graph

    def _assign(self, labels, heads, tails, tail_matrix, features, feature_names, templates, alignments, rules,
                levels) -> None:
        self.labels = list(labels)
        self.heads = np.asarray(heads, dtype=np.int64)
        self.tails = tails
        self.templates = list(templates)
        self.alignments = list(alignments)
        self.rules = list(rules)
        self.levels = np.asarray(levels, dtype=np.int64)
        n, m = len(self.labels), len(self.heads)
        self.tail_matrix = np.asarray(tail_matrix, dtype=np.int64)
        if m and np.any(np.diff(self.heads) < 0):
            raise ValueError("edges must be sorted by head")
        if np.any((self.tail_matrix < n) & (self.tail_matrix >= self.heads[:, None])):
            raise ValueError("nodes must be in topological order (tails before heads)")
        self.features, self.feature_names = features, feature_names
        self.offsets = np.searchsorted(self.heads, np.arange(n + 1)).astype(np.int64)
        self.level_bounds = np.searchsorted(self.levels, np.arange(self.levels.max(initial=-1) + 2))

    @property
    def num_nodes(self) -> int:
        return len(self.labels)

    @property
    def num_edges(self) -> int:
        return len(self.heads)

    @property
    def goal(self) -> int:
        return self.num_nodes - 1

    # ------------------------------------------------------------------ scoring

    def weight_vector(self, weights: Mapping[str, float]) -> np.ndarray:
        """``weights`` (name -> weight; absent names weigh 0) aligned with :attr:`feature_names`."""
        return np.array([weights.get(name, 0.0) for name in self.feature_names], dtype=float)

    def edge_scores(self, weights: Mapping[str, float] | np.ndarray) -> np.ndarray:
        """Every edge's score ``F·w`` (``weights`` as a dict or an array over :attr:`feature_names`)."""
        w = self.weight_vector(weights) if isinstance(weights, Mapping) else np.asarray(weights, dtype=float)
        return np.asarray(self.features @ w).ravel()

    def edge_feature_dict(self, edge: int) -> dict[str, float]:
        """Edge ``edge``'s features as ``name -> value``."""
        row = self.features.getrow(edge)
        return {self.feature_names[c]: float(v) for c, v in zip(row.indices, row.data)}

    # ------------------------------------------------------------------ inference

    def inside(self, edge_scores: np.ndarray, semiring: Semiring = LOG) -> np.ndarray:
        """Inside values ``β(v) = ⊕_{e ∈ IN(v)} s_e ⊗ ⊗_{t ∈ tails(e)} β(t)`` (Huang 2008, Alg. 1)."""
        beta = np.empty(self.num_nodes + 1)
        beta[self.num_nodes] = semiring.one
        for v in range(self.num_nodes):
            lo, hi = self.offsets[v], self.offsets[v + 1]
            parts = semiring.times(edge_scores[lo:hi], semiring.reduce_times(beta[self.tail_matrix[lo:hi]], axis=1))
            beta[v] = semiring.reduce_plus(parts, axis=0)
        return beta[:-1]

    def outside(self, edge_scores: np.ndarray, beta: np.ndarray, semiring: Semiring = LOG) -> np.ndarray:
        """Outside values ``α(v)``: ``α(goal) = 1``, each edge passes ``α(head) ⊗ s_e ⊗ β(other tails)``."""
        n = self.num_nodes
        alpha = np.full(n + 1, semiring.zero)
        alpha[self.goal] = semiring.one
        beta_pad = np.append(beta, semiring.one)
        accumulate = {"tropical": np.maximum, "log": np.logaddexp}.get(semiring.name, np.add)
        for level in range(len(self.level_bounds) - 2, -1, -1):
            first, last = self.level_bounds[level], self.level_bounds[level + 1]
            lo, hi = self.offsets[first], self.offsets[last]
            if lo == hi:
                continue
            tails = self.tail_matrix[lo:hi]
            base = semiring.times(alpha[self.heads[lo:hi]], edge_scores[lo:hi])
            for slot in range(tails.shape[1]):
                others = np.delete(np.arange(tails.shape[1]), slot)
                value = semiring.times(base, semiring.reduce_times(beta_pad[tails[:, others]], axis=1))
                accumulate.at(alpha, tails[:, slot], value)
        return alpha[:-1]

    def viterbi(self, weights: Mapping[str, float] | np.ndarray) -> Derivation:
        """The best derivation under the tropical semiring (max, +) and its score.

        A node's best incoming edge is the first of the highest ``s_e + Σ β(tails)``. The
        recursion runs one level at a time (the nodes of a level depend only on lower ones);
        each edge's value is computed as it would be node by node, so the result is the same
        to the last bit.
        """
        scores = self.edge_scores(weights)
        beta = np.empty(self.num_nodes + 1)
        beta[self.num_nodes] = 0.0
        best = np.empty(self.num_nodes, dtype=np.int64)
        counts = np.diff(self.offsets)
        if self.tail_matrix.shape[1] > 2 or np.any(counts == 0):
            # node by node: a wider tail sum may be associated differently in a batch, and a
            # node without edges raises numpy's "argmax of an empty sequence"
            self._viterbi_nodes(scores, beta, best, 0, self.num_nodes)
            return self.derivation_from_backpointers(best, beta)
        for level in range(len(self.level_bounds) - 1):
            first, last = int(self.level_bounds[level]), int(self.level_bounds[level + 1])
            lo, hi = int(self.offsets[first]), int(self.offsets[last])
            parts = scores[lo:hi] + beta[self.tail_matrix[lo:hi]].sum(axis=1)
            starts = self.offsets[first:last] - lo
            top = np.maximum.reduceat(parts, starts)
            if np.isnan(top).any():  # argmax's NaN rules, node by node
                self._viterbi_nodes(scores, beta, best, first, last)
                continue
            hit = np.flatnonzero(parts == np.repeat(top, counts[first:last]))
            firsts = hit[np.searchsorted(hit, starts)]  # each node's first edge reaching its maximum
            best[first:last] = lo + firsts
            beta[first:last] = parts[firsts]
        return self.derivation_from_backpointers(best, beta)

    def _viterbi_nodes(self, scores, beta, best, first: int, last: int) -> None:
        for v in range(first, last):
            lo, hi = self.offsets[v], self.offsets[v + 1]
            parts = scores[lo:hi] + beta[self.tail_matrix[lo:hi]].sum(axis=1)
            k = int(np.argmax(parts))
            best[v], beta[v] = lo + k, parts[k]

    def derivation_from_backpointers(self, best_edge: np.ndarray, beta: np.ndarray | None = None) -> Derivation:
        """The derivation that follows ``best_edge[v]`` down from the goal (scores from ``beta``)."""
        def expand(v):
            e = int(best_edge[v])
            return self.tails[e], lambda children: Derivation(
                float(beta[v]) if beta is not None else float("nan"), e, children)

        return build_tree(self.goal, expand)

    def prune(self, weights: Mapping[str, float] | np.ndarray, beam: float) -> Hypergraph:
        """Beam pruning: keep the edges whose best derivation scores within ``beam`` of the best.

        An edge's max-marginal is ``α(head) + s_e + Σβ(tails)`` under the tropical semiring
        (Huang 2008, forest pruning).
        """
        scores = self.edge_scores(weights)
        beta = self.inside(scores, TROPICAL)
        alpha = self.outside(scores, beta, TROPICAL)
        marginal = alpha[self.heads] + scores + np.append(beta, 0.0)[self.tail_matrix].sum(axis=1)
        keep = marginal >= beta[self.goal] - beam - 1e-9 * max(1.0, abs(beta[self.goal]))
        return self.subgraph(np.flatnonzero(keep))

    def subgraph(self, edges) -> Hypergraph:
        """The hypergraph made of the given edges (nodes left without a derivation are dropped)."""
        builder = HypergraphBuilder()
        for label in self.labels:
            builder.add_node(label)
        for e in edges:
            builder.add_edge(int(self.heads[e]), self.tails[e], self.edge_feature_dict(e),
                             self.templates[e], self.alignments[e], self.rules[e])
        return builder.build(self.goal)

    # ------------------------------------------------------------------ derivations

    def derivation_edges(self, derivation: Derivation) -> list[int]:
        """The edges of ``derivation`` in pre-order."""
        out, stack = [], [derivation]
        while stack:
            d = stack.pop()
            out.append(d.edge)
            stack.extend(reversed(d.children))
        return out

    def derivation_features(self, derivation: Derivation) -> dict[str, float]:
        """The summed feature vector of ``derivation`` as ``name -> value``."""
        counts = np.bincount(self.derivation_edges(derivation), minlength=self.num_edges)
        total = self.features.T @ counts
        return {name: float(v) for name, v in zip(self.feature_names, total) if v != 0.0}

    def derivation_yield(self, derivation: Derivation) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
        """The target words of ``derivation`` and their ``(source position, target position)`` links."""
        words: list[str] = []
        links: list[tuple[int, int]] = []
        stack = [(derivation, 0, {})]  # (derivation, next template position, its words' positions)
        while stack:
            d, p, where = stack[-1]
            template = self.templates[d.edge]
            while p < len(template) and isinstance(template[p], str):
                where[p] = len(words)
                words.append(template[p])
                p += 1
            if p < len(template):  # a tail: expand it, then come back after it
                stack[-1] = (d, p + 1, where)
                stack.append((d.children[template[p]], 0, {}))
            else:
                stack.pop()
                links.extend((s, where[q]) for s, q in self.alignments[d.edge])
        return tuple(words), tuple(sorted(links))

    # ------------------------------------------------------------------ JSON

    def to_json(self, encode_rule: Callable[[Any], Any] = str) -> dict:
        """A JSON-able dict of the graph; ``encode_rule`` turns each non-``None`` rule into JSON."""
        edges = []
        for e in range(self.num_edges):
            edges.append({
                "head": int(self.heads[e]),
                "tails": list(self.tails[e]),
                "features": self.edge_feature_dict(e),
                "template": list(self.templates[e]),
                "alignment": [list(link) for link in self.alignments[e]],
                "rule": None if self.rules[e] is None else encode_rule(self.rules[e]),
            })
        return {"format": "clirplug-hypergraph/1", "nodes": self.labels, "edges": edges}

    @classmethod
    def from_json(cls, data: dict, decode_rule: Callable[[Any], Any] | None = None, source: str = "hypergraph") -> Hypergraph:
        """Inverse of :meth:`to_json` (``decode_rule`` maps each non-``None`` rule back).

        Raises
        ------
        ClirplugError
            Naming ``source`` when the data is not a clirplug hypergraph.
        """
        if not isinstance(data, dict) or data.get("format") != "clirplug-hypergraph/1":
            raise ClirplugError(f"{source}: not a clirplug hypergraph (expected format clirplug-hypergraph/1)")
        built = cls._from_built_json(data, decode_rule)
        if built is not None:
            return built
        builder = HypergraphBuilder()
        for label in data["nodes"]:
            builder.add_node(_tupled(label))
        for i, edge in enumerate(data["edges"]):
            try:
                rule = edge["rule"]
                builder.add_edge(edge["head"], edge["tails"], edge["features"],
                                 tuple(edge["template"]), tuple(map(tuple, edge["alignment"])),
                                 decode_rule(rule) if decode_rule and rule is not None else rule)
            except (KeyError, TypeError) as error:
                raise ClirplugError(f"{source}: edge {i}: missing or malformed field ({error})") from error
        return builder.build(len(data["nodes"]) - 1)

    @classmethod
    def _from_built_json(cls, data: dict, decode_rule) -> Hypergraph | None:
        """:meth:`from_json` of a graph :meth:`HypergraphBuilder.build` would leave as it is (what :meth:`to_json`
        writes: nodes in level order, edges by head, every node alive and reached from the goal), made
        without the builder; None for any other graph (or malformed data), which goes through the builder."""
        try:
            nodes, edges = data["nodes"], data["edges"]
            heads = np.array([edge["head"] for edge in edges], dtype=np.int64)
            tails = [tuple(edge["tails"]) for edge in edges]
            n = len(nodes)
            matrix = _tail_matrix(tails, n)
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        if not n or heads.size == 0 or heads.min() < 0 or heads.max() >= n or matrix.min(initial=0) < 0 \
                or np.any(np.diff(heads) < 0) or np.any((matrix >= heads[:, None]) & (matrix != n)) \
                or np.count_nonzero(matrix < n) != sum(map(len, tails)):  # every tail a node before its head
            return None
        try:
            reached, usable = _sweep_topological(heads, matrix, n, n - 1)
        except ValueError:  # the goal has no derivation: the builder says so
            return None
        if not reached.all() or not usable.all():
            return None
        levels = _levels(heads, matrix, n)
        if np.any(np.diff(levels) < 0):
            return None
        try:
            rules = [edge["rule"] for edge in edges]
            if decode_rule:
                rules = [decode_rule(rule) if rule is not None else None for rule in rules]
            return cls(labels=[_tupled(label) for label in nodes], heads=heads, tails=_renumbered(tails, matrix),
                       features=[edge["features"] for edge in edges],
                       templates=[tuple(edge["template"]) for edge in edges],
                       alignments=[tuple(map(tuple, edge["alignment"])) for edge in edges], rules=rules, levels=levels)
        except (KeyError, TypeError):
            return None

    def save(self, path, encode_rule: Callable[[Any], Any] = str) -> None:
        """Write :meth:`to_json` to ``path`` atomically (gzip when it ends in ``.gz``)."""
        text = json.dumps(self.to_json(encode_rule), ensure_ascii=False, separators=(",", ":"))
        with atomic_open(path, "wb") as handle:
            data = text.encode("utf-8")
            handle.write(gzip.compress(data, mtime=0) if str(path).endswith(".gz") else data)

    @classmethod
    def load(cls, path, decode_rule: Callable[[Any], Any] | None = None) -> Hypergraph:
        """Read a file written by :meth:`save`."""
        path = Path(path)
        try:
            raw = path.read_bytes()
            data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        except (OSError, ValueError) as error:
            raise ClirplugError(f"{path}: cannot read the hypergraph: {error}") from error
        return cls.from_json(data, decode_rule, str(path))


class ViterbiPlan:
    """A forest's edges laid out for the Viterbi recursion over many weightings at once (one column each).

    BOW-FD scores a thousand documents per forest this way (Hieber & Riezler 2015, §3). Within
    each level the nodes are renumbered by decreasing in-degree and their incoming edges are
    stored rank-major (every node's first edge, then every second edge of the nodes that have
    one, ...), so the max over incoming edges is a few in-place ``np.maximum`` calls on
    contiguous row blocks instead of a segmented reduction; the tails' values reach a level's
    edges through one sparse product ``tails @ beta`` (an edges × nodes incidence). An edge's
    value is ``s_e + (β(tail 1) + β(tail 2))``, as in :meth:`Hypergraph.viterbi`, so a float64
    column gives its scores and derivation to the last bit. :meth:`linear` runs the same recursion
    compiled, row by row (:mod:`clirplug.mt.viterbi_kernel`), when numba is installed.

    Attributes
    ----------
    order : numpy.ndarray of int
        ``order[i]`` is the forest edge stored at row ``i``.
    levels : list of (first node, end node, first row, end row, rank block sizes, whether a row has tails)
    row_node, node_rows : numpy.ndarray of int
        The Viterbi table row of each stored edge's head, and of each forest node.
    goal : int
        The goal's row in the Viterbi table (the last node, as in the forest).
    tails, adds_tails, first_rank
        The levels row by row (for :meth:`linear`): the tails' incidence of every row (CSR), whether
        its level adds one, and whether the row is its node's first.
    """

    def __init__(self, forest: Hypergraph):
        n = forest.num_nodes
        degree = np.diff(forest.offsets)
        new_id = np.empty(n + 1, dtype=np.int64)
        new_id[n] = n  # the tails' padding
        # each level's nodes by decreasing in-degree (stable), renumbered in that order
        level_of = np.repeat(np.arange(len(forest.level_bounds) - 1), np.diff(forest.level_bounds))
        nodes = np.lexsort((np.arange(n), -degree, level_of))
        new_id[nodes] = np.arange(n)
        # the rows: within a level, every node's first edge, then every second edge, ... (rank-major)
        node_of_edge = np.repeat(nodes, degree[nodes])
        rank = np.arange(len(node_of_edge)) - np.repeat(np.cumsum(degree[nodes]) - degree[nodes], degree[nodes])
        rows = np.lexsort((new_id[node_of_edge], rank, level_of[node_of_edge]))
        self.order = (forest.offsets[node_of_edge] + rank)[rows]
        self.row_node = new_id[node_of_edge][rows]
        self.node_rows = new_id[:n]
        self.goal = int(new_id[forest.goal])
        self.num_nodes = n
        # the tails' incidence of every row (renumbered; tails lie in lower levels)
        tails = new_id[forest.tail_matrix[self.order]] if len(self.order) else np.zeros((0, 0), dtype=np.int64)
        real = tails < n
        self.tails = sp.csr_matrix((np.ones(int(real.sum()), dtype=np.float32),
                                    (np.repeat(np.arange(len(self.order)), real.sum(axis=1)), tails[real])),
                                   shape=(len(self.order), n))
        # the levels: (first node, end node, first row, end row, rank block sizes, whether a row has a tail)
        self.levels = []
        level_rows = np.searchsorted(level_of[self.row_node] if len(self.order) else np.zeros(0, dtype=np.int64),
                                     np.arange(len(forest.level_bounds)))
        for level in range(len(forest.level_bounds) - 1):
            first, last = int(forest.level_bounds[level]), int(forest.level_bounds[level + 1])
            deg = degree[nodes[first:last]]
            top = int(deg.max(initial=0))
            sizes = (len(deg) - np.cumsum(np.bincount(deg, minlength=top + 1))[:top]).tolist()
            lo, hi = int(level_rows[level]), int(level_rows[level + 1])
            self.levels.append((first, last, lo, hi, sizes, bool(real[lo:hi].any())))
        # the same levels row by row, for the compiled recursion: whether its level adds the tails, and
        # whether the row is its node's first
        self.adds_tails = np.repeat([adds for *_, adds in self.levels],
                                    [hi - lo for _, _, lo, hi, _, _ in self.levels]).astype(bool)
        self.first_rank = np.zeros(len(self.order), dtype=bool)
        self.first_rank[rank[rows] == 0] = True

    @functools.cached_property
    def _incidence(self) -> list:
        """Each level's rows of :attr:`tails` (None for a level without tails), for the numpy recursion."""
        return [self.tails[lo:hi] if adds else None for _, _, lo, hi, _, adds in self.levels]

    def scores(self, edge_scores: np.ndarray) -> np.ndarray:
        """The Viterbi score of each column of ``edge_scores`` (``E × D``, rows in :attr:`order`).

        A C-contiguous ``edge_scores`` is overwritten (its rows hold the edges' inside scores afterwards).
        """
        return self._inside(np.ascontiguousarray(edge_scores))[self.goal]

    def best(self, edge_scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`scores` and, per column, each node's best incoming edge (the first reaching the max).

        Returns the scores (``D``) and the ``N × D`` forest edge numbers; read column ``d``'s
        derivation with :meth:`Hypergraph.derivation_from_backpointers` ``(best_edge[:, d])``.
        """
        table = np.ascontiguousarray(edge_scores)
        beta = self._inside(table)
        # after the pass each row holds its edge's value; a node's first row (lowest rank) equal
        # to the node's max is its best edge
        rows, cols = np.nonzero(table == beta[self.row_node])
        keys, first = np.unique(self.row_node[rows] * table.shape[1] + cols, return_index=True)
        best_row = np.empty(beta.shape, dtype=np.int64)
        best_row.flat[keys] = rows[first]
        return beta[self.goal], self.order[best_row[self.node_rows]]

    def linear(self, base: np.ndarray, features: sp.csr_matrix, columns: np.ndarray, back_pointers: bool = False,
               max_cells: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """The Viterbi scores of the edge scores ``features @ columns[d] + base``, one per row ``d`` of ``columns``.

        ``base`` (``E``) and the rows of the ``E × T`` ``features`` are in :attr:`order`; ``columns``
        (``D × T``) and ``base`` have the table's dtype. Returns the scores (``D``) and, with
        ``back_pointers``, the ``N × D`` forest edge numbers of :meth:`best` (else ``None``).
        Compiled (:mod:`clirplug.mt.viterbi_kernel`) when numba is installed; else in numpy (in
        chunks of at most ``max_cells`` edges × columns if given): the same numbers to the last bit.
        """
        kernel = _linear_kernel()
        if kernel is not None:
            features = features.tocsr()
            values, best_row = kernel.linear_viterbi(
                base, features.indptr, features.indices, features.data, self.tails.indptr, self.tails.indices,
                self.tails.data, self.adds_tails, self.first_rank, self.row_node, self.num_nodes, self.goal,
                np.ascontiguousarray(columns.T), back_pointers)
            return values.astype(float), self.order[best_row[self.node_rows]] if back_pointers else None
        chunk = max(1, max_cells // max(1, len(self.order))) if max_cells else max(1, len(columns))
        values = np.empty(len(columns))
        best = np.empty((self.num_nodes, len(columns)), dtype=np.int64) if back_pointers else None
        for start in range(0, len(columns), chunk):
            part = slice(start, start + chunk)
            table = features @ columns[part].T  # E × chunk
            table += base[:, None]
            if back_pointers:
                values[part], best[:, part] = self.best(table)
            else:
                values[part] = self.scores(table)
        return values, best

    def _inside(self, table: np.ndarray) -> np.ndarray:
        """The Viterbi table (node rows × columns); ``table``'s rows become the edges' values."""
        beta = np.empty((self.num_nodes, table.shape[1]), dtype=table.dtype)
        for (first, last, lo, hi, sizes, _), incidence in zip(self.levels, self._incidence):
            parts = table[lo:hi]
            if incidence is not None:  # the tails' scores, added in place into this level's edges
                parts += incidence @ beta
            top = beta[first:last]
            n0 = sizes[0] if sizes else 0
            top[:n0] = parts[:n0]
            top[n0:] = -np.inf  # nodes without incoming edges (none in a forest the builder made)
            row = n0
            for size in sizes[1:]:
                np.maximum(top[:size], parts[row:row + size], out=top[:size])
                row += size
        return beta


@contextlib.contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector while a forest is built (decoded, or read from JSON).

    Cube pruning allocates hundreds of thousands of tuples, hypotheses and LM states per
    sentence, many of which live until the forest is built; each full collection meanwhile
    walks them all, and the loaded grammar (millions of objects) too. On manclir-de's hiero desc
    sentences that was a third of the decoding time, in spikes of seconds. Reading a cached
    forest allocates a few million JSON objects, and a BOW-FD stage keeps hundreds of forests
    (and numba's objects) alive, which each full collection walks again. Neither makes reference
    cycles that outlive the forest (the decoder's :meth:`_ChartLM.reset` breaks those of the LM
    states), so nothing is left for the collector; reference counting frees everything as usual.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _linear_kernel():
    """The module :mod:`clirplug.mt.viterbi_kernel`, or None without numba: then :meth:`ViterbiPlan.linear` runs in numpy."""
    return kernels("clirplug.mt.viterbi_kernel")


def build_tree(root, expand):
    """Build a tree bottom-up without recursion (forests may be deeper than Python's stack).

    ``expand(item)`` returns ``(children, make)``: the child items, and the function that makes
    the item's node from the tuple of its children's nodes. Returns the node of ``root``.
    """
    built: list = []
    stack: list = [(root, None)]  # (item, None) to expand, or (count, make) once its children are pushed
    while stack:
        top, make = stack.pop()
        if make is None:
            children, make = expand(top)
            stack.append((len(children), make))
            stack.extend((child, None) for child in reversed(children))
        else:  # its children are the last ``top`` nodes built
            children = tuple(built[len(built) - top:])
            del built[len(built) - top:]
            built.append(make(children))
    return built[0]


def _tupled(value):
    """JSON lists back to tuples (labels are compared and hashed as tuples)."""
    if not isinstance(value, list):
        return value
    return tuple([_tupled(item) if isinstance(item, list) else item for item in value])
