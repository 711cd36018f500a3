/* fft.cu - what the FFT node adds to cuFFT (csrc/backends/cuda/cuda_cufft.c): cuFFT neither
 * scales nor runs a real transform in the other direction, so x (n float or double parts,
 * contiguous) is multiplied in place by `even` at even indices and `odd` at odd ones: a
 * complex buffer's real and imaginary parts (the norm's factor; -factor for the imaginary
 * parts conjugates), or a real buffer with even == odd. The CPU twin is pocketfft's own
 * factor and sign in csrc/backends/cpu/cpu_fft.c.
 *
 * Launch shape: one thread per part, grid-stride loop (pg_cuda_grid). */
#include "pg_cuda_common.cuh"

// x: (n,) contiguous, in place
template <typename T>
__global__ void pg_fft_scale_kernel(T *x, int64_t n, T even, T odd)
{
    for (int64_t i = pg_thread_index(); i < n; i += pg_thread_count())
        x[i] *= (i & 1) ? odd : even;
}

extern "C" cudaError_t pg_kernel_fft_scale(const pg_cuda_ctx *ctx, int dtype, void *x, int64_t n,
                                           double even, double odd)
{
    if (n == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(n, PG_CUDA_BLOCK, ctx);
    if (dtype == PG_FLOAT64)
        pg_fft_scale_kernel<double><<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_fft_scale_kernel")>>>(
            (double *)x, n, even, odd);
    else if (dtype == PG_FLOAT32)
        pg_fft_scale_kernel<float><<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_fft_scale_kernel")>>>(
            (float *)x, n, (float)even, (float)odd);
    else
        return cudaErrorInvalidValue; /* the FFT node's parts are float32 or float64 */
    return cudaGetLastError();
}
