/* cpu_gemm_int8_drive.c - the int8 GEMM's driver and its portable and AVX2 micro-tiles
 * (cpu_gemm_int8.h); the kernel choice, the scheduler and the node are cpu_gemm_int8.c's, the
 * VNNI tiles cpu_gemm_int8_vnni.c's and cpu_gemm_int8_avxvnni.c's (kernels call the driver,
 * never the other way round).
 *
 * The driver, for each block of MC rows of A:
 *   1. makes the block's u8 rows, K padded with zeros to a multiple of 4 (the packed
 *      weight's padding is zero too, so padded products add nothing): a u8 A is copied,
 *      a float32 A is quantized here, per row (dynamic: [min(0, min), max(0, max)] of the
 *      row over a_max + 1 levels) or with the fixed scale and zero point (static);
 *   2. for each 64-column panel of the packed weight (pg_gemm.h), runs the ISA's micro-tile
 *      over `mr` rows at a time (the panel, K4 * 256 bytes, stays in L2 across the block's
 *      rows; the block's rows stay in L2 across panels);
 *   3. applies the epilogue to each int32 tile row while it is in L1: the zero-point
 *      correction with the weight's column sums, the two scales, bias, activation, then a
 *      float32 store or a requantization to u8 (the next int8 layer's input).
 * The epilogue's float arithmetic is the same on every ISA (no FMA contraction, same
 * order), so every kernel gives the same bits for the same A and W; only tanh/sigmoid go
 * through libmvec's vector functions (within 4 ulp), as in every float kernel. */
#include "cpu_gemm_int8.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_tensor.h"
#include "cpu_act.h"
#include "cpu_isa.h"
#include "cpu_scratch.h"
#include "cpu_vecmath.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PG_INT8_AVX2 1
#endif

enum { MC = 96 };

/* float32 -> the nearest integer, ties to even, for |v| < 2^22 (v is clamped first):
 * adding and removing 1.5 * 2^23 leaves the rounded value (the default rounding mode). */
#define ROUND_MAGIC 12582912.0f

/* ---- quantizing A's rows ------------------------------------------------------------- */

PG_CPU_DISPATCH(void, row_range, (int64_t n, const float *x, float *lo, float *hi), (n, x, lo, hi))
{
    float mn = 0.0f, mx = 0.0f; /* the range always holds 0 (zero is exact: ReLU, padding) */
    _Pragma("omp simd reduction(min : mn) reduction(max : mx)") for (int64_t i = 0; i < n; i++)
    {
        mn = x[i] < mn ? x[i] : mn;
        mx = x[i] > mx ? x[i] : mx;
    }
    *lo = mn;
    *hi = mx;
}

/* q = clamp(round(x * inv + zp), 0, qmax); NaN -> 0 */
PG_CPU_DISPATCH(void, row_quantize,
                (int64_t n, const float *x, float inv, float zp, float qmax, uint8_t *q),
                (n, x, inv, zp, qmax, q))
{
    _Pragma("omp simd") for (int64_t i = 0; i < n; i++)
    {
        float v = x[i] * inv + zp;
        v = v >= 0.0f ? v : 0.0f;
        v = v <= qmax ? v : qmax;
        q[i] = (uint8_t)(int32_t)((v + ROUND_MAGIC) - ROUND_MAGIC);
    }
}

/* A row's dynamic scale and zero point (PyTorch's ChooseQuantizationParams, qmin 0). */
static void dynamic_params(float lo, float hi, int a_max, float *scale, int32_t *zp)
{
    float s = (hi - lo) / (float)a_max;
    if (!(s > 0.0f) || !isfinite(s)) { /* an all-zero row (or inf/NaN): any scale will do */
        *scale = 1.0f;
        *zp = 0;
        return;
    }
    float z = nearbyintf(-lo / s);
    *scale = s;
    *zp = z < 0.0f ? 0 : z > (float)a_max ? a_max : (int32_t)z;
}

/* Rows [m0, m0 + mc) of A into buf (mc rows of kp bytes) with each row's scale and zp. */
static void prepare_rows(const pg_qgemm *g, int64_t m0, int64_t mc, int64_t kp, uint8_t *buf,
                         float *sa, int32_t *za)
{
    const int64_t K = g->K;
    for (int64_t r = 0; r < mc; r++) {
        uint8_t *dst = buf + r * kp;
        if (g->a_u8) {
            memcpy(dst, g->a_u8 + (m0 + r) * g->lda, (size_t)K);
            sa[r] = g->a_scale;
            za[r] = g->a_zp;
        } else {
            const float *src = g->a_f32 + (m0 + r) * g->lda;
            if (g->a_dynamic) {
                float lo, hi;
                row_range(K, src, &lo, &hi);
                dynamic_params(lo, hi, g->a_max, &sa[r], &za[r]);
            } else {
                sa[r] = g->a_scale;
                za[r] = g->a_zp;
            }
            row_quantize(K, src, 1.0f / sa[r], (float)za[r], (float)g->a_max, dst);
        }
        memset(dst + K, 0, (size_t)(kp - K));
    }
}

/* ---- the epilogue -------------------------------------------------------------------- */

/* y = (acc - za * colsum) * (sa * sw) + bias, then act; float32 out */
PG_CPU_DISPATCH(void, epi_f32,
                (int64_t n, const int32_t *acc, int32_t za, float sa, const int32_t *colsum,
                 const float *sw, const float *bias, int act, float *out),
                (n, acc, za, sa, colsum, sw, bias, act, out))
{
    _Pragma("omp simd") for (int64_t j = 0; j < n; j++)
    {
        float y = (float)(acc[j] - za * colsum[j]) * (sa * sw[j]);
        out[j] = bias ? y + bias[j] : y;
    }
    pg_act_fwd_float(act, n, out); /* the PG_ACT row's f (cpu_act.h) */
}

/* the float rows above, requantized: q = clamp(round(y * inv + zp), 0, qmax) */
PG_CPU_DISPATCH(void, epi_requant, (int64_t n, float *y, float inv, float zp, float qmax,
                                    uint8_t *q), (n, y, inv, zp, qmax, q))
{
    _Pragma("omp simd") for (int64_t j = 0; j < n; j++)
    {
        float v = y[j] * inv + zp;
        v = v >= 0.0f ? v : 0.0f;
        v = v <= qmax ? v : qmax;
        q[j] = (uint8_t)(int32_t)((v + ROUND_MAGIC) - ROUND_MAGIC);
    }
}

/* tile row -> C row m, columns [n0, n0 + n) */
static void epilogue_row(const pg_qgemm *g, int64_t m, int64_t n0, int64_t n, const int32_t *acc,
                         float sa, int32_t za, const int32_t *colsum, float *tmp)
{
    if (g->c_s32) {
        int32_t *c = g->c_s32 + m * g->ldc + n0;
        for (int64_t j = 0; j < n; j++)
            c[j] = acc[j] - za * colsum[n0 + j];
        return;
    }
    const float *bias = g->bias ? g->bias + n0 : NULL;
    float *out = g->c_f32 ? g->c_f32 + m * g->ldc + n0 : tmp;
    epi_f32(n, acc, za, sa, colsum + n0, g->b_scale + n0, bias, g->act, out);
    if (g->c_u8)
        epi_requant(n, out, 1.0f / g->c_scale, (float)g->c_zp, (float)g->c_max,
                    g->c_u8 + m * g->ldc + n0);
}

/* ---- the driver ------------------------------------------------------------------------ */

pg_status pg_cpu_qgemm_drive(const pg_qgemm *g, pg_qtile_fn tile, int mr_max)
{
    const int64_t M = g->M, N = g->N, K = g->K;
    if (M <= 0 || N <= 0)
        return PG_OK;
    const int64_t k4 = pg_qpack_k4(K), kp = 4 * k4, np = pg_qpack_np(N);
    const int32_t *colsum = g->b_colsum;
    const int64_t mc_max = M < MC ? M : MC;
    /* per thread: the u8 block (mc_max rows of kp), its scales and zero points */
    size_t abytes = (size_t)(mc_max * kp + 63) / 64 * 64;
    uint8_t *buf = pg_cpu_scratch(PG_SCRATCH_INT8GEMM,
                                  abytes + (size_t)mc_max * 8 + PG_QGEMM_PANEL * sizeof(float));
    if (!buf)
        return pg_error_set(PG_ERR_NOMEM, "int8 matmul: out of host memory for the packing "
                                          "buffer (%lld bytes)", (long long)abytes);
    float *sa = (float *)(buf + abytes);
    int32_t *za = (int32_t *)(sa + mc_max);
    float *tmp = (float *)(za + mc_max);
    int32_t tbuf[PG_QTILE_MAX_MR * PG_QGEMM_PANEL] __attribute__((aligned(64)));
    for (int64_t m0 = 0; m0 < M; m0 += mc_max) {
        const int64_t mc = M - m0 < mc_max ? M - m0 : mc_max;
        prepare_rows(g, m0, mc, kp, buf, sa, za);
        for (int64_t n0 = 0; n0 < np; n0 += PG_QGEMM_PANEL) {
            const int w = (int)(np - n0 < PG_QGEMM_PANEL ? np - n0 : PG_QGEMM_PANEL);
            const int64_t nn = N - n0 < w ? N - n0 : w;
            const int8_t *panel = (const int8_t *)g->b_packed + n0 * kp;
            for (int64_t r0 = 0; r0 < mc; r0 += mr_max) {
                const int mr = (int)(mc - r0 < mr_max ? mc - r0 : mr_max);
                const uint8_t *arow[PG_QTILE_MAX_MR];
                for (int r = 0; r < mr; r++)
                    arow[r] = buf + (r0 + r) * kp;
                tile(mr, k4, arow, panel, w, tbuf);
                for (int r = 0; r < mr; r++)
                    epilogue_row(g, m0 + r0 + r, n0, nn, tbuf + r * PG_QGEMM_PANEL, sa[r0 + r],
                                 za[r0 + r], colsum, tmp);
            }
        }
    }
    return PG_OK;
}

/* ---- portable micro-tile ----------------------------------------------------------------- */

static void tile_portable(int mr, int64_t k4, const uint8_t *const *arow, const int8_t *panel,
                          int w, int32_t *tile)
{
    for (int r = 0; r < mr; r++) {
        int32_t *acc = tile + r * PG_QGEMM_PANEL;
        memset(acc, 0, (size_t)w * sizeof(int32_t));
        for (int64_t k = 0; k < k4; k++) {
            const uint8_t *a = arow[r] + 4 * k;
            const int8_t *b = panel + k * w * 4;
            const int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
            for (int j = 0; j < w; j++)
                acc[j] += a0 * b[4 * j] + a1 * b[4 * j + 1] + a2 * b[4 * j + 2] + a3 * b[4 * j + 3];
        }
    }
}

pg_status pg_cpu_qgemm_portable(const pg_qgemm *g) { return pg_cpu_qgemm_drive(g, tile_portable, 4); }

/* ---- AVX2 micro-tile: vpmaddubsw + vpmaddwd ------------------------------------------------ */

#ifdef PG_INT8_AVX2
#define AVX2_TARGET __attribute__((target("avx2,fma")))

/* Up to 4 rows x 16 columns per pass (8 accumulators): per k group, two ymm of the panel
 * (8 columns x 4 bytes each) and one broadcast word of each row; vpmaddubsw sums adjacent
 * u8 x s8 pairs into int16 (saturating: A must be 7-bit, pg_gemm.h), vpmaddwd by ones
 * sums adjacent int16 pairs into the int32 lane of the column. */
static inline __attribute__((always_inline)) AVX2_TARGET void
avx2_pass(int mr, int64_t k4, const uint8_t *const *arow, const int8_t *panel, int w, int c0,
          int32_t *tile)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[4][2];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    const int8_t *b = panel + (int64_t)c0 * 4;
    for (int64_t k = 0; k < k4; k++, b += (int64_t)w * 4) {
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
        const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            if (r >= mr)
                break;
            int32_t word;
            memcpy(&word, arow[r] + 4 * k, 4);
            const __m256i a = _mm256_set1_epi32(word);
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b0), ones));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b1), ones));
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) {
        if (r >= mr)
            break;
        _mm256_storeu_si256((__m256i *)(tile + r * PG_QGEMM_PANEL + c0), acc[r][0]);
        _mm256_storeu_si256((__m256i *)(tile + r * PG_QGEMM_PANEL + c0 + 8), acc[r][1]);
    }
}

static AVX2_TARGET void tile_avx2(int mr, int64_t k4, const uint8_t *const *arow,
                                  const int8_t *panel, int w, int32_t *tile)
{
    for (int c0 = 0; c0 < w; c0 += 16) {
        switch (mr) {
        case 1: avx2_pass(1, k4, arow, panel, w, c0, tile); break;
        case 2: avx2_pass(2, k4, arow, panel, w, c0, tile); break;
        case 3: avx2_pass(3, k4, arow, panel, w, c0, tile); break;
        default: avx2_pass(4, k4, arow, panel, w, c0, tile); break;
        }
    }
}

pg_status pg_cpu_qgemm_avx2(const pg_qgemm *g)
{
    if (g->a_max > 127)
        return pg_error_set(PG_ERR_VALUE, "int8 matmul: the AVX2 kernel takes 7-bit activations "
                                          "(vpmaddubsw saturates int16), got a_max %d", g->a_max);
    if (pg_cpu_isa() < PG_ISA_AVX2)
        return pg_error_set(PG_ERR_RUNTIME, "int8 matmul: this CPU has no AVX2");
    return pg_cpu_qgemm_drive(g, tile_avx2, 4);
}
#else
pg_status pg_cpu_qgemm_avx2(const pg_qgemm *g)
{
    (void)g;
    return pg_error_set(PG_ERR_RUNTIME, "int8 matmul: this build has no AVX2 kernel");
}
#endif

