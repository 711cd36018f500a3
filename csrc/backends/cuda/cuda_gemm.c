/* cuda_gemm.c - the GEMM contract (csrc/core/pg_gemm.h) on CUDA: one descriptor,
 * one cuBLAS call.
 *
 * cuBLAS is column-major: a row-major C (M,N) with leading dimension ldc is a
 * column-major C^T (N,M), and C^T = op(B)^T op(A)^T, so the call swaps the
 * operands and keeps each one's transpose flag. Batches go to the strided
 * batched call (a stride of 0 broadcasts one matrix). alpha and beta pass
 * through. A descriptor with the forward epilogue (PG_EPI_BIAS and/or an
 * activation; float32, float16, bfloat16; batch 1) goes to cuda_lt_gemm.c: one
 * cublasLtMatmul with the bias (and relu) in cuBLASLt's epilogue, as the linear
 * layers' forward does. The backward epilogues (DACT, BGRAD), batches with an
 * epilogue, and cases cuBLASLt has no kernel for are refused with a message,
 * never computed wrong.
 *
 * float32 and float64 go to cublas{S,D}gemmStridedBatched (float32 on the
 * tensor cores only when allow_tf32 is set). float16/bfloat16 inputs go to
 * cublasGemmStridedBatchedEx with CUBLAS_COMPUTE_32F: the tensor cores
 * multiply the 16-bit inputs and accumulate in float32, and C is written once,
 * as float32 or rounded to the inputs' half dtype (the pairs cuBLAS has:
 * fp16 -> fp16|fp32, bf16 -> bf16|fp32). */
#include <limits.h>

#include "cuda_internal.h"
#include "pg_gemm.h"

pg_status pg_cuda_gemm(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_gemm *g,
                       const char *op)
{
    cudaStream_t stream = ctx->stream;
    if (g->epilogue != PG_EPI_NONE || g->act != PG_ACT_NONE) {
        bool refused = true;
        if (g->epilogue == PG_EPI_NONE || g->epilogue == PG_EPI_BIAS)
            PG_TRY(pg_cuda_lt_gemm(d, ctx, g, op, &refused));
        if (!refused)
            return PG_OK;
        return pg_cuda_error(PG_ERR_VALUE,
                             "cuda:%d: %s: this GEMM epilogue (flags %d, activation %d) has no "
                             "CUDA kernel (cuBLASLt fuses a bias and an activation into one "
                             "float32/float16/bfloat16 product); use the fused linear ops or "
                             "apply it separately",
                             d->index, op, g->epilogue, g->act);
    }
    bool half_in = g->dtype_ab == PG_FLOAT16 || g->dtype_ab == PG_BFLOAT16;
    bool same = g->dtype_ab == g->dtype_c;
    if (!(half_in ? same || g->dtype_c == PG_FLOAT32
                  : same && (g->dtype_c == PG_FLOAT32 || g->dtype_c == PG_FLOAT64)))
        return pg_cuda_error(PG_ERR_DTYPE,
                             "cuda:%d: %s: cuBLAS runs float32 -> float32, float64 -> float64, "
                             "float16 -> float16|float32 and bfloat16 -> bfloat16|float32 "
                             "products (got dtype codes %d -> %d)",
                             d->index, op, g->dtype_ab, g->dtype_c);
    if (g->M > INT_MAX || g->N > INT_MAX || g->K > INT_MAX || g->batch > INT_MAX ||
        g->lda > INT_MAX || g->ldb > INT_MAX || g->ldc > INT_MAX)
        return pg_cuda_error(PG_ERR_VALUE, "cuda:%d: %s: dimensions above 2^31-1", d->index, op);
    if (g->batch == 0 || g->M == 0 || g->N == 0)
        return PG_OK;
    cublasHandle_t h;
    PG_TRY(pg_cuda_blas_acquire(d, stream, op, &h));
    cublasOperation_t op_a = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_b = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    int m = (int)g->N, n = (int)g->M, k = (int)g->K, batch = (int)g->batch;
    /* K == 0: ld of an empty operand may be 0, which cuBLAS refuses; any >= 1 will do */
    int lda = g->lda > 0 ? (int)g->lda : 1, ldb = g->ldb > 0 ? (int)g->ldb : 1;
    cublasStatus_t st;
    if (half_in) {
        cudaDataType_t tab = g->dtype_ab == PG_FLOAT16 ? CUDA_R_16F : CUDA_R_16BF;
        cudaDataType_t tc = g->dtype_c == PG_FLOAT32 ? CUDA_R_32F : tab;
        float alpha = (float)g->alpha, beta = (float)g->beta; /* the compute type's */
        pg_cuda_note_gemm(ctx, "cublasGemmStridedBatchedEx", tab, tc, CUBLAS_COMPUTE_32F);
        st = cublasGemmStridedBatchedEx(h, op_b, op_a, m, n, k, &alpha, g->b, tab, ldb,
                                        g->stride_b, g->a, tab, lda, g->stride_a, &beta, g->c, tc,
                                        (int)g->ldc, g->stride_c, batch, CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT);
    } else if (g->dtype_c == PG_FLOAT32) {
        float alpha = (float)g->alpha, beta = (float)g->beta;
        pg_cuda_note_gemm(ctx, "cublasSgemmStridedBatched", CUDA_R_32F, CUDA_R_32F,
                          ctx->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
        st = cublasSgemmStridedBatched(h, op_b, op_a, m, n, k, &alpha, (const float *)g->b, ldb,
                                       g->stride_b, (const float *)g->a, lda, g->stride_a, &beta,
                                       (float *)g->c, (int)g->ldc, g->stride_c, batch);
    } else {
        double alpha = g->alpha, beta = g->beta;
        pg_cuda_note_gemm(ctx, "cublasDgemmStridedBatched", CUDA_R_64F, CUDA_R_64F,
                          CUBLAS_COMPUTE_64F);
        st = cublasDgemmStridedBatched(h, op_b, op_a, m, n, k, &alpha, (const double *)g->b, ldb,
                                       g->stride_b, (const double *)g->a, lda, g->stride_a, &beta,
                                       (double *)g->c, (int)g->ldc, g->stride_c, batch);
    }
    pg_cuda_blas_release(d);
    return pg_cuda_check(PG_CUDA_LIB_CUBLAS, st, d->index, op,
                         half_in ? "cublasGemmStridedBatchedEx" : "cublas<T>gemmStridedBatched",
                         false);
}
