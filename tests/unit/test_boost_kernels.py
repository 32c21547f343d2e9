"""The compiled boosting kernels (clirplug._boost_kernels) reproduce the numpy reference code of clirplug.boost exactly."""

import struct

import mmh3
import numpy as np
import pytest
import scipy.sparse as sp

import clirplug.boost as boost
from clirplug.boost import BoostModel, Collection, RankBoost, cross_buckets, ngram_hashes, pair_matrices, train
from clirplug.io.topics import Topic
from clirplug.rerank.config import BoostConfig

pytestmark = pytest.mark.unit

# ----------------------------------------------------------------------------- FIXTURES

WORDS = [f"w{i}" for i in range(60)]


@pytest.fixture
def reference(monkeypatch):
    """Run the block under the numpy reference code: ``with reference(): ...``."""
    from contextlib import contextmanager

    @contextmanager
    def use():
        with monkeypatch.context() as patch:
            patch.setattr(boost, "_kernels", lambda: None)
            yield

    return use


def random_collection(rng, n_docs=40, order=2):
    texts = {f"d{i}": " ".join(rng.choice(WORDS, size=rng.integers(0, 30))) for i in range(n_docs)}
    return Collection(list(texts), [boost.ngrams(text.split(), order) for text in texts.values()])


def random_query_hashes(rng, n_queries=6):
    return [ngram_hashes(list(rng.choice(WORDS, size=rng.integers(0, 8), replace=False))) for _ in range(n_queries)]


def random_triples(rng, collection, n_queries, count=80):
    n = len(collection.docids)
    return rng.integers(n_queries, size=count), rng.integers(n, size=count), rng.integers(n, size=count)


def same_csr(a, b):
    return (a.shape == b.shape and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            and np.array_equal(a.data, b.data) and a.data.dtype == b.data.dtype)


# ----------------------------------------------------------------------------- TESTS


def test_the_kernels_are_installed():
    assert boost._kernels() is not None  # numba is in the dev extra: the comparisons below are not vacuous


@pytest.mark.parametrize("seed", [0, 7, 2**32 - 1])
def test_cross_buckets_equal_the_numpy_hash_and_mmh3(seed, reference):
    rng = np.random.default_rng(seed % 1000)
    source = rng.integers(0, 2**32, 17, dtype=np.uint64).astype(np.uint32)
    target = rng.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32)
    fast = cross_buckets(source, target, 30, seed)
    with reference():
        slow = cross_buckets(source, target, 30, seed)
    assert fast.dtype == slow.dtype and np.array_equal(fast, slow)
    assert fast[3, 5] == mmh3.hash(struct.pack("<II", source[3], target[5]), seed, signed=False) & (2**30 - 1)


@pytest.mark.parametrize("bits,min_triples", [(6, 1), (6, 3), (20, 1), (20, 2)])
def test_pair_matrices_equal_the_reference(bits, min_triples, reference):
    rng = np.random.default_rng(bits * 10 + min_triples)
    collection = random_collection(rng)
    query_hashes = random_query_hashes(rng)
    q, pos, neg = random_triples(rng, collection, len(query_hashes))
    fast = pair_matrices(query_hashes, collection, q, pos, neg, bits, 3, min_triples)
    with reference():
        slow = pair_matrices(query_hashes, collection, q, pos, neg, bits, 3, min_triples)
    assert np.array_equal(fast[2], slow[2]) and fast[2].dtype == slow[2].dtype
    assert same_csr(fast[0], slow[0]) and same_csr(fast[1], slow[1])
    if bits == 6:
        assert fast[0].data.max() > 1  # collisions: counts above one are exercised


@pytest.mark.parametrize("block", [3, 64, 1 << 15])
def test_rankboost_equals_the_reference_bit_for_bit(block, reference, monkeypatch):
    rng = np.random.default_rng(block)
    n_triples, n_features = 70, 200
    positive = sp.random(n_triples, n_features, density=0.08, random_state=block, format="csr",
                         data_rvs=lambda k: rng.integers(1, 4, k)).astype(np.uint16)
    negative = sp.random(n_triples, n_features, density=0.08, random_state=block + 1, format="csr",
                         data_rvs=lambda k: rng.integers(1, 4, k)).astype(np.uint16)
    d0 = rng.integers(1, 4, n_triples).astype(float)
    monkeypatch.setattr(boost, "_BLOCK", block)
    fast = RankBoost(positive, negative, d0, epsilon=1e-3)
    chosen, weights = fast.fit(150)
    with reference():
        slow = RankBoost(positive, negative, d0, epsilon=1e-3)
        expected = slow.fit(150)
    assert len(chosen) > 20
    assert np.array_equal(chosen, expected[0]) and np.array_equal(weights, expected[1])
    for name in ("d", "w_plus", "w_minus", "criterion"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert fast.z == slow.z


def test_term_weights_equal_the_reference(reference):
    rng = np.random.default_rng(5)
    collection = random_collection(rng, n_docs=60)
    config = BoostConfig(order=2, bits=8)
    everything = np.arange(1 << 8)
    features = np.sort(rng.choice(everything, 90, replace=False))
    model = BoostModel(config, features, rng.normal(size=90), np.ones(90, np.int32), beta=0.5)
    text = " ".join(rng.choice(WORDS, size=40))
    fast = model.term_weights(text, collection)
    with reference():
        slow = model.term_weights(text, collection)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
    assert np.count_nonzero(fast[0]) > 10


def test_training_equals_the_reference(tmp_path, reference):
    rng = np.random.default_rng(11)
    collection = random_collection(rng, n_docs=50, order=2)
    topics = [Topic(f"q{i}", " ".join(rng.choice(WORDS, size=5)), "") for i in range(12)]
    import pandas as pd

    rows = [(t.id, f"d{d}", int(rng.integers(1, 3))) for t in topics for d in rng.choice(50, 3, replace=False)]
    qrels = pd.DataFrame(rows, columns=["qid", "docid", "relevance"])
    config = BoostConfig(order=2, bits=10, iterations=60, bags=2, field="title", src_lang="de")
    fast = train(topics, qrels, collection, config, jobs=1)
    with reference():
        slow = train(topics, qrels, collection, config, jobs=1)
    assert np.array_equal(fast.features, slow.features) and np.array_equal(fast.weights, slow.weights)
    assert np.array_equal(fast.first, slow.first) and fast.examples == slow.examples
    drop = {"seconds", "peak_rss_mb"}
    assert ([{k: v for k, v in bag.items() if k not in drop} for bag in fast.stats.pop("bags")]
            == [{k: v for k, v in bag.items() if k not in drop} for bag in slow.stats.pop("bags")])
    assert fast.stats == slow.stats
    assert len(fast.features) > 10


@pytest.mark.parametrize("bits", [5, 12, 30])
def test_training_pairs_equal_the_reference(bits, reference):
    rng = np.random.default_rng(bits)
    collection = random_collection(rng, n_docs=50)
    grams = [list(rng.choice(WORDS, size=rng.integers(1, 8), replace=False)) for _ in range(8)]
    hashes = [ngram_hashes(g) for g in grams]
    q, docs, _ = random_triples(rng, collection, len(grams), count=40)
    model_buckets = np.unique(cross_buckets(hashes[0], collection.hashes[:30], bits, 2))[::2]
    fast = boost.training_pairs(grams, hashes, collection, q, docs, model_buckets, bits, 2)
    with reference():
        slow = boost.training_pairs(grams, hashes, collection, q, docs, model_buckets, bits, 2)
    assert fast == slow and list(fast["examples"]) == list(slow["examples"])  # the same buckets in the same order
    assert len(fast["examples"]) > 2 and (bits == 30 or fast["colliding_pairs"] > 0)
