/* train.cu - the fused training ops on CUDA (see csrc/core/pg_ops_train.c for
 * each node's operands). CPU twins: csrc/backends/cpu/cpu_train.c.
 *
 * linear: the forward of a float32/float16/bfloat16 layer is one cublasLtMatmul with
 * the bias (and relu) in its epilogue (csrc/backends/cuda/cuda_lt_gemm.c; other
 * activations by pg_act_inplace_kernel below); pg_kernel_linear_fwd here runs where
 * cuBLASLt has no kernel, and for float64. Otherwise the two or three matmuls go to
 * cuBLAS (row-major products computed as their column-major transposes, as matmul.cu
 * does); the bias + activation
 * epilogue and the activation-derivative prologue (which also sums db) are
 * one kernel each; db is summed by a 2-D grid (column tiles x row chunks)
 * whose per-chunk partial sums a second kernel adds in a fixed order, so a
 * layer with 10 outputs no longer runs on a single block.
 * softmax-cross-entropy: one block per row (max, sum of exp, probabilities,
 * the row's loss into a scratch vector), then one block adds the row losses
 * in a fixed order: the loss is the same bit for bit from run to run (an
 * atomicAdd per row was not). The optimizers' updates: optim.cu.
 * All operands contiguous.
 * A label outside [0, C) sets the device's error flag (ctx->eflags), which
 * the host turns into AsyncOpError naming the label at the next wait, as sim
 * does; the loss of that row is NaN meanwhile.
 *
 * float16/bfloat16 (the linear layers only, which autocast runs in the low
 * dtype; the losses stay float32/float64 and the core refuses them in half on
 * cuda): the products go to cublasGemmEx with float32
 * compute on the tensor cores. With a bias or an activation, the forward
 * product is written to a float32 scratch and the epilogue adds the bias and
 * applies the activation in float32, rounding once into y (as the CPU's GEMM
 * epilogue does on its accumulator); the backward prologue computes dz in
 * float32 and rounds it once into the half dz the two products read, and db
 * is summed in double and rounded once. */
#include <limits.h>
#include <math.h>

#include "pg_cuda_act.cuh"
#include "pg_cuda_half.cuh"

/* The cuBLAS data type of a storage type. */
template <typename T> constexpr cudaDataType_t pg_blas_type()
{
    if constexpr (std::is_same<T, __half>::value)
        return CUDA_R_16F;
    else if constexpr (std::is_same<T, __nv_bfloat16>::value)
        return CUDA_R_16BF;
    else if constexpr (std::is_same<T, float>::value)
        return CUDA_R_32F;
    else
        return CUDA_R_64F;
}

/* C (rows x cols, row-major) = op(A) @ op(B) in row-major terms, through cuBLAS's
 * column-major gemm on the transposes: C^T = op(B)^T op(A)^T. ta/tb: whether our A/B
 * are used transposed; lda/ldb: their row-major leading dimensions. Half A and B go
 * to cublasGemmEx (float32 compute, tensor cores), C in T or float32 (TC). The call is
 * noted for pygpu.profiler with its types. */
template <typename T, typename TC = T>
static cublasStatus_t pg_gemm_rm(const pg_cuda_ctx *ctx, cublasHandle_t h, bool ta, bool tb,
                                 int rows, int cols, int k, const T *A, int lda, const T *B,
                                 int ldb, TC *C)
{
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if constexpr (pg_is_half<T>) {
        const float one = 1, zero = 0;
        pg_cuda_note_gemm(ctx, "cublasGemmEx", pg_blas_type<T>(), pg_blas_type<TC>(),
                          CUBLAS_COMPUTE_32F);
        return cublasGemmEx(h, opb, opa, cols, rows, k, &one, B, pg_blas_type<T>(), ldb, A,
                            pg_blas_type<T>(), lda, &zero, C, pg_blas_type<TC>(), cols,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else if constexpr (std::is_same<T, float>::value) {
        const float one = 1, zero = 0;
        pg_cuda_note_gemm(ctx, "cublasSgemm", CUDA_R_32F, CUDA_R_32F,
                          ctx->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
        return cublasSgemm(h, opb, opa, cols, rows, k, &one, B, ldb, A, lda, &zero, C, cols);
    } else {
        const double one = 1, zero = 0;
        pg_cuda_note_gemm(ctx, "cublasDgemm", CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F);
        return cublasDgemm(h, opb, opa, cols, rows, k, &one, B, ldb, A, lda, &zero, C, cols);
    }
}

/* ---- linear ------------------------------------------------------------------------- */

/* y (N,O) = act(yin + b): yin is y itself (in place), or for the halves the product's
 * float32 scratch, so the result is rounded once */
template <typename T, typename A>
__global__ void pg_linear_epilogue_kernel(const A *yin, T *y, const T *b, int64_t n, int64_t O,
                                          int act)
{
    using C = pg_calc_t<T>;
    for (int64_t i = pg_thread_index(); i < n; i += pg_thread_count()) {
        C v = (C)pg_load(yin[i]) + (b ? pg_load(b[i % O]) : C(0));
        y[i] = pg_store<T>(pg_act(act, v));
    }
}

/* y = act(y) in place (pg_kernel_act_inplace): n / V packs of 16 bytes, then the tail; the
 * activation computed in pg_calc_t (float for the halves), rounded once into y. On the
 * cuBLASLt path y already holds the GEMM's result with its bias, rounded once to y's dtype,
 * so a 16-bit layer's tanh, sigmoid or leaky_relu is rounded twice, as PyTorch's addmm
 * followed by the activation's own kernel is (relu is fused in the GEMM: rounding commutes
 * with it). */
template <typename T, int V> __global__ void pg_act_inplace_kernel(T *y, int64_t n, int act)
{
    const int64_t packs = n / V;
    pg_pack<T, V> *yp = reinterpret_cast<pg_pack<T, V> *>(y);
    for (int64_t p = pg_thread_index(); p < packs; p += pg_thread_count()) {
        pg_pack<T, V> v = yp[p];
#pragma unroll
        for (int k = 0; k < V; k++)
            v.v[k] = pg_store<T>(pg_act(act, (pg_calc_t<T>)pg_load(v.v[k])));
        yp[p] = v;
    }
    for (int64_t i = packs * V + pg_thread_index(); i < n; i += pg_thread_count())
        y[i] = pg_store<T>(pg_act(act, (pg_calc_t<T>)pg_load(y[i])));
}

extern "C" cudaError_t pg_kernel_act_inplace(const pg_cuda_ctx *ctx, int dtype, void *y, int64_t n,
                                             int act)
{
    if (n == 0 || act == PG_CUDA_ACT_NONE)
        return cudaSuccess;
    return pg_dispatch_dtype_all(dtype, [&](auto t) -> cudaError_t {
        using T = decltype(t);
        if constexpr (std::is_same<T, float>::value || pg_is_half<T>) {
            constexpr int V = pg_vec_width<T>();
            if (pg_cuda_aligned(y, 16)) {
                unsigned grid = pg_cuda_grid((n + V - 1) / V, PG_CUDA_BLOCK, ctx);
                pg_act_inplace_kernel<T, V>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_act_inplace_kernel")>>>(
                        (T *)y, n, act);
            } else { /* one element per access: the tail loop does it all */
                unsigned grid = pg_cuda_grid(n, PG_CUDA_BLOCK, ctx);
                pg_act_inplace_kernel<T, 1>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_act_inplace_kernel")>>>(
                        (T *)y, n, act);
            }
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}

/* dz = dy * act'(y) (when act), and db's partial sums (db in TG: T, or float32 for the
 * float32 gradients of a 16-bit layer under autocast). Block (32, 8): 32 columns, 8 row
 * lanes; grid (column tiles, row chunks): block (x, c) takes rows c*8 + lane, stepping
 * 8 * gridDim.y. The 8 lane sums meet in shared memory; the chunk's sum goes to
 * part[c * O + j] (or straight to db when there is one chunk). */
template <typename T, typename TG>
__global__ void pg_linear_prologue_kernel(const T *dy, const T *y, T *dz, TG *db, double *part,
                                          int64_t N, int64_t O, int act)
{
    __shared__ double lane[8][33];
    int64_t j = (int64_t)blockIdx.x * 32 + threadIdx.x;
    double acc = 0;
    if (j < O)
        for (int64_t r = (int64_t)blockIdx.y * 8 + threadIdx.y; r < N; r += 8 * (int64_t)gridDim.y) {
            int64_t k = r * O + j;
            pg_calc_t<T> v = pg_load(dy[k]);
            if (act != PG_CUDA_ACT_NONE) {
                v = pg_act_grad(act, v, pg_load(y[k]));
                dz[k] = pg_store<T>(v);
            }
            acc += (double)v;
        }
    lane[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < O && db) {
        double s = 0;
        for (int q = 0; q < 8; q++)
            s += lane[q][threadIdx.x];
        if (part)
            part[(int64_t)blockIdx.y * O + j] = s;
        else
            db[j] = pg_convert<TG, double>(s);
    }
}

/* db[j] = sum over chunks c of part[c * O + j], in chunk order (reproducible). */
template <typename TG>
__global__ void pg_bias_grad_finish_kernel(const double *part, TG *db, int64_t O, int nchunk)
{
    for (int64_t j = pg_thread_index(); j < O; j += pg_thread_count()) {
        double s = 0;
        for (int c = 0; c < nchunk; c++)
            s += part[(int64_t)c * O + j];
        db[j] = pg_convert<TG, double>(s);
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
    return pg_dispatch_dtype_all(a->dtype, [&](auto t) -> cudaError_t {
        using T = decltype(t);
        if constexpr (std::is_floating_point<pg_calc_t<T>>::value) {
            /* y (N,O) = x (N,I) @ W^T, W (O,I) */
            bool epilogue = a->b || a->act != PG_CUDA_ACT_NONE;
            int64_t n = a->n * a->out;
            unsigned grid = pg_cuda_grid(n, PG_CUDA_BLOCK, ctx);
            if (!epilogue || !pg_is_half<T>) {
                *blas_status = pg_gemm_rm<T>(ctx, blas, false, true, N, O, I, (const T *)a->x, I,
                                             (const T *)a->w, I, (T *)a->y);
                if (*blas_status != CUBLAS_STATUS_SUCCESS)
                    return cudaSuccess;
                if (epilogue)
                    pg_linear_epilogue_kernel<T, T>
                        <<<grid, PG_CUDA_BLOCK, 0,
                           pg_cuda_noted(ctx, "pg_linear_epilogue_kernel")>>>(
                            (const T *)a->y, (T *)a->y, (const T *)a->b, n, a->out, a->act);
                return cudaGetLastError();
            }
            /* a half layer with an epilogue: the product in float32, rounded once after it
             * (TC: float for the halves; the other types never get here) */
            using TC = typename std::conditional<pg_is_half<T>, float, T>::type;
            TC *acc = NULL;
            cudaError_t e = cudaMallocAsync((void **)&acc, sizeof(TC) * (size_t)n, ctx->stream);
            if (e != cudaSuccess)
                return e;
            *blas_status = pg_gemm_rm<T, TC>(ctx, blas, false, true, N, O, I, (const T *)a->x, I,
                                             (const T *)a->w, I, acc);
            if (*blas_status == CUBLAS_STATUS_SUCCESS) {
                pg_linear_epilogue_kernel<T, TC>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_linear_epilogue_kernel")>>>(
                    acc, (T *)a->y, (const T *)a->b, n, a->out, a->act);
                e = cudaGetLastError();
            }
            cudaError_t f = cudaFreeAsync(acc, ctx->stream);
            return e != cudaSuccess ? e : f;
        }
        return cudaErrorInvalidValue;
    });
}

/* The backward of one layer in T, its dW and db in TG (T, or float32 for a 16-bit layer
 * under autocast, a->gdtype): dz (T) once, then two tensor-core products of 16-bit
 * operands, dW = dz^T x with float32 accumulators written as float32 (never rounded to 16
 * bits) and dx = dz W (W rounded to T by the launcher, as the forward's) rounded once to
 * T, as PyTorch's autocast backward runs them. Until issue 38 the 16-bit operands were
 * widened to float32 and both products ran in float32 without tensor cores: 87% of a
 * bf16 step of the 4096-wide MLP on the first H200 run. */
template <typename T, typename TG>
static cudaError_t pg_linear_bwd_run(const pg_cuda_ctx *ctx, cublasHandle_t blas,
                                     const pg_cuda_linear_args *a, cublasStatus_t *blas_status)
{
    int N = (int)a->n, I = (int)a->in, O = (int)a->out;
    const T *dz = (const T *)a->dy;
    if (a->act != PG_CUDA_ACT_NONE || a->db) {
        /* enough row chunks to give every SM a few blocks, at least 64 rows each */
        int64_t tiles = (a->out + 31) / 32;
        int64_t want = (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 16) * 4 / tiles;
        int64_t chunks = (a->n + 63) / 64;
        int nchunk = (int)(chunks < want ? chunks : want);
        if (nchunk < 1 || !a->db)
            nchunk = 1;
        if (nchunk > 65535)
            nchunk = 65535;
        double *part = NULL;
        if (nchunk > 1) {
            cudaError_t e = cudaMallocAsync((void **)&part,
                                            sizeof(double) * (size_t)nchunk * a->out, ctx->stream);
            if (e != cudaSuccess)
                return e;
        }
        dim3 block(32, 8), grid((unsigned)tiles, (unsigned)nchunk);
        pg_linear_prologue_kernel<T, TG>
            <<<grid, block, 0, pg_cuda_noted(ctx, "pg_linear_prologue_kernel")>>>(
            (const T *)a->dy, (const T *)a->y, (T *)a->dz, (TG *)a->db, part, a->n, a->out,
            a->act);
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess && part) {
            pg_bias_grad_finish_kernel<TG>
                <<<pg_cuda_grid(a->out, PG_CUDA_BLOCK, ctx), PG_CUDA_BLOCK, 0,
                   pg_cuda_noted(ctx, "pg_bias_grad_finish_kernel")>>>(part, (TG *)a->db, a->out,
                                                                      nchunk);
            e = cudaGetLastError();
        }
        if (part) {
            cudaError_t f = cudaFreeAsync(part, ctx->stream);
            if (e == cudaSuccess)
                e = f;
        }
        if (e != cudaSuccess)
            return e;
        if (a->act != PG_CUDA_ACT_NONE)
            dz = (const T *)a->dz;
    }
    /* dW (O,I) = dz^T (O,N) @ x (N,I) */
    *blas_status = pg_gemm_rm<T, TG>(ctx, blas, true, false, O, I, N, dz, O, (const T *)a->x, I,
                                     (TG *)a->dw);
    if (*blas_status == CUBLAS_STATUS_SUCCESS && a->dx) /* dx (N,I) = dz (N,O) @ W (O,I) */
        *blas_status = pg_gemm_rm<T>(ctx, blas, false, false, N, I, O, dz, O, (const T *)a->w, I,
                                     (T *)a->dx);
    return cudaGetLastError();
}

extern "C" cudaError_t pg_kernel_linear_bwd(const pg_cuda_ctx *ctx, cublasHandle_t blas,
                                            const pg_cuda_linear_args *a,
                                            cublasStatus_t *blas_status)
{
    *blas_status = CUBLAS_STATUS_SUCCESS;
    if (a->n > INT_MAX || a->in > INT_MAX || a->out > INT_MAX)
        return cudaErrorInvalidValue;
    return pg_dispatch_dtype_all(a->dtype, [&](auto t) -> cudaError_t {
        using T = decltype(t);
        if constexpr (std::is_floating_point<pg_calc_t<T>>::value) {
            if (a->gdtype == a->dtype)
                return pg_linear_bwd_run<T, T>(ctx, blas, a, blas_status);
            if constexpr (pg_is_half<T>)
                if (a->gdtype == PG_FLOAT32)
                    return pg_linear_bwd_run<T, float>(ctx, blas, a, blas_status);
        }
        return cudaErrorInvalidValue;
    });
}

/* ---- softmax cross-entropy ---------------------------------------------------------- */

#define PG_XENT_BLOCK 256

/* A label outside [0, C): raise the device's flag, and let the first kernel
 * to claim the record say which label, row and class count. */
__device__ __forceinline__ void pg_flag_bad_label(pg_cuda_eflags *e, int64_t label, int64_t row,
                                                  int64_t C)
{
    if (e == NULL)
        return;
    if (atomicCAS(&e->claimed, 0u, 1u) == 0u) {
        e->a = label;
        e->b = row;
        e->c = C;
        __threadfence_system();
    }
    atomicOr(&e->bits, (unsigned)PG_CUDA_EFLAG_LABEL);
}

/* One block per row: max, sum of exp (shared-memory tree reductions), probabilities,
 * and the row's loss (lse - x[label]) * scale into rowloss[r] (N,). */
template <typename T>
__global__ void pg_xent_fwd_kernel(const T *x, const int64_t *labels, T *probs, double *rowloss,
                                   int64_t N, int64_t C, double scale, pg_cuda_eflags *eflags)
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
            bool ok = l >= 0 && l < C;
            if (!ok)
                pg_flag_bad_label(eflags, l, r, C);
            rowloss[r] = ok ? (m + log(sum) - (double)row[l]) * scale : NAN;
        }
    }
}

/* loss = sum of rowloss (N,), by one block: thread t adds rows t, t + B, ... in order,
 * then a tree in shared memory. The same order every run. */
template <typename T>
__global__ void pg_xent_sum_kernel(const double *rowloss, T *loss, int64_t N)
{
    __shared__ double red[PG_XENT_BLOCK];
    double s = 0;
    for (int64_t r = threadIdx.x; r < N; r += blockDim.x)
        s += rowloss[r];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            red[threadIdx.x] += red[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *loss = (T)red[0];
}

template <typename T>
__global__ void pg_xent_bwd_kernel(const T *probs, const int64_t *labels, const T *g, T *d,
                                   int64_t n, int64_t C, double scale, pg_cuda_eflags *eflags)
{
    double gs = (double)*g * scale;
    for (int64_t i = pg_thread_index(); i < n; i += pg_thread_count()) {
        int64_t r = i / C, j = i % C, l = labels[r];
        if (j == 0 && (l < 0 || l >= C))
            pg_flag_bad_label(eflags, l, r, C);
        double v = (double)probs[i] - (l == j ? 1.0 : 0.0);
        d[i] = (T)(v * gs);
    }
}

extern "C" cudaError_t pg_kernel_xent_fwd(const pg_cuda_ctx *ctx, int dtype, const void *x,
                                          const int64_t *labels, void *probs, void *loss,
                                          int64_t N, int64_t C, int mean)
{
    if (N == 0)
        return cudaMemsetAsync(loss, 0, dtype == PG_FLOAT32 ? 4 : 8, ctx->stream);
    double scale = mean ? 1.0 / (double)N : 1.0;
    unsigned grid = (unsigned)(N < 65535 ? N : 65535);
    return pg_dispatch_dtype(dtype, [&](auto t) -> cudaError_t {
        using T = decltype(t);
        if constexpr (std::is_floating_point<T>::value) {
            double *rowloss = NULL; /* (N,): stream-ordered scratch */
            cudaError_t e = cudaMallocAsync((void **)&rowloss, sizeof(double) * (size_t)N,
                                            ctx->stream);
            if (e != cudaSuccess)
                return e;
            pg_xent_fwd_kernel<T>
                <<<grid, PG_XENT_BLOCK, 0, pg_cuda_noted(ctx, "pg_xent_fwd_kernel")>>>(
                (const T *)x, labels, (T *)probs, rowloss, N, C, scale, ctx->eflags);
            e = cudaGetLastError();
            if (e == cudaSuccess) {
                pg_xent_sum_kernel<T>
                    <<<1, PG_XENT_BLOCK, 0, pg_cuda_noted(ctx, "pg_xent_sum_kernel")>>>(
                        rowloss, (T *)loss, N);
                e = cudaGetLastError();
            }
            cudaError_t f = cudaFreeAsync(rowloss, ctx->stream);
            return e != cudaSuccess ? e : f;
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
                                    pg_cuda_noted(ctx, "pg_xent_bwd_kernel")>>>(
                (const T *)probs, labels, (const T *)gloss, (T *)dlogits, n, C, scale,
                ctx->eflags);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}
