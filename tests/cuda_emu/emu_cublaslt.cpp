/* emu_cublaslt.cpp - CPU stand-in for the cuBLASLt calls the plugin makes: the integer GEMM
 * of the int8 linear layer (csrc/backends/cuda/cuda_quant.c), with cuBLASLt's documented
 * semantics and its IMMA requirements, so that a call a GPU would refuse is refused here; and
 * the float/half GEMM with a fused bias/relu epilogue (csrc/backends/cuda/cuda_lt_gemm.c),
 * modelled in its own section below ("float and half"), whose header says what it holds.
 *
 * Semantics modelled (cuBLASLt's, column-major):
 *   D (m x n) = alpha * op(A) (m x k) @ op(B) (k x n) + beta * C (m x n)
 *   A's layout is the STORED matrix (rows x cols, leading dimension ld >= rows, elements
 *   between columns): op(A) = A (m x k) with CUBLAS_OP_N, A^T of a stored k x m with
 *   CUBLAS_OP_T; the same for B. C and D are m x n, never transposed; D may be C (in place,
 *   with the same layout). beta == 0 never reads C.
 * Types (this section): the integer cases, two rows of cublasLtMatmul's type table (a
 * descriptor with another compute type than CUBLAS_COMPUTE_32I goes to the float section):
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
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

/* ---- float and half: the GEMM of csrc/backends/cuda/cuda_lt_gemm.c ------------------------
 * What is modelled (cuBLASLt's documentation: cublasLtMatmul's type table, cublasLtEpilogue_t,
 * CUBLASLT_MATMUL_DESC_BIAS_*, cublasLtMatmulPreference_t, cublasLtMatmulAlgoGetHeuristic):
 *   D (m x n) = epilogue(alpha * op(A) @ op(B) + beta * C), column-major as above.
 * Types: compute CUBLAS_COMPUTE_32F or CUBLAS_COMPUTE_32F_FAST_TF32 with A, B, C, D all
 * CUDA_R_32F; compute CUBLAS_COMPUTE_32F with A = B = CUDA_R_16F and C = D in {16F, 32F}, or
 * A = B = CUDA_R_16BF and C = D in {16BF, 32F}; scale type CUDA_R_32F (alpha, beta float on
 * the host). Every other combination (float64, the 32F_FAST_16F/16BF computes, C != D, A != B)
 * is NOT_SUPPORTED: the plugin does not ask for them, and refusing is what a stand-in can prove.
 * Pointer mode HOST only (alpha and beta floats on the host; others NOT_SUPPORTED).
 * Epilogues: DEFAULT, RELU (max(x, 0)), BIAS and RELU_BIAS (the bias vector, m long, one value
 * per row of D, added before the relu); others (GELU, the AUX and gradient ones) NOT_SUPPORTED
 * at the heuristic and the call. The bias is in D's type (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE
 * unset, -1, or set to D's type; any other bias type is NOT_SUPPORTED here, conservatively).
 * A BIAS epilogue whose bias pointer is NULL is INVALID_VALUE at the call (the heuristic does
 * not dereference it), as is a NULL or misaligned (not to its element size) A, B, D or bias.
 * Arithmetic: products of the float values (the inputs rounded to TF32 first under
 * 32F_FAST_TF32, the least precise the compute type permits), summed in float in order of k;
 * then alpha, beta * C (C never read when beta == 0), + bias, relu, and ONE rounding to D's type,
 * as the tensor-core epilogue does on its float accumulators.
 * Split-K, the way cuBLASLt may reduce K (CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK): for a
 * 16-bit D and k > 256, when the mask allows INPLACE or OUTPUT_TYPE (the default allows all),
 * the algorithm sums K in chunks of 256 whose partial sums are rounded to D's type and added in
 * that type (the least precise scheme permitted); otherwise, with COMPUTE_TYPE allowed and
 * CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES room for them, the float partial sums of each chunk
 * are written to the WORKSPACE (chunks x m x n floats) and added in chunk order; otherwise one
 * float sum. The heuristic's result names the workspace its algorithm needs (workspaceSize);
 * cublasLtMatmul with that algo and less workspace, or a NULL workspace, is INVALID_VALUE. A NULL
 * algo is the implicit heuristic with the default preference (every scheme, no workspace).
 * Alignment: the heuristic's algorithm assumes A, B, C and D aligned as the preference's
 * CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES say (default 256, cuBLASLt's); a pointer
 * less aligned than its matrix's at the call is INVALID_VALUE (a NULL algo sees the pointers).
 * The heuristic: requestedAlgoCount < 1 or a NULL preference INVALID_VALUE; an unsupported case
 * NOT_SUPPORTED with *returnAlgoCount 0; otherwise one result, state SUCCESS. Integer
 * descriptors (the IMMA section, which takes algo NULL) get no heuristic: NOT_SUPPORTED.
 * PYGPU_CUDA_EMU_LT_FLOAT=0 plays a GPU (or a cuBLASLt) with no float kernels: the heuristic
 * finds none (NOT_SUPPORTED) and cublasLtMatmul refuses every float case, so a test can hold
 * the plugin's fallback to cuBLAS. */
namespace {

struct LtPref {
    uint64_t max_workspace = 0;
    uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_MASK;
    uint32_t min_align[4] = {256, 256, 256, 256}; /* A, B, C, D */
};
LtPref *pref_of(cublasLtMatmulPreference_t p) { return reinterpret_cast<LtPref *>(p); }

const uint64_t kAlgoMagic = 0x70676c7466673332ull; /* our algo's data[0] */
const int64_t kSplitChunk = 256;
enum Scheme { SCHEME_NONE = 0, SCHEME_OUTPUT_TYPE = 1, SCHEME_COMPUTE_TYPE = 2 };

enum FTy { FT_F16, FT_BF16, FT_F32 };
bool ftype_of(cudaDataType_t t, FTy *out)
{
    switch (t) {
    case CUDA_R_16F: *out = FT_F16; return true;
    case CUDA_R_16BF: *out = FT_BF16; return true;
    case CUDA_R_32F: *out = FT_F32; return true;
    default: return false;
    }
}
size_t fsize(FTy t) { return t == FT_F32 ? 4 : 2; }
float fload(const void *p, FTy t, int64_t i)
{
    switch (t) {
    case FT_F16: return __half2float(((const __half *)p)[i]);
    case FT_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    default: return ((const float *)p)[i];
    }
}
void fstore(void *p, FTy t, int64_t i, float v)
{
    switch (t) {
    case FT_F16: ((__half *)p)[i] = __float2half_rn(v); break;
    case FT_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v); break;
    default: ((float *)p)[i] = v; break;
    }
}
float fround(FTy t, float v)
{
    char b[4];
    fstore(b, t, 0, v);
    return fload(b, t, 0);
}

struct FloatGemm {
    int64_t m, n, k;
    bool ta, tb, tf32;
    FTy ab, cd;
    float alpha, beta;
    const void *A, *B, *C, *bias;
    void *D;
    int64_t lda, ldb, ldc, ldd;
    bool relu;
    int scheme;
    float *ws; /* SCHEME_COMPUTE_TYPE's partial sums */
};

/* The problem a descriptor and its layouts describe (no pointers): SUCCESS, NOT_SUPPORTED or
 * INVALID_VALUE as the header says. */
bool float_kernels_absent()
{
    static const bool absent = [] {
        const char *s = getenv("PYGPU_CUDA_EMU_LT_FLOAT");
        return s != nullptr && strcmp(s, "0") == 0;
    }();
    return absent;
}

cublasStatus_t float_problem(const LtDesc *d, const LtLayout *la, const LtLayout *lb,
                             const LtLayout *lc, const LtLayout *ld, FloatGemm *g)
{
    if (float_kernels_absent())
        return CUBLAS_STATUS_NOT_SUPPORTED;
    FTy ta, tb, tc, td;
    if (!ftype_of(la->type, &ta) || !ftype_of(lb->type, &tb) || !ftype_of(lc->type, &tc) ||
        !ftype_of(ld->type, &td) || ta != tb || tc != td || d->scale != CUDA_R_32F ||
        d->pointer_mode != CUBLASLT_POINTER_MODE_HOST)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (ta == FT_F32 ? (td != FT_F32 || (d->compute != CUBLAS_COMPUTE_32F &&
                                         d->compute != CUBLAS_COMPUTE_32F_FAST_TF32))
                     : (d->compute != CUBLAS_COMPUTE_32F || (td != ta && td != FT_F32)))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    const uint32_t e = d->epilogue;
    if (e != CUBLASLT_EPILOGUE_DEFAULT && e != CUBLASLT_EPILOGUE_RELU &&
        e != CUBLASLT_EPILOGUE_BIAS && e != CUBLASLT_EPILOGUE_RELU_BIAS)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (d->bias_type != -1 && d->bias_type != (int32_t)ld->type)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    g->ab = ta;
    g->cd = td;
    g->tf32 = d->compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    g->relu = e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_RELU_BIAS;
    g->ta = d->transa == CUBLAS_OP_T;
    g->tb = d->transb == CUBLAS_OP_T;
    g->m = (int64_t)(g->ta ? la->cols : la->rows);
    g->k = (int64_t)(g->ta ? la->rows : la->cols);
    g->n = (int64_t)(g->tb ? lb->rows : lb->cols);
    const int64_t kb = (int64_t)(g->tb ? lb->cols : lb->rows);
    if (kb != g->k || (int64_t)lc->rows != g->m || (int64_t)lc->cols != g->n ||
        lc->rows != ld->rows || lc->cols != ld->cols)
        return CUBLAS_STATUS_INVALID_VALUE;
    for (const LtLayout *l : {la, lb, lc, ld})
        if (l->ld < (int64_t)(l->rows > 1 ? l->rows : 1))
            return CUBLAS_STATUS_INVALID_VALUE;
    g->lda = la->ld;
    g->ldb = lb->ld;
    g->ldc = lc->ld;
    g->ldd = ld->ld;
    return CUBLAS_STATUS_SUCCESS;
}

/* the algorithm the heuristic picks under a preference: its scheme and workspace bytes */
void pick_algo(const FloatGemm &g, const LtPref &p, int *scheme, uint64_t *workspace)
{
    *scheme = SCHEME_NONE;
    *workspace = 0;
    if (g.k <= kSplitChunk)
        return;
    if (g.cd != FT_F32 &&
        (p.schemes & (CUBLASLT_REDUCTION_SCHEME_INPLACE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE))) {
        *scheme = SCHEME_OUTPUT_TYPE;
        return;
    }
    const uint64_t chunks = (uint64_t)((g.k + kSplitChunk - 1) / kSplitChunk);
    const uint64_t need = chunks * (uint64_t)g.m * (uint64_t)g.n * sizeof(float);
    if ((p.schemes & CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE) && need <= p.max_workspace) {
        *scheme = SCHEME_COMPUTE_TYPE;
        *workspace = need;
    }
}

void run_float(const FloatGemm &g)
{
    const int64_t chunks = (g.k + kSplitChunk - 1) / kSplitChunk;
    for (int64_t j = 0; j < g.n; j++)
        for (int64_t i = 0; i < g.m; i++) {
            float total = 0;
            for (int64_t c = 0; c < (g.scheme == SCHEME_NONE ? 1 : chunks); c++) {
                const int64_t p0 = g.scheme == SCHEME_NONE ? 0 : c * kSplitChunk;
                const int64_t p1 = g.scheme == SCHEME_NONE ? g.k
                                   : (p0 + kSplitChunk < g.k ? p0 + kSplitChunk : g.k);
                float acc = 0;
                for (int64_t p = p0; p < p1; p++) {
                    float a = fload(g.A, g.ab, g.ta ? p + i * g.lda : i + p * g.lda);
                    float b = fload(g.B, g.ab, g.tb ? j + p * g.ldb : p + j * g.ldb);
                    if (g.tf32) {
                        a = pg_emu_tf32(a);
                        b = pg_emu_tf32(b);
                    }
                    acc += a * b;
                }
                if (g.scheme == SCHEME_OUTPUT_TYPE)
                    total = fround(g.cd, total + fround(g.cd, acc));
                else if (g.scheme == SCHEME_COMPUTE_TYPE)
                    g.ws[(c * g.n + j) * g.m + i] = acc;
                else
                    total = acc;
            }
            if (g.scheme == SCHEME_COMPUTE_TYPE) /* the separate reduction, in chunk order */
                for (int64_t c = 0; c < chunks; c++)
                    total += g.ws[(c * g.n + j) * g.m + i];
            float v = g.alpha * total;
            if (g.beta != 0)
                v += g.beta * fload(g.C, g.cd, i + j * g.ldc);
            if (g.bias)
                v += fload(g.bias, g.cd, i);
            if (g.relu)
                v = v > 0 ? v : 0;
            fstore(g.D, g.cd, i + j * g.ldd, v);
        }
}

bool aligned_to(const void *p, size_t n) { return ((uintptr_t)p % n) == 0; }

cublasStatus_t float_matmul(const LtDesc *d, const void *alpha, const void *A,
                            const LtLayout *la, const void *B, const LtLayout *lb,
                            const void *beta, const void *C, const LtLayout *lc, void *D,
                            const LtLayout *ld, const cublasLtMatmulAlgo_t *algo,
                            void *workspace, size_t workspace_bytes, cudaStream_t stream)
{
    FloatGemm g{};
    cublasStatus_t st = float_problem(d, la, lb, lc, ld, &g);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (C == D && lc->ld != ld->ld)
        return CUBLAS_STATUS_INVALID_VALUE;
    uint64_t need = 0;
    if (algo) {
        if (algo->data[0] != kAlgoMagic)
            return CUBLAS_STATUS_INVALID_VALUE;
        g.scheme = (int)algo->data[2];
        need = algo->data[1];
        const void *ptrs[4] = {A, B, C, D};
        for (int i = 0; i < 4; i++) /* the alignment the algorithm was chosen for */
            if (ptrs[i] && !aligned_to(ptrs[i], (size_t)(algo->data[3] >> (16 * i) & 0xffff)))
                return CUBLAS_STATUS_INVALID_VALUE;
    } else {
        pick_algo(g, LtPref{}, &g.scheme, &need);
    }
    if (need > workspace_bytes || (need > 0 && !workspace))
        return CUBLAS_STATUS_INVALID_VALUE;
    const bool bias = d->epilogue == CUBLASLT_EPILOGUE_BIAS ||
                      d->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    if (bias && (!d->bias || !aligned_to(d->bias, fsize(g.cd))))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (g.m == 0 || g.n == 0)
        return CUBLAS_STATUS_SUCCESS;
    memcpy(&g.alpha, alpha, 4);
    memcpy(&g.beta, beta, 4);
    if (!A || !B || !D || (g.beta != 0 && !C) || !aligned_to(A, fsize(g.ab)) ||
        !aligned_to(B, fsize(g.ab)) || !aligned_to(D, fsize(g.cd)) ||
        (C && !aligned_to(C, fsize(g.cd))))
        return CUBLAS_STATUS_INVALID_VALUE;
    g.A = A;
    g.B = B;
    g.C = C;
    g.D = D;
    g.bias = bias ? d->bias : nullptr;
    g.ws = (float *)workspace;
    pg_emu_enqueue(stream, [g] { run_float(g); });
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
    if (d->compute != CUBLAS_COMPUTE_32I) /* the float section */
        return float_matmul(d, alpha, A, layout_of(Adesc), B, layout_of(Bdesc), beta, C,
                            layout_of(Cdesc), D, layout_of(Ddesc), algo, workspace,
                            workspace_bytes, stream);
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

/* ---- float and half: the preference and the heuristic (see the section's header) ---------- */
PG_LT_API cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    if (!p)
        return CUBLAS_STATUS_INVALID_VALUE;
    *p = reinterpret_cast<cublasLtMatmulPreference_t>(new LtPref());
    return CUBLAS_STATUS_SUCCESS;
}
PG_LT_API cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    delete pref_of(p);
    return CUBLAS_STATUS_SUCCESS;
}
PG_LT_API cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                              cublasLtMatmulPreferenceAttributes_t attr,
                                                              const void *buf, size_t size)
{
    if (!p || !buf)
        return CUBLAS_STATUS_INVALID_VALUE;
    LtPref *x = pref_of(p);
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        if (size != sizeof x->max_workspace)
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&x->max_workspace, buf, size);
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
        if (size != sizeof x->schemes)
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&x->schemes, buf, size);
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: {
        uint32_t v;
        if (size != sizeof v)
            return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&v, buf, sizeof v);
        if (v == 0 || v > 256 || (v & (v - 1)) != 0)
            return CUBLAS_STATUS_INVALID_VALUE;
        x->min_align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] = v;
        return CUBLAS_STATUS_SUCCESS;
    }
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED; /* not modelled */
    }
}

PG_LT_API cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
    int *returned)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!desc || !Adesc || !Bdesc || !Cdesc || !Ddesc || !pref || requested < 1 || !results ||
        !returned)
        return CUBLAS_STATUS_INVALID_VALUE;
    *returned = 0;
    const LtDesc *d = desc_of(desc);
    if (d->compute == CUBLAS_COMPUTE_32I)
        return CUBLAS_STATUS_NOT_SUPPORTED; /* the IMMA section has no heuristic */
    FloatGemm g{};
    cublasStatus_t st = float_problem(d, layout_of(Adesc), layout_of(Bdesc), layout_of(Cdesc),
                                      layout_of(Ddesc), &g);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    int scheme;
    uint64_t need;
    pick_algo(g, *pref_of(pref), &scheme, &need);
    memset(&results[0], 0, sizeof results[0]);
    results[0].algo.data[0] = kAlgoMagic;
    results[0].algo.data[1] = need;
    results[0].algo.data[2] = (uint64_t)scheme;
    const LtPref *pf = pref_of(pref);
    for (int i = 0; i < 4; i++) /* 16 bits each: A, B, C, D */
        results[0].algo.data[3] |= (uint64_t)(pf->min_align[i] & 0xffff) << (16 * i);
    results[0].workspaceSize = (size_t)need;
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}
