/* pg_cuda_block.cuh - reductions across a warp and a block, for the kernels that reduce
 * in one pass (rows.cu's row ops, reduce.cu's sums): warp shuffles first, then one value
 * per warp through shared memory, then the first warp. Every thread of the block must
 * call them, the same number of times (lanes with nothing to add pass a neutral value):
 * the emulated device (tests/cuda_emu) runs a shuffle as a block barrier, and a call some
 * threads skip would hang there rather than return a stale value. blockDim.x is a
 * multiple of 32, at most 1024; blockDim.y == blockDim.z == 1. */
#ifndef PG_CUDA_BLOCK_CUH
#define PG_CUDA_BLOCK_CUH

#include "pg_cuda_common.cuh"

template <typename T> __device__ __forceinline__ T pg_warp_sum(T v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* NaN wins (pg_max_nan, pg_cuda_common.cuh), as the CPU's and NumPy's max */
template <typename T> __device__ __forceinline__ T pg_warp_max(T v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = pg_max_nan(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* The sum of every thread's v, returned to every thread. `red` is 32 slots of shared
 * memory, free on entry and again on return. */
template <typename T> __device__ __forceinline__ T pg_block_sum(T v, T *red)
{
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const unsigned nwarps = (blockDim.x + 31u) >> 5;
    v = pg_warp_sum(v);
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    T t = lane < nwarps ? red[lane] : T(0);
    t = pg_warp_sum(t); /* every warp adds the warp sums: the same total everywhere */
    __syncthreads();
    return t;
}

template <typename T> __device__ __forceinline__ T pg_block_max(T v, T *red, T lowest)
{
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const unsigned nwarps = (blockDim.x + 31u) >> 5;
    v = pg_warp_max(v);
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    T t = lane < nwarps ? red[lane] : lowest;
    t = pg_warp_max(t);
    __syncthreads();
    return t;
}

/* Threads per block for a row of `cols` elements: a power of two from 32 to 1024, about
 * four elements per thread, so a short row does not idle most of a block. */
static inline int pg_cuda_row_block(int64_t cols)
{
    int b = 32;
    while (b < 1024 && (int64_t)b * 4 < cols)
        b *= 2;
    return b;
}

#endif
