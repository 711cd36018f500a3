/* quant.cu - the int8 linear layer's kernels on CUDA (PG_OP_QLINEAR, csrc/core/pg_ops_quantized.c),
 * around the int8 GEMM that cuBLASLt runs between them (csrc/backends/cuda/cuda_quant.c):
 *
 *   quantize   A (M,K) float32 or u8 -> a_s8 (M,kp) s8, sa (M) float32, za (M) int32:
 *              each row's scale and zero point (dynamic: from the row's [min(0,min), max(0,max)]
 *              over a_max + 1 levels; static: the fixed ones), q = clamp(round(x/s) + zp, 0,
 *              a_max), then stored as q - 128: cuBLASLt's IMMA kernels multiply s8 by s8
 *              only, so the u8 activation is shifted into s8 here and the shift is undone
 *              exactly in the epilogue with the weight's column sums. K is padded with zeros
 *              to kp (a multiple of 4, as IMMA needs): the weight's padding is zero too.
 *   epilogue   acc (M,np) s32 = sum_k (q - 128) * W[n,k] from cuBLASLt ->
 *              exact  = acc + (128 - za) * colsum[n]   (= sum_k q*W - za*colsum: the CPU's int32)
 *              y      = exact * (sa * sw[n]) + bias[n], then the activation,
 *              stored float32, or requantized to u8 (the next int8 layer's input).
 *
 * CPU twin: csrc/backends/cpu/cpu_gemm_int8_drive.c (prepare_rows, dynamic_params, epi_f32,
 * epi_requant). The float arithmetic is the CPU's step for step, each multiply and add
 * rounded on its own (pg_mul_rn/pg_add_rn: no FMA contraction), the divisions IEEE (the
 * plugin is not built with fast math), round half to even by the same 1.5 * 2^23 trick;
 * with the exact s32 sums, cuda's output has the CPU's bits. tanh and sigmoid use CUDA's
 * tanhf/expf (within 2 ulp; the CPU's libmvec within 4): those two differ by a few ulp.
 * A row's min and max are the same whatever the order they are taken in (NaN skipped by
 * the comparisons on both sides; the range always holds +0).
 *
 * Launch shapes: quantize, one block of PG_CUDA_BLOCK threads per row (grid-stride over
 * rows): the range is a shared-memory tree; epilogue, one thread per output element. */
#include <math.h>

#include "pg_cuda_common.cuh"

#define PG_Q_ROUND_MAGIC 12582912.0f /* 1.5 * 2^23 */

/* clamp(round(x * inv + zp), 0, qmax), NaN -> 0; as row_quantize / epi_requant */
__device__ __forceinline__ int pg_q_level(float x, float inv, float zp, float qmax)
{
    float v = pg_add_rn(pg_mul_rn(x, inv), zp);
    v = v >= 0.0f ? v : 0.0f;
    v = v <= qmax ? v : qmax;
    return (int)pg_add_rn(pg_add_rn(v, PG_Q_ROUND_MAGIC), -PG_Q_ROUND_MAGIC);
}

/* A row's dynamic scale and zero point (PyTorch's ChooseQuantizationParams, qmin 0). */
__device__ __forceinline__ void pg_q_dynamic_params(float lo, float hi, int a_max, float *scale,
                                                    int32_t *zp)
{
    float s = (hi - lo) / (float)a_max;
    if (!(s > 0.0f) || !isfinite(s)) {
        *scale = 1.0f;
        *zp = 0;
        return;
    }
    float z = nearbyintf(-lo / s);
    *scale = s;
    *zp = z < 0.0f ? 0 : z > (float)a_max ? a_max : (int32_t)z;
}

// a (M,K) float32 | u8 (a->a_u8) -> a_s8 (M,kp), sa (M), za (M); blockDim.x == PG_CUDA_BLOCK
__global__ void pg_q_quantize_kernel(pg_cuda_qlinear_args a)
{
    __shared__ float lo_part[PG_CUDA_BLOCK], hi_part[PG_CUDA_BLOCK];
    __shared__ float row_scale;
    __shared__ int32_t row_zp;
    const unsigned tid = threadIdx.x;
    for (int64_t m = blockIdx.x; m < a.M; m += gridDim.x) {
        int8_t *dst = a.a_s8 + m * a.kp;
        if (a.a_u8) { /* a static chain's u8 input: shift into s8 */
            const uint8_t *src = a.a_u8 + m * a.K;
            for (int64_t k = tid; k < a.kp; k += blockDim.x)
                dst[k] = k < a.K ? (int8_t)((int)src[k] - 128) : (int8_t)0;
            if (tid == 0) {
                a.sa[m] = a.a_scale;
                a.za[m] = a.a_zp;
            }
            continue; /* no shared state touched: no barrier needed */
        }
        const float *src = a.a_f32 + m * a.K;
        if (a.a_dynamic) {
            float mn = 0.0f, mx = 0.0f;
            for (int64_t k = tid; k < a.K; k += blockDim.x) {
                const float x = src[k];
                mn = x < mn ? x : mn;
                mx = x > mx ? x : mx;
            }
            lo_part[tid] = mn;
            hi_part[tid] = mx;
            __syncthreads();
            for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
                if (tid < s) {
                    const float lo = lo_part[tid + s], hi = hi_part[tid + s];
                    lo_part[tid] = lo < lo_part[tid] ? lo : lo_part[tid];
                    hi_part[tid] = hi > hi_part[tid] ? hi : hi_part[tid];
                }
                __syncthreads();
            }
            if (tid == 0)
                pg_q_dynamic_params(lo_part[0], hi_part[0], a.a_max, &row_scale, &row_zp);
        } else if (tid == 0) {
            row_scale = a.a_scale;
            row_zp = a.a_zp;
        }
        __syncthreads();
        const float s = row_scale;
        const int32_t zp = row_zp;
        const float inv = 1.0f / s, zpf = (float)zp, qmax = (float)a.a_max;
        for (int64_t k = tid; k < a.kp; k += blockDim.x)
            dst[k] = k < a.K ? (int8_t)(pg_q_level(src[k], inv, zpf, qmax) - 128) : (int8_t)0;
        if (tid == 0) {
            a.sa[m] = s;
            a.za[m] = zp;
        }
        __syncthreads(); /* row_scale and the parts are reused by the next row */
    }
}

// acc (M,np) s32 -> c (M,N) float32 | u8
__global__ void pg_q_epilogue_kernel(pg_cuda_qlinear_args a)
{
    const int64_t total = a.M * a.N;
    const float inv_c = a.c_u8 ? 1.0f / a.c_scale : 0.0f;
    for (int64_t i = pg_thread_index(); i < total; i += pg_thread_count()) {
        const int64_t m = i / a.N, n = i - m * a.N;
        /* exact int32 as on the CPU (two's complement wrap, done unsigned) */
        const uint32_t shifted = (uint32_t)a.acc[m * a.np + n] +
                                 (uint32_t)(128 - a.za[m]) * (uint32_t)a.colsum[n];
        const int32_t exact = (int32_t)shifted;
        float y = pg_mul_rn((float)exact, pg_mul_rn(a.sa[m], a.w_scale[n]));
        if (a.bias)
            y = pg_add_rn(y, a.bias[n]);
        switch (a.act) {
        case PG_CUDA_ACT_RELU: y = y > 0.0f ? y : 0.0f; break;
        case PG_CUDA_ACT_TANH: y = tanhf(y); break;
        case PG_CUDA_ACT_SIGMOID: y = 1.0f / pg_add_rn(1.0f, expf(-y)); break;
        default: break;
        }
        if (a.c_u8)
            a.c_u8[i] = (uint8_t)pg_q_level(y, inv_c, (float)a.c_zp, (float)a.c_max);
        else
            a.c_f32[i] = y;
    }
}

extern "C" cudaError_t pg_kernel_qquantize(const pg_cuda_ctx *ctx, const pg_cuda_qlinear_args *a)
{
    if (a->M == 0)
        return cudaSuccess;
    int64_t rows = a->M;
    int64_t cap = (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 16) * 8;
    unsigned grid = (unsigned)(rows < cap ? rows : cap);
    pg_q_quantize_kernel
        <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_q_quantize_kernel")>>>(*a);
    return cudaGetLastError();
}

extern "C" cudaError_t pg_kernel_qepilogue(const pg_cuda_ctx *ctx, const pg_cuda_qlinear_args *a)
{
    const int64_t total = a->M * a->N;
    if (total == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(total, PG_CUDA_BLOCK, ctx);
    pg_q_epilogue_kernel
        <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_q_epilogue_kernel")>>>(*a);
    return cudaGetLastError();
}
