/* reduce.cu - REDUCE: dst = SUM / MAX / MIN / ARGMAX of src over one axis.
 * CPU twin: csrc/backends/cpu/cpu_reduce.c (pg_cpu_reduce).
 *
 * The glue describes the work as an `outer` iteration space over the output
 * (operand 0: dst, operand 1: the first element of each source row) and a
 * row of `len` elements `axis_stride` apart. Semantics follow the CPU:
 * float32 SUM accumulates in double, int64 in int64 (wrapping); MAX/MIN
 * propagate NaN; ARGMAX returns the first index of the maximum, a NaN counts
 * as the maximum and the first NaN wins (NumPy). SUM of an empty row is 0.
 * float16/bfloat16 (pg_cuda_half.cuh): SUM reads the half row, accumulates
 * in float32 and writes float32 (the generic layer rounds the result once at
 * the end, after a mean's division); MAX/MIN/ARGMAX compare in float32 and
 * write the half value itself (exact) or the int64 index.
 * Every combine below is associative and commutative, so any thread layout
 * gives the CPU's answer (exactly for integers, within rounding for SUM).
 *
 * Launch shapes (chosen in pg_reduce_launch):
 *   - thread per output row, grid-stride over rows: many short rows, or rows
 *     whose neighbours are adjacent in memory (reducing a non-last axis);
 *   - block per output row, grid-stride over rows: the block's threads
 *     stride along the row, then a shared-memory tree combines them. Block
 *     size is the power of two in [32, 256] that fits the row;
 *   - split rows, two passes: when there are too few rows to fill the GPU
 *     (sum() of a whole tensor is one row; sum(axis=0) of a tall tensor a
 *     few long ones), every row is cut into pieces reduced in parallel
 *     (blocks for contiguous rows, threads for strided ones), then one
 *     thread per row combines its pieces. Scratch comes from
 *     cudaMallocAsync on the stream; without it, the one-pass shapes run. */
#include "pg_cuda_half.cuh"

template <typename T> struct pg_red_sum {
    using acc_t = typename std::conditional<
        pg_is_half<T>, float,
        typename std::conditional<std::is_floating_point<T>::value, double, int64_t>::type>::type;
    using out_t = typename std::conditional<pg_is_half<T>, float, T>::type;
    __device__ static acc_t identity() { return 0; }
    __device__ static acc_t load(T v, int64_t) { return (acc_t)pg_load(v); }
    __device__ static acc_t combine(acc_t a, acc_t b)
    {
        if constexpr (std::is_same<acc_t, int64_t>::value)
            return (int64_t)((uint64_t)a + (uint64_t)b);
        else
            return a + b;
    }
    __device__ static out_t finish(acc_t a) { return pg_cast<out_t, acc_t>(a); }
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
    using acc_t = pg_calc_t<T>;
    using out_t = T;
    __device__ static acc_t identity() { return pg_lowest<acc_t>(); }
    __device__ static acc_t load(T v, int64_t) { return pg_load(v); }
    __device__ static acc_t combine(acc_t a, acc_t b) { return pg_max_nan(a, b); }
    __device__ static out_t finish(acc_t a) { return pg_store<T>(a); } /* exact: one of the inputs */
};

template <typename T> struct pg_red_min {
    using acc_t = pg_calc_t<T>;
    using out_t = T;
    __device__ static acc_t identity() { return pg_highest<acc_t>(); }
    __device__ static acc_t load(T v, int64_t) { return pg_load(v); }
    __device__ static acc_t combine(acc_t a, acc_t b) { return pg_min_nan(a, b); }
    __device__ static out_t finish(acc_t a) { return pg_store<T>(a); }
};

template <typename T> struct pg_red_argmax {
    using C = pg_calc_t<T>;
    struct acc_t {
        C v;
        int64_t i; /* -1: no element yet */
    };
    using out_t = int64_t;
    __device__ static acc_t identity() { return acc_t{C(0), -1}; }
    __device__ static acc_t load(T v, int64_t j) { return acc_t{pg_load(v), j}; }
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

// Split reductions, for when the output has too few rows to fill the GPU
// (a whole-tensor sum is ONE row; an axis-0 sum of a tall (N, C) tensor is C
// rows of N): each row is cut into `splits` pieces of `chunk` elements, pass
// 1 reduces every piece into part[row * splits + piece] (accumulator type),
// pass 2 combines each row's pieces and writes dst. Pieces keep their global
// element index, so ARGMAX still returns the row's first maximum.

// pass 1 for contiguous rows: block b reduces piece b % splits of row b / splits. With
// V > 1 (unit stride, 16-byte aligned rows, chunk a multiple of V) each thread reads
// 16-byte packs (pg_pack), as the elementwise kernels do.
template <typename R, typename T, int V>
__global__ void pg_reduce_split_block_kernel(pg_cuda_iter outer, typename R::acc_t *part,
                                             const T *src, int64_t len, int64_t axis_stride,
                                             int64_t splits, int64_t chunk)
{
    __shared__ typename R::acc_t sh[PG_CUDA_BLOCK];
    const unsigned tid = threadIdx.x;
    for (int64_t b = blockIdx.x; b < outer.numel * splits; b += gridDim.x) {
        int64_t o = b / splits, k = b % splits;
        int64_t off[2];
        pg_iter_offsets<2>(outer, o, off);
        const T *row = src + off[1];
        int64_t lo = k * chunk, hi = lo + chunk < len ? lo + chunk : len;
        typename R::acc_t acc = R::identity();
        if constexpr (V > 1) {
            const pg_pack<T, V> *packs = reinterpret_cast<const pg_pack<T, V> *>(row);
            const int64_t phi = hi / V; /* whole packs; lo is a multiple of V */
            for (int64_t p = lo / V + tid; p < phi; p += blockDim.x) {
                pg_pack<T, V> x = packs[p];
#pragma unroll
                for (int q = 0; q < V; q++)
                    acc = R::combine(acc, R::load(x.v[q], p * V + q));
            }
            for (int64_t j = phi * V + tid; j < hi; j += blockDim.x)
                acc = R::combine(acc, R::load(row[j], j));
        } else {
            for (int64_t j = lo + tid; j < hi; j += blockDim.x)
                acc = R::combine(acc, R::load(row[j * axis_stride], j));
        }
        sh[tid] = acc;
        __syncthreads();
        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
            if (tid < s)
                sh[tid] = R::combine(sh[tid], sh[tid + s]);
            __syncthreads();
        }
        if (tid == 0)
            part[b] = sh[0];
        __syncthreads(); /* sh[] is reused by the next piece */
    }
}

// pass 1 for strided rows (a non-last axis): one thread per (row, piece),
// adjacent threads on adjacent rows, so a warp reads adjacent columns
template <typename R, typename T>
__global__ void pg_reduce_split_thread_kernel(pg_cuda_iter outer, typename R::acc_t *part,
                                              const T *src, int64_t len, int64_t axis_stride,
                                              int64_t splits, int64_t chunk)
{
    const int64_t rows = outer.numel;
    for (int64_t i = pg_thread_index(); i < rows * splits; i += pg_thread_count()) {
        int64_t o = i % rows, k = i / rows;
        int64_t off[2];
        pg_iter_offsets<2>(outer, o, off);
        const T *row = src + off[1];
        int64_t lo = k * chunk, hi = lo + chunk < len ? lo + chunk : len;
        typename R::acc_t acc = R::identity();
        for (int64_t j = lo; j < hi; j++)
            acc = R::combine(acc, R::load(row[j * axis_stride], j));
        part[o * splits + k] = acc;
    }
}

// pass 2 for few rows (a whole-tensor sum is one): a block per row, its threads striding
// over the pieces, then the shared-memory tree in a fixed order, so the result is the
// same from run to run. One thread adding a row's 1,056 pieces in a chain took 40 of the
// 152 us of a 64M-element sum on the H200.
template <typename R>
__global__ void pg_reduce_combine_block_kernel(pg_cuda_iter outer, typename R::out_t *dst,
                                               const typename R::acc_t *part, int64_t splits)
{
    __shared__ typename R::acc_t sh[PG_CUDA_BLOCK];
    const unsigned tid = threadIdx.x;
    for (int64_t o = blockIdx.x; o < outer.numel; o += gridDim.x) {
        int64_t off[2];
        pg_iter_offsets<2>(outer, o, off);
        typename R::acc_t acc = R::identity();
        for (int64_t k = tid; k < splits; k += blockDim.x)
            acc = R::combine(acc, part[o * splits + k]);
        sh[tid] = acc;
        __syncthreads();
        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
            if (tid < s)
                sh[tid] = R::combine(sh[tid], sh[tid + s]);
            __syncthreads();
        }
        if (tid == 0)
            dst[off[0]] = R::finish(sh[0]);
        __syncthreads(); /* sh[] is reused by the next row */
    }
}

// pass 2 for many rows: one thread per row combines its pieces in order
template <typename R>
__global__ void pg_reduce_combine_kernel(pg_cuda_iter outer, typename R::out_t *dst,
                                         const typename R::acc_t *part, int64_t splits)
{
    for (int64_t o = pg_thread_index(); o < outer.numel; o += pg_thread_count()) {
        int64_t off[2];
        pg_iter_offsets<2>(outer, o, off);
        typename R::acc_t acc = R::identity();
        for (int64_t k = 0; k < splits; k++)
            acc = R::combine(acc, part[o * splits + k]);
        dst[off[0]] = R::finish(acc);
    }
}

/* min elements per block piece (64 per thread): below it one block per row is faster than a
 * split pass, a scratch allocation and a combine (a 4096-element sum was two kernels of
 * about 10 us each on the H200 of 2026-11-28, PyTorch's one kernel 2 us) */
#define PG_RED_BLOCK_CHUNK 16384
#define PG_RED_THREAD_CHUNK 64   /* min elements per thread piece */

// Pieces per row so that the launch fills the GPU, or 1 (no split): the
// plain kernels already do when there are enough rows.
static int64_t pg_reduce_splits(int64_t rows, int64_t len, bool row_contiguous, int sms)
{
    int64_t want, min_chunk;
    if (row_contiguous) { /* blocks: aim for 8 per SM */
        if (rows >= (int64_t)sms * 4)
            return 1;
        want = ((int64_t)sms * 8 + rows - 1) / rows;
        min_chunk = PG_RED_BLOCK_CHUNK;
    } else { /* threads: aim for 2048 per SM */
        if (rows >= (int64_t)sms * 1024)
            return 1;
        want = ((int64_t)sms * 2048 + rows - 1) / rows;
        min_chunk = PG_RED_THREAD_CHUNK;
    }
    int64_t most = len / min_chunk;
    int64_t splits = want < most ? want : most;
    return splits >= 2 ? splits : 1;
}

template <typename R, typename T>
static cudaError_t pg_reduce_split_launch(const pg_cuda_ctx *ctx, void *dst, const void *src,
                                          const pg_cuda_iter *outer, int64_t len,
                                          int64_t axis_stride, bool row_contiguous,
                                          int64_t splits)
{
    using Acc = typename R::acc_t;
    using Out = typename R::out_t;
    int64_t rows = outer->numel;
    int64_t chunk = (len + splits - 1) / splits;
    constexpr int V = pg_vec_width<T>();
    /* unit-stride rows that start 16-byte aligned: 16-byte packs, pieces whole packs */
    const bool packed = row_contiguous && axis_stride == 1 && V > 1 && outer->ndim <= 1 &&
                        pg_cuda_aligned(src, 16) &&
                        (outer->ndim == 0 || (outer->strides[1][0] * (int64_t)sizeof(T)) % 16 == 0);
    if (packed)
        chunk = (chunk + V - 1) / V * V;
    splits = (len + chunk - 1) / chunk; /* no empty trailing piece */
    Acc *part = NULL;
    /* stream-ordered scratch: freed after pass 2 without a host sync */
    cudaError_t err = cudaMallocAsync((void **)&part, (size_t)(rows * splits) * sizeof(Acc),
                                      ctx->stream);
    if (err != cudaSuccess)
        return err;
    if (row_contiguous) {
        int64_t blocks = rows * splits;
        int64_t cap = (int64_t)ctx->sm_count * 8;
        unsigned grid = (unsigned)(blocks < cap ? blocks : cap);
        if (packed)
            pg_reduce_split_block_kernel<R, T, V>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_reduce_split_block_kernel")>>>(
                    *outer, part, (const T *)src, len, axis_stride, splits, chunk);
        else
            pg_reduce_split_block_kernel<R, T, 1>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_reduce_split_block_kernel")>>>(
                    *outer, part, (const T *)src, len, axis_stride, splits, chunk);
    } else {
        unsigned grid = pg_cuda_grid(rows * splits, PG_CUDA_BLOCK, ctx);
        pg_reduce_split_thread_kernel<R, T>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_reduce_split_thread_kernel")>>>(
            *outer, part, (const T *)src, len, axis_stride, splits, chunk);
    }
    err = cudaGetLastError();
    if (err == cudaSuccess && rows <= (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 16) * 8) {
        unsigned grid = (unsigned)rows;
        pg_reduce_combine_block_kernel<R>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_reduce_combine_block_kernel")>>>(
                *outer, (Out *)dst, part, splits);
        err = cudaGetLastError();
    } else if (err == cudaSuccess) {
        unsigned grid = pg_cuda_grid(rows, PG_CUDA_BLOCK, ctx);
        pg_reduce_combine_kernel<R>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_reduce_combine_kernel")>>>(
                *outer, (Out *)dst, part, splits);
        err = cudaGetLastError();
    }
    cudaError_t free_err = cudaFreeAsync(part, ctx->stream);
    return err != cudaSuccess ? err : free_err;
}

template <typename R, typename T>
static cudaError_t pg_reduce_launch(const pg_cuda_ctx *ctx, void *dst, const void *src,
                                    const pg_cuda_iter *outer, int64_t len, int64_t axis_stride)
{
    using Out = typename R::out_t;
    int64_t rows = outer->numel;
    int sms = ctx->sm_count > 0 ? ctx->sm_count : 16;
    bool row_contiguous = axis_stride == 1 || axis_stride == -1;
    int64_t splits = pg_reduce_splits(rows, len, row_contiguous, sms);
    if (splits > 1) {
        cudaError_t err = pg_reduce_split_launch<R, T>(ctx, dst, src, outer, len, axis_stride,
                                                       row_contiguous, splits);
        if (err != cudaErrorMemoryAllocation && err != cudaErrorNotSupported)
            return err;
        (void)cudaGetLastError(); /* no scratch: the one-pass kernels below need none */
    }
    bool few_rows = rows < (int64_t)sms * 64; /* too few to keep every SM busy one per thread */
    if (len >= 64 && (row_contiguous || few_rows)) {
        int block = 32;
        while (block < PG_CUDA_BLOCK && block < len)
            block *= 2;
        int64_t cap = (int64_t)sms * (2048 / block);
        unsigned grid = (unsigned)(rows < cap ? rows : cap);
        pg_reduce_block_kernel<R, T>
            <<<grid, block, 0, pg_cuda_noted(ctx, "pg_reduce_block_kernel")>>>(
                *outer, (Out *)dst, (const T *)src, len, axis_stride);
    } else {
        unsigned grid = pg_cuda_grid(rows, PG_CUDA_BLOCK, ctx);
        pg_reduce_thread_kernel<R, T>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_reduce_thread_kernel")>>>(
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
    return pg_dispatch_dtype_all(src_dtype, [&](auto tag) {
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
