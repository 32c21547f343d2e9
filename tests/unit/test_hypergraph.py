"""Hypergraph inference against brute-force enumeration of every derivation on small forests."""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from clirplug.errors import ClirplugError
from clirplug.mt import hypergraph
from clirplug.mt import kbest as kbest_module
from clirplug.mt.hypergraph import Hypergraph, HypergraphBuilder, ViterbiPlan
from clirplug.mt.kbest import _KBest, kbest, unique_kbest
from clirplug.mt.semiring import LOG, REAL, TROPICAL

pytestmark = pytest.mark.unit

FEATURES = ("a", "b", "c")


def random_forest(seed, num_nodes=7, max_in=3):
    """A random acyclic forest: node v's edges take tails among nodes < v; words in templates."""
    rng = np.random.default_rng(seed)
    builder = HypergraphBuilder()
    for v in range(num_nodes):
        builder.add_node(["n", v])
    for v in range(num_nodes):
        for _ in range(1 if v == 0 else int(rng.integers(1, max_in + 1))):
            arity = 0 if v == 0 else int(rng.integers(0, min(2, v) + 1))
            tails = tuple(int(t) for t in rng.integers(0, v, size=arity)) if arity else ()
            features = {f: float(rng.normal()) for f in FEATURES if rng.random() < 0.7}
            template, alignment = [], []
            for i in rng.permutation(arity):
                template.append(f"w{v}")
                alignment.append((v, len(template) - 1))
                template.append(int(i))
            builder.add_edge(v, tails, features, template, alignment, rule=f"r{v}")
    # unreachable and underivable clutter that build() must drop
    dead = builder.add_node(["dead"])
    builder.add_edge(builder.add_node(["orphan"]), (dead,), {"a": 9.0})
    return builder.build(num_nodes - 1)


def enumerate_derivations(hg, scores, v=None):
    """Every derivation of ``v`` as (score, edges tuple in pre-order, nested (edge, children))."""
    v = hg.goal if v is None else v
    out = []
    for e in range(hg.offsets[v], hg.offsets[v + 1]):
        for parts in itertools.product(*(enumerate_derivations(hg, scores, t) for t in hg.tails[e])):
            score = scores[e] + sum(p[0] for p in parts)
            edges = (e,) + tuple(x for p in parts for x in p[1])
            out.append((score, edges, (e, tuple(p[2] for p in parts))))
    return out


def tree_key(derivation):
    return (derivation.edge, tuple(tree_key(c) for c in derivation.children))


WEIGHTS = {"a": 0.7, "b": -1.3, "c": 0.4}


@pytest.mark.parametrize("seed", range(12))
def test_viterbi_inside_kbest_against_brute_force(seed):
    hg = random_forest(seed)
    scores = hg.edge_scores(WEIGHTS)
    every = enumerate_derivations(hg, scores)
    brute = sorted((-s, t) for s, _e, t in every)
    # Viterbi
    best = hg.viterbi(WEIGHTS)
    assert math.isclose(best.score, -brute[0][0], abs_tol=1e-9)
    assert math.isclose(sum(scores[e] for e in hg.derivation_edges(best)), best.score, abs_tol=1e-9)
    # inside under three semirings
    np.testing.assert_allclose(hg.inside(scores, TROPICAL)[hg.goal], max(s for s, *_ in every))
    np.testing.assert_allclose(hg.inside(scores, LOG)[hg.goal], np.logaddexp.reduce([s for s, *_ in every]))
    assert hg.inside(np.ones(hg.num_edges), REAL)[hg.goal] == len(every)  # derivation count
    # k-best: the same scores and the same derivations (ties may swap), never increasing
    k = min(len(every), 40)
    found = kbest(hg, WEIGHTS, k)
    assert len(found) == k
    got = [d.score for d in found]
    np.testing.assert_allclose(got, [-s for s, _ in brute[:k]], atol=1e-9)
    assert all(x >= y - 1e-12 for x, y in itertools.pairwise(got))
    assert len({tree_key(d) for d in found}) == k
    all_trees = {t: s for s, _e, t in every}
    for d in found:
        assert math.isclose(all_trees[tree_key(d)], d.score, abs_tol=1e-9)
    assert len(kbest(hg, WEIGHTS, len(every) + 5)) == len(every)
    # yields are the template expansion, checked through the brute-force tree
    for d in found[:5]:
        words, links = hg.derivation_yield(d)
        assert len(words) == sum(isinstance(x, str) for e in hg.derivation_edges(d) for x in hg.templates[e])
        for src, tgt in links:
            assert words[tgt] == f"w{src}"


@pytest.mark.parametrize("seed", range(10))
def test_viterbi_by_levels_equals_node_by_node_bit_for_bit(seed):
    """Same back-pointers (the first of tied edges) and the same floats as one node at a time."""
    hg = random_forest(seed, num_nodes=30, max_in=6)
    for weights in (WEIGHTS, {"a": 1.0}, {}):  # ties: edges without feature a, then every edge
        scores = hg.edge_scores(weights)
        beta, best = np.empty(hg.num_nodes + 1), np.empty(hg.num_nodes, dtype=np.int64)
        beta[hg.num_nodes] = 0.0
        hg._viterbi_nodes(scores, beta, best, 0, hg.num_nodes)
        expected = hg.derivation_from_backpointers(best, beta)
        got = hg.viterbi(weights)
        assert hg.derivation_edges(got) == hg.derivation_edges(expected)
        assert got.score.hex() == expected.score.hex()


@pytest.mark.parametrize("seed", range(10))
def test_the_one_best_is_the_lazy_searchs_first_bit_for_bit(seed):
    """kbest(k=1) by levels: the lazy search's first derivation (the oracle), ties and floats included."""
    hg = random_forest(seed, num_nodes=30, max_in=6)
    for weights in (WEIGHTS, {"a": 1.0}, {}, {"a": -0.0, "b": 0.0}):
        lazy = _KBest(hg, hg.edge_scores(weights))
        lazy.kth(hg.goal, 0)
        expected, (got,) = lazy.tree(hg.goal, 0), kbest(hg, weights, 1)
        assert tree_key(got) == tree_key(expected)
        assert [d.score.hex() for d in _subtrees(got)] == [d.score.hex() for d in _subtrees(expected)]
    tied = _tied(random_forest(seed, num_nodes=9), seed)
    lazy = _KBest(tied, tied.edge_scores({"tie": 1.0}))
    lazy.kth(tied.goal, 0)
    assert tree_key(kbest(tied, {"tie": 1.0}, 1)[0]) == tree_key(lazy.tree(tied.goal, 0))


def _subtrees(derivation):
    stack, out = [derivation], []
    while stack:
        out.append(stack.pop())
        stack.extend(out[-1].children)
    return out


def _tied(forest, seed):
    """``forest`` with edge scores 0 or 1 (feature ``tie``): exact sums, many tied derivations."""
    scores = np.random.default_rng(seed).integers(0, 2, size=forest.num_edges).astype(float)
    builder = HypergraphBuilder()
    for label in forest.labels:
        builder.add_node(label)
    for e in range(forest.num_edges):
        builder.add_edge(int(forest.heads[e]), forest.tails[e], {"tie": scores[e]})
    return builder.build(forest.goal)


@pytest.mark.parametrize("seed", range(10))
def test_the_compiled_kbest_search_finds_the_references_derivations_bit_for_bit(seed, monkeypatch):
    hg = random_forest(seed, num_nodes=30, max_in=6)
    cases = ((hg, WEIGHTS), (hg, {"a": 1.0}), (_tied(hg, seed), {"tie": 1.0}),
             (_tied(random_forest(seed, num_nodes=9), seed), {"tie": 1.0}))
    searches = [(forest, weights, k, limit) for forest, weights in cases
                for k, limit in ((1, 0), (3, 0), (40, 0), (500, 0), (1, 1), (3, 50), (50, 20), (100, 1000))]

    def found():
        out = []
        for forest, weights, k, limit in searches:
            derivations = unique_kbest(forest, weights, k, limit) if limit else kbest(forest, weights, k)
            out.append([(tree_key(d), [s.score.hex() for s in _subtrees(d)]) for d in derivations])
        return out

    assert kbest_module._compiled(hg)
    compiled = found()
    monkeypatch.setattr(kbest_module, "_kernel", lambda: None)
    assert not kbest_module._compiled(hg) and found() == compiled
    assert sum(map(len, compiled)) > 150


@pytest.mark.parametrize("seed", range(8))
def test_unique_kbest_keeps_the_first_derivation_of_each_yield(seed):
    hg = random_forest(seed, num_nodes=12, max_in=4)
    for k, limit in ((3, 50), (50, 20), (100, 1000)):
        expected, seen = [], set()
        for d in kbest(hg, WEIGHTS, limit):
            words = hg.derivation_yield(d)[0]
            if words not in seen and len(expected) < k:
                seen.add(words)
                expected.append(d)
        got = unique_kbest(hg, WEIGHTS, k, limit)
        assert [tree_key(d) for d in got] == [tree_key(d) for d in expected]
        assert [d.score for d in got] == [d.score for d in expected]


@pytest.mark.parametrize("seed", range(6))
def test_outside_max_marginals_against_brute_force(seed):
    hg = random_forest(seed)
    scores = hg.edge_scores(WEIGHTS) * 0.5
    every = enumerate_derivations(hg, scores)
    # tropical max-marginals: best derivation through each edge
    beta = hg.inside(scores, TROPICAL)
    alpha = hg.outside(scores, beta, TROPICAL)
    marginal = alpha[hg.heads] + scores + np.append(beta, 0)[hg.tail_matrix].sum(axis=1)
    for e in range(hg.num_edges):
        np.testing.assert_allclose(marginal[e], max(s for s, edges, _t in every if e in edges))


@pytest.mark.parametrize("seed", range(8))
def test_viterbi_plan_equals_scalar_viterbi_per_column(seed):
    hg = random_forest(seed, num_nodes=9)
    rng = np.random.default_rng(100 + seed)
    extra = rng.normal(size=(hg.num_edges, 25))
    extra[:, 3] = 0.0
    base = hg.edge_scores(WEIGHTS)
    plan = ViterbiPlan(hg)
    best_scores, back = plan.best((base[:, None] + extra)[plan.order])
    np.testing.assert_array_equal(plan.scores((base[:, None] + extra)[plan.order]), best_scores)
    for d in range(extra.shape[1]):
        builder = HypergraphBuilder()  # the column's scores as a feature of a copy of the graph
        for label in hg.labels:
            builder.add_node(label)
        for e in range(hg.num_edges):
            builder.add_edge(int(hg.heads[e]), hg.tails[e], {**hg.edge_feature_dict(e), "extra": extra[e, d]})
        copy = builder.build(hg.goal)
        scalar = copy.viterbi({**WEIGHTS, "extra": 1.0})
        assert math.isclose(best_scores[d], scalar.score, abs_tol=1e-9)
        derivation = hg.derivation_from_backpointers(back[:, d])
        assert math.isclose(sum(base[e] + extra[e, d] for e in hg.derivation_edges(derivation)), scalar.score,
                            abs_tol=1e-9)
    # without extra scores the plan is the scalar Viterbi to the last bit, derivation included
    scalar = hg.viterbi(WEIGHTS)
    assert best_scores[3] == scalar.score
    assert hg.derivation_edges(hg.derivation_from_backpointers(back[:, 3])) == hg.derivation_edges(scalar)


@pytest.mark.parametrize("seed", range(8))
def test_viterbi_plan_breaks_ties_as_the_scalar_viterbi(seed):
    """Small integer edge scores (exact sums, many tied derivations): each node's first best edge wins."""
    hg = random_forest(seed, num_nodes=9)
    ties = np.random.default_rng(seed).integers(0, 2, size=(hg.num_edges, 6)).astype(float)
    plan = ViterbiPlan(hg)
    _, back = plan.best(ties[plan.order])
    for d in range(ties.shape[1]):
        builder = HypergraphBuilder()
        for label in hg.labels:
            builder.add_node(label)
        for e in range(hg.num_edges):
            builder.add_edge(int(hg.heads[e]), hg.tails[e], {"tie": ties[e, d]})
        scalar = builder.build(hg.goal).viterbi({"tie": 1.0})
        assert hg.derivation_edges(hg.derivation_from_backpointers(back[:, d])) == hg.derivation_edges(scalar)


def test_the_viterbi_kernel_is_installed():
    assert hypergraph._linear_kernel() is not None  # numba is in the dev extra: the comparison below is not vacuous


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(8))
def test_compiled_linear_viterbi_is_the_numpy_one_to_the_last_bit(seed, dtype, monkeypatch):
    """Random and tied (small integer) linear edge scores, tails repeated: same scores and back pointers."""
    hg = random_forest(seed, num_nodes=12, max_in=4)
    rng = np.random.default_rng(seed)
    plan = ViterbiPlan(hg)
    features = sp.random(hg.num_edges, 5, density=0.4, format="csr", random_state=seed, dtype=np.float32)
    features.data[:] = rng.integers(1, 3, size=features.nnz)  # term counts
    for base, columns in [(rng.normal(size=hg.num_edges), rng.normal(size=(7, 5))),
                          (rng.integers(-1, 2, size=hg.num_edges), rng.integers(0, 2, size=(7, 5)))]:
        base, columns = base[plan.order].astype(dtype), columns.astype(dtype)
        compiled = plan.linear(base, features[plan.order], columns, back_pointers=True)
        scores, _ = plan.linear(base, features[plan.order], columns)
        with monkeypatch.context() as patch:
            patch.setattr(hypergraph, "_linear_kernel", lambda: None)
            reference = plan.linear(base, features[plan.order], columns, back_pointers=True, max_cells=2 * len(base))
        assert compiled[0].dtype == reference[0].dtype == np.float64
        np.testing.assert_array_equal(compiled[0], reference[0])
        np.testing.assert_array_equal(scores, reference[0])
        np.testing.assert_array_equal(compiled[1], reference[1])


def test_build_orders_prunes_and_rejects_cycles():
    builder = HypergraphBuilder()
    goal = builder.add_node("goal")  # created first: build must reorder
    x, y = builder.add_node("x"), builder.add_node("y")
    builder.add_edge(goal, (x, y), {"a": 1.0})
    builder.add_edge(y, (), {"a": 2.0})
    builder.add_edge(x, (), {"b": 1.0})
    hg = builder.build(goal)
    assert hg.labels[-1] == "goal" and hg.num_nodes == 3 and hg.num_edges == 3
    assert all(t < h for h, ts in zip(hg.heads, hg.tails) for t in ts)
    cyclic = HypergraphBuilder()
    a, b = cyclic.add_node(), cyclic.add_node()
    cyclic.add_edge(a, ())
    cyclic.add_edge(b, (a,))
    cyclic.add_edge(a, (b,))
    with pytest.raises(ValueError, match="cycle"):
        cyclic.build(b)
    lonely = HypergraphBuilder()
    with pytest.raises(ValueError, match="no derivation"):
        lonely.build(lonely.add_node())


def test_beam_pruning_keeps_exactly_the_edges_within_the_beam():
    hg = random_forest(3, num_nodes=8)
    scores = hg.edge_scores(WEIGHTS)
    every = enumerate_derivations(hg, scores)
    best = max(s for s, *_ in every)
    for beam in (0.0, 0.5, 2.0, 100.0):
        pruned = hg.prune(WEIGHTS, beam)
        kept = sorted(s for s, *_ in enumerate_derivations(pruned, pruned.edge_scores(WEIGHTS)))
        # every derivation made only of kept edges survives; the best one always does
        assert math.isclose(kept[-1], best, abs_tol=1e-9)
        assert pruned.num_edges == sum(
            1 for e in range(hg.num_edges)
            if max((s for s, edges, _ in every if e in edges), default=-np.inf) >= best - beam - 1e-9
        )
    assert hg.prune(WEIGHTS, 100.0).num_edges == hg.num_edges


def built_by_the_builder(data):
    """A graph's JSON through :class:`HypergraphBuilder` (what :meth:`Hypergraph.from_json` did for every graph)."""
    builder = HypergraphBuilder()
    for label in data["nodes"]:
        builder.add_node(hypergraph._tupled(label))
    for edge in data["edges"]:
        builder.add_edge(edge["head"], edge["tails"], edge["features"], tuple(edge["template"]),
                         tuple(map(tuple, edge["alignment"])), edge["rule"])
    return builder.build(len(data["nodes"]) - 1)


def assert_same_graph(a, b):
    for name in ("labels", "tails", "templates", "alignments", "rules", "feature_names"):
        assert getattr(a, name) == getattr(b, name), name
    for name in ("heads", "levels", "offsets", "level_bounds", "tail_matrix"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert (a.features != b.features).nnz == 0


@pytest.mark.parametrize("seed", range(8))
def test_from_json_equals_the_builder_on_built_and_unbuilt_graphs(seed):
    """A built graph's JSON is read without the builder; any other (edges out of order, a dead node, an
    unreachable one) goes through it: the same graph either way."""
    rng = np.random.default_rng(seed)
    data = random_forest(seed).to_json()
    assert_same_graph(Hypergraph.from_json(data), built_by_the_builder(data))
    assert Hypergraph._from_built_json(data, None) is not None  # read directly
    shuffled = dict(data, edges=[data["edges"][i] for i in rng.permutation(len(data["edges"]))])
    assert_same_graph(Hypergraph.from_json(shuffled), built_by_the_builder(shuffled))
    extra = dict(data, nodes=[["dead"], *data["nodes"]],  # a node without edges, and an unreachable leaf
                 edges=[dict(edge, head=edge["head"] + 1, tails=[t + 1 for t in edge["tails"]]) for edge in data["edges"]])
    assert_same_graph(Hypergraph.from_json(extra), built_by_the_builder(extra))
    assert Hypergraph.from_json(extra).num_nodes == len(data["nodes"])
    assert Hypergraph._from_built_json(extra, None) is None  # through the builder


def test_json_round_trip(tmp_path):
    hg = random_forest(5)
    for name in ("forest.json", "forest.json.gz"):
        hg.save(tmp_path / name)
        back = Hypergraph.load(tmp_path / name)
        assert back.labels == [tuple(x) if isinstance(x, list) else x for x in hg.labels]
        assert back.tails == hg.tails and back.templates == hg.templates and back.rules == hg.rules
        assert back.alignments == hg.alignments
        np.testing.assert_array_equal(back.edge_scores(WEIGHTS), hg.edge_scores(WEIGHTS))
    (tmp_path / "bad.json").write_text('{"format": "other"}')
    with pytest.raises(ClirplugError, match="bad.json"):
        Hypergraph.load(tmp_path / "bad.json")
