"""BOW-FD scoring against brute-force enumeration of every derivation of toy forests."""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from clirplug.errors import ClirplugError
from clirplug.mt.grammar import Rule
from clirplug.mt.hypergraph import HypergraphBuilder
from clirplug.rerank.bowfd import (
    BowfdWeights,
    PreparedSentence,
    bm25_matrix,
    combine_sentences,
    derivation_edge_counts,
    derivation_walk,
    derivation_yield,
    explain_sentence,
    lex_features,
    restrict_incoming,
    rsj,
    score_sentence,
)
from clirplug.rerank.bowfd_train import (
    Adadelta,
    FeatureSpace,
    HeldOut,
    TrainQuery,
    train,
    train_epoch,
    training_documents,
)
from clirplug.rerank.config import LtrSettings

pytestmark = pytest.mark.unit

WORDS = ["Files", "file", "the", "copy", "copies", "foo-bar", "dir", "move", "a"]
STOP = {"the", "a"}


def analyze(word):
    """A toy analyzer: lowercase, stopwords dropped, a trailing s stripped, hyphens split."""
    return tuple(t.rstrip("s") for t in word.lower().split("-") if t not in STOP)


def random_forest(rng, levels=4, width=3, edges_per_node=3):
    """A random layered forest: terminals in templates, tails from lower levels, two features."""
    builder = HypergraphBuilder()
    layers = [[builder.add_node(("leaf", i)) for i in range(width)]]
    for v in layers[0]:
        for _ in range(rng.integers(1, edges_per_node + 1)):
            words = tuple(rng.choice(WORDS, size=rng.integers(0, 3)).tolist())
            builder.add_edge(v, (), {"f1": rng.normal(), "f2": rng.normal()}, words)
    for level in range(1, levels):
        below = [v for layer in layers for v in layer]
        layer = [builder.add_node(("n", level, i)) for i in range(1 if level == levels - 1 else width)]
        for v in layer:
            for _ in range(rng.integers(1, edges_per_node + 1)):
                arity = int(rng.integers(1, 3))
                tails = tuple(int(t) for t in rng.choice(below, size=arity, replace=False))
                words = list(rng.choice(WORDS, size=rng.integers(0, 3)).tolist())
                template = words[:1] + list(range(arity)) + words[1:]
                if rng.random() < 0.5:
                    template.reverse()
                builder.add_edge(v, tails, {"f1": rng.normal(), "f2": rng.normal()}, tuple(template))
        layers.append(layer)
    return builder.build(layers[-1][0])


def all_derivations(forest, node=None):
    """Every derivation of ``node`` as (edge multiset as a count vector, yield words)."""
    node = forest.goal if node is None else node
    out = []
    for e in range(forest.offsets[node], forest.offsets[node + 1]):
        for parts in itertools.product(*(all_derivations(forest, t) for t in forest.tails[e])):
            counts = np.zeros(forest.num_edges)
            counts[e] += 1
            words = []
            for item in forest.templates[e]:
                if isinstance(item, str):
                    words.append(item)
                else:
                    counts += parts[item][0]
                    words.extend(parts[item][1])
            out.append((counts, words))
    return out


def brute_force(forest, smt, v_of, bm25_of, docs):
    """max over derivations of SMT score plus Σ over yield words' terms of w_t bm25(t, d)."""
    best = []
    derivations = all_derivations(forest)
    scores = forest.edge_scores(smt)
    for d in docs:
        values = [counts @ scores + sum(v_of(t) * bm25_of(t, d) for w in words for t in analyze(w))
                  for counts, words in derivations]
        best.append(max(values))
    return np.array(best), len(derivations)


def toy_documents(rng, sentence, num_docs):
    """A random BM25 matrix over the forest's terms plus a lookup by term."""
    bm25 = rng.uniform(-0.3, 2.0, size=(num_docs, len(sentence.terms)))
    bm25[rng.random(bm25.shape) < 0.5] = 0.0  # documents lack terms
    bm25[0] = 0.0  # one document with no term of the forest at all
    column = {t: i for i, t in enumerate(sentence.terms)}
    return bm25, lambda t, d: bm25[d, column[t]] if t in column else 0.0


SMT = {"f1": 0.7, "f2": -0.4}


@pytest.mark.parametrize("seed", range(12))
def test_vectorized_viterbi_equals_enumerating_every_derivation(seed):
    rng = np.random.default_rng(seed)
    forest = random_forest(rng)
    sentence = PreparedSentence(forest, analyze)
    bm25, bm25_of = toy_documents(rng, sentence, num_docs=7)
    term_w = rng.uniform(0.2, 2.0, size=len(sentence.terms))
    w_of = dict(zip(sentence.terms, term_w)).get
    result = score_sentence(sentence, sentence.edge_scores(BowfdWeights(smt=SMT)), term_w, bm25, back_pointers=True,
                            dtype=np.float64)
    expected, count = brute_force(forest, SMT, w_of, bm25_of, range(7))
    assert count > 3  # the forest is not trivial
    np.testing.assert_allclose(result.scores, expected, rtol=1e-10, atol=1e-10)
    # the document without forest terms is pre-filtered and keeps the SMT Viterbi score
    assert not result.active[0]
    assert result.scores[0] == pytest.approx(forest.viterbi(SMT).score)
    # the scores-only pass (rank-major plan) gives the same scores, in float64 to 1e-10 and in
    # float32 (its default) to float32 precision, also in chunks of one document
    edge_scores = sentence.edge_scores(BowfdWeights(smt=SMT))
    exact = score_sentence(sentence, edge_scores, term_w, bm25, dtype=np.float64)
    np.testing.assert_allclose(exact.scores, expected, rtol=1e-10, atol=1e-10)
    fast = score_sentence(sentence, edge_scores, term_w, bm25)
    np.testing.assert_allclose(fast.scores, expected, rtol=1e-6, atol=1e-5)
    chunked = score_sentence(sentence, edge_scores, term_w, bm25, max_cells=1, dtype=np.float64)
    np.testing.assert_allclose(chunked.scores, expected, rtol=0, atol=1e-10)
    chunked = score_sentence(sentence, edge_scores, term_w, bm25, back_pointers=True, max_cells=1, dtype=np.float64)
    np.testing.assert_array_equal(chunked.scores, result.scores)
    # back pointers change no score: the same pass, in float32 as in float64
    np.testing.assert_array_equal(score_sentence(sentence, edge_scores, term_w, bm25, back_pointers=True).scores,
                                  fast.scores)
    np.testing.assert_array_equal(result.scores, exact.scores)


@pytest.mark.parametrize("seed", range(8))
def test_plan_viterbi_equals_enumeration_on_nodes_of_many_incoming_edges(seed):
    """Wide forests (up to 6 incoming edges a node, unary and binary edges): the rank-major blocks."""
    rng = np.random.default_rng(500 + seed)
    forest = random_forest(rng, levels=3, width=4, edges_per_node=6)
    assert np.diff(forest.offsets).max() >= 2  # some node takes a max over several edges
    sentence = PreparedSentence(forest, analyze)
    bm25, bm25_of = toy_documents(rng, sentence, num_docs=6)
    term_w = rng.uniform(-0.5, 2.0, size=len(sentence.terms))  # learned weights may be negative
    w_of = dict(zip(sentence.terms, term_w)).get
    expected, _ = brute_force(forest, SMT, w_of, bm25_of, range(6))
    result = score_sentence(sentence, forest.edge_scores(SMT), term_w, bm25, dtype=np.float64)
    np.testing.assert_allclose(result.scores, expected, rtol=1e-10, atol=1e-10)
    # the plan stores every edge once, each level's rank blocks shrinking
    assert sorted(sentence.plan.order.tolist()) == list(range(forest.num_edges))
    for _, _, lo, hi, sizes, _ in sentence.plan.levels:
        assert sum(sizes) == hi - lo and sizes == sorted(sizes, reverse=True)


def reference_plan(forest):
    """ViterbiPlan's layout built level by level, node rank by node rank: the rows, their nodes and tails."""
    n = forest.num_nodes
    degree = np.diff(forest.offsets)
    new_id = np.empty(n + 1, dtype=np.int64)
    new_id[n] = n
    order, row_node, levels, blocks = [], [], [], []
    row = 0
    for level in range(len(forest.level_bounds) - 1):
        first, last = int(forest.level_bounds[level]), int(forest.level_bounds[level + 1])
        nodes = first + np.argsort(-degree[first:last], kind="stable")
        new_id[nodes] = np.arange(first, last)
        deg = degree[nodes]
        sizes = [int(np.count_nonzero(deg > j)) for j in range(int(deg.max(initial=0)))]
        edges = np.concatenate([forest.offsets[nodes[:size]] + j for j, size in enumerate(sizes)] or
                               [np.zeros(0, dtype=np.int64)])
        order.append(edges)
        row_node.extend(np.arange(first, first + size) for size in sizes)
        tails = new_id[forest.tail_matrix[edges]]
        real = tails < n
        blocks.append(sp.csr_matrix((np.ones(int(real.sum()), dtype=np.float32),
                                     (np.repeat(np.arange(len(edges)), real.sum(axis=1)), tails[real])),
                                    shape=(len(edges), n)))
        levels.append((first, last, row, row + len(edges), sizes, bool(real.any())))
        row += len(edges)
    return np.concatenate(order), np.concatenate(row_node), new_id[:n], levels, sp.vstack(blocks, format="csr")


@pytest.mark.parametrize("seed", range(8))
def test_plan_layout_equals_the_level_by_level_construction(seed):
    """The vectorized layout of the plan is the one built level by level (same rows, tails, blocks)."""
    rng = np.random.default_rng(400 + seed)
    forest = random_forest(rng, levels=int(rng.integers(2, 6)), width=int(rng.integers(2, 5)),
                           edges_per_node=int(rng.integers(1, 6)))
    plan = PreparedSentence(forest, analyze).plan
    order, row_node, node_rows, levels, tails = reference_plan(forest)
    np.testing.assert_array_equal(plan.order, order)
    np.testing.assert_array_equal(plan.row_node, row_node)
    np.testing.assert_array_equal(plan.node_rows, node_rows)
    assert plan.levels == levels
    for name in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(plan.tails, name), getattr(tails, name))
    first_rank = np.zeros(len(order), dtype=bool)
    for _, _, lo, _, sizes, _ in levels:
        first_rank[lo:lo + sizes[0]] = True
    np.testing.assert_array_equal(plan.first_rank, first_rank)
    np.testing.assert_array_equal(plan.adds_tails, np.repeat([adds for *_, adds in levels],
                                                             [hi - lo for _, _, lo, hi, _, _ in levels]))


@pytest.mark.parametrize("seed", range(6))
def test_winning_derivation_scores_what_it_yields(seed):
    """The winning derivation's score is its SMT score plus the BM25 of its yield's terms (with repeats)."""
    rng = np.random.default_rng(100 + seed)
    forest = random_forest(rng)
    sentence = PreparedSentence(forest, analyze)
    bm25, bm25_of = toy_documents(rng, sentence, num_docs=5)
    v = 1.3
    weights = BowfdWeights(smt=SMT, v=v)
    result = score_sentence(sentence, sentence.edge_scores(weights), weights.term_weights(sentence.terms), bm25,
                            back_pointers=True, dtype=np.float64)
    smt_scores = forest.edge_scores(SMT)
    for d in range(5):
        pointers = result.back_pointers(d)
        words = derivation_yield(forest, pointers)
        counts = derivation_edge_counts(forest, pointers)
        ir = sum(bm25_of(t, d) for w in words for t in analyze(w))
        fired = (sentence.counts.T @ counts) @ bm25[d]  # the IR features along the derivation
        assert fired == pytest.approx(ir, abs=1e-12)
        assert result.scores[d] == pytest.approx(counts @ smt_scores + v * ir, abs=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_derivation_walk_reads_the_derivation_tree_of_the_back_pointers(seed):
    """The walk off the templates gives the edges and the words of the derivation tree the pointers make."""
    rng = np.random.default_rng(200 + seed)
    forest = random_forest(rng)
    sentence = PreparedSentence(forest, analyze)
    bm25, _ = toy_documents(rng, sentence, num_docs=6)
    weights = BowfdWeights(smt=SMT, v=1.3)
    result = score_sentence(sentence, sentence.edge_scores(weights), weights.term_weights(sentence.terms), bm25,
                            back_pointers=True)
    for d in range(6):
        pointers = result.back_pointers(d)
        tree = forest.derivation_from_backpointers(pointers)
        edges, words = derivation_walk(forest, pointers)
        assert sorted(edges) == sorted(forest.derivation_edges(tree))
        assert words == derivation_yield(forest, pointers) == forest.derivation_yield(tree)[0]
        np.testing.assert_array_equal(derivation_edge_counts(forest, pointers),
                                      np.bincount(forest.derivation_edges(tree), minlength=forest.num_edges))


@pytest.mark.parametrize("seed", range(6))
def test_explain_sentence_equals_each_document_explained_alone(seed):
    """All documents explained at once: each one's yield, score and fired BM25 features (c(t) bm25(t, d), to the
    last bit) as when its derivation tree is built and its term counts summed on its own."""
    rng = np.random.default_rng(300 + seed)
    forest = random_forest(rng)
    sentence = PreparedSentence(forest, analyze)
    bm25, _ = toy_documents(rng, sentence, num_docs=7)  # document 0 is pre-filtered
    weights = BowfdWeights(smt=SMT, v=1.3)
    result = score_sentence(sentence, sentence.edge_scores(weights), weights.term_weights(sentence.terms), bm25,
                            back_pointers=True)
    explained = explain_sentence(sentence, result, bm25)
    assert len(explained) == 7 and explained[0]["prefiltered"]
    for d, record in enumerate(explained):
        tree = forest.derivation_from_backpointers(result.back_pointers(d))
        counts = np.bincount(forest.derivation_edges(tree), minlength=forest.num_edges).astype(float)
        term_counts = sentence.counts.T @ counts
        fired = {str(t): round(float(c * v), 6) for t, c, v in zip(sentence.terms, term_counts, bm25[d]) if c and v}
        assert record == {"yield": " ".join(forest.derivation_yield(tree)[0]), "score": float(result.scores[d]),
                          "prefiltered": not result.active[d], "bm25": fired}
        assert list(record["bm25"]) == list(fired)  # in the order of the sentence's terms


def test_v_zero_gives_every_document_the_smt_viterbi_score():
    rng = np.random.default_rng(7)
    forest = random_forest(rng)
    sentence = PreparedSentence(forest, analyze)
    bm25, _ = toy_documents(rng, sentence, num_docs=9)
    weights = BowfdWeights(smt=SMT, v=0.0)
    result = score_sentence(sentence, sentence.edge_scores(weights), weights.term_weights(sentence.terms), bm25)
    np.testing.assert_allclose(result.scores, np.full(9, forest.viterbi(SMT).score), rtol=1e-6)
    assert not result.active.any() and np.all(result.scores == result.smt_score)


def test_a_term_produced_twice_fires_twice():
    # goal <- X X, each X -> "copy": the only derivation produces "copy" twice
    builder = HypergraphBuilder()
    x = builder.add_node("X")
    goal = builder.add_node("S")
    builder.add_edge(x, (), {"f1": 0.5}, ("copy",))
    builder.add_edge(goal, (x, x), {}, (0, 1))
    forest = builder.build(goal)
    sentence = PreparedSentence(forest, analyze)
    bm25 = np.array([[0.75]])
    result = score_sentence(sentence, forest.edge_scores(SMT), np.array([2.0]), bm25)
    assert result.scores[0] == pytest.approx(2 * 0.7 * 0.5 + 2 * (2.0 * 0.75))


def test_beam_keeps_the_first_incoming_edges_in_decoder_order():
    rng = np.random.default_rng(3)
    forest = random_forest(rng, edges_per_node=4)
    pruned = restrict_incoming(forest, 2)
    for v in range(pruned.num_nodes):
        assert pruned.offsets[v + 1] - pruned.offsets[v] <= 2
    # each node keeps exactly the templates of its first two edges in the original order
    label_edges = {}
    for e in range(forest.num_edges):
        label_edges.setdefault(forest.labels[forest.heads[e]], []).append((forest.templates[e], forest.tails[e]))
    for v in range(pruned.num_nodes):
        kept = [pruned.templates[e] for e in range(pruned.offsets[v], pruned.offsets[v + 1])]
        original = [t for t, _ in label_edges[pruned.labels[v]]][:2]
        assert kept == original
    # and the beamed scores are the brute force of the beamed forest
    sentence = PreparedSentence(forest, analyze, beam=2)
    bm25, bm25_of = toy_documents(rng, sentence, 4)
    w = np.ones(len(sentence.terms))
    result = score_sentence(sentence, sentence.forest.edge_scores(SMT), w, bm25)
    expected, _ = brute_force(pruned, SMT, lambda t: 1.0, bm25_of, range(4))
    np.testing.assert_allclose(result.scores, expected, atol=1e-10)
    with pytest.raises(ClirplugError):
        restrict_incoming(forest, 0)


def test_edge_terms_count_analyzed_target_words():
    builder = HypergraphBuilder()
    x = builder.add_node("X")
    goal = builder.add_node("S")
    builder.add_edge(x, (), {}, ("Files", "the", "foo-bar", "file"))
    builder.add_edge(goal, (x,), {}, (0, "copies"))
    sentence = PreparedSentence(builder.build(goal), analyze)
    table = {(int(e), str(sentence.terms[t])): c for (e, t), c in sentence.counts.todok().items()}
    leaf = next(e for e in range(2) if sentence.forest.tails[e] == ())
    assert table == {(leaf, "file"): 2.0, (leaf, "foo"): 1.0, (leaf, "bar"): 1.0, (1 - leaf, "copie"): 1.0}


def test_combine_sentences_multiplies_experts_with_min_smoothing():
    s1 = np.array([-1.0, -2.0, -3.0, -4.0])
    s2 = np.array([-4.0, -1.0, -2.0, -3.0])
    # top-2 of s1: docs 0, 1 (min -2); top-2 of s2: docs 1, 2 (min -2)
    np.testing.assert_allclose(combine_sentences([s1, s2], k=2), [-1 - 2, -2 - 1, -2 - 2, -2 - 2])
    np.testing.assert_allclose(combine_sentences([s1, s2], k=10), s1 + s2)
    # in probability space this is the product of exp(scores)
    assert math.exp(combine_sentences([s1, s2], k=10)[0]) == pytest.approx(math.exp(-1) * math.exp(-4))


def test_rsj_and_bm25_matrix_by_hand():
    assert rsj(1, 10)[()] == pytest.approx(math.log(9.5 / 1.5))
    assert rsj(8, 10)[()] < 0  # df > N/2: the paper's formula is negative

    class Index:  # two documents, two terms
        num_docs = 2
        avg_doc_length = 3.0
        doc_lengths = np.array([2.0, 4.0])

        def df(self, terms):
            return np.array([{"x": 1, "y": 2}[t] for t in terms])

        def tf_matrix(self, terms, docs):
            table = {"x": [3, 0], "y": [1, 2]}
            return sp.csr_matrix(np.array([table[t] for t in terms], dtype=float).T[docs])

        def bm25_tf(self, tf, k1, b, docs):
            norm = k1 * (1 - b + b * self.doc_lengths[docs] / self.avg_doc_length)
            tf = tf.toarray()
            return tf / (tf + norm[:, None])

    matrix = bm25_matrix(Index(), ["x", "y"], np.array([1, 0]), k1=1.2, b=0.75)
    norm0 = 1.2 * (0.25 + 0.75 * 2 / 3)
    norm1 = 1.2 * (0.25 + 0.75 * 4 / 3)
    expected = [[0.0, math.log(0.5 / 2.5) * 2 / (2 + norm1)],
                [math.log(1.5 / 1.5) * 3 / (3 + norm0), math.log(0.5 / 2.5) * 1 / (1 + norm0)]]
    np.testing.assert_allclose(matrix, expected)


def test_lex_features_of_a_rule():
    rule = Rule("X", ("das", "[X,1]", "und", "zwar"), ("the", "[X,1]", "indeed", "so"), (), ((0, 0), (3, 2), (1, 1)))
    builder = HypergraphBuilder()
    x = builder.add_node("X")
    goal = builder.add_node("S")
    builder.add_edge(x, (), {}, ("a",), rule=Rule("X", ("a",), ("a",), (), ((0, 0),)))
    builder.add_edge(goal, (x,), {}, ("the", 0, "indeed", "so"), rule=rule)
    features = lex_features(builder.build(goal))
    assert features[0] == {"LEXA:a|a": 1.0}
    assert features[1] == {"LEXA:das|the": 1.0, "LEXA:zwar|indeed": 1.0, "LEXI:so": 1.0, "LEXD:und": 1.0}


def test_lex_weights_change_edge_scores():
    builder = HypergraphBuilder()
    x = builder.add_node("X")
    goal = builder.add_node("S")
    builder.add_edge(x, (), {"f1": 1.0}, ("a",), rule=Rule("X", ("x",), ("a",), (), ()))
    builder.add_edge(x, (), {"f1": 1.2}, ("b",), rule=Rule("X", ("x",), ("b",), (), ((0, 0),)))
    builder.add_edge(goal, (x,), {}, (0,))
    sentence = PreparedSentence(builder.build(goal), analyze, lex=True)
    plain = BowfdWeights(smt={"f1": 1.0}, lex_enabled=True)
    assert sentence.forest.viterbi(plain.smt).score == pytest.approx(1.2)
    lexed = BowfdWeights(smt={"f1": 1.0}, lex={"LEXI:a": 0.5, "LEXA:x|b": -0.1}, lex_enabled=True)
    scores = sentence.edge_scores(lexed)
    result = score_sentence(sentence, scores, np.zeros(len(sentence.terms)), np.zeros((1, len(sentence.terms))))
    assert result.scores[0] == pytest.approx(max(1.0 + 0.5 + 0.0, 1.2 - 0.1))


def test_weights_file_round_trip_and_errors(tmp_path):
    weights = BowfdWeights(smt={"LanguageModel": 1.0, "EgivenF": -0.5}, v=1.6,
                           ir={"file": 2.0, "c#": 0.5, "50%": 1.0}, lex={"LEXA:#x|y": 0.1}, lex_enabled=True)
    path = tmp_path / "w.txt"
    weights.save(path, comment="trained\nby a test")
    text = path.read_text()
    assert text.startswith("# trained\n# by a test\n") and "IR:file 2.0" in text
    assert BowfdWeights.load(path) == weights
    path.write_text("IR_default 1.0\nIR:x one\n")
    with pytest.raises(ClirplugError, match=r"w.txt:2: weight 'one' is not a number"):
        BowfdWeights.load(path)
    path.write_text("IR_default 1.0\nbogus 1\n")
    with pytest.raises(ClirplugError, match=r"w.txt:2: unknown BOW-FD weight"):
        BowfdWeights.load(path)
    path.write_text("IR:x 1\n")
    with pytest.raises(ClirplugError, match="no IR_default"):
        BowfdWeights.load(path)


# ============================================================================ learning to rank


def two_choice_forest():
    """One source word with two translations: "alpha" (SMT favourite) and "beta"."""
    builder = HypergraphBuilder()
    x = builder.add_node("X")
    goal = builder.add_node("S")
    builder.add_edge(x, (), {"f1": 1.0}, ("alpha",))
    builder.add_edge(x, (), {"f1": 0.5}, ("beta",))
    builder.add_edge(goal, (x,), {}, (0,))
    return builder.build(goal)


def toy_query(space, qid, n_rel=2, n_irr=3):
    """Relevant documents hold "beta", irrelevant ones hold "alpha" with a higher BM25."""
    sentence = PreparedSentence(two_choice_forest(), lambda w: (w,))
    column = {t: i for i, t in enumerate(sentence.terms)}
    rows, relevance = [], []
    for i in range(n_rel + n_irr):
        row = np.zeros(len(sentence.terms))
        row[column["beta" if i < n_rel else "alpha"]] = (1.0 if i < n_rel else 2.0) + 0.1 * i
        rows.append(row)
        relevance.append(1.0 if i < n_rel else 0.0)
    return TrainQuery(qid, [sentence], [f"d{i}" for i in range(len(rows))], np.array(relevance), [np.array(rows)], space)


def test_ltr_learns_the_term_weights_that_rank_the_toy_problem(tmp_path):
    space = FeatureSpace()
    queries = [toy_query(space, f"q{i}") for i in range(4)]
    held = [HeldOut(toy_query(space, "held"), 2)]
    start = BowfdWeights(smt={"f1": 1.0}, v=0.8)
    weights, history = train(queries, held, space, start, LtrSettings(epochs=30, patience=30), 1000, jobs=2,
                             progress=False)
    # at v = 0.8 the irrelevant "alpha" documents outrank the relevant ones
    assert history[0]["held_out_map"] < 0.6
    assert history[-1] == {"best_epoch": history[-1]["best_epoch"], "held_out_map": 1.0}
    assert history[-2]["violated"] == 0  # every training pair ends up ranked with its margin
    assert weights.ir["beta"] > 0.8 > weights.ir["alpha"]
    assert weights.smt == {"f1": 1.0}  # SMT weights frozen, as in the paper
    weights.save(tmp_path / "w")
    assert BowfdWeights.load(tmp_path / "w") == weights


def test_subgradient_is_the_winning_derivations_feature_vector():
    """score(θ + δ) - score(θ) = Φ(h*)·δ for a small δ when the winner does not change."""
    rng = np.random.default_rng(11)
    space = FeatureSpace()
    sentence = PreparedSentence(random_forest(rng), analyze)
    bm25, _ = toy_documents(rng, sentence, 4)
    query = TrainQuery("q", [sentence], ["a", "b", "c", "d"], np.array([1.0, 0, 0, 0]), [bm25], space)
    theta = space.vector(BowfdWeights(smt=SMT, v=1.1))
    docs = np.arange(4)
    scores, results = query.scores(theta, docs, 1000, back_pointers=True)
    delta = rng.normal(size=len(theta)) * 1e-7
    moved, _ = query.scores(theta + delta, docs, 1000, back_pointers=True)  # float64, as the gradient
    for j in range(4):
        phi = query.features(results, docs, j, len(theta))
        assert moved[j] - scores[j] == pytest.approx(phi @ delta, abs=1e-12)
        assert scores[j] == pytest.approx(phi @ theta, abs=1e-10)  # the score is linear in Φ


def test_adadelta_first_steps_by_hand():
    optimizer = Adadelta(2, rho=0.95, epsilon=1e-6)
    theta = np.array([1.0, 2.0])
    optimizer.step(theta, np.array([1.0, 0.0]))
    step = -math.sqrt(1e-6) / math.sqrt(0.05 + 1e-6)
    assert theta == pytest.approx([1.0 + step, 2.0])
    optimizer.step(theta, np.array([0.0, 0.0]))  # a zero gradient moves nothing
    assert theta == pytest.approx([1.0 + step, 2.0])
    assert optimizer.grad2[0] == pytest.approx(0.95 * 0.05)
    assert optimizer.step2[0] == pytest.approx(0.95 * 0.05 * step * step)


def test_parameter_mixing_averages_the_shards_after_an_epoch():
    space = FeatureSpace()
    queries = [toy_query(space, f"q{i}", n_rel=1 + i % 2) for i in range(3)]
    start = BowfdWeights(smt={"f1": 1.0}, v=0.8)
    weights, _ = train(queries, [], space, start, LtrSettings(epochs=1), 1000, jobs=2, progress=False)
    theta = space.vector(start) / 0.8  # training runs in the units of v
    mask = space.trainable(False)
    by_hand = [train_epoch(shard, theta, Adadelta(len(theta), 0.95, 1e-6), mask, 1000)[0]
               for shard in (queries[0::2], queries[1::2])]
    assert space.vector(weights) == pytest.approx(np.mean(by_hand, axis=0) * 0.8)


def same_history(a, b):
    """Two training histories alike: the same records, numbers equal up to rounding."""
    return len(a) == len(b) and all(x.keys() == y.keys() and all(x[k] == pytest.approx(y[k]) for k in x)
                                    for x, y in zip(a, b))


@pytest.mark.parametrize("factor", [0.05, 20.0])
def test_ltr_does_not_depend_on_the_arbitrary_scale_of_the_start_weights(factor):
    """Multiplying every start weight by the same factor leaves the BOW-FD ranking unchanged (the
    decoder tuner's scale is arbitrary), and so must it leave training: the same epochs, the same
    held-out MAPs, the learned weights multiplied by the factor. Unscaled, the hinge's margin and
    Adadelta's steps would act 1/factor times as strongly."""
    space = FeatureSpace()
    queries = [toy_query(space, f"q{i}") for i in range(4)]
    held = [HeldOut(toy_query(space, "held"), 2)]
    config = LtrSettings(epochs=30, patience=30)
    base = BowfdWeights(smt={"f1": 1.0}, v=0.8)
    scaled = BowfdWeights(smt={"f1": factor}, v=0.8 * factor)
    weights, history = train(queries, held, space, base, config, 1000, jobs=1, progress=False)
    weights_scaled, history_scaled = train(queries, held, space, scaled, config, 1000, jobs=1, progress=False)
    assert same_history(history_scaled, history)
    assert history[-1]["held_out_map"] == 1.0
    assert weights_scaled.v == scaled.v and weights_scaled.smt == scaled.smt  # frozen, exactly as given
    assert weights_scaled.ir.keys() == weights.ir.keys() and weights.ir
    for term, value in weights.ir.items():
        assert weights_scaled.ir[term] == pytest.approx(value * factor)


def test_one_epoch_at_a_small_scale_moves_term_weights_by_a_fraction_of_v():
    """manclir-de's regime: v = 0.04 beside decoder weights of ~0.05. Adadelta's first steps are
    ~0.0045 whatever the scale, so unscaled (``unit_v=False``) one epoch of the toy problem moved the
    term weights by more than v itself ("alpha" below zero, "beta" past 2v); in the units of v they
    move by a few percent of v, as they do at v = 0.8, and the problem is still learned."""
    def trained(unit_v, epochs):
        space = FeatureSpace()
        queries = [toy_query(space, f"q{i}") for i in range(4)]
        held = [HeldOut(toy_query(space, "held"), 2)] if epochs > 1 else []  # without: the last epoch's weights
        start = BowfdWeights(smt={"f1": 0.05}, v=0.04)
        return train(queries, held, space, start, LtrSettings(epochs=epochs, patience=epochs, unit_v=unit_v),
                     1000, jobs=1, progress=False)

    weights, _ = trained(True, 1)
    assert 0.9 * 0.04 < weights.ir["alpha"] < 0.04 < weights.ir["beta"] < 1.1 * 0.04
    weights, _ = trained(False, 1)
    assert weights.ir["alpha"] < 0 and weights.ir["beta"] > 2 * 0.04
    weights, history = trained(True, 30)
    assert history[0]["held_out_map"] < 0.6 and history[-1]["held_out_map"] == 1.0
    assert weights.ir["beta"] > 0.04 > weights.ir["alpha"]


def test_training_pairs_and_margins():
    docids, relevance = training_documents(["x", "m", "y", "z", "s"], {"m": 2, "s": 1, "t": 1}, negatives=2)
    assert docids == ["m", "s", "t", "x", "y"] and relevance.tolist() == [2, 1, 1, 0, 0]
    space = FeatureSpace()
    sentence = PreparedSentence(two_choice_forest(), lambda w: (w,))
    query = TrainQuery("q", [sentence], docids, relevance, [np.zeros((5, len(sentence.terms)))], space)
    assert query.pairs == [(0, 1, 1.0), (0, 2, 1.0), (0, 3, 2.0), (0, 4, 2.0),
                           (1, 3, 1.0), (1, 4, 1.0), (2, 3, 1.0), (2, 4, 1.0)]


def test_training_documents_within_the_reranking_depth():
    """A judged document outside the top ``depth`` candidates cannot be reached by reranking: no pairs."""
    candidates = ["x", "m", "y", "s", "z", "t"]
    docids, relevance = training_documents(candidates, {"m": 2, "s": 1, "t": 1, "u": 2}, negatives=2, depth=4)
    assert docids == ["m", "s", "x", "y"] and relevance.tolist() == [2, 1, 0, 0]
    # judged documents are never negatives, even when cut off by the depth
    docids, _ = training_documents(["x", "t"], {"m": 2, "t": 1}, negatives=2, depth=1)
    assert docids == ["x"]
    docids, relevance = training_documents(candidates, {"m": 2, "u": 2}, negatives=1)  # no depth: every judged one
    assert docids == ["m", "u", "x"] and relevance.tolist() == [2, 2, 0]


def test_average_precision_by_hand():
    from clirplug.eval.measures import average_precision

    assert average_precision(np.array([0, 2, 0, 1]), 3) == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert average_precision(np.array([0, 0]), 0) == 0.0


def test_held_out_map_breaks_ties_by_docid_descending_like_trec_eval():
    from clirplug.rerank.bowfd_train import mean_average_precision

    space = FeatureSpace()
    sentence = PreparedSentence(two_choice_forest(), lambda w: (w,))
    # no document holds a forest term: every score is the SMT Viterbi score, a tie
    query = TrainQuery("q", [sentence], ["a", "c", "b"], np.array([1.0, 0.0, 0.0]),
                       [np.zeros((3, len(sentence.terms)))], space)
    theta = space.vector(BowfdWeights(smt={"f1": 1.0}))
    # trec_eval's order of the tie: c, b, a -> the relevant "a" at rank 3
    assert mean_average_precision([HeldOut(query, 1)], theta, 1000) == pytest.approx(1 / 3)


@pytest.mark.parametrize("peak, grid, tried", [
    (0.004, [0.025, 0.05, 0.1], [0.025, 0.05, 0.1, 0.0125, 0.00625, 0.003125, 0.0015625]),  # 4 halvings at most
    (0.01, [0.025, 0.05, 0.1], [0.025, 0.05, 0.1, 0.0125, 0.00625]),  # stops once the best is inside
    (0.05, [0.025, 0.05, 0.1], [0.025, 0.05, 0.1]),
    (0.5, [0.025, 0.05, 0.1], [0.025, 0.05, 0.1, 0.2, 0.4, 0.8]),
])
def test_choose_v_extends_the_grid_past_an_edge_while_it_improves(monkeypatch, peak, grid, tried):
    from clirplug.rerank import bowfd_train
    from clirplug.rerank.bowfd import BowfdWeights

    class Space:
        def vector(self, weights):
            return weights.v

    # a held-out MAP that peaks at ``peak`` (on a log scale)
    monkeypatch.setattr(bowfd_train, "mean_average_precision", lambda held_out, v, depth: -abs(math.log(v / peak)))
    start = BowfdWeights(smt={}, v=1.0)
    table = bowfd_train.choose_v([], Space(), start, grid, 1)
    assert [v for v, _ in table] == pytest.approx(tried)
