/* cuda_lt_gemm.c - one GEMM descriptor (csrc/core/pg_gemm.h) with its bias and activation as
 * ONE cublasLtMatmul, D written in C's dtype: what PyTorch's addmm does on cuda (cuBLASLt with
 * the bias in the GEMM's epilogue). It serves the linear layers' forward (cuda_train.c) and the
 * GEMM contract's PG_EPI_BIAS + act (cuda_gemm.c). Until issue 38 a 16-bit layer with a bias
 * wrote a float32 product to scratch, read it back in an epilogue kernel and rounded it there
 * (0.77x PyTorch's bf16 inference on the H200); float32 layers ran cublasSgemm and an epilogue.
 *
 * Row-major C (M,N) = op(A) (M,K) @ op(B) (K,N) is cuBLASLt's column-major D^T (N,M) =
 * op(B)^T op(A)^T, as cuda_gemm.c does it: cuBLASLt's A is our B, its B our A, each with its
 * own transpose, D (N rows, M columns, ld ldc). The bias (N) is then one value per row of D,
 * which is what CUBLASLT_EPILOGUE_BIAS broadcasts (bias in D's type: the
 * CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE default, which pg_gemm's bias in dtype_c is).
 *
 * Types (cuBLASLt's table): float32 -> float32 with CUBLAS_COMPUTE_32F, or
 * CUBLAS_COMPUTE_32F_FAST_TF32 when allow_tf32 (ctx->tf32); float16 -> float16|float32 and
 * bfloat16 -> bfloat16|float32 with CUBLAS_COMPUTE_32F; scale type CUDA_R_32F. float64 and
 * everything else stays on cuBLAS (refused here, *refused set).
 *
 * Epilogues: relu is fused (RELU_BIAS, RELU); cuBLASLt has no exact epilogue for pygpu's other
 * activations (its GELU is the tanh approximation), so they take the BIAS (or DEFAULT) epilogue
 * and pg_kernel_act_inplace on D (kernels/train.cu; it wants ldc == N).
 *
 * The algorithm comes from cublasLtMatmulAlgoGetHeuristic with a workspace of up to
 * PG_CUDA_LT_WORKSPACE (PyTorch gives cuBLASLt 32 MiB on Hopper), of which the chosen algorithm
 * names what it needs; that much comes from the stream-ordered pool for the call, as the other
 * launchers' scratch. The reduction schemes that keep split-K partial sums in the OUTPUT type
 * (INPLACE, OUTPUT_TYPE) are masked out, so a 16-bit D is the float32 sum rounded once, as the
 * CPU's kernels and cublasGemmEx under CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION give
 * (PyTorch masks them the same way unless reduced-precision reductions are allowed).
 * The heuristic assumes 256-byte aligned A, B, C and D unless told otherwise, and a view at an
 * offset is not: the preference carries each pointer's actual alignment
 * (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES), as PyTorch's does.
 * When cuBLASLt has no kernel for the case (NOT_SUPPORTED from the heuristic, or no result),
 * *refused is set and nothing was queued: the caller falls back to its cuBLAS path, never a
 * wrong result. The refusal is not remembered: it depends on the shapes and the pointers'
 * alignment as well as the types, and the heuristic query that finds it is what a lookup
 * would save. */
#include <stdint.h>
#include <string.h>

#include "cuda_internal.h"
#include "pg_gemm.h"

#define PG_CUDA_LT_WORKSPACE ((uint64_t)32 << 20)

/* cuBLASLt's types for g, or false where this file does not run it */
static bool lt_types(const pg_gemm *g, int tf32, cudaDataType_t *tab, cudaDataType_t *tc,
                     cublasComputeType_t *compute)
{
    *compute = CUBLAS_COMPUTE_32F;
    switch (g->dtype_ab) {
    case PG_FLOAT32:
        *tab = *tc = CUDA_R_32F;
        if (tf32)
            *compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        return g->dtype_c == PG_FLOAT32;
    case PG_FLOAT16:
    case PG_BFLOAT16:
        *tab = g->dtype_ab == PG_FLOAT16 ? CUDA_R_16F : CUDA_R_16BF;
        *tc = g->dtype_c == PG_FLOAT32 ? CUDA_R_32F : *tab;
        return g->dtype_c == g->dtype_ab || g->dtype_c == PG_FLOAT32;
    default:
        return false;
    }
}

/* the cublasLtEpilogue_t of g, and whether pg_kernel_act_inplace must follow */
static cublasLtEpilogue_t lt_epilogue(const pg_gemm *g, bool *act_after)
{
    bool bias = (g->epilogue & PG_EPI_BIAS) != 0, relu = g->act == PG_ACT_RELU;
    *act_after = g->act != PG_ACT_NONE && !relu;
    if (relu)
        return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

typedef struct lt_call {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
} lt_call;

static void lt_call_free(lt_call *c)
{
    if (c->pref)
        cublasLtMatmulPreferenceDestroy(c->pref);
    if (c->lc)
        cublasLtMatrixLayoutDestroy(c->lc);
    if (c->lb)
        cublasLtMatrixLayoutDestroy(c->lb);
    if (c->la)
        cublasLtMatrixLayoutDestroy(c->la);
    if (c->desc)
        cublasLtMatmulDescDestroy(c->desc);
}

/* the largest power of two (up to 256) that divides p's address */
static uint32_t alignment_of(const void *p)
{
    uint32_t a = 256;
    while (a > 1 && ((uintptr_t)p % a) != 0)
        a /= 2;
    return a;
}

/* the descriptors of g's call (see the top of the file) */
static cublasStatus_t lt_describe(const pg_gemm *g, cudaDataType_t tab, cudaDataType_t tc,
                                  cublasComputeType_t compute, cublasLtEpilogue_t epi, lt_call *c)
{
    cublasStatus_t st = cublasLtMatmulDescCreate(&c->desc, compute, CUDA_R_32F);
    const int32_t op_a = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLASLt's A: our B */
    const int32_t op_b = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const uint32_t epi32 = (uint32_t)epi;
    const uint64_t M = (uint64_t)g->M, N = (uint64_t)g->N, K = (uint64_t)g->K;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(c->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(c->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(c->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi32,
                                            sizeof epi32);
    if (st == CUBLAS_STATUS_SUCCESS && (g->epilogue & PG_EPI_BIAS))
        st = cublasLtMatmulDescSetAttribute(c->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias,
                                            sizeof g->bias);
    /* stored matrices, column-major: our B (K,N) row-major is N x K, (N,K) transposed K x N */
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&c->la, tab, g->trans_b ? K : N, g->trans_b ? N : K,
                                        g->ldb);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&c->lb, tab, g->trans_a ? M : K, g->trans_a ? K : M,
                                        g->lda);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&c->lc, tc, N, M, g->ldc);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceCreate(&c->pref);
    const uint64_t ws = PG_CUDA_LT_WORKSPACE;
    const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(c->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof ws);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(
            c->pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes);
    /* cuBLASLt's A, B, C, D: our B, A, C, C */
    const struct {
        cublasLtMatmulPreferenceAttributes_t attr;
        const void *p;
    } aligns[4] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, g->b},
                   {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, g->a},
                   {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, g->c},
                   {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, g->c}};
    for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; i++) {
        const uint32_t a = alignment_of(aligns[i].p);
        st = cublasLtMatmulPreferenceSetAttribute(c->pref, aligns[i].attr, &a, sizeof a);
    }
    return st;
}

pg_status pg_cuda_lt_gemm(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_gemm *g,
                          const char *op, bool *refused)
{
    *refused = true;
    cudaDataType_t tab, tc;
    cublasComputeType_t compute;
    bool act_after;
    const cublasLtEpilogue_t epi = lt_epilogue(g, &act_after);
    /* what this file runs: one product (no batch), B as stored (no float32 B rounded on the
     * fly, no mask), only the BIAS flag, K >= 1, and C contiguous where an activation follows */
    if (!lt_types(g, ctx->tf32, &tab, &tc, &compute) || g->batch != 1 || g->b_f32 ||
        g->b_mask != NULL || (g->epilogue & ~PG_EPI_BIAS) != 0 || g->K < 1 ||
        (act_after && g->ldc != g->N) || ((g->epilogue & PG_EPI_BIAS) && g->bias == NULL))
        return PG_OK;
    *refused = false;
    if (g->M == 0 || g->N == 0)
        return PG_OK;
    cublasLtHandle_t lt;
    PG_TRY(pg_cuda_lt_acquire(d, op, &lt));
    lt_call c;
    memset(&c, 0, sizeof c);
    cublasLtMatmulHeuristicResult_t res;
    memset(&res, 0, sizeof res);
    int found = 0;
    void *ws = NULL;
    cudaError_t err = cudaSuccess;
    const char *call = "cublasLtMatmulAlgoGetHeuristic";
    cublasStatus_t st = lt_describe(g, tab, tc, compute, epi, &c);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(lt, c.desc, c.la, c.lb, c.lc, c.lc, c.pref, 1, &res,
                                            &found);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED ||
        (st == CUBLAS_STATUS_SUCCESS && (found < 1 || res.state != CUBLAS_STATUS_SUCCESS))) {
        *refused = true; /* no kernel for this case (or an attribute this cuBLASLt lacks) */
        st = CUBLAS_STATUS_SUCCESS;
    } else if (st == CUBLAS_STATUS_SUCCESS && res.workspaceSize > 0) {
        err = cudaMallocAsync(&ws, res.workspaceSize, ctx->stream);
    }
    if (!*refused && st == CUBLAS_STATUS_SUCCESS && err == cudaSuccess) {
        const float alpha = (float)g->alpha, beta = (float)g->beta; /* the scale type's */
        call = "cublasLtMatmul";
        pg_cuda_note_gemm_epilogue(ctx, "cublasLtMatmul", tab, tc, compute, (int)epi);
        st = cublasLtMatmul(lt, c.desc, &alpha, g->b, c.la, g->a, c.lb, &beta, g->c, c.lc, g->c,
                            c.lc, &res.algo, ws, res.workspaceSize, ctx->stream);
        if (st == CUBLAS_STATUS_NOT_SUPPORTED) {
            *refused = true;
            st = CUBLAS_STATUS_SUCCESS;
        }
    }
    if (ws != NULL && cudaFreeAsync(ws, ctx->stream) != cudaSuccess && err == cudaSuccess)
        err = cudaGetLastError(); /* after the GEMM that uses it, on the same stream */
    /* destroying the descriptors after the call is fine: cublasLtMatmul has read them */
    lt_call_free(&c);
    pg_cuda_blas_release(d);
    PG_TRY(pg_cuda_check(PG_CUDA_LIB_CUBLAS, st, d->index, op, call, false));
    PG_TRY(pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, d->index, op, "cudaMallocAsync", false));
    if (*refused || !act_after)
        return PG_OK;
    err = pg_kernel_act_inplace(ctx, g->dtype_c, g->c, g->M * g->N, g->act);
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, d->index, op, "pg_kernel_act_inplace", false);
}
