"""The dense peer's cosines (clirplug.dense.cosines): the exact dot products rounded to float32, the compiled kernel
(clirplug._dense_kernels) giving the numpy code's bits."""

from fractions import Fraction

import numpy as np
import pytest

from clirplug import dense

pytestmark = pytest.mark.unit


@pytest.fixture
def numpy_only(monkeypatch):
    """dense.cosines without its compiled kernel."""
    monkeypatch.setattr(dense, "_kernels", lambda: None)


def test_cosines_equal_exact_dot_products():
    rng = np.random.default_rng(7)
    embeddings, vector = rng.standard_normal((50, 384)).astype(np.float32), rng.standard_normal(384).astype(np.float32)
    exact = [float(sum(map(Fraction, e.astype(np.float64) * vector))) for e in embeddings]
    assert dense.cosines(embeddings, vector).tolist() == np.float32(exact).tolist()


@pytest.mark.parametrize("width", [1, 2, 3, 7, 384, 512])
def test_the_compiled_kernel_gives_the_numpy_bits(width, monkeypatch):
    pytest.importorskip("numba")
    rng = np.random.default_rng(width)
    embeddings = (rng.standard_normal((301, width)) * 10.0 ** rng.integers(-6, 6, (301, width))).astype(np.float32)
    vector = (rng.standard_normal(width) * 10.0 ** rng.integers(-6, 6, width)).astype(np.float32)
    compiled = dense.cosines(embeddings, vector)
    strided = dense.cosines(np.asfortranarray(embeddings), vector)
    monkeypatch.setattr(dense, "_kernels", lambda: None)
    reference = dense.cosines(embeddings, vector, rows=37)
    assert compiled.tobytes() == strided.tobytes() == reference.tobytes()


def test_numpy_cosines_in_blocks_equal_exact_dot_products(numpy_only):
    rng = np.random.default_rng(8)
    embeddings, vector = rng.standard_normal((20, 96)).astype(np.float32), rng.standard_normal(96).astype(np.float32)
    exact = [float(sum(map(Fraction, e.astype(np.float64) * vector))) for e in embeddings]
    assert dense.cosines(embeddings, vector, rows=7).tolist() == np.float32(exact).tolist()
