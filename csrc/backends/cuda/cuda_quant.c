/* cuda_quant.c - the int8 linear layer (PG_OP_QLINEAR) on CUDA: quantize the input's rows
 * (kernels/quant.cu), multiply by the int8 weight with cuBLASLt's integer GEMM (IMMA on the
 * tensor cores), then the epilogue (quant.cu again): up to three steps on the work stream,
 * with one stream-ordered scratch block. The node is pg_ops_quantized.c's; what each step
 * computes is pg_gemm.h's int8 extension, and the output has the CPU kernels' bits.
 * A static layer with a u8 output (a static chain's hidden layer) requantizes in cuBLASLt's
 * own epilogue instead when quant.cu's header says it can: a small kernel folds the
 * per-channel alpha and bias, and the GEMM writes the s8 output straight into the u8
 * tensor (levels 0..127: the same bytes), so such a layer is the fold kernel and one GEMM,
 * with levels within one of the CPU's. cuBLASLt answering NOT_SUPPORTED falls back to the
 * exact path (the profile then shows both GEMM calls).
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

/* One cuBLASLt IMMA GEMM queued on `stream` (the caller holds the handle's lock): op(A) the
 * weight's first `rows` rows (TN), B = a_s8 (kp x M, ldb kp), D column-major rows x M:
 *   exact (alpha_vec NULL): D = acc, int32, rows = np; scale type s32, alpha 1, beta 0 (host);
 *   requantizing: D = the u8 output as s8, rows = N; scale type f32, alpha the device vector
 *     alpha_vec (one per row of D: CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST, beta
 *     0 on the host), epilogue RELU_BIAS with the f32 device vector bias (quant.cu's header). */
static cublasStatus_t lt_imma(cublasLtHandle_t lt, cudaStream_t stream, const int8_t *w,
                              const int8_t *a_s8, void *dst, int64_t M, int64_t rows, int64_t kp,
                              const float *alpha_vec, const float *bias)
{
    const bool requant = alpha_vec != NULL;
    cublasLtMatmulDesc_t desc = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasStatus_t st =
        cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32I, requant ? CUDA_R_32F : CUDA_R_32I);
    const int32_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n);
    if (requant) {
        const int32_t mode = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST;
        const uint32_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
        const int32_t bias_type = CUDA_R_32F;
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode,
                                                sizeof mode);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                                sizeof epi);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof bias);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                &bias_type, sizeof bias_type);
    }
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, (uint64_t)kp, (uint64_t)rows, kp);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, (uint64_t)kp, (uint64_t)M, kp);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&lc, requant ? CUDA_R_8I : CUDA_R_32I, (uint64_t)rows,
                                        (uint64_t)M, rows);
    if (st == CUBLAS_STATUS_SUCCESS) {
        /* algo NULL: cuBLASLt's own heuristic (NOT_SUPPORTED when it has none); no workspace */
        const int32_t one = 1, zero = 0;
        const float fzero = 0.0f;
        const void *alpha = requant ? (const void *)alpha_vec : (const void *)&one;
        const void *beta = requant ? (const void *)&fzero : (const void *)&zero;
        st = cublasLtMatmul(lt, desc, alpha, w, la, a_s8, lb, beta, dst, lc, dst, lc, NULL, NULL,
                            0, stream);
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

/* Whether cuBLASLt's epilogue requantizes this layer (the requantizing GEMM, quant.cu's
 * header): a static input, a u8 output with top level 127 (s8 saturation is its clamp), no
 * activation or ReLU with zero point 0 (the ReLU is the clamp at level 0), N % 4 == 0 (D's
 * rows are the output's, ldd = N), and the option on. */
static bool requant_in_gemm(const pg_cuda_qlinear_args *a)
{
    return atomic_load(&pg_cuda.int8_requant_in_gemm) && a->c_u8 && !a->a_dynamic &&
           a->c_max == 127 &&
           (a->act == PG_CUDA_ACT_NONE || (a->act == PG_CUDA_ACT_RELU && a->c_zp == 0)) &&
           a->N % 4 == 0 && ((uintptr_t)a->c_u8 & 3) == 0;
}

/* the GEMM on the handle's lock, noted for the profiler with its types */
static pg_status run_imma(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n,
                          const pg_cuda_qlinear_args *a, const int8_t *w, void *dst, bool requant,
                          cublasStatus_t *blas_st)
{
    cublasLtHandle_t lt;
    PG_TRY(pg_cuda_lt_acquire(d, n->name, &lt));
    pg_cuda_note_gemm(ctx, "cublasLtMatmul", CUDA_R_8I, requant ? CUDA_R_8I : CUDA_R_32I,
                      CUBLAS_COMPUTE_32I);
    *blas_st = lt_imma(lt, ctx->stream, w, a->a_s8, dst, a->M, requant ? a->N : a->np, a->kp,
                       requant ? a->fold_alpha : NULL, requant ? a->fold_bias : NULL);
    pg_cuda_blas_release(d);
    return PG_OK;
}

static size_t pad16(size_t bytes) { return (bytes + 15) / 16 * 16; }

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
    bool requant = requant_in_gemm(&a);

    /* scratch, one block, each part 16-byte aligned: a_s8 (M,kp) unless direct | sa, za (M)
     * if dynamic | alpha, beta (N) if requantizing in the GEMM | else acc (M,np) int32 */
    const size_t s8_bytes = direct ? 0 : pad16((size_t)a.M * (size_t)a.kp);
    const size_t row_bytes = a.a_dynamic ? pad16((size_t)a.M * 4) : 0;
    const size_t fold_bytes = requant ? pad16((size_t)a.N * 4) : 0;
    const size_t acc_bytes = (size_t)a.M * (size_t)a.np * 4;
    char *scratch = NULL, *acc_scratch = NULL;
    cudaError_t err = cudaMallocAsync((void **)&scratch,
                                      s8_bytes + 2 * row_bytes + 2 * fold_bytes +
                                          (requant ? 0 : acc_bytes),
                                      ctx->stream);
    if (err != cudaSuccess)
        return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, d->index, n->name, "cudaMallocAsync",
                             false);
    char *next = scratch;
    a.a_s8 = direct ? (int8_t *)a.a_u8 : (int8_t *)next;
    next += s8_bytes;
    if (a.a_dynamic) {
        a.sa = (float *)next;
        a.za = (int32_t *)(next + row_bytes);
        next += 2 * row_bytes;
    }
    if (requant) {
        a.fold_alpha = (float *)next;
        a.fold_bias = (float *)(next + fold_bytes);
    } else {
        a.acc = (const int32_t *)next;
    }

    const char *call = "pg_kernel_qquantize";
    if (!direct)
        err = pg_kernel_qquantize(ctx, &a);
    pg_status st = PG_OK;
    cublasStatus_t blas_st = CUBLAS_STATUS_SUCCESS;
    if (err == cudaSuccess && requant) {
        call = "pg_kernel_qfold";
        err = pg_kernel_qfold(ctx, &a);
        if (err == cudaSuccess)
            st = run_imma(d, ctx, n, &a, (const int8_t *)wbytes, a.c_u8, true, &blas_st);
        if (err == cudaSuccess && st == PG_OK && blas_st == CUBLAS_STATUS_NOT_SUPPORTED) {
            /* this cuBLASLt has no such kernel here: the exact path, never a wrong result */
            requant = false;
            blas_st = CUBLAS_STATUS_SUCCESS;
            call = "cudaMallocAsync";
            err = cudaMallocAsync((void **)&acc_scratch, acc_bytes, ctx->stream);
            a.acc = (const int32_t *)acc_scratch;
        }
    }
    if (err == cudaSuccess && st == PG_OK && !requant) {
        st = run_imma(d, ctx, n, &a, (const int8_t *)wbytes, (void *)a.acc, false, &blas_st);
        if (st == PG_OK && blas_st == CUBLAS_STATUS_SUCCESS) {
            call = "pg_kernel_qepilogue";
            err = pg_kernel_qepilogue(ctx, &a);
        }
    }
    /* after the work that reads it, on the same stream */
    cudaError_t ferr = cudaFreeAsync(scratch, ctx->stream);
    if (acc_scratch) {
        cudaError_t ferr2 = cudaFreeAsync(acc_scratch, ctx->stream);
        ferr = ferr != cudaSuccess ? ferr : ferr2;
    }
    PG_TRY(st);
    PG_TRY(pg_cuda_check(PG_CUDA_LIB_CUBLAS, blas_st, d->index, n->name, "cublasLtMatmul", false));
    PG_TRY(pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, d->index, n->name, call, false));
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, ferr, d->index, n->name, "cudaFreeAsync", false);
}
