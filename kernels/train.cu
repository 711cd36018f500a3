/* train.cu - the fused training ops on CUDA (see csrc/core/pg_ops_train.c for
 * each node's operands). CPU twins: csrc/backends/cpu/cpu_train.c.
 *
 * linear: the two or three matmuls go to cuBLAS (row-major products computed
 * as their column-major transposes, as matmul.cu does); the bias + activation
 * epilogue and the activation-derivative prologue (which also sums db) are
 * one kernel each. softmax-cross-entropy: one block per row (max, sum of exp,
 * probabilities, the row's loss added atomically). SGD and Adam: one
 * grid-stride elementwise kernel each, in place. All operands contiguous.
 * A label outside [0, C) makes the loss NaN on this backend (a kernel cannot
 * raise; the cpu and sim backends report the label by name). */
#include <limits.h>
#include <math.h>

#include "pg_cuda_common.cuh"

template <typename T> __device__ __forceinline__ T pg_act(int act, T v)
{
    switch (act) {
    case PG_CUDA_ACT_RELU: return v > T(0) ? v : T(0);
    case PG_CUDA_ACT_TANH: return tanh(v);
    case PG_CUDA_ACT_SIGMOID: return T(1) / (T(1) + exp(-v));
    default: return v;
    }
}

/* act'(x) written in terms of the output y = act(x) */
template <typename T> __device__ __forceinline__ T pg_act_deriv(int act, T y)
{
    switch (act) {
    case PG_CUDA_ACT_RELU: return y > T(0) ? T(1) : T(0);
    case PG_CUDA_ACT_TANH: return T(1) - y * y;
    case PG_CUDA_ACT_SIGMOID: return y * (T(1) - y);
    default: return T(1);
    }
}

/* C (rows x cols, row-major) = op(A) @ op(B) in row-major terms, through cuBLAS's
 * column-major gemm on the transposes: C^T = op(B)^T op(A)^T. ta/tb: whether our A/B
 * are used transposed; lda/ldb: their row-major leading dimensions. */
template <typename T>
static cublasStatus_t pg_gemm_rm(cublasHandle_t h, bool ta, bool tb, int rows, int cols, int k,
                                 const T *A, int lda, const T *B, int ldb, T *C)
{
    const T one = 1, zero = 0;
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (std::is_same<T, float>::value)
        return cublasSgemm(h, opb, opa, cols, rows, k, (const float *)&one, (const float *)B, ldb,
                           (const float *)A, lda, (const float *)&zero, (float *)C, cols);
    return cublasDgemm(h, opb, opa, cols, rows, k, (const double *)&one, (const double *)B, ldb,
                       (const double *)A, lda, (const double *)&zero, (double *)C, cols);
}

/* ---- linear ------------------------------------------------------------------------- */

/* y (N,O) = act(y + b) in place */
template <typename T>
__global__ void pg_linear_epilogue_kernel(T *y, const T *b, int64_t n, int64_t O, int act)
{
    for (int64_t i = pg_thread_index(); i < n; i += pg_thread_count()) {
        T v = y[i] + (b ? b[i % O] : T(0));
        y[i] = pg_act(act, v);
    }
}

/* dz = dy * act'(y) (when act), db[j] = sum_r dz[r, j]. Block (32, 8): 32 columns, 8 row
 * lanes that stride over the rows; the 8 partial sums meet in shared memory. */
template <typename T>
__global__ void pg_linear_prologue_kernel(const T *dy, const T *y, T *dz, T *db, int64_t N,
                                          int64_t O, int act)
{
    __shared__ double part[8][33];
    int64_t j = (int64_t)blockIdx.x * 32 + threadIdx.x;
    double acc = 0;
    if (j < O)
        for (int64_t r = threadIdx.y; r < N; r += 8) {
            int64_t k = r * O + j;
            T v = dy[k];
            if (act != PG_CUDA_ACT_NONE) {
                v = v * pg_act_deriv(act, y[k]);
                dz[k] = v;
            }
            acc += (double)v;
        }
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < O && db) {
        double s = 0;
        for (int q = 0; q < 8; q++)
            s += part[q][threadIdx.x];
        db[j] = (T)s;
    }
}

extern "C" cudaError_t pg_kernel_linear_fwd(const pg_cuda_ctx *ctx, cublasHandle_t blas,
                                            const pg_cuda_linear_args *a,
                                            cublasStatus_t *blas_status)
{
    *blas_status = CUBLAS_STATUS_SUCCESS;
    if (a->n > INT_MAX || a->in > INT_MAX || a->out > INT_MAX)
        return cudaErrorInvalidValue;
    int N = (int)a->n, I = (int)a->in, O = (int)a->out;
    return pg_dispatch_dtype(a->dtype, [&](auto t) -> cudaError_t {
        using T = decltype(t);
        if constexpr (std::is_floating_point<T>::value) {
            /* y (N,O) = x (N,I) @ W^T, W (O,I) */
            *blas_status = pg_gemm_rm<T>(blas, false, true, N, O, I, (const T *)a->x, I,
                                         (const T *)a->w, I, (T *)a->y);
            if (*blas_status != CUBLAS_STATUS_SUCCESS)
                return cudaSuccess;
            if (a->b || a->act != PG_CUDA_ACT_NONE) {
                int64_t n = a->n * a->out;
                pg_linear_epilogue_kernel<T><<<pg_cuda_grid(n, PG_CUDA_BLOCK, ctx), PG_CUDA_BLOCK,
                                               0, ctx->stream>>>((T *)a->y, (const T *)a->b, n,
                                                                 a->out, a->act);
            }
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}

extern "C" cudaError_t pg_kernel_linear_bwd(const pg_cuda_ctx *ctx, cublasHandle_t blas,
                                            const pg_cuda_linear_args *a,
                                            cublasStatus_t *blas_status)
{
    *blas_status = CUBLAS_STATUS_SUCCESS;
    if (a->n > INT_MAX || a->in > INT_MAX || a->out > INT_MAX)
        return cudaErrorInvalidValue;
    int N = (int)a->n, I = (int)a->in, O = (int)a->out;
    return pg_dispatch_dtype(a->dtype, [&](auto t) -> cudaError_t {
        using T = decltype(t);
        if constexpr (std::is_floating_point<T>::value) {
            const T *dz = (const T *)a->dy;
            if (a->act != PG_CUDA_ACT_NONE || a->db) {
                dim3 block(32, 8), grid((unsigned)((a->out + 31) / 32));
                pg_linear_prologue_kernel<T><<<grid, block, 0, ctx->stream>>>(
                    (const T *)a->dy, (const T *)a->y, (T *)a->dz, (T *)a->db, a->n, a->out,
                    a->act);
                cudaError_t e = cudaGetLastError();
                if (e != cudaSuccess)
                    return e;
                if (a->act != PG_CUDA_ACT_NONE)
                    dz = (const T *)a->dz;
            }
            /* dW (O,I) = dz^T (O,N) @ x (N,I) */
            *blas_status = pg_gemm_rm<T>(blas, true, false, O, I, N, dz, O, (const T *)a->x, I,
                                         (T *)a->dw);
            if (*blas_status == CUBLAS_STATUS_SUCCESS && a->dx) /* dx (N,I) = dz (N,O) @ W (O,I) */
                *blas_status = pg_gemm_rm<T>(blas, false, false, N, I, O, dz, O,
                                             (const T *)a->w, I, (T *)a->dx);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}

/* ---- softmax cross-entropy ---------------------------------------------------------- */

#define PG_XENT_BLOCK 256

/* One block per row: max, sum of exp (shared-memory tree reductions), probabilities,
 * and the row's loss (lse - x[label]) * scale added to *loss (zeroed before). */
template <typename T>
__global__ void pg_xent_fwd_kernel(const T *x, const int64_t *labels, T *probs, T *loss,
                                   int64_t N, int64_t C, double scale)
{
    __shared__ double red[PG_XENT_BLOCK];
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const T *row = x + r * C;
        double m = -INFINITY;
        for (int64_t j = threadIdx.x; j < C; j += blockDim.x)
            m = fmax(m, (double)row[j]);
        red[threadIdx.x] = m;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s)
                red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + s]);
            __syncthreads();
        }
        m = red[0];
        __syncthreads();
        double sum = 0;
        for (int64_t j = threadIdx.x; j < C; j += blockDim.x)
            sum += exp((double)row[j] - m);
        red[threadIdx.x] = sum;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s)
                red[threadIdx.x] += red[threadIdx.x + s];
            __syncthreads();
        }
        sum = red[0];
        __syncthreads();
        for (int64_t j = threadIdx.x; j < C; j += blockDim.x)
            probs[r * C + j] = (T)(exp((double)row[j] - m) / sum);
        if (threadIdx.x == 0) {
            int64_t l = labels[r];
            double v = (l >= 0 && l < C) ? (m + log(sum) - (double)row[l]) : NAN;
            atomicAdd(loss, (T)(v * scale));
        }
    }
}

template <typename T>
__global__ void pg_xent_bwd_kernel(const T *probs, const int64_t *labels, const T *g, T *d,
                                   int64_t n, int64_t C, double scale)
{
    double gs = (double)*g * scale;
    for (int64_t i = pg_thread_index(); i < n; i += pg_thread_count()) {
        int64_t r = i / C, j = i % C;
        double v = (double)probs[i] - (labels[r] == j ? 1.0 : 0.0);
        d[i] = (T)(v * gs);
    }
}

extern "C" cudaError_t pg_kernel_xent_fwd(const pg_cuda_ctx *ctx, int dtype, const void *x,
                                          const int64_t *labels, void *probs, void *loss,
                                          int64_t N, int64_t C, int mean)
{
    cudaError_t e = cudaMemsetAsync(loss, 0, dtype == PG_FLOAT32 ? 4 : 8, ctx->stream);
    if (e != cudaSuccess || N == 0)
        return e;
    double scale = mean ? 1.0 / (double)N : 1.0;
    unsigned grid = (unsigned)(N < 65535 ? N : 65535);
    return pg_dispatch_dtype(dtype, [&](auto t) -> cudaError_t {
        using T = decltype(t);
        if constexpr (std::is_floating_point<T>::value) {
            pg_xent_fwd_kernel<T><<<grid, PG_XENT_BLOCK, 0, ctx->stream>>>(
                (const T *)x, labels, (T *)probs, (T *)loss, N, C, scale);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}

extern "C" cudaError_t pg_kernel_xent_bwd(const pg_cuda_ctx *ctx, int dtype, const void *probs,
                                          const int64_t *labels, const void *gloss, void *dlogits,
                                          int64_t N, int64_t C, int mean)
{
    int64_t n = N * C;
    if (n == 0)
        return cudaSuccess;
    double scale = mean ? 1.0 / (double)N : 1.0;
    return pg_dispatch_dtype(dtype, [&](auto t) -> cudaError_t {
        using T = decltype(t);
        if constexpr (std::is_floating_point<T>::value) {
            pg_xent_bwd_kernel<T><<<pg_cuda_grid(n, PG_CUDA_BLOCK, ctx), PG_CUDA_BLOCK, 0,
                                    ctx->stream>>>((const T *)probs, labels, (const T *)gloss,
                                                   (T *)dlogits, n, C, scale);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}

/* ---- optimizers ----------------------------------------------------------------------- */

template <typename T>
__global__ void pg_sgd_kernel(T *p, const T *g, T *buf, int64_t n, T lr, T mom, T damp, T wd,
                              int nesterov, int first)
{
    for (int64_t k = pg_thread_index(); k < n; k += pg_thread_count()) {
        T d = g[k] + wd * p[k];
        if (buf) {
            T b = first ? d : mom * buf[k] + (T(1) - damp) * d;
            buf[k] = b;
            d = nesterov ? d + mom * b : b;
        }
        p[k] -= lr * d;
    }
}

template <typename T>
__global__ void pg_adam_kernel(T *p, const T *g, T *m, T *v, int64_t n, T step, T b1, T b2, T eps,
                               T wd, T bc2)
{
    for (int64_t k = pg_thread_index(); k < n; k += pg_thread_count()) {
        T gk = g[k] + wd * p[k];
        T mk = b1 * m[k] + (T(1) - b1) * gk;
        T vk = b2 * v[k] + (T(1) - b2) * gk * gk;
        m[k] = mk;
        v[k] = vk;
        p[k] -= step * mk / (sqrt(vk) / bc2 + eps);
    }
}

extern "C" cudaError_t pg_kernel_sgd(const pg_cuda_ctx *ctx, int dtype, void *p, const void *g,
                                     void *buf, int64_t n, const double *f, int nesterov,
                                     int first)
{
    if (n == 0)
        return cudaSuccess;
    return pg_dispatch_dtype(dtype, [&](auto t) -> cudaError_t {
        using T = decltype(t);
        if constexpr (std::is_floating_point<T>::value) {
            pg_sgd_kernel<T><<<pg_cuda_grid(n, PG_CUDA_BLOCK, ctx), PG_CUDA_BLOCK, 0,
                               ctx->stream>>>((T *)p, (const T *)g, (T *)buf, n, (T)f[0],
                                              (T)f[1], (T)f[2], (T)f[3], nesterov, first);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}

extern "C" cudaError_t pg_kernel_adam(const pg_cuda_ctx *ctx, int dtype, void *p, const void *g,
                                      void *m, void *v, int64_t n, const double *f)
{
    if (n == 0)
        return cudaSuccess;
    return pg_dispatch_dtype(dtype, [&](auto t) -> cudaError_t {
        using T = decltype(t);
        if constexpr (std::is_floating_point<T>::value) {
            pg_adam_kernel<T><<<pg_cuda_grid(n, PG_CUDA_BLOCK, ctx), PG_CUDA_BLOCK, 0,
                                ctx->stream>>>((T *)p, (const T *)g, (T *)m, (T *)v, n, (T)f[0],
                                               (T)f[1], (T)f[2], (T)f[3], (T)f[4], (T)f[5]);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}
