/* random_arange.cu - ARANGE (dst[i] = start + i*step) and RANDOM (Philox
 * uniform [0,1) or standard normal) into contiguous 1-D destinations.
 * CPU twins: csrc/backends/cpu/cpu_generate.c (pg_cpu_arange, pg_cpu_random).
 *
 * Both are pure functions of i, so any thread layout reproduces the CPU
 * bit for bit where the arithmetic allows: arange computes in double with
 * explicitly rounded multiply and add (no FMA contraction, like the CPU's
 * x86-64 code) and then casts; float16/bfloat16 are counted as float32 (the
 * double rounded to float, then to the half type, as the CPU twin and
 * PyTorch's accscalar_t do: a tie such as 325 * 0.7 in bfloat16 goes where the
 * CPU's goes; found on the emulated device, tests/cuda_emu); random evaluates pg_philox.h at
 * (seed, offset + i), the very code the CPU runs. A float32 uniform that
 * rounds up to 1.0f becomes the largest float below 1, keeping [0, 1).
 * Normals use the device libm (log, cos), so they match within rounding.
 *
 * Launch shape: one thread per element, grid-stride loop (pg_cuda_grid). */
#include "pg_cuda_half.cuh"
#include "pg_philox.h"

// dst: (n,) contiguous
template <typename T>
__global__ void pg_arange_kernel(T *dst, int64_t n, double start, double step)
{
    for (int64_t i = pg_thread_index(); i < n; i += pg_thread_count()) {
        const double v = __dadd_rn(start, __dmul_rn((double)i, step));
        if constexpr (pg_is_half<T>) /* counted as float32, as the CPU twin and PyTorch do */
            dst[i] = pg_convert<T, float>((float)v);
        else
            dst[i] = pg_convert<T, double>(v);
    }
}

// dst: (n,) contiguous float32/float64
template <typename T>
__global__ void pg_random_kernel(T *dst, int64_t n, uint64_t seed, uint64_t offset, int normal)
{
    for (int64_t i = pg_thread_index(); i < n; i += pg_thread_count()) {
        uint64_t index = offset + (uint64_t)i;
        double v = normal ? pg_philox_normal(seed, index) : pg_philox_uniform(seed, index);
        if constexpr (std::is_same<T, float>::value) {
            float f = (float)v;
            if (!normal && f >= 1.0f)
                f = 0x1.fffffep-1f;
            dst[i] = f;
        } else {
            dst[i] = v;
        }
    }
}

extern "C" cudaError_t pg_kernel_arange(const pg_cuda_ctx *ctx, int dtype, void *dst, int64_t n,
                                      double start, double step)
{
    if (n == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(n, PG_CUDA_BLOCK, ctx);
    return pg_dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        pg_arange_kernel<T>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_arange_kernel")>>>(
                (T *)dst, n, start, step);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t pg_kernel_random(const pg_cuda_ctx *ctx, int kind, int dtype, void *dst,
                                      int64_t n, uint64_t seed, uint64_t offset)
{
    if (n == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(n, PG_CUDA_BLOCK, ctx);
    int normal = kind == PG_RANDOM_NORMAL;
    if (dtype == PG_FLOAT32)
        pg_random_kernel<float>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_random_kernel")>>>(
                (float *)dst, n, seed, offset, normal);
    else if (dtype == PG_FLOAT64)
        pg_random_kernel<double>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_random_kernel")>>>(
                (double *)dst, n, seed, offset, normal);
    else
        return cudaErrorInvalidValue; /* the generic layer sends float dtypes only */
    return cudaGetLastError();
}
