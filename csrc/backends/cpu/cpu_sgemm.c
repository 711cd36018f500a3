/* cpu_sgemm.c - pygpu's own float32 GEMM for AVX2 + FMA CPUs (BLIS-style loops).
 *
 * Why it exists: on AVX2-only CPUs, single-threaded OpenBLAS (what each pool thread
 * calls, see cpu_gemm.h) runs many mid-size shapes at a fraction of its own speed:
 * on the project's AMD EPYC (Zen 1) VM, 256x256x256 ran at 10 GFLOP/s against 37 at
 * 1024 (both with scipy-openblas32 0.3.34 and NumPy's 0.3.31; perf puts the stall
 * in its Haswell kernel's prefetches), and which shapes are slow varies from process
 * to process. This kernel has no such cliff, needs no zeroing pass for beta = 0, and
 * its packing is ours to reuse. pg_cpu_sgemm runs it when pg_cpu_isa() is exactly
 * AVX2 (so PYGPU_ISA=avx2 tests it on an AVX-512 machine) and N fills a 16-wide
 * tile; else, and on AVX-512 machines (OpenBLAS's SkylakeX kernels have no such
 * cliff; oneDNN's sgemm takes the small panels there, cpu_sgemm_dnnl.c) and baseline
 * ones, it calls single-threaded OpenBLAS.
 *
 * The loops are BLIS's: for each NC-wide block of B's columns and KC-deep slice of
 * K, B is packed once into NR-wide micro-panels (each stays in L1 while a column of
 * micro-tiles is computed); for each MC-tall block of A, A is packed into MR-tall
 * micro-panels (the block stays in L2); the 6x16 micro-kernel keeps its tile of C
 * in twelve ymm registers over the whole KC slice. The first K slice stores
 * alpha*AB + beta*C (C is not read when beta = 0); later slices add.
 * Deterministic: the blocking depends on the shape only. */
#include "cpu_sgemm.h"

#include <cblas.h>
#include <stdlib.h>

#include "cpu_half_convert.h"
#include "cpu_isa.h"
#include "cpu_scratch.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

enum { MR = 6, NR = 16, KC = 256, MC = 144, NC = 3072 };

#define AVX2 __attribute__((target("avx2,fma")))

/* Per thread (cpu_scratch.h): A's packed block (MC*KC floats), B's (KC*NC), and scratch
 * for operands converted as they are packed (op(A)'s block as stored, and 16 rows or one
 * row of B): 3.5 MB. */
enum { BUF_AP = 0, BUF_BP = MC * KC, BUF_AS = BUF_BP + KC * NC, BUF_BS = BUF_AS + MC * KC,
       BUF_FLOATS = BUF_BS + (NR * KC > NC ? NR * KC : NC) };
static float *thread_buffer(void)
{
    return pg_cpu_scratch(PG_SCRATCH_SGEMM, (size_t)BUF_FLOATS * sizeof(float));
}

/* ---- packing ------------------------------------------------------------------------- */

/* op(A)[i0:i0+mc, p0:p0+kc] into MR-row micro-panels: ap[panel][k][MR], zero-padded rows */
static AVX2 void pack_a(const float *A, int64_t lda, bool ta, int64_t i0, int64_t p0, int64_t mc,
                        int64_t kc, float alpha, float *ap)
{
    for (int64_t ir = 0; ir < mc; ir += MR) {
        int64_t mr = mc - ir < MR ? mc - ir : MR;
        float *dst = ap + ir * kc;
        if (mr == MR && alpha == 1.0f) { /* the common case, without a branch per element */
            if (!ta) {
                const float *r = A + (i0 + ir) * lda + p0;
                for (int64_t k = 0; k < kc; k++, dst += MR) {
                    dst[0] = r[k];
                    dst[1] = r[lda + k];
                    dst[2] = r[2 * lda + k];
                    dst[3] = r[3 * lda + k];
                    dst[4] = r[4 * lda + k];
                    dst[5] = r[5 * lda + k];
                }
            } else {
                const float *src = A + p0 * lda + i0 + ir;
                for (int64_t k = 0; k < kc; k++, dst += MR, src += lda)
                    for (int i = 0; i < MR; i++)
                        dst[i] = src[i];
            }
            continue;
        }
        for (int64_t k = 0; k < kc; k++)
            for (int64_t i = 0; i < MR; i++)
                dst[k * MR + i] = i >= mr ? 0.0f
                                  : ta    ? alpha * A[(p0 + k) * lda + i0 + ir + i]
                                          : alpha * A[(i0 + ir + i) * lda + p0 + k];
    }
}

/* float32 values rounded to bfloat16 and widened back (nearest even; NaN kept quiet with
 * its sign and top payload bits): bit for bit cpu_gemm_half.c's f32_round_bf16 */
static inline AVX2 __m256 round_bf16_ps(__m256 v)
{
    const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
    __m256i b = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)), lsb), hi);
    __m256i nan = _mm256_and_si256(_mm256_or_si256(b, _mm256_set1_epi32(0x00400000)), hi);
    __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff)),
                                        _mm256_set1_epi32(0x7f800000));
    return _mm256_castsi256_ps(_mm256_blendv_epi8(r, nan, is_nan));
}

/* the same for one value (partial tiles): through cpu_half_convert.c's own rounding */
static float round_bf16(float v)
{
    uint16_t h;
    pg_cpu_f32_to_bf16(1, &v, &h);
    pg_cpu_bf16_to_f32(1, &h, &v);
    return v;
}

/* 8 floats at p, times the mask's 8 at m (none when m is NULL: pg_gemm.h b_mask), then
 * rounded to bfloat16 when rnd: round(w * m), the bits of the masked product rounded */
static inline AVX2 __m256 load8(const float *p, const float *m, bool rnd)
{
    __m256 v = _mm256_loadu_ps(p);
    if (m)
        v = _mm256_mul_ps(v, _mm256_loadu_ps(m));
    return rnd ? round_bf16_ps(v) : v;
}

/* 8 rows of 8 floats (src, stride lds; times the mask msk laid out alike, when not NULL;
 * rounded to bfloat16 when rnd) -> 8 columns: dst[t * NR + r] = src[r * lds + t] */
static inline AVX2 void transpose_8x8(const float *src, const float *msk, int64_t lds, float *dst,
                                      bool rnd)
{
#define ROW8(i) load8(src + (i) * lds, msk ? msk + (i) * lds : NULL, rnd)
    __m256 r0 = ROW8(0), r1 = ROW8(1), r2 = ROW8(2), r3 = ROW8(3);
    __m256 r4 = ROW8(4), r5 = ROW8(5), r6 = ROW8(6), r7 = ROW8(7);
#undef ROW8
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_store_ps(dst + 0 * NR, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_store_ps(dst + 1 * NR, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_store_ps(dst + 2 * NR, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_store_ps(dst + 3 * NR, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_store_ps(dst + 4 * NR, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_store_ps(dst + 5 * NR, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_store_ps(dst + 6 * NR, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_store_ps(dst + 7 * NR, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* op(B)[p0:p0+kc, j0:j0+nc] into NR-column micro-panels: bp[panel][k][NR], zero-padded;
 * each value multiplied by its mask on the way when Bm (B's mask, laid out as B: a pruned
 * layer's weight_mask, pg_gemm.h b_mask), then rounded to bfloat16 when rnd (autocast's
 * float32 weights) */
static AVX2 void pack_b(const float *B, const float *Bm, int64_t ldb, bool tb, bool rnd,
                        int64_t p0, int64_t j0, int64_t kc, int64_t nc, float *bp)
{
    for (int64_t jr = 0; jr < nc; jr += NR) {
        int64_t nr = nc - jr < NR ? nc - jr : NR;
        float *dst = bp + jr * kc;
        if (!tb) {
            const int64_t at = p0 * ldb + j0 + jr;
            const float *src = B + at, *msk = Bm ? Bm + at : NULL;
            if (nr == NR) {
                for (int64_t k = 0; k < kc; k++) {
                    const float *m = msk ? msk + k * ldb : NULL;
                    _mm256_store_ps(dst + k * NR, load8(src + k * ldb, m, rnd));
                    _mm256_store_ps(dst + k * NR + 8, load8(src + k * ldb + 8, m ? m + 8 : m, rnd));
                }
            } else {
                for (int64_t k = 0; k < kc; k++)
                    for (int64_t j = 0; j < NR; j++) {
                        float v = j < nr ? src[k * ldb + j] : 0.0f;
                        if (msk && j < nr)
                            v *= msk[k * ldb + j];
                        dst[k * NR + j] = rnd ? round_bf16(v) : v;
                    }
            }
        } else { /* B stored (N, K): column j of op(B) is row j of B, contiguous in k */
            const int64_t at = (j0 + jr) * ldb + p0;
            const float *src = B + at, *msk = Bm ? Bm + at : NULL;
            int64_t k = 0;
            if (nr == NR) /* 8x8 blocks transposed in registers, then the tail */
                for (; k + 8 <= kc; k += 8) {
                    transpose_8x8(src + k, msk ? msk + k : NULL, ldb, dst + k * NR, rnd);
                    transpose_8x8(src + 8 * ldb + k, msk ? msk + 8 * ldb + k : NULL, ldb,
                                  dst + k * NR + 8, rnd);
                }
            for (int64_t j = 0; j < NR && k < kc; j++) {
                for (int64_t kk = k; kk < kc; kk++) {
                    float v = j < nr ? src[j * ldb + kk] : 0.0f;
                    if (msk && j < nr)
                        v *= msk[j * ldb + kk];
                    dst[kk * NR + j] = rnd ? round_bf16(v) : v;
                }
            }
        }
    }
}

/* ---- the 6x16 micro-kernel ------------------------------------------------------------ */

/* C[0:mr, 0:nr] = (first ? beta*C : C) + ap (kc x MR)^T . bp (kc x NR) */
static AVX2 void micro_6x16(int64_t kc, const float *ap, const float *bp, float *C, int64_t ldc,
                            int64_t mr, int64_t nr, bool first, float beta)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int64_t i = 0; i < mr; i++) /* the tile of C this call stores, fetched meanwhile */
        _mm_prefetch((const char *)(C + i * ldc), _MM_HINT_T0),
            _mm_prefetch((const char *)(C + i * ldc + NR - 1), _MM_HINT_T0);
    for (int64_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
/* row i of the tile: A's element i of this k times B's 16 values */
#define FMA_ROW(i, lo, hi)                                                                     \
    do {                                                                                       \
        __m256 a = _mm256_broadcast_ss(ap + (i));                                              \
        lo = _mm256_fmadd_ps(a, b0, lo);                                                       \
        hi = _mm256_fmadd_ps(a, b1, hi);                                                       \
    } while (0)
        FMA_ROW(0, c00, c01);
        FMA_ROW(1, c10, c11);
        FMA_ROW(2, c20, c21);
        FMA_ROW(3, c30, c31);
        FMA_ROW(4, c40, c41);
        FMA_ROW(5, c50, c51);
#undef FMA_ROW
        ap += MR;
        bp += NR;
    }
    __m256 acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
    if (mr == MR && nr == NR) {
        __m256 vb = _mm256_set1_ps(beta);
        for (int i = 0; i < MR; i++) {
            float *row = C + i * ldc;
            __m256 r0 = acc[i][0], r1 = acc[i][1];
            if (!first) {
                r0 = _mm256_add_ps(r0, _mm256_loadu_ps(row));
                r1 = _mm256_add_ps(r1, _mm256_loadu_ps(row + 8));
            } else if (beta != 0.0f) {
                r0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row), r0);
                r1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(row + 8), r1);
            }
            _mm256_storeu_ps(row, r0);
            _mm256_storeu_ps(row + 8, r1);
        }
        return;
    }
    float tile[MR][NR] __attribute__((aligned(32)));
    for (int i = 0; i < MR; i++) {
        _mm256_store_ps(tile[i], acc[i][0]);
        _mm256_store_ps(tile[i] + 8, acc[i][1]);
    }
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) {
            float *c = C + i * ldc + j;
            *c = !first ? *c + tile[i][j] : beta != 0.0f ? beta * *c + tile[i][j] : tile[i][j];
        }
}

/* ---- the loops ------------------------------------------------------------------------ */

/* op(A)'s block [i0, i0+mc) x [p0, p0+kc) packed, converting it first when A has a fetch */
static AVX2 void pack_a_op(const pg_sgemm_operand *a, int64_t i0, int64_t p0, int64_t mc,
                           int64_t kc, float alpha, float *ap, float *scratch)
{
    if (!a->fetch) {
        pack_a(a->p, a->ld, a->trans, i0, p0, mc, kc, alpha, ap);
        return;
    }
    if (!a->trans) { /* rows i of A, columns p0.. -> scratch (mc, kc) */
        for (int64_t i = 0; i < mc; i++)
            a->fetch(a->ctx, a->p, (i0 + i) * a->ld + p0, kc, scratch + i * kc);
        pack_a(scratch, kc, false, 0, 0, mc, kc, alpha, ap);
    } else { /* A stored (K, M): rows p0+k, columns i0.. -> scratch (kc, mc) */
        for (int64_t k = 0; k < kc; k++)
            a->fetch(a->ctx, a->p, (p0 + k) * a->ld + i0, mc, scratch + k * mc);
        pack_a(scratch, mc, true, 0, 0, mc, kc, alpha, ap);
    }
}

/* op(B)'s block [p0, p0+kc) x [j0, j0+nc) packed, converting as it goes when B has a fetch:
 * a row of B at a time scattered into every micro-panel, or 16 rows of a transposed B */
static AVX2 void pack_b_op(const pg_sgemm_operand *b, int64_t p0, int64_t j0, int64_t kc,
                           int64_t nc, float *bp, float *scratch)
{
    if (!b->fetch) {
        pack_b(b->p, b->mask, b->ld, b->trans, b->round_bf16, p0, j0, kc, nc, bp);
        return;
    }
    if (!b->trans) {
        for (int64_t k = 0; k < kc; k++) {
            b->fetch(b->ctx, b->p, (p0 + k) * b->ld + j0, nc, scratch);
            for (int64_t jr = 0; jr < nc; jr += NR) {
                float *dst = bp + jr * kc + k * NR;
                if (nc - jr >= NR) {
                    _mm256_store_ps(dst, _mm256_loadu_ps(scratch + jr));
                    _mm256_store_ps(dst + 8, _mm256_loadu_ps(scratch + jr + 8));
                } else {
                    for (int64_t j = 0; j < NR; j++)
                        dst[j] = jr + j < nc ? scratch[jr + j] : 0.0f;
                }
            }
        }
        return;
    }
    for (int64_t jr = 0; jr < nc; jr += NR) { /* B stored (N, K): 16 rows j, columns p0.. */
        int64_t nr = nc - jr < NR ? nc - jr : NR;
        for (int64_t j = 0; j < nr; j++)
            b->fetch(b->ctx, b->p, (j0 + jr + j) * b->ld + p0, kc, scratch + j * kc);
        pack_b(scratch, NULL, kc, true, false, 0, 0, kc, nr, bp + jr * kc);
    }
}

static AVX2 void sgemm_avx2(int64_t M, int64_t N, int64_t K, float alpha,
                            const pg_sgemm_operand *a, const pg_sgemm_operand *b, float beta,
                            float *C, int64_t ldc, float *buf)
{
    float *ap = buf + BUF_AP, *bp = buf + BUF_BP;
    for (int64_t jc = 0; jc < N; jc += NC) {
        int64_t nc = N - jc < NC ? N - jc : NC;
        for (int64_t pc = 0; pc < K; pc += KC) {
            int64_t kc = K - pc < KC ? K - pc : KC;
            pack_b_op(b, pc, jc, kc, nc, bp, buf + BUF_BS);
            for (int64_t ic = 0; ic < M; ic += MC) {
                int64_t mc = M - ic < MC ? M - ic : MC;
                pack_a_op(a, ic, pc, mc, kc, alpha, ap, buf + BUF_AS);
                for (int64_t jr = 0; jr < nc; jr += NR)
                    for (int64_t ir = 0; ir < mc; ir += MR)
                        micro_6x16(kc, ap + ir * kc, bp + jr * kc, C + (ic + ir) * ldc + jc + jr,
                                   ldc, mc - ir < MR ? mc - ir : MR, nc - jr < NR ? nc - jr : NR,
                                   pc == 0, beta);
            }
        }
    }
}

bool pg_cpu_sgemm_own(int64_t M, int64_t N, int64_t K)
{
    return pg_cpu_isa() == PG_ISA_AVX2 && N >= NR && M >= 1 && K >= 1;
}

bool pg_cpu_sgemm_ex(int64_t M, int64_t N, int64_t K, float alpha, const pg_sgemm_operand *a,
                     const pg_sgemm_operand *b, float beta, float *C, int64_t ldc)
{
    if (!pg_cpu_sgemm_own(M, N, K) || a->round_bf16 || a->mask ||
        ((b->round_bf16 || b->mask) && b->fetch))
        return false; /* round_bf16 and mask are for a float32 B only (cpu_sgemm.h) */
    float *buf = thread_buffer();
    if (!buf)
        return false;
    sgemm_avx2(M, N, K, alpha, a, b, beta, C, ldc, buf);
    return true;
}

/* false when the packing memory cannot be had (the caller then asks OpenBLAS) */
static bool own_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc)
{
    pg_sgemm_operand a = {.p = A, .ld = lda, .trans = ta}, b = {.p = B, .ld = ldb, .trans = tb};
    return pg_cpu_sgemm_ex(M, N, K, alpha, &a, &b, beta, C, ldc);
}

#else /* not x86-64 with GCC/Clang: OpenBLAS serves every product */

bool pg_cpu_sgemm_own(int64_t M, int64_t N, int64_t K)
{
    (void)M, (void)N, (void)K;
    return false;
}

bool pg_cpu_sgemm_ex(int64_t M, int64_t N, int64_t K, float alpha, const pg_sgemm_operand *a,
                     const pg_sgemm_operand *b, float beta, float *C, int64_t ldc)
{
    (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)b, (void)beta, (void)C, (void)ldc;
    return false;
}

static bool own_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda;
    (void)B, (void)ldb, (void)beta, (void)C, (void)ldc;
    return false;
}

#endif

void pg_cpu_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                  int64_t ldc)
{
    if (M == 0 || N == 0)
        return;
    if (pg_cpu_sgemm_small(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
        return; /* few rows on AVX-512: B read in place, unpacked (cpu_sgemm_small.c) */
    if (pg_cpu_sgemm_dnnl(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
        return; /* the shape classes where oneDNN measured faster (cpu_sgemm_dnnl.c) */
    if (own_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
        return;
    scipy_cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                      trans_b ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N, (blasint)K,
                      alpha, A, (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}
