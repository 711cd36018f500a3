/* multi_norm.cu - MULTI_NORM on CUDA: the p-norm of a list of tensors together
 * (clip_grad_norm_'s total norm, torch._foreach_norm summed), in two passes. CPU twin:
 * csrc/backends/cpu/cpu_multi.c's norm (the same terms, summed in double).
 *
 *   1. pg_multi_norm_partial_kernel: one block per chunk of the list (pg_multi_tensor.cuh's
 *      table, as the MULTI updates), each adding |x|^p over its chunk in double (p = inf:
 *      taking the largest |x|, NaN winning) and writing one partial per chunk;
 *   2. pg_multi_norm_final_kernel: one block combining the partials in chunk order (each
 *      thread a fixed stride of them, then the block's tree), then the root (sqrt for p = 2,
 *      ^(1/p) for other p, none for 0, 1 and inf), rounded once into dst's dtype.
 * No atomics: the norm is the same bits run to run. The partials live in stream-ordered
 * scratch the host glue allocates (cuda_multi.c): one double per chunk. */
#include <math.h>

#include "pg_cuda_block.cuh"
#include "pg_multi_tensor.cuh"

enum { PG_NORM_INF, PG_NORM_ZERO, PG_NORM_ONE, PG_NORM_TWO, PG_NORM_P };

/* one element's term of the sum (never called for inf) */
__device__ __forceinline__ double pg_norm_term(double x, int mode, double p)
{
    if (mode == PG_NORM_TWO)
        return x * x;
    if (mode == PG_NORM_ONE)
        return fabs(x);
    if (mode == PG_NORM_ZERO)
        return x != 0 ? 1.0 : 0.0;
    return pow(fabs(x), p);
}

/* acc combined with a term or a partial: the sum, or for inf the larger (NaN wins) */
__device__ __forceinline__ double pg_norm_join(double acc, double v, int mode)
{
    return mode == PG_NORM_INF ? pg_max_nan(acc, v) : acc + v;
}

template <typename T>
__global__ void pg_multi_norm_partial_kernel(pg_mt_table<1> tab, int mode, double p,
                                             double *partials, int64_t first)
{
    __shared__ double red[32];
    int64_t lo, hi;
    const int t = pg_mt_chunk(tab, &lo, &hi);
    const T *x = (const T *)tab.ptr[0][t];
    double acc = 0;
    for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x) {
        const double v = (double)x[k];
        acc = pg_norm_join(acc, mode == PG_NORM_INF ? fabs(v) : pg_norm_term(v, mode, p), mode);
    }
    acc = mode == PG_NORM_INF ? pg_block_max(acc, red, 0.0) : pg_block_sum(acc, red);
    if (threadIdx.x == 0)
        partials[first + blockIdx.x] = acc;
}

template <typename T>
__global__ void pg_multi_norm_final_kernel(const double *partials, int64_t n, int mode, double p,
                                           T *dst)
{
    __shared__ double red[32];
    double acc = 0;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x)
        acc = pg_norm_join(acc, partials[k], mode);
    acc = mode == PG_NORM_INF ? pg_block_max(acc, red, 0.0) : pg_block_sum(acc, red);
    if (threadIdx.x == 0) {
        if (mode == PG_NORM_TWO)
            acc = sqrt(acc);
        else if (mode == PG_NORM_P)
            acc = pow(acc, 1.0 / p);
        dst[0] = (T)acc;
    }
}

extern "C" cudaError_t pg_kernel_multi_norm(const pg_cuda_ctx *ctx, int dtype,
                                            const pg_cuda_mt_entry *e, int count, double p,
                                            double *partials, void *dst)
{
    const int mode = p == INFINITY ? PG_NORM_INF
                     : p == 0 ? PG_NORM_ZERO
                     : p == 1 ? PG_NORM_ONE
                     : p == 2 ? PG_NORM_TWO
                              : PG_NORM_P;
    return pg_dispatch_dtype(dtype, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        if constexpr (!std::is_floating_point<T>::value) {
            return cudaErrorInvalidValue;
        } else {
            int64_t chunks = 0;
            cudaError_t err = pg_mt_apply<1>(e, count, [&](const pg_mt_table<1> &tab, int blocks,
                                                           int64_t first) -> cudaError_t {
                pg_multi_norm_partial_kernel<T><<<blocks, PG_MT_THREADS, 0,
                                                  pg_cuda_noted(ctx, "pg_multi_norm_partial_kernel")>>>(
                    tab, mode, p, partials, first);
                chunks = first + blocks;
                return cudaGetLastError();
            });
            if (err != cudaSuccess)
                return err;
            /* an empty list (every entry without elements) has the norm 0, as on the cpu */
            pg_multi_norm_final_kernel<T><<<1, PG_CUDA_BLOCK, 0,
                                            pg_cuda_noted(ctx, "pg_multi_norm_final_kernel")>>>(
                partials, chunks, mode, p, (T *)dst);
            return cudaGetLastError();
        }
    });
}
