/* cpu_gemm_bf16.c - the bfloat16 GEMM for CPUs with AVX512_BF16 (vdpbf16ps), BLIS loops.
 *
 * vdpbf16ps multiplies 16 pairs of bfloat16 values by 16 other pairs and adds each pair's
 * two products to one float32 lane: two k steps of 16 columns per instruction, twice
 * fp32 FMA's rate on the same vector width (Zen 4, Sapphire Rapids). Both operands are
 * therefore packed as PAIR WORDS: a 32-bit word holds the bfloat16 values at k = 2*k2
 * (low half) and 2*k2 + 1 (high half); past K the high half is zero.
 *
 * The loops are cpu_sgemm.c's (BLIS): for each NC-wide block of B's columns and KC-deep
 * slice of K (a layer's K cut into equal even slices), B is packed once into NR = 48-column
 * micro-panels, bp[panel][k2][48]; for each MC-tall block of A, A is packed into MR =
 * 8-row micro-panels, ap[panel][k2][8]; the 8x48 micro-tile keeps C in 24 zmm registers
 * over the whole slice (per k2: three 16-column loads of B, eight broadcast pair words
 * of A, 24 vdpbf16ps). A panel of at most 16 or 32 columns runs a 1- or 2-vector tile.
 * Packing is vector code: rows are interleaved into pair words, a transposed operand
 * goes through 16x16 word transposes in registers, and a float32 B (autocast's weights)
 * is rounded to bfloat16 in registers on the way, exactly as pg_cpu_f32_to_bf16 rounds.
 * The first K slice stores alpha*AB + beta*C (C not read when beta = 0), later ones add.
 *
 * vdpbf16ps treats bfloat16 subnormal inputs as zero and rounds each of its two adds
 * to nearest even (the products are exact in float32), as every bfloat16 dot unit does.
 *
 * Executed where? Compiled with a target attribute and chosen at run time only when
 * pg_cpu_isa() reports AVX512_BF16. The project's CI machines have no AVX-512, so CI
 * builds this same file once more with PYGPU_BF16_SIMDE=1 (setup.py): the intrinsics
 * are then SIMDe's portable C versions (Debian's libsimde-dev), and the half GEMM and
 * mixed-precision tests run through this kernel's packing, blocking and tiles on any
 * CPU (SIMDe's dot product keeps subnormals and may fuse an add: the tests' tolerances
 * cover both). Its speed has to be measured on a CPU that has the instructions. */
#include "cpu_gemm_bf16.h"

#include <stdlib.h>
#include <string.h>

#include "cpu_isa.h"
#include "cpu_scratch.h"

#if defined(PG_BF16_SIMDE)
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define BF16_TARGET
#define PG_BF16_KERNEL 1
#define PG_BF16_EMULATED 1
#elif defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 10 || defined(__clang__))
#include <immintrin.h>
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))
#define PG_BF16_KERNEL 1
#define PG_BF16_EMULATED 0
#endif

#ifdef PG_BF16_KERNEL

#define INLINE static inline __attribute__((always_inline)) BF16_TARGET

enum { MR = 8, NR = 48, KC = 256, MC = 192, NC = 1536 };
/* Per thread (cpu_scratch.h), in pair words: A's packed block (MC rows, KC/2 pairs: 96 KiB)
 * and B's (NC columns: 768 KiB). */
enum { BUF_AP = 0, BUF_BP = MC * (KC / 2), BUF_WORDS = BUF_BP + NC * (KC / 2) };

/* ---- loads of row pieces (n of them, zero past n: tails never read past their row) ---- */

INLINE __m512 load_f32(const float *p, int64_t n)
{
    if (n >= 16)
        return _mm512_loadu_ps(p);
    float t[16] = {0};
    if (n > 0)
        memcpy(t, p, (size_t)n * sizeof(float));
    return _mm512_loadu_ps(t);
}

/* load_f32 times the mask's values at m (pg_gemm.h b_mask; none when m is NULL) */
INLINE __m512 load_f32_masked(const float *p, const float *m, int64_t n)
{
    return m ? _mm512_mul_ps(load_f32(p, n), load_f32(m, n)) : load_f32(p, n);
}

INLINE void store_f32(float *p, __m512 v, int64_t n)
{
    if (n >= 16) {
        _mm512_storeu_ps(p, v);
        return;
    }
    float t[16];
    _mm512_storeu_ps(t, v);
    memcpy(p, t, (size_t)n * sizeof(float));
}

/* 32 bfloat16 values */
INLINE __m512i load_bf16x32(const uint16_t *p, int64_t n)
{
    if (n >= 32)
        return _mm512_loadu_si512((const void *)p);
    uint16_t t[32] = {0};
    if (n > 0)
        memcpy(t, p, (size_t)n * sizeof(uint16_t));
    return _mm512_loadu_si512((const void *)t);
}

/* float32 lanes rounded to bfloat16 (nearest even; NaN kept, made quiet), each result in
 * its lane's high 16 bits (the low 16 are left over): pg_cpu_f32_to_bf16's rounding */
INLINE __m512i round_bf16_hi(__m512 x)
{
    const __m512i b = _mm512_castps_si512(x);
    const uint16_t is_nan = _mm512_cmpgt_epi32_mask(
        _mm512_and_si512(b, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(b, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd));
    return _mm512_mask_blend_epi32(is_nan, r, _mm512_or_si512(b, _mm512_set1_epi32(0x00400000)));
}

/* ---- pair words ------------------------------------------------------------------------ */

/* 16-bit elements 2t+1 of (lo, hi) for t < 32: the high halves of 32 lanes, in order */
static const uint16_t odd_halves[32] = {1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21,
                                        23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43,
                                        45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
/* 16-bit elements (lo[t], hi[t]) for t < 16: two rows' first 16 values interleaved */
static const uint16_t interleave_rows[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                             37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                             11, 43, 12, 44, 13, 45, 14, 46, 15, 47};

/* Across two rows (k and k+1) of 16 columns: word j = (r0[j], r1[j]); r1 NULL (odd K's
 * last pair): a zero high half. Rows of bfloat16 bits, or of float32 (f32) rounded, each
 * value first multiplied by its mask (m0, m1: the masks of r0 and r1; f32 only, NULL: none) */
INLINE __m512i pairs_of_rows(const void *r0, const void *r1, const float *m0, const float *m1,
                             bool f32, int64_t n)
{
    if (f32) {
        __m512i lo = _mm512_srli_epi32(round_bf16_hi(load_f32_masked((const float *)r0, m0, n)),
                                       16);
        if (!r1)
            return lo;
        __m512i hi = round_bf16_hi(load_f32_masked((const float *)r1, m1, n));
        return _mm512_or_si512(lo, _mm512_andnot_si512(_mm512_set1_epi32(0xffff), hi));
    }
    const int64_t n16 = n < 16 ? n : 16;
    __m512i lo = load_bf16x32((const uint16_t *)r0, n16);
    __m512i hi = r1 ? load_bf16x32((const uint16_t *)r1, n16) : _mm512_setzero_si512();
    return _mm512_permutex2var_epi16(lo, _mm512_loadu_si512((const void *)interleave_rows), hi);
}

/* Along one row, from an even k: word t = (p[2t], p[2t+1]), t < 16, of the n elements left
 * (float32 ones times their mask at m first, when m is not NULL) */
INLINE __m512i pairs_along_row(const void *p, const float *m, bool f32, int64_t n)
{
    if (!f32)
        return load_bf16x32((const uint16_t *)p, n);
    const float *f = (const float *)p;
    __m512i lo = round_bf16_hi(load_f32_masked(f, m, n));
    __m512i hi = n > 16 ? round_bf16_hi(load_f32_masked(f + 16, m ? m + 16 : NULL, n - 16))
                        : _mm512_setzero_si512();
    return _mm512_permutex2var_epi16(lo, _mm512_loadu_si512((const void *)odd_halves), hi);
}

/* r[i] word t -> r[t] word i: 16x16 32-bit words, in registers (32-bit then 64-bit
 * interleaves within 128-bit lanes, then two rounds of 128-bit lane shuffles) */
INLINE void transpose16(__m512i r[16])
{
    __m512i t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* u[i + c] lane L: rows i..i+3 of column 4L + c */
        u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int c = 0; c < 4; c++) { /* t[c] = lanes (0, 2) of rows 0-7; t[4 + c]: lanes (1, 3) */
        t[c] = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88);
        t[4 + c] = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        t[8 + c] = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
        t[12 + c] = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
    }
    for (int c = 0; c < 4; c++) { /* column c: lane 0 of rows 0-3, 4-7, 8-11, 12-15 */
        r[c] = _mm512_shuffle_i32x4(t[c], t[8 + c], 0x88);
        r[4 + c] = _mm512_shuffle_i32x4(t[4 + c], t[12 + c], 0x88);
        r[8 + c] = _mm512_shuffle_i32x4(t[c], t[8 + c], 0xdd);
        r[12 + c] = _mm512_shuffle_i32x4(t[4 + c], t[12 + c], 0xdd);
    }
}

/* ---- packing --------------------------------------------------------------------------- */

/* B (K, N) not transposed: the pair word row k2 of columns j.. (n of them, at most 16) of
 * the slice starting at row p0, from rows p0 + 2 k2 and the next (none past the slice's kc
 * rows), stored at dst (column j's word at k2) */
INLINE void pack_b_pair_row(const pg_bf16_operand *b, int64_t p0, int64_t kc, int64_t k2,
                            int64_t j, int64_t n, uint32_t *dst)
{
    const int64_t es = b->f32 ? 4 : 2;
    const char *r0 = (const char *)b->p + ((p0 + 2 * k2) * b->ld + j) * es;
    const char *r1 = 2 * k2 + 1 < kc ? r0 + b->ld * es : NULL;
    const float *m0 = b->mask ? b->mask + (p0 + 2 * k2) * b->ld + j : NULL;
    _mm512_storeu_si512((void *)dst,
                        pairs_of_rows(r0, r1, m0, m0 && r1 ? m0 + b->ld : NULL, b->f32, n));
}

/* B stored (N, K): its rows j.. (n of them, at most 16) are op(B)'s columns, contiguous in
 * k; all kc2 pair words of the slice starting at p0, 16 at a time through transposes, at
 * dst (column j's word at k2 = 0; a panel row is NR words) */
INLINE void pack_b_trans_group(const pg_bf16_operand *b, int64_t p0, int64_t kc, int64_t j,
                               int64_t n, uint32_t *dst)
{
    const int64_t kc2 = (kc + 1) / 2, es = b->f32 ? 4 : 2;
    const char *B = (const char *)b->p;
    for (int64_t k2 = 0; k2 < kc2; k2 += 16) {
        __m512i r[16];
        for (int i = 0; i < 16; i++)
            r[i] = i < n ? pairs_along_row(B + ((j + i) * b->ld + p0 + 2 * k2) * es,
                                           b->mask ? b->mask + (j + i) * b->ld + p0 + 2 * k2
                                                   : NULL,
                                           b->f32,
                                           kc - 2 * k2)
                         : _mm512_setzero_si512();
        transpose16(r);
        for (int t = 0; t < 16 && k2 + t < kc2; t++)
            _mm512_storeu_si512((void *)(dst + (k2 + t) * NR), r[t]);
    }
}

/* op(B)[p0:p0+kc, j0:j0+nc] -> bp[panel][k2][NR], k2 < ceil(kc/2). A panel's columns past
 * nc are zero up to the next multiple of 16; the tile reads only vectors that hold columns. */
static BF16_TARGET void pack_b(const pg_bf16_operand *b, int64_t p0, int64_t j0, int64_t kc,
                               int64_t nc, uint32_t *bp)
{
    const int64_t kc2 = (kc + 1) / 2;
    for (int64_t j = 0; j < nc; j += 16) {
        const int64_t n = nc - j < 16 ? nc - j : 16;
        uint32_t *dst = bp + (j / NR) * NR * kc2 + j % NR; /* column j's place at k2 = 0 */
        if (!b->trans) /* B (K, N): rows p0 + 2 k2 and the next, columns j0 + j.. */
            for (int64_t k2 = 0; k2 < kc2; k2++)
                pack_b_pair_row(b, p0, kc, k2, j0 + j, n, dst + k2 * NR);
        else
            pack_b_trans_group(b, p0, kc, j0 + j, n, dst);
    }
}

/* op(A)[i0:i0+mc, p0:p0+kc] -> ap[panel][k2][MR], rows past mc zero up to the panel's end;
 * 16 rows (two panels) at a time */
static BF16_TARGET void pack_a(const pg_bf16_operand *a, int64_t i0, int64_t p0, int64_t mc,
                               int64_t kc, uint32_t *ap)
{
    const int64_t kc2 = (kc + 1) / 2, mp = (mc + MR - 1) / MR * MR;
    const uint16_t *A = (const uint16_t *)a->p;
    for (int64_t i = 0; i < mp; i += 2 * MR) {
        uint32_t *d0 = ap + i * kc2, *d1 = i + MR < mp ? d0 + MR * kc2 : NULL;
        const int64_t m = mc - i < 16 ? mc - i : 16; /* rows of A here */
        if (a->trans) { /* A stored (K, M): rows p0 + 2 k2 and the next, columns i0 + i.. */
            for (int64_t k2 = 0; k2 < kc2; k2++) {
                const uint16_t *r0 = A + (p0 + 2 * k2) * a->ld + i0 + i;
                __m512i w = pairs_of_rows(r0, 2 * k2 + 1 < kc ? r0 + a->ld : NULL, NULL, NULL,
                                          false, m);
                _mm256_storeu_si256((__m256i *)(d0 + k2 * MR), _mm512_castsi512_si256(w));
                if (d1)
                    _mm256_storeu_si256((__m256i *)(d1 + k2 * MR), _mm512_extracti64x4_epi64(w, 1));
            }
            continue;
        }
        for (int64_t k2 = 0; k2 < kc2; k2 += 16) { /* A (M, K): rows contiguous in k */
            __m512i r[16];
            for (int t = 0; t < 16; t++)
                r[t] = t < m ? pairs_along_row(A + (i0 + i + t) * a->ld + p0 + 2 * k2, NULL, false,
                                               kc - 2 * k2)
                             : _mm512_setzero_si512();
            transpose16(r);
            for (int t = 0; t < 16 && k2 + t < kc2; t++) {
                _mm256_storeu_si256((__m256i *)(d0 + (k2 + t) * MR), _mm512_castsi512_si256(r[t]));
                if (d1)
                    _mm256_storeu_si256((__m256i *)(d1 + (k2 + t) * MR),
                                        _mm512_extracti64x4_epi64(r[t], 1));
            }
        }
    }
}

/* ---- the micro-tile -------------------------------------------------------------------- */

/* C[0:mr, 0:nr] = first ? alpha*AB + beta*C : C + alpha*AB; AB = ap (kc2 x MR pair words)^T
 * . bp (kc2 x NR), over NZ = ceil(nr / 16) column vectors. Every loop over the tile's
 * registers has constant bounds (NZ is a constant in each caller), so the 8 x NZ
 * accumulators stay in registers. */
INLINE void tile(const int NZ, int64_t kc2, const uint32_t *ap, const uint32_t *bp, float *C,
                 int64_t ldc, int64_t mr, int64_t nr, bool first, float alpha, float beta)
{
    __m512 c[MR][3];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 3
        for (int j = 0; j < 3; j++)
            c[r][j] = _mm512_setzero_ps();
    for (int64_t k2 = 0; k2 < kc2; k2++, ap += MR, bp += NR) {
        __m512i b[3];
#pragma GCC unroll 3
        for (int j = 0; j < 3; j++)
            b[j] = j < NZ ? _mm512_loadu_si512((const void *)(bp + 16 * j)) : _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m512i a = _mm512_set1_epi32((int)ap[r]);
#pragma GCC unroll 3
            for (int j = 0; j < 3; j++)
                if (j < NZ)
                    c[r][j] = _mm512_dpbf16_ps(c[r][j], (__m512bh)a, (__m512bh)b[j]);
        }
    }
    /* the accumulators end here (so that none lives in memory during the loop above); C's
     * update reads them back: 24 stores and loads per tile, against 24 * kc2 products */
    float out[MR][NR] __attribute__((aligned(64)));
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 3
        for (int j = 0; j < 3; j++)
            if (j < NZ)
                _mm512_store_ps(&out[r][16 * j], c[r][j]);
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    for (int64_t r = 0; r < mr; r++)
        for (int64_t j = 0; 16 * j < nr; j++) {
            float *p = C + r * ldc + 16 * j;
            const int64_t n = nr - 16 * j;
            __m512 v = _mm512_load_ps(&out[r][16 * j]);
            if (alpha != 1.0f)
                v = _mm512_mul_ps(va, v);
            if (!first)
                v = _mm512_add_ps(v, load_f32(p, n));
            else if (beta != 0.0f)
                v = _mm512_fmadd_ps(vb, load_f32(p, n), v);
            store_f32(p, v, n);
        }
}

static BF16_TARGET void tile_48(int64_t kc2, const uint32_t *ap, const uint32_t *bp, float *C,
                                int64_t ldc, int64_t mr, int64_t nr, bool first, float alpha,
                                float beta)
{
    tile(3, kc2, ap, bp, C, ldc, mr, nr, first, alpha, beta);
}

static BF16_TARGET void tile_32(int64_t kc2, const uint32_t *ap, const uint32_t *bp, float *C,
                                int64_t ldc, int64_t mr, int64_t nr, bool first, float alpha,
                                float beta)
{
    tile(2, kc2, ap, bp, C, ldc, mr, nr, first, alpha, beta);
}

static BF16_TARGET void tile_16(int64_t kc2, const uint32_t *ap, const uint32_t *bp, float *C,
                                int64_t ldc, int64_t mr, int64_t nr, bool first, float alpha,
                                float beta)
{
    tile(1, kc2, ap, bp, C, ldc, mr, nr, first, alpha, beta);
}

/* ---- the loops ------------------------------------------------------------------------- */

/* K cut into equal slices of at most KC, each even (a pair never straddles two slices) */
static int64_t k_slice(int64_t K)
{
    if (K <= KC)
        return K;
    const int64_t nb = (K + KC - 1) / KC, kc = (K + nb - 1) / nb;
    return (kc + 1) / 2 * 2;
}

static BF16_TARGET void gemm(int64_t M, int64_t N, int64_t K, float alpha, const pg_bf16_operand *a,
                             const pg_bf16_operand *b, float beta, float *C, int64_t ldc,
                             uint32_t *buf)
{
    uint32_t *ap = buf + BUF_AP, *bp = buf + BUF_BP;
    const int64_t ks = k_slice(K);
    for (int64_t jc = 0; jc < N; jc += NC) {
        const int64_t nc = N - jc < NC ? N - jc : NC;
        for (int64_t pc = 0; pc < K; pc += ks) {
            const int64_t kc = K - pc < ks ? K - pc : ks, kc2 = (kc + 1) / 2;
            pack_b(b, pc, jc, kc, nc, bp);
            for (int64_t ic = 0; ic < M; ic += MC) {
                const int64_t mc = M - ic < MC ? M - ic : MC;
                pack_a(a, ic, pc, mc, kc, ap);
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    const int64_t nr = nc - jr < NR ? nc - jr : NR;
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        const int64_t mr = mc - ir < MR ? mc - ir : MR;
                        float *c = C + (ic + ir) * ldc + jc + jr;
                        const uint32_t *pa = ap + ir * kc2, *pb = bp + jr * kc2;
                        if (nr > 32)
                            tile_48(kc2, pa, pb, c, ldc, mr, nr, pc == 0, alpha, beta);
                        else if (nr > 16)
                            tile_32(kc2, pa, pb, c, ldc, mr, nr, pc == 0, alpha, beta);
                        else
                            tile_16(kc2, pa, pb, c, ldc, mr, nr, pc == 0, alpha, beta);
                    }
                }
            }
        }
    }
}

/* ---- pre-packed B: a weight's panels, written once per optimizer step (cpu_gemm_bf16.h) -- */

static int64_t np_of(int64_t N) { return (N + NR - 1) / NR * NR; }

/* Rows [r0, r1) of a float32 weight W (O, In) (r0 a multiple of 16) into both layouts:
 * fwd holds op(B) = W^T (K = In, N = O): the rows are columns, 16 at a time; dx holds
 * op(B) = W (K = O, N = In): the rows are K's, two to a pair word. The words are pack_b's,
 * from the same helpers, so a product reading them is bit for bit the one that packs. */
static BF16_TARGET void prepack_rows(const float *W, int64_t O, int64_t In, int64_t r0,
                                     int64_t r1, uint32_t *fwd, uint32_t *dx)
{
    if (fwd) {
        const pg_bf16_operand b = {.p = W, .ld = In, .trans = true, .f32 = true};
        const int64_t ks = k_slice(In), np = np_of(O);
        for (int64_t pc = 0; pc < In; pc += ks) {
            const int64_t kc = In - pc < ks ? In - pc : ks, kc2 = (kc + 1) / 2;
            uint32_t *base = fwd + np * (pc / 2); /* earlier slices are even: pc/2 pair rows */
            for (int64_t j = r0; j < r1; j += 16)
                pack_b_trans_group(&b, pc, kc, j, r1 - j < 16 ? r1 - j : 16,
                                   base + (j / NR) * NR * kc2 + j % NR);
        }
    }
    if (dx) {
        const pg_bf16_operand b = {.p = W, .ld = In, .trans = false, .f32 = true};
        const int64_t ks = k_slice(O), np = np_of(In);
        for (int64_t k = r0; k < r1; k += 2) { /* a slice starts at an even row: no pair straddles */
            const int64_t pc = k / ks * ks, kc = O - pc < ks ? O - pc : ks, kc2 = (kc + 1) / 2;
            const int64_t k2 = (k - pc) / 2;
            uint32_t *base = dx + np * (pc / 2) + k2 * NR;
            for (int64_t j = 0; j < In; j += 16)
                pack_b_pair_row(&b, pc, kc, k2, j, In - j < 16 ? In - j : 16,
                                base + (j / NR) * NR * kc2 + j % NR);
        }
    }
}

/* gemm() with B read from its pre-packed panels (b->packed: the whole op(B), this product's
 * columns starting at b->packed_col, a multiple of 16): the same slices, the same tiles per
 * column, so the same bits; a tile never crosses a panel of the whole op(B). */
static BF16_TARGET void gemm_packed(int64_t M, int64_t N, int64_t K, float alpha,
                                    const pg_bf16_operand *a, const pg_bf16_operand *b,
                                    float beta, float *C, int64_t ldc, uint32_t *buf)
{
    uint32_t *ap = buf + BUF_AP;
    const int64_t ks = k_slice(K), c0 = b->packed_col;
    for (int64_t pc = 0; pc < K; pc += ks) {
        const int64_t kc = K - pc < ks ? K - pc : ks, kc2 = (kc + 1) / 2;
        const uint32_t *bs = b->packed + b->packed_np * (pc / 2);
        for (int64_t ic = 0; ic < M; ic += MC) {
            const int64_t mc = M - ic < MC ? M - ic : MC;
            pack_a(a, ic, pc, mc, kc, ap);
            for (int64_t n = c0; n < c0 + N;) {
                const int64_t o = n % NR, nr = NR - o < c0 + N - n ? NR - o : c0 + N - n;
                const uint32_t *pb = bs + (n / NR) * NR * kc2 + o;
                for (int64_t ir = 0; ir < mc; ir += MR) {
                    const int64_t mr = mc - ir < MR ? mc - ir : MR;
                    float *c = C + (ic + ir) * ldc + (n - c0);
                    const uint32_t *pa = ap + ir * kc2;
                    if (nr > 32)
                        tile_48(kc2, pa, pb, c, ldc, mr, nr, pc == 0, alpha, beta);
                    else if (nr > 16)
                        tile_32(kc2, pa, pb, c, ldc, mr, nr, pc == 0, alpha, beta);
                    else
                        tile_16(kc2, pa, pb, c, ldc, mr, nr, pc == 0, alpha, beta);
                }
                n += nr;
            }
        }
    }
}

int64_t pg_cpu_gemm_bf16_packed_np(int64_t N) { return np_of(N); }

size_t pg_cpu_gemm_bf16_packed_words(int64_t K, int64_t N)
{
    return (size_t)np_of(N) * (size_t)((K + 1) / 2);
}

bool pg_cpu_gemm_bf16_prepack_rows(const float *W, int64_t O, int64_t In, int64_t r0, int64_t r1,
                                   uint32_t *fwd, uint32_t *dx)
{
    if (!pg_cpu_gemm_bf16_runs() || r0 % 16 != 0 || r0 < 0 || r1 > O || O < 1 || In < 1)
        return false;
    prepack_rows(W, O, In, r0, r1, fwd, dx);
    return true;
}

bool pg_cpu_gemm_bf16_runs(void)
{
    return PG_BF16_EMULATED || pg_cpu_isa() >= PG_ISA_AVX512_BF16;
}

bool pg_cpu_gemm_bf16_emulated(void) { return PG_BF16_EMULATED; }

bool pg_cpu_gemm_bf16(int64_t M, int64_t N, int64_t K, float alpha, const pg_bf16_operand *a,
                      const pg_bf16_operand *b, float beta, float *C, int64_t ldc)
{
    if (!pg_cpu_gemm_bf16_runs() || a->f32 || M < 1 || N < 1 || K < 1)
        return false; /* A is bfloat16; an empty product is the caller's (cpu_gemm_bf16.h) */
    uint32_t *buf = pg_cpu_scratch(PG_SCRATCH_BF16GEMM, (size_t)BUF_WORDS * sizeof(uint32_t));
    if (!buf)
        return false;
    if (b->packed && b->packed_col % 16 == 0 && !b->mask) /* panels hold the unmasked B */
        gemm_packed(M, N, K, alpha, a, b, beta, C, ldc, buf);
    else
        gemm(M, N, K, alpha, a, b, beta, C, ldc, buf);
    return true;
}

#else /* no AVX512_BF16 intrinsics in this compiler: the convert kernel serves bfloat16 */

int64_t pg_cpu_gemm_bf16_packed_np(int64_t N) { return N; }

size_t pg_cpu_gemm_bf16_packed_words(int64_t K, int64_t N) { return (size_t)(N * K); }

bool pg_cpu_gemm_bf16_prepack_rows(const float *W, int64_t O, int64_t In, int64_t r0, int64_t r1,
                                   uint32_t *fwd, uint32_t *dx)
{
    (void)W, (void)O, (void)In, (void)r0, (void)r1, (void)fwd, (void)dx;
    return false;
}

bool pg_cpu_gemm_bf16_runs(void) { return false; }

bool pg_cpu_gemm_bf16_emulated(void) { return false; }

bool pg_cpu_gemm_bf16(int64_t M, int64_t N, int64_t K, float alpha, const pg_bf16_operand *a,
                      const pg_bf16_operand *b, float beta, float *C, int64_t ldc)
{
    (void)M, (void)N, (void)K, (void)alpha, (void)a, (void)b, (void)beta, (void)C, (void)ldc;
    return false;
}

#endif
