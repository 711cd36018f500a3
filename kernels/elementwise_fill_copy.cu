/* elementwise_fill_copy.cu - FILL (dst[...] = scalar) and COPY (dst = cast(src))
 * over N-d strided tensors.
 * CPU twins: csrc/backends/cpu/cpu_elementwise.c (pg_cpu_fill, pg_cpu_copy).
 *
 * One thread per element in a grid-stride loop (pg_cuda_grid); a contiguous
 * iteration space (pg_cuda_iter_contiguous) takes the CONTIG instantiation,
 * which indexes p[i] directly instead of dividing i into N-d coordinates. */
#include "pg_cuda_common.cuh"

// dst: iteration space it (operand 0)
template <typename T, bool CONTIG>
__global__ void pg_fill_kernel(pg_cuda_iter it, T *dst, T value)
{
    for (int64_t i = pg_thread_index(); i < it.numel; i += pg_thread_count()) {
        int64_t off[1] = {i};
        if constexpr (!CONTIG)
            pg_iter_offsets<1>(it, i, off);
        dst[off[0]] = value;
    }
}

// dst: operand 0 of it, src: operand 1, same shape
template <typename D, typename S, bool CONTIG>
__global__ void pg_copy_kernel(pg_cuda_iter it, D *dst, const S *src)
{
    for (int64_t i = pg_thread_index(); i < it.numel; i += pg_thread_count()) {
        int64_t off[2] = {i, i};
        if constexpr (!CONTIG)
            pg_iter_offsets<2>(it, i, off);
        dst[off[0]] = pg_cast<D, S>(src[off[1]]);
    }
}

extern "C" cudaError_t pg_kernel_fill(const pg_cuda_ctx *ctx, int dtype, void *dst,
                                    const pg_cuda_iter *it, double f, int64_t i)
{
    if (it->numel == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
    bool contig = pg_cuda_iter_contiguous(it);
    return pg_dispatch_dtype(dtype, [&](auto tag) {
        using T = decltype(tag);
        T value = std::is_floating_point<T>::value ? (T)f : pg_cast<T, int64_t>(i);
        if (contig)
            pg_fill_kernel<T, true><<<grid, PG_CUDA_BLOCK, 0, ctx->stream>>>(*it, (T *)dst, value);
        else
            pg_fill_kernel<T, false><<<grid, PG_CUDA_BLOCK, 0, ctx->stream>>>(*it, (T *)dst, value);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t pg_kernel_copy(const pg_cuda_ctx *ctx, int dst_dtype, void *dst,
                                    int src_dtype, const void *src, const pg_cuda_iter *it)
{
    if (it->numel == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
    bool contig = pg_cuda_iter_contiguous(it);
    return pg_dispatch_dtype(dst_dtype, [&](auto dtag) {
        using D = decltype(dtag);
        return pg_dispatch_dtype(src_dtype, [&](auto stag) {
            using S = decltype(stag);
            if (contig)
                pg_copy_kernel<D, S, true>
                    <<<grid, PG_CUDA_BLOCK, 0, ctx->stream>>>(*it, (D *)dst, (const S *)src);
            else
                pg_copy_kernel<D, S, false>
                    <<<grid, PG_CUDA_BLOCK, 0, ctx->stream>>>(*it, (D *)dst, (const S *)src);
            return cudaGetLastError();
        });
    });
}
