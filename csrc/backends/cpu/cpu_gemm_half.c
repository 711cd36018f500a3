/* cpu_gemm_half.c - GEMM with float16/bfloat16 inputs and float32 accumulation:
 * the half kernels of the GEMM contract (csrc/core/pg_gemm.h).
 *
 * Two kernels, both with pg_gemm_kernel_fn's signature (one whole descriptor on
 * the calling thread; a scheduler hands them panels), both writing float32,
 * float16 or bfloat16 C through one epilogue (alpha/beta, bias, activation,
 * DACT, BGRAD, rounded once to nearest even):
 *
 *   pg_cpu_gemm_half_convert   any CPU. Convert while packing: K (and a very
 *       wide N) is cut into blocks; each block of op(A) and op(B) is converted
 *       to float32 (cpu_half_convert.c: F16C / integer shifts, per ISA) and
 *       multiplied by pg_cpu_sgemm (cpu_sgemm.c), which accumulates straight into a
 *       float32 C or into a float32 tile that the epilogue rounds once into a
 *       half C. Half costs fp32's GEMM plus one conversion of each operand per
 *       product; it is what runs on AVX2 machines (this project's Zen 1).
 *   pg_cpu_gemm_bf16_avx512    bfloat16 inputs on a CPU with AVX512_BF16: cpu_gemm_bf16.c's
 *       vdpbf16ps kernel (BLIS loops, 8x48 tiles), chosen at run time only when
 *       pg_cpu_isa() reports AVX512_BF16. No CI machine has it: CI runs the kernel's
 *       code under SIMDe emulation (cpu_gemm_bf16.c says how); its speed is unmeasured.
 *
 * Both also take B stored as float32 (b_f32: autocast's float32 weights), each value
 * rounded to the half dtype as the panel is converted, so a layer needs no cast pass
 * and no half copy of its weight; the product is exactly that of the cast weight.
 * With b_exact (the backward's dX) the convert kernel hands the float32 B to sgemm as it
 * is (no pass at all); the AVX512_BF16 kernel rounds it as always (pg_gemm.h says why).
 *
 * pg_cpu_gemm_half_kernel picks one for this CPU; pg_cpu_gemm_half_register puts
 * it into the GEMM kernel table (cpu_gemm.c), so matmul and the fused linear
 * layers reach it through the scheduler (cpu_gemm_schedule.c), in panels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_gemm.h"
#include "../../core/pg_half.h"
#include "cpu_act.h"
#include "cpu_gemm.h"
#include "cpu_gemm_bf16.h"
#include "cpu_gemm_half.h"
#include "cpu_half_convert.h"
#include "cpu_isa.h"
#include "cpu_sgemm.h"
#include "cpu_kernels.h"
#include "cpu_vecmath.h"

#define KC 1024                     /* K block of the convert path (see k_block) */
#define NC_BYTES ((int64_t)4 << 20) /* converted B block, at most (see n_block) */

static pg_status no_memory(void)
{
    return pg_error_set(PG_ERR_NOMEM, "half matmul: out of host memory for the packing buffers");
}

static bool is_half(int dt) { return dt == PG_FLOAT16 || dt == PG_BFLOAT16; }

/* ---- the shared epilogue: float32 rows -> C ------------------------------------------- */

/* The row loops are one simd loop per activation (cpu_act.h, the switch outside the
 * loop) dispatched per ISA (cpu_vecmath.h), so relu/identity rows vectorise with AVX2. */
PG_CPU_DISPATCH(void, epi_bias_act, (int64_t n, float *row, const float *bias, int act),
                (n, row, bias, act))
{
    if (bias)
        _Pragma("omp simd") for (int64_t j = 0; j < n; j++) row[j] += bias[j];
    pg_act_fwd_float(act, n, row); /* the op table's PG_ACT rows (cpu_act.h) */
}

/* row *= act'(y), y the saved activation OUTPUT */
PG_CPU_DISPATCH(void, epi_dact, (int64_t n, float *row, const float *y, int act), (n, row, y, act))
{
    pg_act_bwd_float(act, n, row, row, y);
}

PG_CPU_DISPATCH(void, epi_axpy, (int64_t n, float *row, const float *old, float beta),
                (n, row, old, beta))
{
    _Pragma("omp simd") for (int64_t j = 0; j < n; j++) row[j] += beta * old[j];
}

/* A row of C (or of aux / bias, which share C's dtype) as float32: `src` itself when C is
 * float32, else converted into `dst`. */
static const float *row_f32(int dt, const void *src, int64_t n, float *dst)
{
    if (dt == PG_FLOAT32)
        return (const float *)src;
    pg_cpu_half_to_f32(dt, n, (const uint16_t *)src, dst);
    return dst;
}

/* acc: (M,N) float32 with leading dimension ldacc for batch item z, the product times
 * `scale` (alpha still to apply). in_c: acc IS a float32 C that sgemm wrote with alpha and
 * beta applied, and only the bias, activation and derivative are left; otherwise beta * C
 * is added here and each row is stored into C, rounded once for a half C. tmp: 3 * N floats. */
static void epilogue(const pg_gemm *g, int64_t z, float *acc, int64_t ldacc, bool in_c,
                     float scale, float *tmp)
{
    const int64_t M = g->M, N = g->N;
    const int dtc = g->dtype_c;
    const size_t csz = dtc == PG_FLOAT32 ? 4 : 2;
    float *biasf = tmp, *old = tmp + N, *extra = tmp + 2 * N;
    char *C = (char *)g->c + z * g->stride_c * (int64_t)csz;
    const char *AUX = g->aux ? (const char *)g->aux + z * g->stride_c * (int64_t)csz : NULL;
    const float beta = (float)g->beta;
    const float *bias = (g->epilogue & PG_EPI_BIAS) ? row_f32(dtc, g->bias, N, biasf) : NULL;
    const bool dact = (g->epilogue & PG_EPI_DACT) && g->act != PG_ACT_NONE;
    const int act = (g->epilogue & PG_EPI_DACT) ? PG_ACT_NONE : g->act;
    for (int64_t m = 0; m < M; m++) {
        float *row = acc + m * ldacc;
        char *crow = C + m * g->ldc * (int64_t)csz;
        if (!in_c && scale != 1.0f)
            for (int64_t n = 0; n < N; n++)
                row[n] *= scale;
        if (!in_c && beta != 0.0f)
            epi_axpy(N, row, row_f32(dtc, crow, N, old), beta);
        if (bias || act != PG_ACT_NONE)
            epi_bias_act(N, row, bias, act);
        if (dact)
            epi_dact(N, row, row_f32(dtc, AUX + m * g->ldaux * (int64_t)csz, N, extra), g->act);
        if (in_c)
            continue;
        if (dtc == PG_FLOAT32)
            memcpy(crow, row, (size_t)N * sizeof(float));
        else
            pg_cpu_f32_to_half(dtc, N, row, (uint16_t *)crow);
    }
}

/* bias_grad (N) = column sums of the stored (rounded) C over every row of every batch
 * entry, in row order, accumulated in double (as the float32 kernel and cublasLt). */
static pg_status bias_grad(const pg_gemm *g, float *tmp)
{
    const int64_t N = g->N;
    const int dtc = g->dtype_c;
    const size_t csz = dtc == PG_FLOAT32 ? 4 : 2;
    double *bsum = calloc((size_t)(N > 0 ? N : 1), sizeof(double));
    if (!bsum)
        return no_memory();
    for (int64_t z = 0; z < g->batch; z++)
        for (int64_t m = 0; m < g->M; m++) {
            const char *crow = (const char *)g->c + (z * g->stride_c + m * g->ldc) * (int64_t)csz;
            const float *v = row_f32(dtc, crow, N, tmp);
            for (int64_t n = 0; n < N; n++)
                bsum[n] += v[n];
        }
    for (int64_t n = 0; n < N; n++)
        tmp[n] = (float)bsum[n];
    if (dtc == PG_FLOAT32)
        memcpy(g->bias_grad, tmp, (size_t)N * sizeof(float));
    else
        pg_cpu_f32_to_half(dtc, N, tmp, (uint16_t *)g->bias_grad);
    free(bsum);
    return PG_OK;
}

static pg_status check_desc(const pg_gemm *g)
{
    if (!is_half(g->dtype_ab) || (g->dtype_c != PG_FLOAT32 && !is_half(g->dtype_c)))
        return pg_error_set(PG_ERR_DTYPE, "half matmul: inputs must be float16/bfloat16 and the "
                                          "output float32, float16 or bfloat16 (got %s -> %s)",
                            pg_dtype_name((pg_dtype)g->dtype_ab), pg_dtype_name((pg_dtype)g->dtype_c));
    if (g->M > 2147483647LL || g->N > 2147483647LL || g->K > 2147483647LL)
        return pg_error_set(PG_ERR_VALUE, "half matmul: dimensions above 2^31-1 are not supported");
    return PG_OK;
}

/* ---- B stored as float32 (b_f32), rounded to the half dtype as it is read ----------------- */

/* dst = float32 values of bfloat16(src) (nearest even; NaN kept quiet with its sign and top
 * payload bits), bit for bit what widening pg_cpu_f32_to_bf16's result gives. */
PG_CPU_DISPATCH(void, f32_round_bf16, (int64_t n, const float *src, float *dst), (n, src, dst))
{
    const uint32_t *s = (const uint32_t *)src;
    uint32_t *d = (uint32_t *)dst;
    _Pragma("omp simd") for (int64_t i = 0; i < n; i++)
    {
        uint32_t b = s[i];
        uint32_t nan = (b | 0x00400000u) & 0xffff0000u;
        uint32_t r = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
        d[i] = (b & 0x7fffffffu) > 0x7f800000u ? nan : r;
    }
}

/* dst = float32 values of src rounded to dtype (float16: through F16C where the CPU has it,
 * cpu_half_convert.c, in stack-sized pieces) */
static void f32_round_half(int dtype, int64_t n, const float *src, float *dst)
{
    if (dtype == PG_BFLOAT16) {
        f32_round_bf16(n, src, dst);
        return;
    }
    uint16_t h[256];
    for (int64_t i = 0; i < n; i += 256) {
        int64_t c = n - i < 256 ? n - i : 256;
        pg_cpu_f32_to_f16(c, src + i, h);
        pg_cpu_f16_to_f32(c, h, dst + i);
    }
}

/* n consecutive elements of B from element offset `at`, as float32 values of dtype_ab */
static void load_b(const pg_gemm *g, const void *B, int64_t at, int64_t n, float *dst)
{
    if (g->b_f32)
        f32_round_half(g->dtype_ab, n, (const float *)B + at, dst);
    else
        pg_cpu_half_to_f32(g->dtype_ab, n, (const uint16_t *)B + at, dst);
}

/* pg_sgemm_operand fetches (cpu_sgemm.h): the kernel converts as it packs; ctx is the pg_gemm */
static void fetch_half(const void *ctx, const void *p, int64_t at, int64_t n, float *dst)
{
    pg_cpu_half_to_f32(((const pg_gemm *)ctx)->dtype_ab, n, (const uint16_t *)p + at, dst);
}

static void fetch_b(const void *ctx, const void *p, int64_t at, int64_t n, float *dst)
{
    load_b((const pg_gemm *)ctx, p, at, n, dst);
}

/* ---- or convert block by block, then pg_cpu_sgemm -------------------------------------- */

/* K is cut into nb equal blocks of at most KC (a multiple of 8 where K allows), and N into
 * blocks whose converted B holds at most NC_BYTES (multiples of 16 columns). Measured on
 * the MLP 784-512-512-10 (Zen 1, perf): the conversion reads B from memory either way, and
 * smaller blocks (KC 128-512, B blocks of 64-256 KiB to stay in L2) only added sgemm calls
 * and C passes, so a layer's K and a panel's N are one block up to these sizes. */
static int64_t k_block(int64_t K)
{
    if (K <= KC)
        return K > 0 ? K : 1;
    int64_t nb = (K + KC - 1) / KC, kc = (K + nb - 1) / nb;
    return (kc + 7) / 8 * 8;
}

static int64_t n_block(int64_t N, int64_t kc)
{
    int64_t nc = NC_BYTES / (int64_t)sizeof(float) / kc;
    nc = nc < 16 ? 16 : nc / 16 * 16;
    return nc >= N ? N : nc;
}

/* ---- kernels that convert (or pair) each operand as they pack it ------------------------ */

/* One batch entry's alpha * op(A) @ op(B) + beta0 * acc into the float32 acc (ldacc) by a
 * packing kernel; false when its packing memory cannot be had. */
typedef bool (*packed_product_fn)(const pg_gemm *g, const void *A, const void *B, float beta0,
                                  float *acc, int64_t ldacc);

/* A descriptor through a packing kernel: a float32 C is accumulated in place (alpha and
 * beta applied by the kernel) and gets the epilogue's bias/activation pass if any; a half
 * C is accumulated in a float32 buffer that the epilogue rounds once into C. */
static pg_status run_packed(const pg_gemm *g, packed_product_fn product)
{
    const int64_t M = g->M, N = g->N;
    if (M == 0 || N == 0)
        return PG_OK;
    const bool direct = g->dtype_c == PG_FLOAT32;
    const bool epi = g->epilogue != PG_EPI_NONE || g->act != PG_ACT_NONE;
    const size_t nacc = direct ? 0 : (size_t)(M * N);
    float *buf = malloc((nacc + 3 * (size_t)N) * sizeof(float));
    if (!buf)
        return no_memory();
    float *tmp = buf + nacc;
    for (int64_t z = 0; z < g->batch; z++) {
        const void *A = (const uint16_t *)g->a + z * g->stride_a;
        const void *B = (const char *)g->b + z * g->stride_b * (int64_t)(g->b_f32 ? 4 : 2);
        float *acc = direct ? (float *)g->c + z * g->stride_c : buf;
        const int64_t ldacc = direct ? g->ldc : N;
        if (!product(g, A, B, direct ? (float)g->beta : 0.0f, acc, ldacc)) {
            free(buf);
            return no_memory(); /* the only way a packing kernel declines */
        }
        if (epi || !direct)
            epilogue(g, z, acc, ldacc, direct, 1.0f, tmp);
    }
    pg_status st = (g->epilogue & PG_EPI_BGRAD) ? bias_grad(g, tmp) : PG_OK;
    free(buf);
    return st;
}

/* pygpu's AVX2 sgemm (cpu_sgemm.c), converting each half operand as it packs it */
static bool product_sgemm(const pg_gemm *g, const void *A, const void *B, float beta0,
                          float *acc, int64_t ldacc)
{
    pg_sgemm_operand oa = {.p = A, .ld = g->lda, .trans = g->trans_a, .fetch = fetch_half,
                           .ctx = g};
    const bool rnd = g->b_f32 && !g->b_exact && g->dtype_ab == PG_BFLOAT16;
    pg_sgemm_operand ob = {.p = B, .ld = g->ldb, .trans = g->trans_b, .ctx = g,
                           .round_bf16 = rnd,
                           .fetch = (g->b_f32 && g->b_exact) || rnd ? NULL : fetch_b};
    return pg_cpu_sgemm_ex(g->M, g->N, g->K, (float)g->alpha, &oa, &ob, beta0, acc, ldacc);
}

pg_status pg_cpu_gemm_half_convert(const pg_gemm *g)
{
    PG_TRY(check_desc(g));
    if (g->b_mask) /* not packed here: B * mask written first (cpu_gemm.h), on this thread */
        return pg_cpu_gemm_run_unmasked(NULL, g);
    const int64_t M = g->M, N = g->N, K = g->K;
    if (M == 0 || N == 0)
        return PG_OK;
    /* pygpu's AVX2 kernel converts each operand as it packs it (no converted copy);
     * elsewhere the blocks below are converted, then multiplied by pg_cpu_sgemm */
    if (pg_cpu_sgemm_own(M, N, K))
        return run_packed(g, product_sgemm);
    const int64_t kc_max = k_block(K), nc_max = n_block(N, kc_max);
    /* float32 C: sgemm accumulates straight into C (alpha and beta included), no acc */
    const bool direct = g->dtype_c == PG_FLOAT32;
    const size_t nacc = direct ? 0 : (size_t)(M * N);
    float *buf = malloc((nacc + (size_t)(M * kc_max) + (size_t)(kc_max * nc_max) + 3 * (size_t)N) *
                        sizeof(float));
    if (!buf)
        return no_memory();
    float *ap = buf + nacc, *bp = ap + M * kc_max, *tmp = bp + kc_max * nc_max;
    const int dt = g->dtype_ab;
    const bool epi = g->epilogue != PG_EPI_NONE || g->act != PG_ACT_NONE;
    for (int64_t z = 0; z < g->batch; z++) {
        const uint16_t *A = (const uint16_t *)g->a + z * g->stride_a;
        const void *B = (const char *)g->b + z * g->stride_b * (int64_t)(g->b_f32 ? 4 : 2);
        float *acc = direct ? (float *)g->c + z * g->stride_c : buf;
        const int64_t ldacc = direct ? g->ldc : N;
        const float alpha = (float)g->alpha, beta0 = direct ? (float)g->beta : 0.0f;
        if (K == 0) { /* alpha * (empty product) + beta0 * C */
            for (int64_t m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++)
                    acc[m * ldacc + n] = beta0 == 0.0f ? 0.0f : beta0 * acc[m * ldacc + n];
        }
        for (int64_t k0 = 0; k0 < K; k0 += kc_max) {
            const int64_t kc = K - k0 < kc_max ? K - k0 : kc_max;
            int64_t lda;
            /* convert rows of the STORED matrices; the transpose flag stays */
            if (!g->trans_a) { /* A (M,K): rows m, columns k0..k0+kc -> ap (M, kc) */
                for (int64_t m = 0; m < M; m++)
                    pg_cpu_half_to_f32(dt, kc, A + m * g->lda + k0, ap + m * kc);
                lda = kc;
            } else { /* A stored (K,M): rows k0..k0+kc -> ap (kc, M) */
                for (int64_t k = 0; k < kc; k++)
                    pg_cpu_half_to_f32(dt, M, A + (k0 + k) * g->lda, ap + k * M);
                lda = M;
            }
            /* B block by block of nc columns of op(B), each converted just before sgemm
             * packs it, so that it is still in L2 */
            for (int64_t n0 = 0; n0 < N; n0 += nc_max) {
                const int64_t nc = N - n0 < nc_max ? N - n0 : nc_max;
                int64_t ldb;
                const float *bsrc = bp;
                if (g->b_f32 && g->b_exact) { /* float32 B used as it is: sgemm reads it */
                    const float *F = (const float *)B;
                    bsrc = g->trans_b ? F + n0 * g->ldb + k0 : F + k0 * g->ldb + n0;
                    ldb = g->ldb;
                } else if (!g->trans_b) { /* B (K,N): rows k0..k0+kc, columns n0.. -> bp (kc, nc) */
                    for (int64_t k = 0; k < kc; k++)
                        load_b(g, B, (k0 + k) * g->ldb + n0, nc, bp + k * nc);
                    ldb = nc;
                } else { /* B stored (N,K): rows n0.., columns k0..k0+kc -> bp (nc, kc) */
                    for (int64_t n = 0; n < nc; n++)
                        load_b(g, B, (n0 + n) * g->ldb + k0, kc, bp + n * kc);
                    ldb = kc;
                }
                pg_cpu_sgemm(g->trans_a, g->trans_b, M, nc, kc, alpha, ap, lda, bsrc, ldb,
                             k0 == 0 ? beta0 : 1.0f, acc + n0, ldacc);
            }
        }
        if (epi || !direct)
            epilogue(g, z, acc, ldacc, direct, 1.0f, tmp);
    }
    pg_status st = (g->epilogue & PG_EPI_BGRAD) ? bias_grad(g, tmp) : PG_OK;
    free(buf);
    return st;
}

/* ---- AVX512_BF16: vdpbf16ps (cpu_gemm_bf16.c) ----------------------------------------- */

static bool product_bf16(const pg_gemm *g, const void *A, const void *B, float beta0, float *acc,
                         int64_t ldacc)
{
    pg_bf16_operand oa = {.p = A, .ld = g->lda, .trans = g->trans_a};
    pg_bf16_operand ob = {.p = B, .ld = g->ldb, .trans = g->trans_b, .f32 = g->b_f32};
    if (g->b_mask && g->b_f32) { /* this entry's mask: laid out as B (pg_gemm.h b_mask) */
        ob.mask = g->b_mask + ((const float *)B - (const float *)g->b);
        pg_cpu_gemm_mask_note(true);
    } else if (g->b_packed && g->b_f32 && g->batch == 1) { /* the weight's panels (pg_gemm.h) */
        ob.packed = g->b_packed;
        ob.packed_np = g->b_packed_np;
        ob.packed_col = g->b_packed_col;
    }
    return pg_cpu_gemm_bf16(g->M, g->N, g->K, (float)g->alpha, &oa, &ob, beta0, acc, ldacc);
}

pg_status pg_cpu_gemm_bf16_avx512(const pg_gemm *g)
{
    PG_TRY(check_desc(g));
    if (g->dtype_ab != PG_BFLOAT16)
        return pg_error_set(PG_ERR_DTYPE, "half matmul: the AVX512_BF16 kernel takes bfloat16");
    if (!pg_cpu_gemm_bf16_runs())
        return pg_error_set(PG_ERR_RUNTIME, "half matmul: this CPU has no AVX512_BF16");
    if (g->K == 0) /* alpha * (empty product) + beta * C: the convert kernel's loop */
        return pg_cpu_gemm_half_convert(g);
    /* b_exact too: rounded, so that dX runs at vdpbf16ps's rate (pg_gemm.h) */
    return run_packed(g, product_bf16);
}

/* ---- selection and the matmul node ------------------------------------------------------ */

pg_gemm_kernel_fn pg_cpu_gemm_half_kernel(int dtype_ab, int dtype_c, const char **name)
{
    (void)dtype_c;
    if (dtype_ab == PG_BFLOAT16 && pg_cpu_gemm_bf16_runs()) {
        if (name)
            *name = pg_cpu_gemm_bf16_emulated() ? "avx512_bf16 (SIMDe emulation)" : "avx512_bf16";
        return pg_cpu_gemm_bf16_avx512;
    }
    if (name)
        *name = "convert_f32";
    return pg_cpu_gemm_half_convert;
}

void pg_cpu_gemm_half_register(void)
{
    static const int ab[] = {PG_FLOAT16, PG_BFLOAT16};
    static const int c[] = {PG_FLOAT32, PG_FLOAT16, PG_BFLOAT16};
    for (size_t i = 0; i < sizeof ab / sizeof *ab; i++)
        for (size_t j = 0; j < sizeof c / sizeof *c; j++)
            pg_cpu_gemm_register(ab[i], c[j], pg_cpu_gemm_half_kernel(ab[i], c[j], NULL));
}
