/* elementwise_select.cu - SELECT: dst = cond ? a : dst over N-d strided
 * operands (where(cond, a, b): the core copies b into dst first). cond is
 * bool (read as its byte, 0/1), a has dst's dtype. The element is copied by its size, so
 * every dtype passes bit for bit (NaN and half types included).
 * CPU twin: csrc/backends/cpu/cpu_elementwise.c (pg_cpu_select).
 *
 * Launch shape: one thread per element, grid-stride loop (pg_cuda_grid),
 * CONTIG instantiation for contiguous iteration spaces. */
#include "pg_cuda_common.cuh"

// dst, cond, a: operands 0, 1, 2 of it
template <typename T, bool CONTIG>
__global__ void pg_select_kernel(pg_cuda_iter it, T *dst, const uint8_t *cond, const T *a)
{
    for (int64_t i = pg_thread_index(); i < it.numel; i += pg_thread_count()) {
        int64_t off[3] = {i, i, i};
        if constexpr (!CONTIG)
            pg_iter_offsets<3>(it, i, off);
        if (cond[off[1]])
            dst[off[0]] = a[off[2]];
    }
}

template <typename T>
static cudaError_t pg_select_launch(const pg_cuda_ctx *ctx, void *dst, const void *cond,
                                    const void *a, const pg_cuda_iter *it)
{
    unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
    if (pg_cuda_iter_contiguous(it))
        pg_select_kernel<T, true>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_select_kernel")>>>(
            *it, (T *)dst, (const uint8_t *)cond, (const T *)a);
    else
        pg_select_kernel<T, false>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_select_kernel")>>>(
            *it, (T *)dst, (const uint8_t *)cond, (const T *)a);
    return cudaGetLastError();
}

extern "C" cudaError_t pg_kernel_select(const pg_cuda_ctx *ctx, int itemsize, void *dst,
                                        const void *cond, const void *a, const pg_cuda_iter *it)
{
    if (it->numel == 0)
        return cudaSuccess;
    switch (itemsize) {
    case 1: return pg_select_launch<uint8_t>(ctx, dst, cond, a, it);
    case 2: return pg_select_launch<uint16_t>(ctx, dst, cond, a, it);
    case 4: return pg_select_launch<uint32_t>(ctx, dst, cond, a, it);
    case 8: return pg_select_launch<uint64_t>(ctx, dst, cond, a, it);
    default: return cudaErrorInvalidValue;
    }
}
