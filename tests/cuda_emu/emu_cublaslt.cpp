/* emu_cublaslt.cpp - CPU stand-in for the cuBLASLt calls the plugin makes: the integer GEMM
 * of the int8 linear layer (csrc/backends/cuda/cuda_quant.c), with cuBLASLt's documented
 * semantics and its IMMA requirements, so that a call a GPU would refuse is refused here.
 *
 * Semantics modelled (cuBLASLt's, column-major):
 *   D (m x n) = alpha * op(A) (m x k) @ op(B) (k x n) + beta * C (m x n)
 *   A's layout is the STORED matrix (rows x cols, leading dimension ld >= rows, elements
 *   between columns): op(A) = A (m x k) with CUBLAS_OP_N, A^T of a stored k x m with
 *   CUBLAS_OP_T; the same for B. C and D are m x n, never transposed; D may be C (in place,
 *   with the same layout). beta == 0 never reads C.
 * Types: only the integer case, A and B CUDA_R_8I, C and D CUDA_R_32I, compute
 * CUBLAS_COMPUTE_32I, scale type CUDA_R_32I (alpha and beta int32 on the host,
 * CUBLASLT_POINTER_MODE_HOST). Sums are exact, in int32 with two's complement wrap, in order
 * of k (integer sums have no rounding: any order gives the same bits, as on the GPU).
 * Anything else is CUBLAS_STATUS_NOT_SUPPORTED: the plugin uses cuBLASLt for this only, and
 * a stand-in that guessed at float semantics would prove nothing.
 * IMMA's requirements with the plain column order (CUBLASLT_ORDER_COL), checked at the call
 * as cuBLASLt checks them (NOT_SUPPORTED otherwise): "TN" only (A transposed, B not), m and k
 * multiples of 4, lda/ldb/ldc/ldd multiples of 4, every pointer 4-byte aligned. Shapes that
 * do not agree (op(A) m x k, op(B) k x n, C m x n), ld < rows or a NULL handle/descriptor
 * are CUBLAS_STATUS_INVALID_VALUE (NOT_INITIALIZED for the handle). Descriptor attributes
 * other than TRANSA/TRANSB, POINTER_MODE (host), EPILOGUE (default), SCALE_TYPE and
 * COMPUTE_TYPE, and layouts in another order or batched, are NOT_SUPPORTED when set.
 * The work is queued on the call's stream, as every stand-in's. The entry points are exported
 * (as emu_nccl.cpp's), so tests/test_cuda_emulated.py can hold the stand-in to these rules. */
#include <stdint.h>
#include <string.h>

#include <cublasLt.h>

#include "emu_internal.h"

#define PG_LT_API extern "C" __attribute__((visibility("default")))

struct cublasLtContext {
    int unused = 0;
};

namespace {

struct LtDesc {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
};

struct LtLayout {
    cudaDataType_t type;
    uint64_t rows, cols;
    int64_t ld;
};

LtDesc *desc_of(cublasLtMatmulDesc_t d) { return reinterpret_cast<LtDesc *>(d); }
LtLayout *layout_of(cublasLtMatrixLayout_t l) { return reinterpret_cast<LtLayout *>(l); }

bool aligned4(const void *p) { return ((uintptr_t)p & 3) == 0; }

struct Imma {
    int64_t m, n, k;
    bool ta, tb;
    int32_t alpha, beta;
    const int8_t *A, *B;
    const int32_t *C;
    int32_t *D;
    int64_t lda, ldb, ldc, ldd;
};

void run(const Imma &g)
{
    for (int64_t j = 0; j < g.n; j++)
        for (int64_t i = 0; i < g.m; i++) {
            uint32_t acc = 0; /* int32 with wrap, as the tensor cores' accumulators */
            for (int64_t p = 0; p < g.k; p++) {
                const int8_t a = g.ta ? g.A[p + i * g.lda] : g.A[i + p * g.lda];
                const int8_t b = g.tb ? g.B[j + p * g.ldb] : g.B[p + j * g.ldb];
                acc += (uint32_t)((int32_t)a * (int32_t)b);
            }
            uint32_t v = (uint32_t)g.alpha * acc;
            if (g.beta != 0)
                v += (uint32_t)g.beta * (uint32_t)g.C[i + j * g.ldc];
            g.D[i + j * g.ldd] = (int32_t)v;
        }
}

} // namespace

PG_LT_API cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    if (!h)
        return CUBLAS_STATUS_INVALID_VALUE;
    *h = new cublasLtContext();
    return CUBLAS_STATUS_SUCCESS;
}
PG_LT_API cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

PG_LT_API cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d,
                                                  cublasComputeType_t compute, cudaDataType_t scale)
{
    if (!d)
        return CUBLAS_STATUS_INVALID_VALUE;
    LtDesc *x = new LtDesc();
    x->compute = compute;
    x->scale = scale;
    *d = reinterpret_cast<cublasLtMatmulDesc_t>(x);
    return CUBLAS_STATUS_SUCCESS;
}
PG_LT_API cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    delete desc_of(d);
    return CUBLAS_STATUS_SUCCESS;
}
PG_LT_API cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size)
{
    if (!d || !buf)
        return CUBLAS_STATUS_INVALID_VALUE;
    LtDesc *x = desc_of(d);
    int32_t v;
    if (size != sizeof v)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&v, buf, sizeof v);
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB:
        if (v != CUBLAS_OP_N && v != CUBLAS_OP_T)
            return CUBLAS_STATUS_INVALID_VALUE;
        (attr == CUBLASLT_MATMUL_DESC_TRANSA ? x->transa : x->transb) = v;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
        return v == CUBLASLT_POINTER_MODE_HOST ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        return v == CUBLASLT_EPILOGUE_DEFAULT ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
        x->scale = (cudaDataType_t)v;
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
        x->compute = (cublasComputeType_t)v;
        return CUBLAS_STATUS_SUCCESS;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

PG_LT_API cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld)
{
    if (!l)
        return CUBLAS_STATUS_INVALID_VALUE;
    LtLayout *x = new LtLayout();
    x->type = type;
    x->rows = rows;
    x->cols = cols;
    x->ld = ld;
    *l = reinterpret_cast<cublasLtMatrixLayout_t>(x);
    return CUBLAS_STATUS_SUCCESS;
}
PG_LT_API cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    delete layout_of(l);
    return CUBLAS_STATUS_SUCCESS;
}
PG_LT_API cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size)
{
    if (!l || !buf || size < sizeof(int32_t))
        return CUBLAS_STATUS_INVALID_VALUE;
    int32_t v;
    memcpy(&v, buf, sizeof v);
    if (attr == CUBLASLT_MATRIX_LAYOUT_ORDER && v == CUBLASLT_ORDER_COL)
        return CUBLAS_STATUS_SUCCESS;
    if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && v == 1)
        return CUBLAS_STATUS_SUCCESS;
    return CUBLAS_STATUS_NOT_SUPPORTED;
}

PG_LT_API cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                        const void *alpha, const void *A,
                                        cublasLtMatrixLayout_t Adesc, const void *B,
                                        cublasLtMatrixLayout_t Bdesc, const void *beta,
                                        const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                                        cublasLtMatrixLayout_t Ddesc,
                                        const cublasLtMatmulAlgo_t *algo, void *workspace,
                                        size_t workspace_bytes, cudaStream_t stream)
{
    (void)algo;
    (void)workspace;
    (void)workspace_bytes;
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!desc || !alpha || !beta || !Adesc || !Bdesc || !Cdesc || !Ddesc)
        return CUBLAS_STATUS_INVALID_VALUE;
    const LtDesc *d = desc_of(desc);
    const LtLayout *la = layout_of(Adesc), *lb = layout_of(Bdesc), *lc = layout_of(Cdesc),
                   *ld = layout_of(Ddesc);
    if (d->compute != CUBLAS_COMPUTE_32I || d->scale != CUDA_R_32I || la->type != CUDA_R_8I ||
        lb->type != CUDA_R_8I || lc->type != CUDA_R_32I || ld->type != CUDA_R_32I)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    Imma g{};
    g.ta = d->transa == CUBLAS_OP_T;
    g.tb = d->transb == CUBLAS_OP_T;
    g.m = (int64_t)(g.ta ? la->cols : la->rows);
    g.k = (int64_t)(g.ta ? la->rows : la->cols);
    g.n = (int64_t)(g.tb ? lb->rows : lb->cols);
    const int64_t kb = (int64_t)(g.tb ? lb->cols : lb->rows);
    if (kb != g.k || (int64_t)lc->rows != g.m || (int64_t)lc->cols != g.n ||
        lc->rows != ld->rows || lc->cols != ld->cols)
        return CUBLAS_STATUS_INVALID_VALUE;
    for (const LtLayout *l : {la, lb, lc, ld})
        if (l->ld < (int64_t)(l->rows > 1 ? l->rows : 1))
            return CUBLAS_STATUS_INVALID_VALUE;
    if (C == D && lc->ld != ld->ld)
        return CUBLAS_STATUS_INVALID_VALUE;
    /* IMMA with CUBLASLT_ORDER_COL */
    if (!g.ta || g.tb || g.m % 4 || g.k % 4 || la->ld % 4 || lb->ld % 4 || lc->ld % 4 ||
        ld->ld % 4 || !aligned4(A) || !aligned4(B) || !aligned4(C) || !aligned4(D))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (g.m == 0 || g.n == 0)
        return CUBLAS_STATUS_SUCCESS;
    if (!A || !B || !D)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&g.alpha, alpha, 4);
    memcpy(&g.beta, beta, 4);
    if (g.beta != 0 && !C)
        return CUBLAS_STATUS_INVALID_VALUE;
    g.A = (const int8_t *)A;
    g.B = (const int8_t *)B;
    g.C = (const int32_t *)C;
    g.D = (int32_t *)D;
    g.lda = la->ld;
    g.ldb = lb->ld;
    g.ldc = lc->ld;
    g.ldd = ld->ld;
    pg_emu_enqueue(stream, [g] { run(g); });
    return CUBLAS_STATUS_SUCCESS;
}
