/* cuda_quant.c - the int8 linear layer (PG_OP_QLINEAR) on CUDA: quantize the input's rows
 * (kernels/quant.cu), multiply by the int8 weight with cuBLASLt's integer GEMM (IMMA on the
 * tensor cores), then the epilogue (quant.cu again): three steps on the work stream, with
 * stream-ordered scratch. The node is pg_ops_quantized.c's; what each step computes is
 * pg_gemm.h's int8 extension, and the output has the CPU kernels' bits.
 *
 * Why s8 activations: cuBLASLt's IMMA kernels multiply s8 by s8 (there is no u8 x s8 as
 * vpdpbusd has). pygpu's activations are u8 levels with a zero point (asymmetric, as the
 * CPU's), so the GEMM's operand is level - a_shift: 0 with 7-bit activations (a_max 127,
 * what pygpu's layers use: a level is an s8 as it is), 128 with a_max 255. The epilogue
 * adds a_shift * colsum(W) back: sum (q - a_shift) w + (a_shift - za) colsum = sum q w -
 * za colsum, the CPU's exact int32, so every quantization parameter stays the CPU's (a
 * symmetric s8 scheme on cuda only would have given other bits and a second set of
 * calibration rules). A u8 input (a static chain's) with a_shift 0 and K % 4 == 0 is the
 * GEMM's operand as it is, with no copy; otherwise the quantize kernel writes the operand.
 *
 * The weight on cuda: QTensor.to("cuda") (pygpu/quantization/_pack.py, pack_weight_rows)
 * stores W as np rows of kp bytes (n-major, K zero-padded to a multiple of 4, N to a
 * multiple of 16) followed by the same int32 colsum as the CPU's panels: the same byte
 * count (pg_qpack_bytes), made once when the layer moves, never per call.
 *
 * The product as cuBLASLt (column-major) sees it:
 *   D (m = np, n = M) = op(A) (np x kp) @ B (kp x M)
 *   A = the weight rows: a column-major kp x np matrix (lda kp), transposed (CUBLAS_OP_T);
 *   B = a_s8, the row-major (M, kp) rows: a column-major kp x M matrix (ldb kp), CUBLAS_OP_N;
 *   D = acc, column-major np x M (ldd np) = row-major (M, np) int32.
 * This is the "TN" form IMMA needs with the plain column order: A transposed, B not; m, k
 * and the leading dimensions multiples of 4 (np is a multiple of 16, kp of 4); pointers
 * 4-byte aligned (allocator blocks and a contiguous packed tensor at offset 0: checked).
 * Compute CUBLAS_COMPUTE_32I, scale type CUDA_R_32I (alpha 1, beta 0 on the host). B is
 * the u8 input itself where it can be (above): its ldb is then K (= kp). */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cuda_internal.h"
#include "pg_gemm.h"

/* One cuBLASLt integer GEMM, acc (M, np) = a_s8 (M, kp) @ w (np, kp)^T, queued on `stream`
 * (the caller holds the handle's lock). */
static cublasStatus_t lt_imma(cublasLtHandle_t lt, cudaStream_t stream, const int8_t *w,
                              const int8_t *a_s8, int32_t *acc, int64_t M, int64_t np, int64_t kp)
{
    cublasLtMatmulDesc_t desc = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasStatus_t st = cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32I, CUDA_R_32I);
    const int32_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, (uint64_t)kp, (uint64_t)np, kp);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, (uint64_t)kp, (uint64_t)M, kp);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&lc, CUDA_R_32I, (uint64_t)np, (uint64_t)M, np);
    if (st == CUBLAS_STATUS_SUCCESS) {
        const int32_t alpha = 1, beta = 0;
        /* algo NULL: cuBLASLt's own heuristic; no workspace */
        st = cublasLtMatmul(lt, desc, &alpha, w, la, a_s8, lb, &beta, acc, lc, acc, lc, NULL,
                            NULL, 0, stream);
    }
    /* destroying the descriptors after the call is fine: cublasLtMatmul has read them */
    if (lc)
        cublasLtMatrixLayoutDestroy(lc);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (desc)
        cublasLtMatmulDescDestroy(desc);
    return st;
}

pg_status pg_cuda_launch_qlinear(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    const pg_tensor *x = &n->src[0], *w = &n->src[1], *ws = &n->src[2], *b = &n->src[3];
    pg_cuda_qlinear_args a;
    memset(&a, 0, sizeof a);
    a.M = x->shape[0];
    a.K = x->shape[1];
    a.N = ws->shape[0];
    a.kp = 4 * pg_qpack_k4(a.K);
    a.np = pg_qpack_np(a.N);
    if (a.M > INT_MAX || a.np > INT_MAX || a.kp > INT_MAX)
        return pg_cuda_error(PG_ERR_VALUE, "cuda:%d: %s: dimensions above 2^31-1", d->index,
                             n->name);
    const char *wbytes = pg_cuda_tensor_data(w);
    if (((uintptr_t)wbytes & 15) != 0) /* IMMA wants 4; cuBLASLt runs faster at 16 */
        return pg_cuda_error(PG_ERR_VALUE, "cuda:%d: %s: the packed weight must start on a "
                             "16-byte boundary (a view into it was passed)", d->index, n->name);
    if (x->dtype == PG_FLOAT32)
        a.a_f32 = (const float *)pg_cuda_tensor_data(x);
    else
        a.a_u8 = (const uint8_t *)pg_cuda_tensor_data(x);
    a.a_dynamic = n->p.qlinear.a_dynamic != 0;
    a.a_shift = n->p.qlinear.a_max > 127 ? 128 : 0;
    a.a_scale = (float)n->p.qlinear.a_scale;
    a.a_zp = (int32_t)n->p.qlinear.a_zp;
    a.a_max = (int)n->p.qlinear.a_max;
    a.colsum = (const int32_t *)(wbytes + a.np * a.kp);
    a.w_scale = (const float *)pg_cuda_tensor_data(ws);
    a.bias = b->storage ? (const float *)pg_cuda_tensor_data(b) : NULL;
    a.act = n->subop;
    if (n->dst.dtype == PG_FLOAT32)
        a.c_f32 = (float *)pg_cuda_tensor_data(&n->dst);
    else
        a.c_u8 = (uint8_t *)pg_cuda_tensor_data(&n->dst);
    a.c_scale = (float)n->p.qlinear.c_scale;
    a.c_zp = (int32_t)n->p.qlinear.c_zp;
    a.c_max = (int)n->p.qlinear.c_max;
    const uintptr_t c_addr = a.c_f32 ? (uintptr_t)a.c_f32 : (uintptr_t)a.c_u8;
    a.out_vec = a.N % 4 == 0 && (c_addr & 15) == 0;
    if (a.M == 0)
        return PG_OK;
    /* the u8 input as the GEMM's operand, with no copy (the header says when) */
    const bool direct = a.a_u8 && a.a_shift == 0 && a.K == a.kp && ((uintptr_t)a.a_u8 & 3) == 0;

    /* scratch, one block: a_s8 (M,kp) unless direct | acc (M,np) int32 | sa (M) | za (M)
     * (dynamic only), each 16-byte aligned */
    const size_t s8_bytes = direct ? 0 : ((size_t)a.M * (size_t)a.kp + 15) / 16 * 16;
    const size_t acc_bytes = (size_t)a.M * (size_t)a.np * 4;
    const size_t row_bytes = a.a_dynamic ? ((size_t)a.M * 4 + 15) / 16 * 16 : 0;
    char *scratch = NULL;
    cudaError_t err = cudaMallocAsync((void **)&scratch, s8_bytes + acc_bytes + 2 * row_bytes,
                                      ctx->stream);
    if (err != cudaSuccess)
        return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, d->index, n->name, "cudaMallocAsync",
                             false);
    a.a_s8 = direct ? (int8_t *)a.a_u8 : (int8_t *)scratch;
    int32_t *acc = (int32_t *)(scratch + s8_bytes);
    a.acc = acc;
    if (a.a_dynamic) {
        a.sa = (float *)(scratch + s8_bytes + acc_bytes);
        a.za = (int32_t *)(scratch + s8_bytes + acc_bytes + row_bytes);
    }

    const char *call = "pg_kernel_qquantize";
    if (!direct)
        err = pg_kernel_qquantize(ctx, &a);
    pg_status st = PG_OK;
    cublasStatus_t blas_st = CUBLAS_STATUS_SUCCESS;
    if (err == cudaSuccess) {
        cublasLtHandle_t lt;
        st = pg_cuda_lt_acquire(d, n->name, &lt);
        if (st == PG_OK) {
            pg_cuda_note_gemm(ctx, "cublasLtMatmul", CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I);
            blas_st = lt_imma(lt, ctx->stream, (const int8_t *)wbytes, a.a_s8, acc, a.M, a.np,
                              a.kp);
            pg_cuda_blas_release(d);
        }
    }
    if (err == cudaSuccess && st == PG_OK && blas_st == CUBLAS_STATUS_SUCCESS) {
        call = "pg_kernel_qepilogue";
        err = pg_kernel_qepilogue(ctx, &a);
    }
    /* after the work that reads it, on the same stream */
    cudaError_t ferr = cudaFreeAsync(scratch, ctx->stream);
    PG_TRY(st);
    PG_TRY(pg_cuda_check(PG_CUDA_LIB_CUBLAS, blas_st, d->index, n->name, "cublasLtMatmul", false));
    PG_TRY(pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, d->index, n->name, call, false));
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, ferr, d->index, n->name, "cudaFreeAsync", false);
}
