/* cpu_sgemm_small.c - float32 products C = A B^T with few rows (M <= 32) on AVX-512 CPUs,
 * without packing: the recurrent layers' per-step product h (B, P) @ W_hh^T (B the batch),
 * and any small-batch linear layer's forward.
 *
 * Why: a BLAS call packs its B operand before multiplying, which costs as much memory
 * traffic as the product's whole B read, and for M = 32 rows that packing is a large
 * share of the call (a 32 x 512 @ 512 x 2048 product ran at 0.44x the speed per FLOP of
 * the same FLOPs as one 2048-row product, OpenBLAS SkylakeX on an AMD EPYC family 26).
 * Here B (stored (N, K), its rows contiguous in k) is read once, in place: dot products
 * over k, a tile of 4 rows x 4 columns in 16 zmm accumulators, the 16 lane sums reduced
 * together at the end. Column tiles are the outer loop, so each row of B is read from
 * memory once and the few rows of A stay in cache. Measured on that machine, 64 steps of
 * 32 x 512 @ 512 x 2048: 36 ms here, 43 ms through OpenBLAS (the same FLOPs as one product:
 * 19 ms; B's 4 MB read per step is what is left). The A @ B layout (the backward's dG @
 * W_hh) was tried with broadcast A values and 4 x 64 tiles and measured slower than
 * OpenBLAS, so it stays there. C = alpha * op + beta * C (C is not read when beta = 0).
 * Deterministic: the summation order depends on the shape only. */
#include "cpu_sgemm.h"

#include <stdbool.h>
#include <stdint.h>

#include "cpu_isa.h"

#define SMALL_M_MAX 32

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))

static AVX512 inline void store(float *c, float v, float alpha, float beta)
{
    *c = beta == 0.0f ? alpha * v : alpha * v + beta * *c;
}

/* C[r][n] = sum_k A[r][k] * B[n][k] for rows r0.. r0+mr, columns n0.. n0+nr (mr, nr <= 4) */
static AVX512 void nt_tile(int64_t mr, int64_t nr, int64_t K, const float *A, int64_t lda,
                           const float *B, int64_t ldb, float *C, int64_t ldc, float alpha,
                           float beta)
{
    __m512 acc[4][4];
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
            acc[i][j] = _mm512_setzero_ps();
    const float *a[4], *b[4];
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
        a[i] = A + (i < mr ? i : 0) * lda;
        b[i] = B + (i < nr ? i : 0) * ldb;
    }
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m512 va[4], vb[4];
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
            va[i] = _mm512_loadu_ps(a[i] + k);
            vb[i] = _mm512_loadu_ps(b[i] + k);
        }
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
                acc[i][j] = _mm512_fmadd_ps(va[i], vb[j], acc[i][j]);
    }
    if (k < K) {
        __mmask16 m = (__mmask16)((1u << (K - k)) - 1u);
        __m512 va[4], vb[4];
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
            va[i] = _mm512_maskz_loadu_ps(m, a[i] + k);
            vb[i] = _mm512_maskz_loadu_ps(m, b[i] + k);
        }
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
                acc[i][j] = _mm512_fmadd_ps(va[i], vb[j], acc[i][j]);
    }
    /* the 16 lane sums at once: transpose-and-add trees keep everything in registers */
    float out[4][4];
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
    {
        /* pairwise: (j0 + j1) interleaved halves, then quarters, then the last 4 lanes */
        __m512 s01 = _mm512_add_ps(_mm512_shuffle_f32x4(acc[i][0], acc[i][1], 0x44),
                                   _mm512_shuffle_f32x4(acc[i][0], acc[i][1], 0xEE));
        __m512 s23 = _mm512_add_ps(_mm512_shuffle_f32x4(acc[i][2], acc[i][3], 0x44),
                                   _mm512_shuffle_f32x4(acc[i][2], acc[i][3], 0xEE));
        /* s01 lanes: [j0 half sums (8) | j1 half sums (8)]; same for s23 */
        __m512 t = _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, 0x88),
                                 _mm512_shuffle_f32x4(s01, s23, 0xDD));
        /* t: 4 blocks of 4 lanes, block b = column j = b's 4 partial sums */
        __m512 u = _mm512_add_ps(t, _mm512_permute_ps(t, 0x4E));
        u = _mm512_add_ps(u, _mm512_permute_ps(u, 0xB1));
        float lanes[16];
        _mm512_storeu_ps(lanes, u);
        out[i][0] = lanes[0];
        out[i][1] = lanes[4];
        out[i][2] = lanes[8];
        out[i][3] = lanes[12];
    }
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++)
            store(C + i * ldc + j, out[i][j], alpha, beta);
}

static AVX512 void nt(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                      const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    for (int64_t n0 = 0; n0 < N; n0 += 4) {
        int64_t nr = N - n0 < 4 ? N - n0 : 4;
        for (int64_t r0 = 0; r0 < M; r0 += 4) {
            int64_t mr = M - r0 < 4 ? M - r0 : 4;
            nt_tile(mr, nr, K, A + r0 * lda, lda, B + n0 * ldb, ldb, C + r0 * ldc + n0, ldc,
                    alpha, beta);
        }
    }
}

bool pg_cpu_sgemm_small(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                        float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                        float beta, float *C, int64_t ldc)
{
    if (trans_a || M > SMALL_M_MAX || K < 64 || N < 64 || pg_cpu_isa() < PG_ISA_AVX512)
        return false;
    if (!trans_b) /* A @ B with B (K, N): OpenBLAS, which measured faster here */
        return false;
    nt(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return true;
}

#else

bool pg_cpu_sgemm_small(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                        float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                        float beta, float *C, int64_t ldc)
{
    (void)trans_a, (void)trans_b, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda;
    (void)B, (void)ldb, (void)beta, (void)C, (void)ldc;
    return false;
}

#endif
