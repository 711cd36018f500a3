/* cpu_gemm.c - the CPU kernels of the GEMM contract (pg_gemm.h) and their table.
 *
 * A kernel runs one whole descriptor on the calling thread (the scheduler in
 * cpu_gemm_schedule.c hands it panels): one single-threaded OpenBLAS call per
 * batch entry (the scipy-openblas32 build NumPy ships; on one core it runs
 * these shapes as fast as MKL), then the epilogue row by row over the panel
 * it just wrote, while the panel is still in cache. float32 goes through
 * pg_cpu_sgemm, which runs pygpu's own AVX2 kernel where OpenBLAS has slow
 * mid-size shapes (cpu_sgemm.c says where and why). The epilogue's loops are
 * written once per activation (the switch is outside the loops) so that the
 * compiler vectorises the relu and identity cases.
 *
 * The table is keyed by (dtype_ab, dtype_c). float32 and float64 are built in;
 * the half-precision kernels add themselves with pg_cpu_gemm_register. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include "cpu_gemm.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "../../core/pg_dtype.h"
#include "../../core/pg_node.h"
#include "cpu_act.h"
#include "cpu_sgemm.h"

/* ---- the epilogue --------------------------------------------------------------------- */

/* C (M,N) of one batch entry: bias, activation, derivative mask (the op table's PG_ACT
 * rows, cpu_act.h), then column sums into acc */
#define EPILOGUE(T)                                                                            \
    static void epilogue_##T(const pg_gemm *g, T *C, const T *AUX, double *acc)                \
    {                                                                                          \
        int64_t M = g->M, N = g->N;                                                            \
        const T *bias = (g->epilogue & PG_EPI_BIAS) ? (const T *)g->bias : NULL;               \
        bool act = !(g->epilogue & PG_EPI_DACT) && g->act != PG_ACT_NONE;                      \
        bool dact = (g->epilogue & PG_EPI_DACT) && g->act != PG_ACT_NONE;                      \
        for (int64_t m = 0; m < M; m++) {                                                      \
            T *row = C + m * g->ldc;                                                           \
            if (bias)                                                                          \
                for (int64_t j = 0; j < N; j++)                                                \
                    row[j] += bias[j];                                                         \
            if (act)                                                                           \
                pg_act_fwd_##T(g->act, N, row);                                                \
            if (dact) {                                                                        \
                const T *y = AUX + m * g->ldaux;                                               \
                pg_act_bwd_##T(g->act, N, row, row, y);                                        \
            }                                                                                  \
            if (acc)                                                                           \
                for (int64_t j = 0; j < N; j++)                                                \
                    acc[j] += row[j];                                                          \
        }                                                                                      \
    }
EPILOGUE(float)
EPILOGUE(double)

/* ---- the kernels ---------------------------------------------------------------------- */

#define GEMM_KERNEL(T, NAME, PRODUCT)                                                             \
    static pg_status NAME(const pg_gemm *g)                                                    \
    {                                                                                          \
        double *acc = NULL;                                                                    \
        if (g->epilogue & PG_EPI_BGRAD) {                                                      \
            acc = calloc((size_t)g->N + 1, sizeof *acc);                                       \
            if (!acc)                                                                          \
                return pg_error_set(PG_ERR_NOMEM, "matmul: out of host memory for the bias "  \
                                                  "gradient's %lld sums", (long long)g->N);    \
        }                                                                                      \
        bool epi = g->epilogue != PG_EPI_NONE || g->act != PG_ACT_NONE;                        \
        for (int64_t z = 0; z < g->batch; z++) {                                               \
            const T *A = (const T *)g->a + z * g->stride_a;                                    \
            const T *B = (const T *)g->b + z * g->stride_b;                                    \
            T *C = (T *)g->c + z * g->stride_c;                                                \
            const float *mask = g->b_mask ? g->b_mask + z * g->stride_b : NULL;               \
            if (g->M > 0 && g->N > 0 && !PRODUCT(g, A, B, mask, C)) {                          \
                free(acc);                                                                     \
                return pg_error_set(PG_ERR_NOMEM, "matmul: out of host memory for the "        \
                                                  "masked weight");                            \
            }                                                                                  \
            if (epi)                                                                           \
                epilogue_##T(g, C, g->aux ? (const T *)g->aux + z * g->stride_c : NULL, acc);  \
        }                                                                                      \
        if (acc) {                                                                             \
            T *bg = (T *)g->bias_grad;                                                         \
            for (int64_t j = 0; j < g->N; j++)                                                 \
                bg[j] = (T)acc[j];                                                             \
            free(acc);                                                                         \
        }                                                                                      \
        return PG_OK;                                                                          \
    }
/* One batch entry's product; false when out of memory. float32: pygpu's AVX2 kernel or
 * OpenBLAS (cpu_sgemm.c). A mask of B (pg_gemm.h) is multiplied in as the AVX2 kernel packs
 * B; where OpenBLAS runs (it packs B itself), B * mask is written first. */
static bool product_f32(const pg_gemm *g, const float *A, const float *B, const float *mask,
                        float *C)
{
    if (!mask) {
        pg_cpu_sgemm(g->trans_a, g->trans_b, g->M, g->N, g->K, (float)g->alpha, A, g->lda, B,
                     g->ldb, (float)g->beta, C, g->ldc);
        return true;
    }
    pg_sgemm_operand oa = {.p = A, .ld = g->lda, .trans = g->trans_a};
    pg_sgemm_operand ob = {.p = B, .ld = g->ldb, .trans = g->trans_b, .mask = mask};
    if (pg_cpu_sgemm_ex(g->M, g->N, g->K, (float)g->alpha, &oa, &ob, (float)g->beta, C,
                        g->ldc)) {
        pg_cpu_gemm_mask_note(true);
        return true;
    }
    const int64_t rows = g->trans_b ? g->N : g->K, cols = g->trans_b ? g->K : g->N;
    float *t = pg_cpu_gemm_masked_copy(B, mask, rows, cols, g->ldb);
    if (!t)
        return false;
    pg_cpu_gemm_mask_note(false);
    pg_cpu_sgemm(g->trans_a, g->trans_b, g->M, g->N, g->K, (float)g->alpha, A, g->lda, t,
                 cols > 0 ? cols : 1, (float)g->beta, C, g->ldc);
    free(t);
    return true;
}

/* float64: OpenBLAS (a mask of B is float32 B's only: the scheduler refuses it here) */
static bool product_f64(const pg_gemm *g, const double *A, const double *B, const float *mask,
                        double *C)
{
    (void)mask;
    scipy_cblas_dgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
                      g->trans_b ? CblasTrans : CblasNoTrans, (blasint)g->M, (blasint)g->N,
                      (blasint)g->K, g->alpha, A, (blasint)g->lda, B, (blasint)g->ldb, g->beta, C,
                      (blasint)g->ldc);
    return true;
}

GEMM_KERNEL(float, gemm_f32, product_f32)
GEMM_KERNEL(double, gemm_f64, product_f64)

/* ---- the table ------------------------------------------------------------------------ */

static pg_gemm_kernel_fn g_kernels[PG_NUM_DTYPES][PG_NUM_DTYPES] = {
    [PG_FLOAT32][PG_FLOAT32] = gemm_f32,
    [PG_FLOAT64][PG_FLOAT64] = gemm_f64,
};

pg_gemm_kernel_fn pg_cpu_gemm_kernel(int dtype_ab, int dtype_c)
{
    if (dtype_ab < 0 || dtype_ab >= PG_NUM_DTYPES || dtype_c < 0 || dtype_c >= PG_NUM_DTYPES)
        return NULL;
    return g_kernels[dtype_ab][dtype_c];
}

void pg_cpu_gemm_register(int dtype_ab, int dtype_c, pg_gemm_kernel_fn fn)
{
    if (dtype_ab >= 0 && dtype_ab < PG_NUM_DTYPES && dtype_c >= 0 && dtype_c < PG_NUM_DTYPES)
        g_kernels[dtype_ab][dtype_c] = fn;
}
