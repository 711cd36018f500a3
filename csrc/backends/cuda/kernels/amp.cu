/* amp.cu - AMP_UNSCALE, the loss scaler's fused unscale-and-check
 * (pygpu.amp.GradScaler.unscale_): g *= inv_scale over a contiguous gradient
 * of n elements, raising the 0-d float32 flag `found` to 1 if any element was
 * inf or NaN (it is never lowered here, so one flag serves every gradient of
 * an optimizer on the device, and the scaler reads it once per step).
 * CPU twin: csrc/backends/cpu/cpu_amp.c (pg_cpu_amp_unscale).
 *
 * float32 and the half dtypes multiply in float32 (half: loaded, multiplied,
 * rounded once at the store), float64 in float64, as the CPU does. Every
 * thread that sees a bad element stores the same 1.0f, so the race between
 * them is benign; nothing is read back on the host here.
 *
 * Launch shape: one thread per element, grid-stride loop (pg_cuda_grid). */
#include "pg_cuda_half.cuh"

// g: (n,) contiguous, in place; found: one float
template <typename T>
__global__ void pg_amp_unscale_kernel(T *g, int64_t n, pg_calc_t<T> inv, float *found)
{
    bool bad = false;
    for (int64_t i = pg_thread_index(); i < n; i += pg_thread_count()) {
        pg_calc_t<T> v = pg_load(g[i]);
        bad |= !isfinite(v);
        g[i] = pg_store<T>(v * inv);
    }
    if (bad)
        *found = 1.0f;
}

extern "C" cudaError_t pg_kernel_amp_unscale(const pg_cuda_ctx *ctx, int dtype, void *g,
                                             int64_t n, double inv_scale, float *found)
{
    if (n == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(n, PG_CUDA_BLOCK, ctx);
    return pg_dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (!std::is_floating_point<pg_calc_t<T>>::value) {
            return cudaErrorInvalidValue; /* the generic layer sends float gradients only */
        } else {
            using C = pg_calc_t<T>;
            pg_amp_unscale_kernel<T>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_amp_unscale_kernel")>>>(
                (T *)g, n, (C)inv_scale, found);
            return cudaGetLastError();
        }
    });
}
