/* quant.cu - the int8 linear layer's kernels on CUDA (PG_OP_QLINEAR, csrc/core/pg_ops_quantized.c),
 * around the int8 GEMM that cuBLASLt runs between them (csrc/backends/cuda/cuda_quant.c):
 *
 *   quantize   A (M,K) float32 or u8 -> a_s8 (M,kp) s8, and for a dynamic input sa, za (M):
 *              each row's scale and zero point (dynamic: from the row's [min(0,min), max(0,max)]
 *              over a_max + 1 levels; static: the fixed ones), q = clamp(round(x/s) + zp, 0,
 *              a_max), then stored as q - a_shift: cuBLASLt's IMMA kernels multiply s8 by s8
 *              only. With 7-bit activations (a_max 127, what pygpu's layers use) a level is
 *              an s8 as it is (a_shift 0); with a_max 255 it is shifted by 128. The shift is
 *              undone exactly in the epilogue with the weight's column sums. K is padded with
 *              zeros to kp (a multiple of 4, as IMMA needs): the weight's padding is zero too.
 *              A u8 input with a_shift 0 and K % 4 == 0 is the GEMM's operand as it is: no
 *              kernel runs (cuda_quant.c). A 7-bit layer's u8 input holds levels 0..127 (the
 *              layers before it clamp there; the CPU's AVX2 kernel relies on it too): a byte
 *              above 127 would read as a negative s8 here, as it saturates there.
 *   epilogue   acc (M,np) s32 = sum_k (q - a_shift) * W[n,k] from cuBLASLt ->
 *              exact  = acc + (a_shift - za) * colsum[n]  (= sum_k q*W - za*colsum: the CPU's int32)
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
 * Launch shapes, shaped for bandwidth (the first H200 run's one-thread-per-element epilogue
 * with a 64-bit division per element and byte stores cost as much as the GEMM):
 *   quantize   one block per row (grid-stride over rows), pg_cuda_row_block threads; each
 *              thread takes groups of 4 consecutive k: one 16-byte load of 4 floats (or one
 *              4-byte load of 4 u8) where the row allows it, one 4-byte store of 4 s8. The
 *              dynamic range is a warp-shuffle block reduction (pg_cuda_block.cuh).
 *   epilogue   a 2-d grid: x over groups of 4 output columns, y over rows (grid-stride). A
 *              thread loads its 4 columns' colsum, scales and bias once, then per row one
 *              16-byte load of acc (rows padded to np, so always in bounds and aligned) and
 *              one 16-byte (float) or 4-byte (u8) store where c's rows are 4-aligned
 *              (out_vec), element stores otherwise; columns past N are never stored.
 *
 * The requantizing GEMM (cuda_quant.c's fused path): a static layer (constant sa, za) whose
 * u8 output has c_max 127 and no activation, or ReLU with c_zp 0, needs no epilogue kernel:
 *   level = clamp(round(y / c_scale + c_zp), 0, 127),  y = (acc + (a_shift - za) colsum) sa sw + b
 *         = clamp(round(alpha[n] acc + beta[n]), 0, 127)
 *   alpha[n] = sa sw[n] / c_scale,  beta[n] = (a_shift - za) colsum[n] alpha[n] + b[n] / c_scale + c_zp
 * and cuBLASLt's IMMA GEMM with an s8 D computes D = sat_s8(round(relu(alpha[n] acc + beta[n])))
 * (per-row alpha vector, bias epilogue then ReLU): ReLU is the clamp at level 0, s8
 * saturation the clamp at 127, and a level 0..127 is its own s8 byte, so D is the u8
 * output as it is. The fold kernel computes alpha and beta (N floats each) per call. These
 * bits are not the CPU's: cuBLASLt rounds alpha * acc + beta in its own order, where the CPU
 * rounds every step of the line above, so a level may differ from the CPU's by one where
 * the value lies within float rounding of a half-way point. Every other layer (dynamic,
 * float32 out, tanh/sigmoid/leaky ReLU, ReLU with c_zp != 0, c_max != 127, N % 4 != 0),
 * every layer with the plugin's option int8_requant_in_gemm off
 * (pygpu.cuda.set_int8_requant_in_gemm(False)), and every call cuBLASLt refuses takes the
 * exact path above, with the CPU's bits. */
#include <math.h>

#include "pg_cuda_act.cuh"
#include "pg_cuda_block.cuh"
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

/* Elements 4g .. 4g+3 of a float row of K; past K reads 0. VEC: the row starts 16-byte
 * aligned and K % 4 == 0, so every group inside K is one aligned 16-byte load. */
template <bool VEC>
__device__ __forceinline__ void pg_q_load4(const float *row, int64_t K, int64_t g, float (&x)[4])
{
    if (VEC && 4 * g + 4 <= K) {
        const pg_pack<float, 4> p = reinterpret_cast<const pg_pack<float, 4> *>(row)[g];
#pragma unroll
        for (int j = 0; j < 4; j++)
            x[j] = p.v[j];
        return;
    }
#pragma unroll
    for (int j = 0; j < 4; j++)
        x[j] = 4 * g + j < K ? row[4 * g + j] : 0.0f;
}

// a (M,K) float32 | u8 (a->a_u8) -> a_s8 (M,kp) [, sa, za (M)]; one block per row. VEC: the
// rows may be read in aligned groups of 4 (K % 4 == 0 and the input 16-byte aligned).
template <bool VEC> __global__ void pg_q_quantize_kernel(pg_cuda_qlinear_args a)
{
    __shared__ float red[32];
    const int64_t groups = a.kp / 4; /* a_s8 rows are kp bytes: 4-aligned words */
    for (int64_t m = blockIdx.x; m < a.M; m += gridDim.x) {
        uint32_t *dst = reinterpret_cast<uint32_t *>(a.a_s8 + m * a.kp);
        if (a.a_u8) { /* a static chain's u8 input: shift into s8 (x ^ 0x80 is x - 128) */
            const uint8_t *src = a.a_u8 + m * a.K;
            const uint32_t flip = a.a_shift ? 0x80808080u : 0u;
            for (int64_t g = threadIdx.x; g < groups; g += blockDim.x) {
                uint32_t w = 0;
                if (VEC && 4 * g + 4 <= a.K) {
                    w = reinterpret_cast<const uint32_t *>(src)[g] ^ flip;
                } else {
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        if (4 * g + j < a.K)
                            w |= ((uint32_t)src[4 * g + j] ^ (flip & 0xffu)) << (8 * j);
                }
                dst[g] = w;
            }
            continue; /* uniform across the block: no barrier skipped by some threads */
        }
        const float *src = a.a_f32 + m * a.K;
        float s = a.a_scale;
        int32_t zp = a.a_zp;
        if (a.a_dynamic) {
            float mn = 0.0f, mx = 0.0f; /* NaN fails both comparisons: skipped */
            for (int64_t g = threadIdx.x; g < groups; g += blockDim.x) {
                float x[4];
                pg_q_load4<VEC>(src, a.K, g, x); /* the padding reads 0: in the range anyway */
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    mn = x[j] < mn ? x[j] : mn;
                    mx = x[j] > mx ? x[j] : mx;
                }
            }
            /* every thread takes part (idle ones with 0, inside the range); partials are
             * never NaN, so pg_block_max's NaN rule never applies */
            mx = pg_block_max(mx, red, 0.0f);
            mn = -pg_block_max(-mn, red, 0.0f);
            pg_q_dynamic_params(mn, mx, a.a_max, &s, &zp);
            if (threadIdx.x == 0) {
                a.sa[m] = s;
                a.za[m] = zp;
            }
        }
        const float inv = 1.0f / s, zpf = (float)zp, qmax = (float)a.a_max;
        const int shift = a.a_shift;
        for (int64_t g = threadIdx.x; g < groups; g += blockDim.x) {
            float x[4];
            pg_q_load4<VEC>(src, a.K, g, x);
            uint32_t w = 0;
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (4 * g + j < a.K)
                    w |= (uint32_t)(uint8_t)(int8_t)(pg_q_level(x[j], inv, zpf, qmax) - shift)
                         << (8 * j);
            dst[g] = w;
        }
    }
}

/* The CPU's epilogue for one output: exact int32 (two's complement wrap, done unsigned),
 * then float rounded step by step as epi_f32. */
__device__ __forceinline__ float pg_q_epi(const pg_cuda_qlinear_args &a, int32_t acc,
                                          uint32_t corr, int32_t colsum, float s, float bias)
{
    const int32_t exact = (int32_t)((uint32_t)acc + corr * (uint32_t)colsum);
    float y = pg_mul_rn((float)exact, s);
    if (a.bias)
        y = pg_add_rn(y, bias);
    return pg_act<float>(a.act, y); /* the PG_ACT row's f (pg_cuda_act.cuh) */
}

// acc (M,np) s32 -> c (M,N) float32 | u8. Thread (x, y): columns 4x .. 4x+3, rows y, y +
// gridDim.y, ... VEC: c's rows take one 4-element store (a.out_vec).
template <bool U8, bool VEC> __global__ void pg_q_epilogue_kernel(pg_cuda_qlinear_args a)
{
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t n0 = 4 * g;
    if (n0 >= a.N)
        return; /* no barrier below */
    /* the 4 columns' constants, once: colsum is padded to np (in bounds past N) */
    const pg_pack<int32_t, 4> cs = reinterpret_cast<const pg_pack<int32_t, 4> *>(a.colsum)[g];
    float sw[4], b[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const bool in = n0 + j < a.N;
        sw[j] = in ? a.w_scale[n0 + j] : 0.0f;
        b[j] = in && a.bias ? a.bias[n0 + j] : 0.0f;
    }
    const float inv_c = U8 ? 1.0f / a.c_scale : 0.0f, czp = (float)a.c_zp, cmax = (float)a.c_max;
    for (int64_t m = blockIdx.y; m < a.M; m += gridDim.y) {
        const pg_pack<int32_t, 4> acc =
            reinterpret_cast<const pg_pack<int32_t, 4> *>(a.acc + m * a.np)[g];
        const float sa = a.a_dynamic ? a.sa[m] : a.a_scale;
        const int32_t za = a.a_dynamic ? a.za[m] : a.a_zp;
        const uint32_t corr = (uint32_t)(a.a_shift - za);
        float y[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            y[j] = pg_q_epi(a, acc.v[j], corr, cs.v[j], pg_mul_rn(sa, sw[j]), b[j]);
        if (U8) {
            uint8_t q[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                q[j] = (uint8_t)pg_q_level(y[j], inv_c, czp, cmax);
            uint8_t *row = a.c_u8 + m * a.N;
            if (VEC) {
                reinterpret_cast<uint32_t *>(row)[g] = (uint32_t)q[0] | (uint32_t)q[1] << 8 |
                                                       (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (n0 + j < a.N)
                        row[n0 + j] = q[j];
            }
        } else {
            float *row = a.c_f32 + m * a.N;
            if (VEC) {
                pg_pack<float, 4> p;
#pragma unroll
                for (int j = 0; j < 4; j++)
                    p.v[j] = y[j];
                reinterpret_cast<pg_pack<float, 4> *>(row)[g] = p;
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++)
                    if (n0 + j < a.N)
                        row[n0 + j] = y[j];
            }
        }
    }
}

// alpha, beta (N) of the requantizing GEMM (the header): alpha = (sa * sw) * (1 / c_scale) rounded
// as the exact path rounds those two steps; beta in double, rounded once
__global__ void pg_q_fold_kernel(pg_cuda_qlinear_args a)
{
    const double inv_c = 1.0 / (double)a.c_scale;
    const float inv_cf = 1.0f / a.c_scale;
    for (int64_t n = pg_thread_index(); n < a.N; n += pg_thread_count()) {
        const float alpha = pg_mul_rn(pg_mul_rn(a.a_scale, a.w_scale[n]), inv_cf);
        const double corr = (double)((int64_t)(a.a_shift - a.a_zp) * (int64_t)a.colsum[n]);
        double beta = corr * (double)alpha + (double)a.c_zp;
        if (a.bias)
            beta += (double)a.bias[n] * inv_c;
        a.fold_alpha[n] = alpha;
        a.fold_bias[n] = (float)beta;
    }
}

extern "C" cudaError_t pg_kernel_qfold(const pg_cuda_ctx *ctx, const pg_cuda_qlinear_args *a)
{
    if (a->N == 0)
        return cudaSuccess;
    const unsigned grid = pg_cuda_grid(a->N, PG_CUDA_BLOCK, ctx);
    pg_q_fold_kernel<<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_q_fold_kernel")>>>(*a);
    return cudaGetLastError();
}

extern "C" cudaError_t pg_kernel_qquantize(const pg_cuda_ctx *ctx, const pg_cuda_qlinear_args *a)
{
    if (a->M == 0)
        return cudaSuccess;
    const int64_t cap = (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 16) * 8;
    const unsigned grid = (unsigned)(a->M < cap ? a->M : cap);
    const int block = pg_cuda_row_block(a->kp / 4); /* about 4 groups of 4 per thread */
    const void *src = a->a_u8 ? (const void *)a->a_u8 : (const void *)a->a_f32;
    const bool vec = a->K % 4 == 0 && pg_cuda_aligned(src, 16);
    if (vec)
        pg_q_quantize_kernel<true>
            <<<grid, block, 0, pg_cuda_noted(ctx, "pg_q_quantize_kernel")>>>(*a);
    else
        pg_q_quantize_kernel<false>
            <<<grid, block, 0, pg_cuda_noted(ctx, "pg_q_quantize_kernel")>>>(*a);
    return cudaGetLastError();
}

extern "C" cudaError_t pg_kernel_qepilogue(const pg_cuda_ctx *ctx, const pg_cuda_qlinear_args *a)
{
    if (a->M == 0 || a->N == 0)
        return cudaSuccess;
    const int64_t groups = (a->N + 3) / 4;
    int block = 32;
    while (block < PG_CUDA_BLOCK && block < groups)
        block *= 2;
    const int64_t gx = (groups + block - 1) / block;
    const int64_t cap = (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 16) * (2048 / block);
    int64_t gy = cap / gx;
    gy = gy < 1 ? 1 : gy > a->M ? a->M : gy > 65535 ? 65535 : gy;
    const dim3 grid((unsigned)gx, (unsigned)gy);
    const char *name = "pg_q_epilogue_kernel";
    if (a->c_u8 && a->out_vec)
        pg_q_epilogue_kernel<true, true><<<grid, block, 0, pg_cuda_noted(ctx, name)>>>(*a);
    else if (a->c_u8)
        pg_q_epilogue_kernel<true, false><<<grid, block, 0, pg_cuda_noted(ctx, name)>>>(*a);
    else if (a->out_vec)
        pg_q_epilogue_kernel<false, true><<<grid, block, 0, pg_cuda_noted(ctx, name)>>>(*a);
    else
        pg_q_epilogue_kernel<false, false><<<grid, block, 0, pg_cuda_noted(ctx, name)>>>(*a);
    return cudaGetLastError();
}
