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
 * Types: the integer cases only (the plugin uses cuBLASLt for these alone; a stand-in that
 * guessed at other semantics would prove nothing), two rows of cublasLtMatmul's type table:
 *   s32 out   A, B CUDA_R_8I, C, D CUDA_R_32I, compute CUBLAS_COMPUTE_32I, scale CUDA_R_32I
 *             (alpha and beta int32 on the host, CUBLASLT_POINTER_MODE_HOST), epilogue
 *             DEFAULT only (the table: "non-default epilogue not supported"). Sums exact, in
 *             int32 with two's complement wrap, in order of k (integer sums have no rounding:
 *             any order gives the same bits, as on the GPU).
 *   s8 out    A, B, C, D CUDA_R_8I, compute CUBLAS_COMPUTE_32I, scale CUDA_R_32F (the int8
 *             requantizing GEMM, cuda_quant.c's fused path; the "IMMA s8 output" section):
 *             D = sat_s8(round(act(alpha[i] * float(acc) + beta * C + bias[i]))) with the
 *             exact s32 acc, float32 arithmetic (each step rounded), round half to even, and
 *             saturation to [-128, 127]. The GPU's order of those float steps and its
 *             rounding of a half-way value are not documented: its levels may differ from
 *             these by one where a value lies within float rounding of a half-way point.
 *             Pointer mode HOST (alpha, beta floats on the host) or
 *             ALPHA_DEVICE_VECTOR_BETA_HOST (alpha a device vector of m floats, one per row
 *             of D; beta on the host): the IMMA requirements with the plain column order
 *             list those two and CUBLASLT_POINTER_MODE_DEVICE, not the vector modes that
 *             come with the IMMA-specific orders (DEVICE_VECTOR, ALPHA_DEVICE_VECTOR_BETA_ZERO):
 *             those are NOT_SUPPORTED here, as is DEVICE (the plugin does not use it: not
 *             modelled). Epilogues DEFAULT, RELU, BIAS and RELU_BIAS (bias then ReLU): the bias
 *             a device vector of m elements (BIAS_POINTER; NULL with a BIAS epilogue is
 *             INVALID_VALUE) whose type is the scale type, CUDA_R_32F
 *             (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: -1, the default, or CUDA_R_32F; another
 *             is NOT_SUPPORTED); other epilogues NOT_SUPPORTED.
 * Anything else is CUBLAS_STATUS_NOT_SUPPORTED.
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
    int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const void *bias = nullptr;
    int32_t bias_type = -1; /* the default: the row's own bias type */
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

/* the exact s32 sum of row i, column j of op(A) op(B) (wrapping, as the accumulators) */
uint32_t imma_dot(const Imma &g, int64_t i, int64_t j)
{
    uint32_t acc = 0;
    for (int64_t p = 0; p < g.k; p++) {
        const int8_t a = g.ta ? g.A[p + i * g.lda] : g.A[i + p * g.lda];
        const int8_t b = g.tb ? g.B[j + p * g.ldb] : g.B[p + j * g.ldb];
        acc += (uint32_t)((int32_t)a * (int32_t)b);
    }
    return acc;
}

void run(const Imma &g)
{
    for (int64_t j = 0; j < g.n; j++)
        for (int64_t i = 0; i < g.m; i++) {
            const uint32_t acc = imma_dot(g, i, j); /* int32 with wrap, as the accumulators */
            uint32_t v = (uint32_t)g.alpha * acc;
            if (g.beta != 0)
                v += (uint32_t)g.beta * (uint32_t)g.C[i + j * g.ldc];
            g.D[i + j * g.ldd] = (int32_t)v;
        }
}

/* ---- IMMA s8 output: the int8 requantizing GEMM (cuda_quant.c's fused path) ---------------- */

struct ImmaS8 {
    Imma g;                /* the product's shape and operands (g.C, g.D unused) */
    const float *alpha;    /* m floats in device memory (vector mode), read when the work runs */
    float alpha1;          /* or one float from the host, read at the call */
    bool alpha_vector;
    float beta;
    const float *bias;     /* m floats or NULL */
    bool relu;
    const int8_t *C;
    int8_t *D;
};

/* round half to even (the default rounding mode), then saturate: cvt.rni.sat.s8.f32 */
int8_t sat_s8(float t)
{
    const float r = nearbyintf(t);
    return r <= -128.0f ? (int8_t)-128 : r >= 127.0f ? (int8_t)127 : (int8_t)r;
}

void run_s8(const ImmaS8 &q)
{
    const Imma &g = q.g;
    for (int64_t j = 0; j < g.n; j++)
        for (int64_t i = 0; i < g.m; i++) {
            const int32_t acc = (int32_t)imma_dot(g, i, j);
            float t = (q.alpha_vector ? q.alpha[i] : q.alpha1) * (float)acc;
            if (q.beta != 0.0f)
                t = t + q.beta * (float)q.C[i + j * g.ldc];
            if (q.bias)
                t = t + q.bias[i];
            if (q.relu)
                t = t > 0.0f ? t : 0.0f;
            q.D[i + j * g.ldd] = sat_s8(t);
        }
}

/* The s8-out row of the type table: what the descriptor may hold, then the work queued. g has
 * the shape, operands and leading dimensions already checked against IMMA's rules. */
cublasStatus_t matmul_s8(const LtDesc *d, Imma g, const void *alpha, const void *beta,
                         const void *C, void *D, cudaStream_t stream)
{
    ImmaS8 q{};
    if (d->pointer_mode != CUBLASLT_POINTER_MODE_HOST &&
        d->pointer_mode != CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    q.alpha_vector = d->pointer_mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST;
    switch (d->epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT:
        break;
    case CUBLASLT_EPILOGUE_RELU:
        q.relu = true;
        break;
    case CUBLASLT_EPILOGUE_RELU_BIAS:
        q.relu = true;
        /* fall through */
    case CUBLASLT_EPILOGUE_BIAS:
        if (d->bias_type != -1 && d->bias_type != CUDA_R_32F)
            return CUBLAS_STATUS_NOT_SUPPORTED;
        if (!d->bias)
            return CUBLAS_STATUS_INVALID_VALUE;
        q.bias = static_cast<const float *>(d->bias);
        break;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (g.m == 0 || g.n == 0)
        return CUBLAS_STATUS_SUCCESS;
    memcpy(&q.beta, beta, 4);
    if (!D || (q.beta != 0.0f && !C))
        return CUBLAS_STATUS_INVALID_VALUE;
    q.alpha = static_cast<const float *>(alpha);
    if (!q.alpha_vector)
        memcpy(&q.alpha1, alpha, 4);
    q.C = static_cast<const int8_t *>(C);
    q.D = static_cast<int8_t *>(D);
    q.g = g;
    pg_emu_enqueue(stream, [q] { run_s8(q); });
    return CUBLAS_STATUS_SUCCESS;
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
    if (attr == CUBLASLT_MATMUL_DESC_BIAS_POINTER) { /* a device pointer */
        if (size != sizeof x->bias)
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&x->bias, buf, sizeof x->bias);
        return CUBLAS_STATUS_SUCCESS;
    }
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
        if (v < CUBLASLT_POINTER_MODE_HOST || v > CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST)
            return CUBLAS_STATUS_INVALID_VALUE;
        x->pointer_mode = v; /* checked at the call, against the type table's row */
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        x->epilogue = (uint32_t)v; /* checked at the call */
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
        x->bias_type = v;
        return CUBLAS_STATUS_SUCCESS;
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
    const bool int8_in = d->compute == CUBLAS_COMPUTE_32I && la->type == CUDA_R_8I &&
                         lb->type == CUDA_R_8I;
    const bool s32_out = int8_in && d->scale == CUDA_R_32I && lc->type == CUDA_R_32I &&
                         ld->type == CUDA_R_32I;
    const bool s8_out = int8_in && d->scale == CUDA_R_32F && lc->type == CUDA_R_8I &&
                        ld->type == CUDA_R_8I;
    if (!s32_out && !s8_out)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (s32_out && (d->pointer_mode != CUBLASLT_POINTER_MODE_HOST ||
                    d->epilogue != CUBLASLT_EPILOGUE_DEFAULT))
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
    g.A = (const int8_t *)A;
    g.B = (const int8_t *)B;
    g.lda = la->ld;
    g.ldb = lb->ld;
    g.ldc = lc->ld;
    g.ldd = ld->ld;
    if (s8_out) {
        if (g.m && g.n && (!A || !B))
            return CUBLAS_STATUS_INVALID_VALUE;
        return matmul_s8(d, g, alpha, beta, C, D, stream);
    }
    if (g.m == 0 || g.n == 0)
        return CUBLAS_STATUS_SUCCESS;
    if (!A || !B || !D)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&g.alpha, alpha, 4);
    memcpy(&g.beta, beta, 4);
    if (g.beta != 0 && !C)
        return CUBLAS_STATUS_INVALID_VALUE;
    g.C = (const int32_t *)C;
    g.D = (int32_t *)D;
    pg_emu_enqueue(stream, [g] { run(g); });
    return CUBLAS_STATUS_SUCCESS;
}
