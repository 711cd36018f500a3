/* linalg.cu - the LINALG node's layout kernels around cuSOLVER (csrc/backends/cuda/
 * cuda_linalg.c runs the factorizations): pygpu's matrices are row-major and cuSOLVER's
 * column-major, so a matrix crosses between them as its transpose; a Cholesky or R factor
 * keeps one triangle and the other is zeroed; inv solves against the identity; cuSOLVER's
 * pivots and infos are int32 where pygpu's are int64. CPU twin: the loops of
 * csrc/backends/cpu/cpu_linalg.c that copy matrices and zero triangles.
 *
 * band_copy: dst (batch, rows, cols), element (b, i, j) = src[b*sb + i*si + j*sj] inside the
 * band lo <= j - i <= hi, 0 outside it (src NULL: 1 on the diagonal). Strides in elements:
 * (si, sj) = (cols, 1) copies, (1, rows) transposes. One thread per element, grid-stride;
 * float32 and float64 (the node's dtypes).
 *
 * Launch shape: one thread per element, grid-stride loop (pg_cuda_grid). */
#include "pg_cuda_common.cuh"

// dst (batch, rows, cols) with row stride di, batch stride db
template <typename T>
__global__ void pg_band_copy_kernel(pg_cuda_band_copy a, int64_t n)
{
    const T *src = (const T *)a.src;
    T *dst = (T *)a.dst;
    int64_t per = a.rows * a.cols;
    for (int64_t k = pg_thread_index(); k < n; k += pg_thread_count()) {
        int64_t b = k / per, r = k - b * per, i = r / a.cols, j = r - i * a.cols;
        int64_t d = j - i;
        T v = T(0);
        if (d >= a.lo && d <= a.hi)
            v = src ? src[b * a.sb + i * a.si + j * a.sj] : T(d == 0 ? 1 : 0);
        dst[b * a.db + i * a.di + j] = v;
    }
}

extern "C" cudaError_t pg_kernel_band_copy(const pg_cuda_ctx *ctx, const pg_cuda_band_copy *a)
{
    int64_t n = a->batch * a->rows * a->cols;
    if (n == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(n, PG_CUDA_BLOCK, ctx);
    return pg_dispatch_dtype(a->dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_floating_point<T>::value) {
            pg_band_copy_kernel<T>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_band_copy_kernel")>>>(*a, n);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue; /* the LINALG node is float32/float64 */
    });
}

// dst (n,) int64 = src (n,) int32
__global__ void pg_widen_int32_kernel(const int32_t *src, int64_t *dst, int64_t n)
{
    for (int64_t i = pg_thread_index(); i < n; i += pg_thread_count())
        dst[i] = src[i];
}

extern "C" cudaError_t pg_kernel_widen_int32(const pg_cuda_ctx *ctx, const int32_t *src,
                                             int64_t *dst, int64_t n)
{
    if (n == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(n, PG_CUDA_BLOCK, ctx);
    pg_widen_int32_kernel<<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_widen_int32_kernel")>>>(
        src, dst, n);
    return cudaGetLastError();
}
