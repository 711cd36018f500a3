/* elementwise_fill_copy.cu - FILL (dst[...] = scalar) and COPY (dst = cast(src))
 * over N-d strided tensors.
 * CPU twins: csrc/backends/cpu/cpu_elementwise.c (pg_cpu_fill, pg_cpu_copy).
 *
 * float16/bfloat16: a fill writes the value's bits, rounded once on the host
 * by the glue (csrc/core/pg_half.h, as the CPU does) and passed in `i`; a
 * copy casts every pair of the table's dtypes (pg_convert, pg_cuda_half.cuh:
 * rounding to nearest-even once, NaN/inf/subnormals as NumPy float16 and
 * ml_dtypes.bfloat16).
 *
 * One thread per element in a grid-stride loop (pg_cuda_grid); a contiguous
 * iteration space (pg_cuda_iter_contiguous) takes the CONTIG instantiation,
 * which indexes p[i] directly instead of dividing i into N-d coordinates. A contiguous
 * copy whose two pointers are aligned to their packs takes pg_copy_vec_kernel: V
 * elements per access, 16 bytes of the wider type (a float32 -> bfloat16 cast reads
 * 16 bytes and writes 8), as the elementwise kernels do; the linear layers' weight cast
 * under autocast (csrc/backends/cuda/cuda_train.c) is one of these. */
#include "pg_cuda_half.cuh"

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
        dst[off[0]] = pg_convert<D, S>(src[off[1]]);
    }
}

// n contiguous elements: n / V packs, then the tail element by element
template <typename D, typename S, int V>
__global__ void pg_copy_vec_kernel(int64_t n, D *dst, const S *src)
{
    const int64_t packs = n / V;
    const pg_pack<S, V> *sp = reinterpret_cast<const pg_pack<S, V> *>(src);
    pg_pack<D, V> *dp = reinterpret_cast<pg_pack<D, V> *>(dst);
    for (int64_t p = pg_thread_index(); p < packs; p += pg_thread_count()) {
        pg_pack<S, V> x = sp[p];
        pg_pack<D, V> r;
#pragma unroll
        for (int k = 0; k < V; k++)
            r.v[k] = pg_convert<D, S>(x.v[k]);
        dp[p] = r;
    }
    for (int64_t i = packs * V + pg_thread_index(); i < n; i += pg_thread_count())
        dst[i] = pg_convert<D, S>(src[i]);
}

/* fill's dtypes: every dtype of the table, the halves as their raw 16-bit patterns */
enum { PG_CUDA_FILL_BITS16 = -16 };
template <typename F> static cudaError_t pg_dispatch_fill(int dtype, F &&f)
{
    if (dtype == PG_CUDA_FILL_BITS16)
        return f(uint16_t());
    return pg_dispatch_dtype_every(dtype, static_cast<F &&>(f));
}

extern "C" cudaError_t pg_kernel_fill(const pg_cuda_ctx *ctx, int dtype, void *dst,
                                    const pg_cuda_iter *it, double f, int64_t i)
{
    if (it->numel == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
    bool contig = pg_cuda_iter_contiguous(it);
    if (dtype == PG_FLOAT16 || dtype == PG_BFLOAT16) /* the bits of the rounded value */
        dtype = PG_CUDA_FILL_BITS16;
    return pg_dispatch_fill(dtype, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        if constexpr (pg_is_half<T>) {
            return cudaErrorInvalidValue; /* sent as their bits, above */
        } else {
        T value = std::is_floating_point<T>::value ? (T)f
                  : dtype == PG_CUDA_FILL_BITS16 ? (T)(uint16_t)i
                                                  : pg_cast<T, int64_t>(i);
        if (contig)
            pg_fill_kernel<T, true>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_fill_kernel")>>>(
                    *it, (T *)dst, value);
        else
            pg_fill_kernel<T, false>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_fill_kernel")>>>(
                    *it, (T *)dst, value);
        return cudaGetLastError();
        }
    });
}

extern "C" cudaError_t pg_kernel_copy(const pg_cuda_ctx *ctx, int dst_dtype, void *dst,
                                    int src_dtype, const void *src, const pg_cuda_iter *it)
{
    if (it->numel == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
    bool contig = pg_cuda_iter_contiguous(it);
    return pg_dispatch_dtype_every(dst_dtype, [&](auto dtag) {
        using D = decltype(dtag);
        return pg_dispatch_dtype_every(src_dtype, [&](auto stag) {
            using S = decltype(stag);
            constexpr int V = 16 / (int)(sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S));
            if (contig && pg_cuda_aligned(src, V * sizeof(S)) && pg_cuda_aligned(dst, V * sizeof(D))) {
                unsigned vgrid = pg_cuda_grid((it->numel + V - 1) / V, PG_CUDA_BLOCK, ctx);
                pg_copy_vec_kernel<D, S, V>
                    <<<vgrid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_copy_vec_kernel")>>>(
                        it->numel, (D *)dst, (const S *)src);
            } else if (contig)
                pg_copy_kernel<D, S, true>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_copy_kernel")>>>(
                        *it, (D *)dst, (const S *)src);
            else
                pg_copy_kernel<D, S, false>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_copy_kernel")>>>(
                        *it, (D *)dst, (const S *)src);
            return cudaGetLastError();
        });
    });
}
