/* reduce.cu - REDUCE: dst = SUM / MAX / MIN / ARGMAX of src over one axis.
 * CPU twin: csrc/backends/cpu/cpu_reduce.c (pg_cpu_reduce).
 *
 * The glue describes the work as an `outer` iteration space over the output
 * (operand 0: dst, operand 1: the first element of each source row) and a
 * row of `len` elements `axis_stride` apart. Semantics follow the CPU:
 * float32 SUM accumulates in double, int64 in int64 (wrapping); MAX/MIN
 * propagate NaN; ARGMAX returns the first index of the maximum, a NaN counts
 * as the maximum and the first NaN wins (NumPy). SUM of an empty row is 0.
 * Every combine below is associative and commutative, so any thread layout
 * gives the CPU's answer (exactly for integers, within rounding for SUM).
 *
 * Two launch shapes (chosen in pg_cuda_reduce):
 *   - thread per output row, grid-stride over rows: many short rows, or rows
 *     whose neighbours are adjacent in memory (reducing a non-last axis);
 *   - block per output row, grid-stride over rows: the block's threads
 *     stride along the row, then a shared-memory tree combines them. Block
 *     size is the power of two in [32, 256] that fits the row. */
#include "pg_cuda_common.cuh"

template <typename T> struct pg_red_sum {
    using acc_t =
        typename std::conditional<std::is_floating_point<T>::value, double, int64_t>::type;
    using out_t = T;
    __device__ static acc_t identity() { return 0; }
    __device__ static acc_t load(T v, int64_t) { return (acc_t)v; }
    __device__ static acc_t combine(acc_t a, acc_t b)
    {
        if constexpr (std::is_same<acc_t, int64_t>::value)
            return (int64_t)((uint64_t)a + (uint64_t)b);
        else
            return a + b;
    }
    __device__ static out_t finish(acc_t a) { return pg_cast<T, acc_t>(a); }
};

template <typename T> __device__ __forceinline__ T pg_lowest()
{
    if constexpr (std::is_floating_point<T>::value)
        return -(T)INFINITY;
    else if constexpr (std::is_same<T, int64_t>::value)
        return INT64_MIN;
    else
        return 0;
}
template <typename T> __device__ __forceinline__ T pg_highest()
{
    if constexpr (std::is_floating_point<T>::value)
        return (T)INFINITY;
    else if constexpr (std::is_same<T, int64_t>::value)
        return INT64_MAX;
    else
        return 1;
}

template <typename T> struct pg_red_max {
    using acc_t = T;
    using out_t = T;
    __device__ static acc_t identity() { return pg_lowest<T>(); }
    __device__ static acc_t load(T v, int64_t) { return v; }
    __device__ static acc_t combine(acc_t a, acc_t b) { return pg_max_nan(a, b); }
    __device__ static out_t finish(acc_t a) { return a; }
};

template <typename T> struct pg_red_min {
    using acc_t = T;
    using out_t = T;
    __device__ static acc_t identity() { return pg_highest<T>(); }
    __device__ static acc_t load(T v, int64_t) { return v; }
    __device__ static acc_t combine(acc_t a, acc_t b) { return pg_min_nan(a, b); }
    __device__ static out_t finish(acc_t a) { return a; }
};

template <typename T> struct pg_red_argmax {
    struct acc_t {
        T v;
        int64_t i; /* -1: no element yet */
    };
    using out_t = int64_t;
    __device__ static acc_t identity() { return acc_t{T(0), -1}; }
    __device__ static acc_t load(T v, int64_t j) { return acc_t{v, j}; }
    __device__ static acc_t combine(acc_t a, acc_t b)
    {
        if (a.i < 0)
            return b;
        if (b.i < 0)
            return a;
        bool an = pg_isnan(a.v), bn = pg_isnan(b.v);
        if (an || bn) {
            if (an && bn)
                return a.i < b.i ? a : b;
            return an ? a : b;
        }
        if (a.v != b.v)
            return a.v > b.v ? a : b;
        return a.i < b.i ? a : b;
    }
    __device__ static out_t finish(acc_t a) { return a.i; }
};

// dst: operand 0 of outer, src rows: operand 1; one thread per row
template <typename R, typename T>
__global__ void pg_reduce_thread_kernel(pg_cuda_iter outer, typename R::out_t *dst, const T *src,
                                        int64_t len, int64_t axis_stride)
{
    for (int64_t o = pg_thread_index(); o < outer.numel; o += pg_thread_count()) {
        int64_t off[2];
        pg_iter_offsets<2>(outer, o, off);
        const T *row = src + off[1];
        typename R::acc_t acc = R::identity();
        for (int64_t j = 0; j < len; j++)
            acc = R::combine(acc, R::load(row[j * axis_stride], j));
        dst[off[0]] = R::finish(acc);
    }
}

// as above, one block per row; blockDim.x is a power of two <= PG_CUDA_BLOCK
template <typename R, typename T>
__global__ void pg_reduce_block_kernel(pg_cuda_iter outer, typename R::out_t *dst, const T *src,
                                       int64_t len, int64_t axis_stride)
{
    __shared__ typename R::acc_t part[PG_CUDA_BLOCK];
    const unsigned tid = threadIdx.x;
    for (int64_t o = blockIdx.x; o < outer.numel; o += gridDim.x) {
        int64_t off[2];
        pg_iter_offsets<2>(outer, o, off);
        const T *row = src + off[1];
        typename R::acc_t acc = R::identity();
        for (int64_t j = tid; j < len; j += blockDim.x)
            acc = R::combine(acc, R::load(row[j * axis_stride], j));
        part[tid] = acc;
        __syncthreads();
        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
            if (tid < s)
                part[tid] = R::combine(part[tid], part[tid + s]);
            __syncthreads();
        }
        if (tid == 0)
            dst[off[0]] = R::finish(part[0]);
        __syncthreads(); /* part[] is reused by the next row */
    }
}

template <typename R, typename T>
static cudaError_t pg_reduce_launch(const pg_cuda_ctx *ctx, void *dst, const void *src,
                                    const pg_cuda_iter *outer, int64_t len, int64_t axis_stride)
{
    using Out = typename R::out_t;
    int64_t rows = outer->numel;
    int sms = ctx->sm_count > 0 ? ctx->sm_count : 16;
    bool row_contiguous = axis_stride == 1 || axis_stride == -1;
    bool few_rows = rows < (int64_t)sms * 64; /* too few to keep every SM busy one per thread */
    if (len >= 64 && (row_contiguous || few_rows)) {
        int block = 32;
        while (block < PG_CUDA_BLOCK && block < len)
            block *= 2;
        int64_t cap = (int64_t)sms * (2048 / block);
        unsigned grid = (unsigned)(rows < cap ? rows : cap);
        pg_reduce_block_kernel<R, T><<<grid, block, 0, ctx->stream>>>(*outer, (Out *)dst,
                                                                      (const T *)src, len,
                                                                      axis_stride);
    } else {
        unsigned grid = pg_cuda_grid(rows, PG_CUDA_BLOCK, ctx);
        pg_reduce_thread_kernel<R, T><<<grid, PG_CUDA_BLOCK, 0, ctx->stream>>>(
            *outer, (Out *)dst, (const T *)src, len, axis_stride);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t pg_kernel_reduce(const pg_cuda_ctx *ctx, int op, int src_dtype, void *dst,
                                      const void *src, const pg_cuda_iter *outer, int64_t len,
                                      int64_t axis_stride)
{
    if (outer->numel == 0)
        return cudaSuccess;
    return pg_dispatch_dtype(src_dtype, [&](auto tag) {
        using T = decltype(tag);
        switch (op) {
        case PG_CUDA_RED_SUM:
            return pg_reduce_launch<pg_red_sum<T>, T>(ctx, dst, src, outer, len, axis_stride);
        case PG_CUDA_RED_MAX:
            return pg_reduce_launch<pg_red_max<T>, T>(ctx, dst, src, outer, len, axis_stride);
        case PG_CUDA_RED_MIN:
            return pg_reduce_launch<pg_red_min<T>, T>(ctx, dst, src, outer, len, axis_stride);
        case PG_CUDA_RED_ARGMAX:
            return pg_reduce_launch<pg_red_argmax<T>, T>(ctx, dst, src, outer, len, axis_stride);
        default:
            return cudaErrorInvalidValue;
        }
    });
}
