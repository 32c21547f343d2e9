"""clirplug.bm25: hand-computed values, and float-for-float the expressions PSQ and BOW-FD used inline.

Lucene's own scores are compared in tests/integration/test_lucene_index.py (they need the JVM).
"""

import math
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from clirplug import bm25
from clirplug.errors import ClirplugError

pytestmark = pytest.mark.unit

# ---------------------------------------------------------------- hand-computed values


def test_idf_by_hand():
    assert bm25.idf(1, 10)[()] == pytest.approx(math.log(1 + 9.5 / 1.5))
    assert bm25.idf(10, 10)[()] == pytest.approx(math.log(1 + 0.5 / 10.5))  # never negative, unlike RSJ
    np.testing.assert_allclose(bm25.idf([0, 5], 10), [math.log(1 + 10.5 / 0.5), math.log(1 + 5.5 / 5.5)])


@pytest.mark.parametrize("k1, b", [(bm25.ANSERINI_K1, bm25.ANSERINI_B), (bm25.BOWFD_K1, bm25.BOWFD_B)])
def test_score_by_hand(k1, b):
    # N = 10, df = 1, a document of 3 tokens in a collection of average length 2, tf = 2
    idf = math.log(1 + (10 - 1 + 0.5) / (1 + 0.5))
    norm = k1 * (1 - b + b * 3 / 2)
    assert bm25.length_norms(3.0, 2.0, k1, b) == pytest.approx(norm)
    assert bm25.score(2.0, norm) == pytest.approx(2 / (2 + norm))
    assert bm25.score(2.0, norm, idf) == pytest.approx(idf * 2 / (2 + norm))
    # a document of average length: norm = k1, whatever b
    assert bm25.length_norms(2.0, 2.0, k1, b) == pytest.approx(k1)


def test_defaults_are_anserinis_and_the_papers():
    assert (bm25.ANSERINI_K1, bm25.ANSERINI_B) == (0.9, 0.4)
    assert (bm25.BOWFD_K1, bm25.BOWFD_B) == (1.2, 0.75)


@pytest.mark.parametrize("k1, b, message", [(-0.1, 0.4, "k1"), (math.inf, 0.4, "k1"), (math.nan, 0.4, "k1"),
                                            (0.9, -0.01, "b"), (0.9, 1.5, "b")])
def test_check_bm25_names_the_bad_parameter(k1, b, message):
    with pytest.raises(ClirplugError, match=f"BM25 {message}"):
        bm25.check_bm25(k1, b)


def test_check_bm25_accepts_the_edges():
    bm25.check_bm25(0.0, 0.0)
    bm25.check_bm25(1e6, 1.0)


def test_import_loads_neither_numpy_nor_java():
    import subprocess

    code = "import sys, clirplug.bm25; print('numpy' in sys.modules, 'jnius' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# ---------------------------------------------------------------- the same floats as before


def _statistics(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 400, size=50).astype(np.float64)
    tf = sp.random(50, 7, density=0.3, random_state=seed, format="csr", dtype=np.float32)
    tf.data = np.ceil(tf.data * 5)
    return lengths, float(lengths.mean()), tf, rng


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("k1, b", [(0.9, 0.4), (1.2, 0.75), (0.0, 0.0), (2.0, 1.0)])
def test_psq_scores_are_bit_identical_to_the_inline_formula(seed, k1, b):
    lengths, avgdl, tf, rng = _statistics(seed)
    counts = rng.integers(1, 3, size=7).astype(np.float64)
    idf = bm25.idf(rng.integers(1, 50, size=7), 50)
    coo = tf.astype(np.float64).tocoo()
    # clirplug.qt.psq before clirplug.bm25
    old_norm = k1 * (1 - b + b * lengths / avgdl)
    old = counts[coo.col] * idf[coo.col] * coo.data / (coo.data + old_norm[coo.row])
    new = bm25.score(coo.data, bm25.length_norms(lengths, avgdl, k1, b)[coo.row], counts[coo.col] * idf[coo.col])
    assert new.tobytes() == old.tobytes()


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("k1, b", [(0.9, 0.4), (1.2, 0.75)])
def test_saturated_tf_is_bit_identical_to_the_inline_formula(seed, k1, b):
    lengths, avgdl, tf, rng = _statistics(seed)
    docs = rng.permutation(50)[:20]
    # clirplug.lucene.reader.LuceneIndex.bm25_tf before clirplug.bm25: sparse (float32 tf) and dense
    old_norm = k1 * (1 - b + b * lengths[docs] / avgdl)
    norms = bm25.length_norms(lengths[docs], avgdl, k1, b)
    sparse = tf[docs].tocoo()
    old = sparse.data / (sparse.data + old_norm[sparse.row])
    assert bm25.score(sparse.data, norms[sparse.row]).tobytes() == old.tobytes()
    dense = np.asarray(tf[docs].todense(), dtype=np.float64)
    assert bm25.score(dense, norms[:, None]).tobytes() == (dense / (dense + old_norm[:, None])).tobytes()
