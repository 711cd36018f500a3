/* cpu_matmul.c - batched matrix multiply on the CPU.
 *
 * float32/float64 go to OpenBLAS (the scipy-openblas32 build NumPy and SciPy
 * ship), whose kernels and threads are the reference we measure against;
 * int64 (no BLAS has it) is a plain i-k-j loop. Each operand arrives either
 * row-major (unit stride on its last axis) or as a transposed view (unit
 * stride on its middle axis); the latter becomes a BLAS transpose flag, so
 * `a @ b.T` copies nothing. dst may be a panel of a larger matrix (row or
 * column panels, cut by cpu_parallel.c), so its row stride is read, not assumed.
 * OpenBLAS itself runs one thread per call: the device's pool does the
 * threading (see cpu_parallel.c for why). */
#include <cblas.h>

#include "cpu_gemm_half.h"
#include "cpu_kernels.h"

/* Returns the BLAS transpose flag of a (B, rows, cols) operand and its leading dimension. */
static enum CBLAS_TRANSPOSE layout(const pg_tensor *t, blasint *ld)
{
    if (t->strides[2] == 1) {
        *ld = (blasint)t->strides[1];
        return CblasNoTrans;
    }
    *ld = (blasint)t->strides[2];
    return CblasTrans;
}

static void matmul_i64(const pg_tensor *a, const pg_tensor *b, const pg_tensor *c)
{
    int64_t B = c->shape[0], M = c->shape[1], N = c->shape[2], K = a->shape[2];
    for (int64_t z = 0; z < B; z++) {
        const int64_t *A = (const int64_t *)pg_tensor_data(a) + z * a->strides[0];
        const int64_t *Bm = (const int64_t *)pg_tensor_data(b) + z * b->strides[0];
        int64_t *C = (int64_t *)pg_tensor_data(c) + z * c->strides[0];
        for (int64_t m = 0; m < M; m++) {
            int64_t *crow = C + m * c->strides[1];
            for (int64_t n = 0; n < N; n++)
                crow[n] = 0;
            for (int64_t k = 0; k < K; k++) {
                /* unsigned arithmetic wraps on overflow as NumPy does, without UB */
                uint64_t av = (uint64_t)A[m * a->strides[1] + k * a->strides[2]];
                const int64_t *brow = Bm + k * b->strides[1];
                for (int64_t n = 0; n < N; n++)
                    crow[n] = (int64_t)((uint64_t)crow[n] + av * (uint64_t)brow[n * b->strides[2]]);
            }
        }
    }
}

pg_status pg_cpu_matmul(const pg_node *node)
{
    const pg_tensor *a = &node->src[0], *b = &node->src[1], *c = &node->dst;
    if (a->dtype == PG_FLOAT16 || a->dtype == PG_BFLOAT16) /* the half GEMM (cpu_gemm_half.c) */
        return pg_cpu_matmul_half(node);
    if (c->dtype == PG_INT64) {
        matmul_i64(a, b, c);
        return PG_OK;
    }
    blasint M = (blasint)c->shape[1], N = (blasint)c->shape[2], K = (blasint)a->shape[2];
    blasint lda, ldb, ldc = (blasint)(c->strides[1] > N ? c->strides[1] : N);
    enum CBLAS_TRANSPOSE ta = layout(a, &lda), tb = layout(b, &ldb);
    size_t isz = pg_dtype_size((pg_dtype)c->dtype);
    for (int64_t z = 0; z < c->shape[0]; z++) {
        const char *A = pg_tensor_data(a) + z * a->strides[0] * (int64_t)isz;
        const char *Bm = pg_tensor_data(b) + z * b->strides[0] * (int64_t)isz;
        char *C = pg_tensor_data(c) + z * c->strides[0] * (int64_t)isz;
        if (c->dtype == PG_FLOAT32)
            scipy_cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, 1.0f, (const float *)A, lda,
                              (const float *)Bm, ldb, 0.0f, (float *)C, ldc);
        else
            scipy_cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, (const double *)A, lda,
                              (const double *)Bm, ldb, 0.0, (double *)C, ldc);
    }
    return PG_OK;
}
