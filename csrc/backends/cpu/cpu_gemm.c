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

#define GEMM_KERNEL(T, NAME, BLAS)                                                             \
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
            if (g->M > 0 && g->N > 0)                                                          \
                BLAS(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,                    \
                     g->trans_b ? CblasTrans : CblasNoTrans, (blasint)g->M, (blasint)g->N,     \
                     (blasint)g->K, (T)g->alpha, A, (blasint)g->lda, B, (blasint)g->ldb,       \
                     (T)g->beta, C, (blasint)g->ldc);                                          \
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
/* float32: pygpu's AVX2 kernel or OpenBLAS (cpu_sgemm.c), behind cblas's signature */
static void sgemm_row_major(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint M,
                            blasint N, blasint K, float alpha, const float *A, blasint lda,
                            const float *B, blasint ldb, float beta, float *C, blasint ldc)
{
    (void)order; /* always CblasRowMajor here */
    pg_cpu_sgemm(ta == CblasTrans, tb == CblasTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

GEMM_KERNEL(float, gemm_f32, sgemm_row_major)
GEMM_KERNEL(double, gemm_f64, scipy_cblas_dgemm)

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
