/* ternary.cu - TERNARY: addcmul, addcdiv and lerp in one pass over N-d strided operands,
 * float32 and float64. CPU twin: csrc/backends/cpu/cpu_ternary.c (pg_cpu_ternary), with
 * the same formulas: x + v*y*z, x + v*y/z, and PyTorch's two-sided lerp
 * (x + w(y - x) for |w| < 1/2, y - (y - x)(1 - w) beyond), w the number v or the operand z.
 *
 * Launch shape: one thread per element, grid-stride loop (pg_cuda_grid), CONTIG
 * instantiation for contiguous iteration spaces. */
#include "pg_cuda_common.cuh"

template <int OP, typename T> __device__ __forceinline__ T pg_ternary_apply(T x, T y, T z, T v)
{
    if constexpr (OP == PG_TERNARY_ADDCMUL)
        return x + v * y * z;
    else if constexpr (OP == PG_TERNARY_ADDCDIV)
        return x + v * y / z;
    else /* LERP: z is v itself; LERP_TENSOR: the operand */
        return (z < T(0.5) && z > T(-0.5)) ? x + z * (y - x) : y - (y - x) * (T(1) - z);
}

// dst, a, b, c: operands 0..3 of it (c absent for LERP)
template <int OP, typename T, bool CONTIG>
__global__ void pg_ternary_kernel(pg_cuda_iter it, T *dst, const T *a, const T *b, const T *c,
                                  T v)
{
    for (int64_t i = pg_thread_index(); i < it.numel; i += pg_thread_count()) {
        int64_t off[4] = {i, i, i, i};
        if constexpr (!CONTIG)
            pg_iter_offsets<4>(it, i, off);
        T z = OP == PG_TERNARY_LERP ? v : c[off[3]];
        dst[off[0]] = pg_ternary_apply<OP, T>(a[off[1]], b[off[2]], z, v);
    }
}

template <int OP, typename T>
static cudaError_t pg_ternary_launch(const pg_cuda_ctx *ctx, void *dst, const void *a,
                                     const void *b, const void *c, double value,
                                     const pg_cuda_iter *it)
{
    unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
    const T *cc = c ? (const T *)c : (const T *)a; /* never read for LERP; a valid address */
    if (pg_cuda_iter_contiguous(it))
        pg_ternary_kernel<OP, T, true><<<grid, PG_CUDA_BLOCK, 0, ctx->stream>>>(
            *it, (T *)dst, (const T *)a, (const T *)b, cc, (T)value);
    else
        pg_ternary_kernel<OP, T, false><<<grid, PG_CUDA_BLOCK, 0, ctx->stream>>>(
            *it, (T *)dst, (const T *)a, (const T *)b, cc, (T)value);
    return cudaGetLastError();
}

template <typename T>
static cudaError_t pg_ternary_dispatch(const pg_cuda_ctx *ctx, int op, void *dst, const void *a,
                                       const void *b, const void *c, double value,
                                       const pg_cuda_iter *it)
{
    switch (op) {
    case PG_TERNARY_ADDCMUL: return pg_ternary_launch<PG_TERNARY_ADDCMUL, T>(ctx, dst, a, b, c, value, it);
    case PG_TERNARY_ADDCDIV: return pg_ternary_launch<PG_TERNARY_ADDCDIV, T>(ctx, dst, a, b, c, value, it);
    case PG_TERNARY_LERP: return pg_ternary_launch<PG_TERNARY_LERP, T>(ctx, dst, a, b, c, value, it);
    case PG_TERNARY_LERP_TENSOR:
        return pg_ternary_launch<PG_TERNARY_LERP_TENSOR, T>(ctx, dst, a, b, c, value, it);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t pg_kernel_ternary(const pg_cuda_ctx *ctx, int op, int dtype, void *dst,
                                         const void *a, const void *b, const void *c,
                                         double value, const pg_cuda_iter *it)
{
    if (it->numel == 0)
        return cudaSuccess;
    if (dtype == PG_FLOAT32)
        return pg_ternary_dispatch<float>(ctx, op, dst, a, b, c, value, it);
    if (dtype == PG_FLOAT64)
        return pg_ternary_dispatch<double>(ctx, op, dst, a, b, c, value, it);
    return cudaErrorInvalidValue; /* the core sends float32 and float64 only */
}
