/* emu_cublas.cpp - CPU stand-ins for the cuBLAS calls the plugin makes, with
 * cuBLAS's documented semantics: column-major, C = alpha op(A) op(B) + beta C,
 * lda/ldb/ldc checked as cuBLAS checks them (CUBLAS_STATUS_INVALID_VALUE),
 * the strided-batched and Ex variants, queued on the handle's stream.
 *
 * Where cuBLAS is allowed to lose precision, the stand-in takes the least
 * precise path the API permits, so code that relies on luck fails here:
 * - CUBLAS_TF32_TENSOR_OP_MATH on float32: A and B rounded to TF32 (10-bit
 *   mantissa) before the products;
 * - a 16-bit C without CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION:
 *   split-K, K summed in chunks of 256 whose partial sums are rounded to C's
 *   type and added in that type (cuBLAS may reduce split-K partials in the
 *   output precision unless that flag is set).
 * Otherwise products accumulate in the compute type (float32 for
 * CUBLAS_COMPUTE_32F, float64 for D), in order of k. beta == 0 never reads C
 * (NaN in C does not leak), as cuBLAS promises. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cublas_v2.h>

#include "emu_internal.h"

struct cublasContext {
    cudaStream_t stream = nullptr;
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

namespace {

enum Ty { F16, BF16, F32, F64 };

bool type_of(cudaDataType_t t, Ty *out)
{
    switch (t) {
    case CUDA_R_16F: *out = F16; return true;
    case CUDA_R_16BF: *out = BF16; return true;
    case CUDA_R_32F: *out = F32; return true;
    case CUDA_R_64F: *out = F64; return true;
    default: return false;
    }
}
size_t size_of(Ty t) { return t == F64 ? 8 : t == F32 ? 4 : 2; }

double load(const void *p, Ty t, int64_t i)
{
    switch (t) {
    case F16: return __half2float(((const __half *)p)[i]);
    case BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case F32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
    }
}
void store(void *p, Ty t, int64_t i, double v)
{
    switch (t) {
    case F16: ((__half *)p)[i] = __float2half_rn((float)v); break;
    case BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v); break;
    case F32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
}
/* rounding to the storage type and back, for the reduced-precision reduction */
double round_to(Ty t, double v)
{
    char b[8];
    store(b, t, 0, v);
    return load(b, t, 0);
}

struct Gemm {
    cublasOperation_t ta, tb;
    int m, n, k;
    double alpha, beta;
    const void *A, *B;
    void *C;
    Ty tab, tc;
    int lda, ldb, ldc;
    long long sa, sb, sc;
    int batch;
    bool compute64, tf32_inputs, split_k_in_c;
};

void run(const Gemm &g)
{
    for (int bi = 0; bi < g.batch; bi++) {
        const int64_t oa = (int64_t)bi * g.sa, ob = (int64_t)bi * g.sb, oc = (int64_t)bi * g.sc;
        for (int j = 0; j < g.n; j++)
            for (int i = 0; i < g.m; i++) {
                double acc = 0, chunk = 0;
                float accf = 0;
                for (int p = 0; p < g.k; p++) {
                    int64_t ia = g.ta == CUBLAS_OP_N ? i + (int64_t)p * g.lda : p + (int64_t)i * g.lda;
                    int64_t ib = g.tb == CUBLAS_OP_N ? p + (int64_t)j * g.ldb : j + (int64_t)p * g.ldb;
                    double a = load(g.A, g.tab, oa + ia), b = load(g.B, g.tab, ob + ib);
                    if (g.compute64) {
                        acc += a * b;
                    } else {
                        float af = (float)a, bf = (float)b;
                        if (g.tf32_inputs) {
                            af = pg_emu_tf32(af);
                            bf = pg_emu_tf32(bf);
                        }
                        accf += af * bf;
                        if (g.split_k_in_c && (p + 1) % 256 == 0) {
                            chunk = round_to(g.tc, chunk + round_to(g.tc, accf));
                            accf = 0;
                        }
                    }
                }
                double sum;
                if (g.compute64)
                    sum = acc;
                else if (g.split_k_in_c && g.k > 256)
                    sum = round_to(g.tc, chunk + round_to(g.tc, accf));
                else
                    sum = accf;
                int64_t ic = oc + i + (int64_t)j * g.ldc;
                double v = g.compute64 ? g.alpha * sum : (double)((float)g.alpha * (float)sum);
                if (g.beta != 0)
                    v = g.compute64 ? v + g.beta * load(g.C, g.tc, ic)
                                    : (double)((float)v + (float)g.beta * (float)load(g.C, g.tc, ic));
                store(g.C, g.tc, ic, v);
            }
    }
}

cublasStatus_t submit(cublasHandle_t h, Gemm g)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    int rows_a = g.ta == CUBLAS_OP_N ? g.m : g.k, rows_b = g.tb == CUBLAS_OP_N ? g.k : g.n;
    if (g.lda < (rows_a > 1 ? rows_a : 1) || g.ldb < (rows_b > 1 ? rows_b : 1) ||
        g.ldc < (g.m > 1 ? g.m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if ((g.ta != CUBLAS_OP_N && g.ta != CUBLAS_OP_T) || (g.tb != CUBLAS_OP_N && g.tb != CUBLAS_OP_T))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (g.m == 0 || g.n == 0 || g.batch == 0)
        return CUBLAS_STATUS_SUCCESS;
    g.tf32_inputs = g.tab == F32 && !g.compute64 && (h->math & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH;
    g.split_k_in_c = (g.tc == F16 || g.tc == BF16) &&
                     !(h->math & CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    pg_emu_enqueue(h->stream, [g] { run(g); });
    return CUBLAS_STATUS_SUCCESS;
}

Gemm make(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, double alpha,
          const void *A, int lda, long long sa, const void *B, int ldb, long long sb, double beta,
          void *C, int ldc, long long sc, int batch, Ty tab, Ty tc, bool c64)
{
    Gemm g{};
    g.ta = ta;
    g.tb = tb;
    g.m = m;
    g.n = n;
    g.k = k;
    g.alpha = alpha;
    g.beta = beta;
    g.A = A;
    g.B = B;
    g.C = C;
    g.lda = lda;
    g.ldb = ldb;
    g.ldc = ldc;
    g.sa = sa;
    g.sb = sb;
    g.sc = sc;
    g.batch = batch;
    g.tab = tab;
    g.tc = tc;
    g.compute64 = c64;
    return g;
}

cublasStatus_t gemm_ex(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                       int k, const void *alpha, const void *A, cudaDataType_t at, int lda,
                       long long sa, const void *B, cudaDataType_t bt, int ldb, long long sb,
                       const void *beta, void *C, cudaDataType_t ct, int ldc, long long sc,
                       int batch, cublasComputeType_t compute)
{
    Ty tab, tbb, tc;
    if (!type_of(at, &tab) || !type_of(bt, &tbb) || !type_of(ct, &tc) || tab != tbb)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    bool c64 = compute == CUBLAS_COMPUTE_64F || compute == CUBLAS_COMPUTE_64F_PEDANTIC;
    bool c32 = compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
               compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    /* the (A/B, C, compute) combinations cuBLAS has */
    bool ok = (c64 && tab == F64 && tc == F64) || (c32 && tab == F32 && tc == F32) ||
              (c32 && (tab == F16 || tab == BF16) && (tc == tab || tc == F32));
    if (!ok)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    double a = c64 ? *(const double *)alpha : *(const float *)alpha;
    double b = c64 ? *(const double *)beta : *(const float *)beta;
    return submit(h, make(ta, tb, m, n, k, a, A, lda, sa, B, ldb, sb, b, C, ldc, sc, batch, tab,
                          tc, c64));
}

} // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
    *h = new cublasContext();
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    h->math = m;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t *m)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *m = h->math;
    return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusName(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}
const char *cublasGetStatusString(cublasStatus_t s) { return cublasGetStatusName(s); }

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta, float *C, int ldc)
{
    return submit(h, make(ta, tb, m, n, k, *alpha, A, lda, 0, B, ldb, 0, *beta, C, ldc, 0, 1, F32,
                          F32, false));
}
cublasStatus_t cublasDgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const double *alpha, const double *A, int lda,
                              const double *B, int ldb, const double *beta, double *C, int ldc)
{
    return submit(h, make(ta, tb, m, n, k, *alpha, A, lda, 0, B, ldb, 0, *beta, C, ldc, 0, 1, F64,
                          F64, true));
}
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long sa, const float *B, int ldb, long long sb,
                                         const float *beta, float *C, int ldc, long long sc,
                                         int batch)
{
    return submit(h, make(ta, tb, m, n, k, *alpha, A, lda, sa, B, ldb, sb, *beta, C, ldc, sc,
                          batch, F32, F32, false));
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const double *alpha, const double *A, int lda,
                                         long long sa, const double *B, int ldb, long long sb,
                                         const double *beta, double *C, int ldc, long long sc,
                                         int batch)
{
    return submit(h, make(ta, tb, m, n, k, *alpha, A, lda, sa, B, ldb, sb, *beta, C, ldc, sc,
                          batch, F64, F64, true));
}
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType_t at,
                            int lda, const void *B, cudaDataType_t bt, int ldb, const void *beta,
                            void *C, cudaDataType_t ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo)
{
    (void)algo;
    return gemm_ex(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1,
                   compute);
}
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType_t at,
                                          int lda, long long sa, const void *B, cudaDataType_t bt,
                                          int ldb, long long sb, const void *beta, void *C,
                                          cudaDataType_t ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    (void)algo;
    return gemm_ex(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc,
                   batch, compute);
}

} // extern "C"
