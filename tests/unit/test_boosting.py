"""Bagged RankBoost over hashed n-gram pairs (Sokolov et al. 2013, Section 3.3), checked by hand and by brute force."""

import math
import struct

import mmh3
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from clirplug.boost import (
    BoostModel,
    Collection,
    RankBoost,
    buckets,
    column_classes,
    merge_duplicates,
    ngram_hashes,
    ngrams,
    pair_hashes,
    pair_matrices,
    rerank_run,
    sample_triples,
    train,
    training_pairs,
)
from clirplug.errors import ClirplugError
from clirplug.io.topics import Topic
from clirplug.rerank.config import BoostConfig

pytestmark = pytest.mark.cli

# ----------------------------------------------------------------------------- FIXTURES

BITS = 20  # roomy enough that the tiny vocabularies below never collide (asserted)


def tiny_collection(texts, order=1):
    return Collection(list(texts), [ngrams(text.split(), order) for text in texts.values()])


def tiny_triples():
    """Two one-word queries, four documents, four triples written out by hand."""
    collection = tiny_collection({"A": "house", "B": "cat", "C": "house cat", "D": "dog"})
    query_grams = [["haus"], ["katze"]]
    query_hashes = [ngram_hashes(g) for g in query_grams]
    row = collection.row
    #            (q, d+, d-, D0)
    triples = [(0, row["A"], row["D"], 2.0),  # P: haus-house   M: haus-dog
               (0, row["C"], row["B"], 2.0),  # P: haus-house   M: -
               (1, row["B"], row["A"], 2.0),  # P: katze-cat    M: katze-house
               (1, row["C"], row["D"], 1.0)]  # P: katze-house, katze-cat   M: katze-dog
    q, pos, neg, d0 = (np.array(column) for column in zip(*triples))
    return collection, query_grams, query_hashes, q, pos, neg, d0


def column_of(features, source, target, collection):
    bucket = buckets(ngram_hashes([source]), collection.hashes[collection.vocabulary[target]], BITS)
    return int(np.flatnonzero(features == bucket)[0])


def dense_rankboost(x, d0, epsilon, iterations):
    """Algorithm 1 with every W+- recomputed from scratch each iteration (the reference)."""
    d = np.array(d0, dtype=float)
    chosen = []
    for _ in range(iterations):
        w_plus = np.where(x > 0, x, 0).T @ d
        w_minus = np.where(x < 0, -x, 0).T @ d
        criterion = np.abs(np.sqrt(w_plus) - np.sqrt(w_minus))
        h = int(np.argmax(criterion))
        if criterion[h] <= 0:
            break
        z = d.sum()
        w = 0.5 * math.log((w_plus[h] + epsilon * z) / (w_minus[h] + epsilon * z))
        d = d * np.exp(-w * x[:, h])
        chosen.append((h, w))
    return chosen, d


# ----------------------------------------------------------------------------- hashing


def test_ngram_hash_is_murmurhash3_of_utf8():
    grams = ["größe", "file system", "ls"]
    assert ngram_hashes(grams, 3).tolist() == [mmh3.hash(g.encode("utf-8"), 3, signed=False) for g in grams]


def test_vectorized_pair_hash_equals_mmh3_on_the_packed_pair():
    rng = np.random.default_rng(0)
    source = rng.integers(0, 2**32, 40, dtype=np.uint64).astype(np.uint32)
    target = rng.integers(0, 2**32, 30, dtype=np.uint64).astype(np.uint32)
    table = pair_hashes(source[:, None], target[None, :], seed=11)
    for i in (0, 7, 39):
        for j in (0, 13, 29):
            expected = mmh3.hash(struct.pack("<II", int(source[i]), int(target[j])), 11, signed=False)
            assert int(table[i, j]) == expected
    assert buckets(source[:, None], target[None, :], 8, seed=11).max() < 2**8


def test_ngrams_uni_and_bigrams_without_punctuation():
    assert ngrams(["ls", "(", "list", "ls"], 2) == ["ls", "list", "ls list", "list ls"]
    assert ngrams(["a", "b"], 1) == ["a", "b"]


# ----------------------------------------------------------------------------- the hand-made example


def test_hand_made_triples_first_two_iterations():
    collection, query_grams, query_hashes, q, pos, neg, d0 = tiny_triples()
    positive, negative, features = pair_matrices(query_hashes, collection, q, pos, neg, BITS)
    assert len(features) == 5  # haus-house, haus-dog, katze-cat, katze-house, katze-dog: no collision
    col = {pair: column_of(features, *pair, collection) for pair in
           [("haus", "house"), ("haus", "dog"), ("katze", "cat"), ("katze", "house"), ("katze", "dog")]}
    eps = 0.01
    booster = RankBoost(positive, negative, d0, epsilon=eps)

    # W+- by hand: W+_h sums D0 over triples where h fires for d+ only, W-_h for d- only
    expected_plus = {("haus", "house"): 2 + 2, ("katze", "cat"): 2 + 1, ("katze", "house"): 1}
    expected_minus = {("haus", "dog"): 2, ("katze", "house"): 2, ("katze", "dog"): 1}
    for pair, c in col.items():
        assert booster.w_plus[c] == pytest.approx(expected_plus.get(pair, 0))
        assert booster.w_minus[c] == pytest.approx(expected_minus.get(pair, 0))
    z0 = 2 + 2 + 2 + 1
    assert booster.z == pytest.approx(z0)

    # iteration 1: |sqrt(W+) - sqrt(W-)| = 2, sqrt 2, sqrt 3, sqrt 2 - 1, 1 -> haus-house
    h1, w1 = booster.step()
    assert h1 == col[("haus", "house")]
    assert w1 == pytest.approx(0.5 * math.log((4 + eps * z0) / (0 + eps * z0)))
    # D update (5): triples 1 and 2 rank d+ above d- with h1, so D *= exp(-w1)
    expected_d = np.array([2 * math.exp(-w1), 2 * math.exp(-w1), 2.0, 1.0])
    np.testing.assert_allclose(booster.d, expected_d)
    z1 = expected_d.sum()
    assert booster.z == pytest.approx(z1)
    # W+- of the features co-occurring with h1 (triples 1, 2) follow the new D; others unchanged
    assert booster.w_plus[col[("haus", "house")]] == pytest.approx(4 * math.exp(-w1))
    assert booster.w_minus[col[("haus", "dog")]] == pytest.approx(2 * math.exp(-w1))
    assert booster.w_plus[col[("katze", "cat")]] == pytest.approx(3)

    # iteration 2: criteria 2 exp(-w1/2) = 0.72, sqrt(2 exp(-w1)) = 0.51, sqrt 3, 0.41, 1 -> katze-cat
    h2, w2 = booster.step()
    assert h2 == col[("katze", "cat")]
    assert w2 == pytest.approx(0.5 * math.log((3 + eps * z1) / (0 + eps * z1)))
    np.testing.assert_allclose(booster.d, expected_d * np.array([1, 1, math.exp(-w2), math.exp(-w2)]))
    assert booster.w_minus[col[("katze", "house")]] == pytest.approx(2 * math.exp(-w2))
    assert booster.w_plus[col[("katze", "house")]] == pytest.approx(1 * math.exp(-w2))


def test_incremental_updates_match_the_full_recomputation():
    rng = np.random.default_rng(1)
    x = rng.choice([-1, 0, 0, 0, 1], size=(30, 12))
    d0 = rng.choice([1.0, 2.0], size=30)
    positive, negative = sp.csr_matrix(np.where(x > 0, x, 0)), sp.csr_matrix(np.where(x < 0, -x, 0))
    booster = RankBoost(positive, negative, d0, epsilon=1e-3)
    chosen, weights = booster.fit(8)
    reference, d = dense_rankboost(x, d0, 1e-3, 8)
    assert chosen.tolist() == [h for h, _ in reference]
    np.testing.assert_allclose(weights, [w for _, w in reference])
    np.testing.assert_allclose(booster.d, d)
    np.testing.assert_allclose(booster.w_plus, np.where(x > 0, x, 0).T @ d)
    np.testing.assert_allclose(booster.w_minus, np.where(x < 0, -x, 0).T @ d)


def _with_copied_columns(rng, n_rows=40, n_distinct=15, n_columns=60):
    """x (triples x features, -2..2) whose columns are copies of ``n_distinct`` random ones, shuffled."""
    distinct = rng.choice([-2, -1, 0, 0, 0, 1, 2], size=(n_rows, n_distinct))
    return distinct[:, rng.integers(n_distinct, size=n_columns)]


def _exact_classes(x):
    """Brute force: each column's lowest equal column (as a tuple of its values)."""
    first = {}
    return np.array([first.setdefault(tuple(column), h) for h, column in enumerate(x.T)])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_column_classes_group_exactly_the_equal_columns(seed):
    x = _with_copied_columns(np.random.default_rng(seed))
    positive, negative = sp.csc_matrix(np.maximum(x, 0)), sp.csc_matrix(np.maximum(-x, 0))
    features, classes = column_classes(positive, negative)
    lowest = _exact_classes(x)
    assert features.tolist() == sorted(set(lowest)) and np.array_equal(features[classes], lowest)


def test_column_classes_keep_colliding_unequal_columns_apart(monkeypatch):
    from clirplug import boost

    x = _with_copied_columns(np.random.default_rng(3))
    monkeypatch.setattr(boost, "_column_hashes", lambda matrix, salt: np.zeros(matrix.shape[1], np.uint64))
    features, classes = column_classes(sp.csc_matrix(np.maximum(x, 0)), sp.csc_matrix(np.maximum(-x, 0)))
    for h, lowest in enumerate(features[classes]):  # every hash collides: only columns equal to column 0 join it
        assert lowest == (0 if np.array_equal(x[:, h], x[:, 0]) else h)


def test_equal_columns_are_boosted_once_as_their_lowest_feature():
    rng = np.random.default_rng(4)
    x = _with_copied_columns(rng)
    d0 = rng.choice([1.0, 2.0], size=len(x))
    booster = RankBoost(sp.csr_matrix(np.maximum(x, 0)), sp.csr_matrix(np.maximum(-x, 0)), d0, epsilon=1e-3)
    chosen, weights = booster.fit(12)
    reference, d = dense_rankboost(x, d0, 1e-3, 12)
    assert chosen.tolist() == [h for h, _ in reference]
    np.testing.assert_allclose(weights, [w for _, w in reference])
    np.testing.assert_allclose(booster.d, d)
    # the same path, bit for bit, as boosting the distinct columns alone
    lowest = np.unique(_exact_classes(x))
    alone = RankBoost(sp.csr_matrix(np.maximum(x[:, lowest], 0)), sp.csr_matrix(np.maximum(-x[:, lowest], 0)), d0,
                      epsilon=1e-3)
    chosen_alone, weights_alone = alone.fit(12)
    assert np.array_equal(lowest[chosen_alone], chosen) and np.array_equal(weights_alone, weights)
    assert np.array_equal(alone.d, booster.d) and np.array_equal(alone.w_plus, booster.w_plus[lowest])


def test_duplicate_triples_merge_into_one_with_summed_importance():
    rng = np.random.default_rng(2)
    x = rng.choice([-1, 0, 0, 1], size=(10, 6))
    q, pos, neg = np.arange(10) % 3, np.arange(10) % 5, np.arange(10) % 2
    d0 = np.ones(10)
    pick = np.array([0, 0, 3, 7, 7, 7, 9])
    mq, mpos, mneg, md0 = merge_duplicates(q[pick], pos[pick], neg[pick], d0[pick])
    assert md0.sum() == len(pick) and len(mq) == len(set(zip(q[pick], pos[pick], neg[pick])))
    # same boosting path: 7 rows with duplicates vs 4 merged rows
    rows = x[pick]
    full = RankBoost(sp.csr_matrix(np.maximum(rows, 0)), sp.csr_matrix(np.maximum(-rows, 0)), np.ones(len(pick)))
    merged_rows = x[np.unique(pick)]
    merged = RankBoost(sp.csr_matrix(np.maximum(merged_rows, 0)), sp.csr_matrix(np.maximum(-merged_rows, 0)),
                       np.bincount(pick)[np.unique(pick)].astype(float))
    a, b = full.fit(5), merged.fit(5)
    assert a[0].tolist() == b[0].tolist()
    np.testing.assert_allclose(a[1], b[1])


def test_sample_triples_follow_the_relevance_rule():
    judgements = {"q1": {0: 2, 1: 1}, "q2": {2: 1}}
    q, pos, neg, d0 = sample_triples(judgements, ["q1", "q2"], range(6), 400, np.random.default_rng(3))
    for query, plus, minus, importance in zip(q, pos, neg, d0):
        grades = judgements[["q1", "q2"][query]]
        assert grades.get(minus, 0) < grades[plus]
        assert importance == grades[plus] - grades.get(minus, 0)
    assert {0, 1} <= set(q.tolist())
    again = sample_triples(judgements, ["q1", "q2"], range(6), 400, np.random.default_rng(3))
    assert all((a == b).all() for a, b in zip((q, pos, neg, d0), again))
    with pytest.raises(ClirplugError):
        sample_triples({"q": {0: 1, 1: 1}}, ["q"], range(2), 1, np.random.default_rng(0))


# ----------------------------------------------------------------------------- collisions and scoring


def test_collision_counts_match_brute_force():
    collection, query_grams, query_hashes, q, pos, neg, d0 = tiny_triples()
    bits = 3  # 8 buckets for 2 x 3 distinct pairs: collisions are likely
    found = training_pairs(query_grams, query_hashes, collection, np.r_[q, q], np.r_[pos, neg],
                           np.arange(8), bits)
    pairs = {(query_grams[query][0], t) for query, d in zip(np.r_[q, q], np.r_[pos, neg])
             for t in (collection.strings[i] for i in collection.grams[d])}
    bucket_of = {pair: int(buckets(ngram_hashes([pair[0]]), ngram_hashes([pair[1]]), bits)[0]) for pair in pairs}
    sizes = pd.Series(bucket_of).value_counts()
    assert found["pairs"] == len(pairs)
    assert found["buckets"] == len(sizes)
    assert found["colliding_pairs"] == int(sizes[sizes > 1].sum())
    seen = {(s, t) for _, examples in found["examples"].values() for s, t, _ in examples}
    assert seen <= pairs


def test_scores_equal_the_sum_of_pair_weights_plus_beta_identities():
    collection = tiny_collection({"a": "ls list files", "b": "cat files", "c": "dog"}, order=2)
    config = BoostConfig(order=2, bits=4)  # 16 buckets: many pairs share a weight
    rng = np.random.default_rng(4)
    model = BoostModel(config, np.arange(16), rng.normal(size=16), np.ones(16), beta=0.7)
    text = "ls Dateien auflisten"
    source = ngrams(text.lower().split(), 2)
    expected = []
    for doc in collection.docids:
        target = [collection.strings[i] for i in collection.grams[collection.row[doc]]]
        learned = sum(model.weights[int(buckets(ngram_hashes([s]), ngram_hashes([t]), 4)[0])] for s in source for t in target)
        expected.append(learned + 0.7 * len(set(source) & set(target)))
    np.testing.assert_allclose(model.score(text, collection), expected)  # inverted index, whole collection
    np.testing.assert_allclose(model.score(text, collection, rows=np.array([2, 0])), [expected[2], expected[0]])
    topics = [Topic("q", text, text)]
    searched = model.search(topics, collection, depth=3)
    reranked = model.rerank(topics, collection, pd.DataFrame({"qid": ["q", "q"], "docid": ["c", "a"]}))
    assert searched["docid"].tolist()[0] == collection.docids[int(np.argmax(expected))]
    assert dict(zip(reranked["docid"], reranked["score"])) == pytest.approx({"a": expected[0], "c": expected[2]})


def test_latencies_are_added_per_topic_and_leave_the_run_unchanged():
    """The experiment times each query through ``latencies``: one entry per topic (a topic whose candidates
    are all outside the collection included), added to what it held, the run the same as without."""
    collection = tiny_collection({"a": "ls list files", "b": "cat files", "c": "dog"}, order=2)
    model = BoostModel(BoostConfig(order=2, bits=4), np.arange(16), np.random.default_rng(4).normal(size=16),
                       np.ones(16), beta=0.7)
    topics = [Topic("q", "ls Dateien", "ls Dateien"), Topic("r", "cat", "cat"), Topic("s", "dog", "dog")]
    candidates = pd.DataFrame({"qid": ["q", "q", "r", "s"], "docid": ["c", "a", "b", "x"], "score": [2.0, 1.0, 1.0, 1.0]})
    for given in (None, candidates):
        latencies = {"q": 100.0}
        timed = rerank_run(topics, given, model=model, corpus=collection, depth=2, progress=False, latencies=latencies)
        pd.testing.assert_frame_equal(timed, rerank_run(topics, given, model=model, corpus=collection, depth=2,
                                                        progress=False))
        assert sorted(latencies) == ["q", "r", "s"] and latencies["q"] > 100.0
        assert all(0 < seconds < 100 for qid, seconds in latencies.items() if qid != "q")
    assert sorted(timed["qid"].unique()) == ["q", "r"]  # s's only candidate is not in the collection


# ----------------------------------------------------------------------------- training end to end


def tiny_task():
    docs = {"ls.1": "ls list directory contents", "cp.1": "cp copy files and directories",
            "rm.1": "rm remove files or directories", "cat.1": "cat concatenate files and print",
            "dog.1": "dog is not a command"}
    topics = [Topic("ls.1", "Verzeichnisinhalte auflisten ls", ""), Topic("cp.1", "Dateien kopieren cp", ""),
              Topic("rm.1", "Dateien entfernen rm", ""), Topic("cat.1", "Dateien verketten cat", "")]
    qrels = pd.DataFrame({"qid": ["ls.1", "cp.1", "rm.1", "cat.1", "cp.1"],
                          "docid": ["ls.1", "cp.1", "rm.1", "cat.1", "rm.1"], "relevance": [2, 2, 2, 2, 1]})
    collection = Collection(list(docs), [ngrams(text.split(), 2) for text in docs.values()])
    return topics, qrels, collection


def test_bagged_training_is_deterministic_and_parallel_equals_serial(tmp_path):
    topics, qrels, collection = tiny_task()
    config = BoostConfig(bits=BITS, iterations=6, bags=3, triples_per_query=5, min_triples=1, seed=5)
    serial = train(topics, qrels, collection, config, jobs=1)
    parallel = train(topics, qrels, collection, config, jobs=2)
    assert serial.features.tolist() == parallel.features.tolist()
    np.testing.assert_allclose(serial.weights, parallel.weights)
    assert serial.stats["colliding_pairs"] == 0 and len(serial.stats["bags"]) == 3
    # the model ranks a relevant page first for each training topic
    run = serial.search(topics, collection, depth=5)
    top = run[run["rank"] == 1]
    relevant = set(zip(qrels["qid"], qrels["docid"]))
    assert len(top) == len(topics) and all(pair in relevant for pair in zip(top["qid"], top["docid"]))
    # save / load round trip and a readable table with unhashed pairs
    serial.beta = 0.25
    serial.save(tmp_path / "m.npz")
    loaded = BoostModel.load(tmp_path / "m.npz")
    assert loaded.beta == 0.25 and loaded.config == config
    np.testing.assert_array_equal(loaded.weights, serial.weights)
    assert loaded.table(5) == serial.table(5)
    assert any(" - " in line for line in loaded.table(5)[1:])


def test_loading_a_non_model_is_a_user_error(tmp_path):
    (tmp_path / "x.npz").write_bytes(b"not a model")
    with pytest.raises(ClirplugError, match="x.npz"):
        BoostModel.load(tmp_path / "x.npz")
    with pytest.raises(ClirplugError, match="epsilon"):
        BoostConfig(epsilon=0).check()


def test_cli_train_boost_then_rerank_and_search(tmp_path, capsys):
    import json

    from clirplug.cli import main
    from clirplug.io.runs import read_run, write_run

    topics, qrels, collection = tiny_task()
    texts = {"ls.1": "ls list directory contents", "cp.1": "cp copy files and directories",
             "rm.1": "rm remove files or directories", "cat.1": "cat concatenate files and print",
             "dog.1": "dog is not a command"}
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": k, "contents": v}) + "\n" for k, v in texts.items()))
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps({"id": t.id, "title": t.title, "desc": t.title}) + "\n"
                                                   for t in topics))
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels.itertuples(index=False)))
    model = tmp_path / "boost.npz"
    assert main(["train", "boost", "--topics", str(tmp_path / "topics.jsonl"), "--qrels", str(tmp_path / "qrels.txt"),
                 "--corpus", str(tmp_path / "corpus.jsonl"), "--output", str(model), "--bags", "2", "--iterations", "4",
                 "--min-triples", "1", "--beta", "0.5", "--jobs", "1", "--quiet", "--show", "3"]) == 0
    printed = capsys.readouterr().out
    assert "features, beta = 0.5" in printed and "pairs share a bucket" in printed
    write_run(pd.DataFrame({"qid": ["ls.1", "ls.1", "ls.1"], "docid": ["dog.1", "ls.1", "gone.1"], "score": [3.0, 2.0, 1.0]}),
              tmp_path / "cand.trec")
    common = ["rerank", "--method", "boost", "--model", str(model), "--topics", str(tmp_path / "topics.jsonl"),
              "--corpus", str(tmp_path / "corpus.jsonl"), "--quiet"]
    assert main(common + ["--candidates", str(tmp_path / "cand.trec"), "--output", str(tmp_path / "re.trec")]) == 0
    reranked = read_run(tmp_path / "re.trec")
    assert reranked["docid"].tolist() == ["ls.1", "dog.1"]  # rescored; a document absent from the corpus is dropped
    assert main(common + ["--output", str(tmp_path / "all.trec"), "--depth", "2"]) == 0
    searched = read_run(tmp_path / "all.trec")
    assert searched.groupby("qid").size().tolist() == [2] * len(topics)
    loaded = BoostModel.load(model)
    lookup = dict(zip(zip(searched["qid"], searched["docid"]), searched["score"]))
    assert lookup[("ls.1", "ls.1")] == pytest.approx(loaded.score("Verzeichnisinhalte auflisten ls", collection,
                                                                  rows=np.array([collection.row["ls.1"]]))[0])


def test_rankboost_stops_when_importances_underflow():
    """One triple separated by one feature, tiny epsilon: w = 1/2 ln((1 + eps)/eps) drives D to 0.

    The next step must end training (None) instead of taking the log of 0.
    """
    positive = sp.csr_matrix(np.array([[1.0]]))
    negative = sp.csr_matrix(np.array([[0.0]]))
    booster = RankBoost(positive, negative, np.array([1.0]), epsilon=1e-300)
    feature, weight = booster.step()
    assert feature == 0 and weight == pytest.approx(0.5 * math.log((1 + 1e-300) / 1e-300))
    assert booster.d[0] == pytest.approx(math.exp(-weight))
    steps = [booster.step() for _ in range(3)]
    assert steps[-1] is None
