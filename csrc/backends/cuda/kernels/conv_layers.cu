/* conv_layers.cu - the convolutional layers' own nodes on CUDA besides the convolution
 * (which runs on cuDNN, cuda_cudnn.c): POOL (max, average and adaptive windows, and their
 * gradients) and BATCH_NORM in training (statistics, running statistics, output with an
 * optional fused ReLU, and the backward). Operands: csrc/core/pg_ops_conv.h; CPU twins:
 * csrc/backends/cpu/cpu_pool.c and cpu_batchnorm.c. float32 and float64.
 *
 * Until these, cuda composed both from tensor ops (pygpu/_ops/_conv.py): an average pooling
 * became a product with a dense (H*W, OH*OW) matrix (2.5 GB for a 224x224 plane), a max
 * pooling a chain of gathers, batch norm a dozen kernels. Here:
 *   pooling forward   one thread per output element, its window walked in the CPU's order:
 *                     the same maximum and index (NaN wins, the first of equal maxima), the
 *                     same average bits (the sum taken row by row, divided once);
 *   average backward  one thread per input element gathers dy / divisor from the windows
 *                     that hold it, in the CPU's (oh, ow) order: the CPU's bits, no atomics;
 *   max backward      the indices say where each dy goes, into a zeroed dx. Where the caller
 *                     knows the windows cannot overlap (their extent <= the stride: the node's
 *                     kh, kw, sh, sw, set by pg_ops_pool.c), one thread per output element
 *                     adds its dy at its index (atomicAdd, though no element gets two values:
 *                     exact); where they may (3x3 windows at stride 2, adaptive windows), one
 *                     thread per plane adds them in the CPU's order: the CPU's bits, the same
 *                     from run to run (PyTorch's adaptive max pooling backward is not);
 *   batch norm        three kernels each way: blocks sum pieces of each channel (about
 *                     four blocks a SM, so that 32 channels still fill the GPU: one block
 *                     a channel left 100 of the H200's 132 SMs idle, its backward 36% of a
 *                     CIFAR CNN's step on 2026-11-28), a thread per channel adds the pieces
 *                     in order (the same bits from run to run) and finishes the statistics,
 *                     then the output. Forward: the shifted sums of x and x^2 (the shift is
 *                     the channel's first value, as the CPU's, so the variance does not
 *                     cancel) in double, the running statistics, y with the fused ReLU;
 *                     backward: the sums of dy and dy * (x - mean) in double (through the
 *                     ReLU's mask, read from y), dw, db, then dx. Equal to the CPU's to
 *                     rounding (other order). */
#include <math.h>

#include "pg_cuda_block.cuh"

/* ---- pooling ------------------------------------------------------------------------------ */

__device__ __forceinline__ int64_t pg_pool_start(int64_t i, int64_t out, int64_t in)
{
    return i * in / out;
}
__device__ __forceinline__ int64_t pg_pool_end(int64_t i, int64_t out, int64_t in)
{
    return ((i + 1) * in + out - 1) / out;
}

/* an average window's bounds clipped to the input, and its divisor (cpu_pool.c avg_window) */
__device__ __forceinline__ void pg_avg_window(const pg_cuda_pool_args &a, int64_t oh, int64_t ow,
                                              int64_t *h0, int64_t *h1, int64_t *w0,
                                              int64_t *w1, int64_t *div)
{
    if (a.adaptive) {
        *h0 = pg_pool_start(oh, a.OH, a.H);
        *h1 = pg_pool_end(oh, a.OH, a.H);
        *w0 = pg_pool_start(ow, a.OW, a.W);
        *w1 = pg_pool_end(ow, a.OW, a.W);
        *div = (*h1 - *h0) * (*w1 - *w0);
        return;
    }
    int64_t hs = oh * a.sh - a.ph, ws = ow * a.sw - a.pw;
    int64_t he = hs + a.kh < a.H + a.ph ? hs + a.kh : a.H + a.ph;
    int64_t we = ws + a.kw < a.W + a.pw ? ws + a.kw : a.W + a.pw;
    int64_t pool_size = (he - hs) * (we - ws);
    hs = hs > 0 ? hs : 0;
    ws = ws > 0 ? ws : 0;
    he = he < a.H ? he : a.H;
    we = we < a.W ? we : a.W;
    *h0 = hs;
    *h1 = he;
    *w0 = ws;
    *w1 = we;
    *div = a.divisor ? a.divisor : a.count_pad ? pool_size : (he - hs) * (we - ws);
}

/* output element i's plane and position */
__device__ __forceinline__ void pg_pool_out_at(const pg_cuda_pool_args &a, int64_t i, int64_t *p,
                                               int64_t *oh, int64_t *ow)
{
    *p = i / (a.OH * a.OW);
    const int64_t o = i - *p * (a.OH * a.OW);
    *oh = o / a.OW;
    *ow = o - *oh * a.OW;
}

template <typename T> __global__ void pg_pool_max_kernel(pg_cuda_pool_args a)
{
    const T *x = (const T *)a.src;
    T *y = (T *)a.dst;
    for (int64_t i = pg_thread_index(); i < a.planes * a.OH * a.OW; i += pg_thread_count()) {
        int64_t p, oh, ow, h0, h1, w0, w1, dh = 1, dw = 1;
        pg_pool_out_at(a, i, &p, &oh, &ow);
        if (a.adaptive) {
            h0 = pg_pool_start(oh, a.OH, a.H);
            h1 = pg_pool_end(oh, a.OH, a.H);
            w0 = pg_pool_start(ow, a.OW, a.W);
            w1 = pg_pool_end(ow, a.OW, a.W);
        } else {
            dh = a.dh;
            dw = a.dw;
            h0 = oh * a.sh - a.ph;
            w0 = ow * a.sw - a.pw;
            h1 = h0 + (a.kh - 1) * dh + 1;
            w1 = w0 + (a.kw - 1) * dw + 1;
            h1 = h1 < a.H ? h1 : a.H;
            w1 = w1 < a.W ? w1 : a.W;
            while (h0 < 0)
                h0 += dh;
            while (w0 < 0)
                w0 += dw;
        }
        const T *xp = x + p * a.H * a.W;
        T best = -INFINITY;
        int64_t bi = h0 * a.W + w0;
        for (int64_t ih = h0; ih < h1; ih += dh)
            for (int64_t iw = w0; iw < w1; iw += dw) {
                const T v = xp[ih * a.W + iw];
                if (v > best || v != v) {
                    best = v;
                    bi = ih * a.W + iw;
                }
            }
        y[i] = best;
        if (a.idx_out)
            a.idx_out[i] = bi;
    }
}

template <typename T> __global__ void pg_pool_avg_kernel(pg_cuda_pool_args a)
{
    const T *x = (const T *)a.src;
    T *y = (T *)a.dst;
    for (int64_t i = pg_thread_index(); i < a.planes * a.OH * a.OW; i += pg_thread_count()) {
        int64_t p, oh, ow, h0, h1, w0, w1, div;
        pg_pool_out_at(a, i, &p, &oh, &ow);
        pg_avg_window(a, oh, ow, &h0, &h1, &w0, &w1, &div);
        const T *xp = x + p * a.H * a.W;
        T s = 0;
        for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++)
                s += xp[ih * a.W + iw];
        y[i] = h0 >= h1 || w0 >= w1 ? T(0) : s / (T)div;
    }
}

/* dx of an average pooling, one input element per thread: the windows that hold (ih, iw),
 * in (oh, ow) order, each adding dy / divisor (the CPU's order, from 0) */
template <typename T> __global__ void pg_pool_avg_bwd_kernel(pg_cuda_pool_args a)
{
    const T *dy = (const T *)a.src;
    T *dx = (T *)a.dst;
    const int64_t total = a.planes * a.H * a.W;
    for (int64_t i = pg_thread_index(); i < total; i += pg_thread_count()) {
        const int64_t p = i / (a.H * a.W), q = i - p * (a.H * a.W);
        const int64_t ih = q / a.W, iw = q - ih * a.W;
        /* a range of outputs that holds every window containing (ih, iw), checked below */
        int64_t oh0, oh1, ow0, ow1;
        if (a.adaptive) {
            oh0 = ih * a.OH / a.H - 1;
            oh1 = (ih + 1) * a.OH / a.H + 1;
            ow0 = iw * a.OW / a.W - 1;
            ow1 = (iw + 1) * a.OW / a.W + 1;
        } else {
            oh0 = (ih + a.ph - a.kh) / a.sh - 1;
            oh1 = (ih + a.ph) / a.sh;
            ow0 = (iw + a.pw - a.kw) / a.sw - 1;
            ow1 = (iw + a.pw) / a.sw;
        }
        oh0 = oh0 > 0 ? oh0 : 0;
        ow0 = ow0 > 0 ? ow0 : 0;
        oh1 = oh1 < a.OH - 1 ? oh1 : a.OH - 1;
        ow1 = ow1 < a.OW - 1 ? ow1 : a.OW - 1;
        const T *dyp = dy + p * a.OH * a.OW;
        T s = 0;
        for (int64_t oh = oh0; oh <= oh1; oh++)
            for (int64_t ow = ow0; ow <= ow1; ow++) {
                int64_t h0, h1, w0, w1, div;
                pg_avg_window(a, oh, ow, &h0, &h1, &w0, &w1, &div);
                if (ih >= h0 && ih < h1 && iw >= w0 && iw < w1)
                    s += dyp[oh * a.OW + ow] / (T)div;
            }
        dx[i] = s;
    }
}

/* dx += dy at each maximum's index (dx zeroed first), windows that cannot overlap: one thread
 * per output element; an index outside the plane is skipped, as the CPU's */
template <typename T> __global__ void pg_pool_max_bwd_kernel(pg_cuda_pool_args a)
{
    const T *dy = (const T *)a.src;
    T *dx = (T *)a.dst;
    const int64_t plane_out = a.OH * a.OW, plane_in = a.H * a.W;
    const int64_t total = a.planes * plane_out;
    for (int64_t i = pg_thread_index(); i < total; i += pg_thread_count()) {
        const int64_t p = i / plane_out, k = a.idx_in[i];
        if (k >= 0 && k < plane_in)
            atomicAdd(dx + p * plane_in + k, dy[i]);
    }
}

/* the same where windows may overlap: one thread per plane, in output order (the CPU's) */
template <typename T> __global__ void pg_pool_max_bwd_plane_kernel(pg_cuda_pool_args a)
{
    const int64_t plane_out = a.OH * a.OW, plane_in = a.H * a.W;
    for (int64_t p = pg_thread_index(); p < a.planes; p += pg_thread_count()) {
        const T *dy = (const T *)a.src + p * plane_out;
        const int64_t *ix = a.idx_in + p * plane_out;
        T *dx = (T *)a.dst + p * plane_in;
        for (int64_t k = 0; k < plane_out; k++) {
            const int64_t at = ix[k];
            if (at >= 0 && at < plane_in)
                dx[at] += dy[k];
        }
    }
}

extern "C" cudaError_t pg_kernel_pool(const pg_cuda_ctx *ctx, const pg_cuda_pool_args *a)
{
    /* windows that cannot overlap (max backward's scatter needs no order) */
    const bool disjoint = a->kh > 0 && a->kw > 0 && a->kh <= a->sh && a->kw <= a->sw;
    const bool max_bwd = a->max && a->backward, avg_bwd = !a->max && a->backward;
    const bool by_plane = max_bwd && !disjoint;
    const int64_t total = by_plane ? a->planes
                          : a->planes * (avg_bwd ? a->H * a->W : a->OH * a->OW);
    if (max_bwd) {
        const size_t item = a->dtype == PG_FLOAT32 ? 4 : 8;
        cudaError_t e = cudaMemsetAsync(a->dst, 0, (size_t)(a->planes * a->H * a->W) * item,
                                        ctx->stream);
        if (e != cudaSuccess)
            return e;
    }
    if (total == 0)
        return cudaSuccess;
    const unsigned grid = pg_cuda_grid(total, PG_CUDA_BLOCK, ctx);
    return pg_dispatch_dtype(a->dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_floating_point<T>::value) {
            if (!a->backward && a->max)
                pg_pool_max_kernel<T>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_pool_max_kernel")>>>(*a);
            else if (!a->backward)
                pg_pool_avg_kernel<T>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_pool_avg_kernel")>>>(*a);
            else if (by_plane)
                pg_pool_max_bwd_plane_kernel<T>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_pool_max_bwd_plane_kernel")>>>(
                        *a);
            else if (max_bwd)
                pg_pool_max_bwd_kernel<T>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_pool_max_bwd_kernel")>>>(*a);
            else
                pg_pool_avg_bwd_kernel<T>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_pool_avg_bwd_kernel")>>>(*a);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}

/* ---- batch normalization in training ------------------------------------------------------ */

#define PG_BN_BLOCK 256
#define PG_BN_MIN_CHUNK 8192 /* elements of a channel one block sums, at least */

/* A thread's walk over one channel's N*L elements of x (N, C, L), `step` apart from flat
 * position j: j as (n, l), stepped without a division per element */
struct pg_bn_walk {
    int64_t n, l, dn, dl, L;
    __device__ pg_bn_walk(int64_t j, int64_t step, int64_t len) : L(len)
    {
        n = j / L;
        l = j - n * L;
        dn = step / L;
        dl = step - dn * L;
    }
    __device__ int64_t at(int64_t C, int64_t c) const { return (n * C + c) * L + l; }
    __device__ void next()
    {
        n += dn;
        l += dl;
        if (l >= L) {
            l -= L;
            n++;
        }
    }
};

/* Pass 1: block (s, c) sums piece s of channel c (elements [s * chunk, (s + 1) * chunk) of
 * its N*L) into part[(c * S + s) * 2 + {0, 1}], in double:
 *   forward   x - k and (x - k)^2, k the channel's first value (the CPU's shift);
 *   backward  g and g * (x - mean), g = dy through the fused ReLU's mask (read from y). */
template <typename T, bool BWD>
__global__ void pg_bn_part_kernel(pg_cuda_bn_args a, double *part, int64_t S, int64_t chunk)
{
    __shared__ double red[32];
    const T *x = (const T *)a.x, *dy = (const T *)a.dy, *y = (const T *)a.y;
    const int64_t M = a.N * a.L, s = blockIdx.x;
    const int64_t lo = s * chunk, hi = lo + chunk < M ? lo + chunk : M;
    for (int64_t c = blockIdx.y; c < a.C; c += gridDim.y) {
        const T k = BWD ? ((const T *)a.save)[c] : x[c * a.L];
        double s1 = 0, s2 = 0;
        pg_bn_walk w(lo + threadIdx.x, blockDim.x, a.L);
        for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x, w.next()) {
            const int64_t at = w.at(a.C, c);
            if (BWD) {
                const T g = a.relu && !(y[at] > 0) ? T(0) : dy[at];
                s1 += (double)g;
                s2 += (double)(g * (x[at] - k));
            } else {
                const double d = (double)(x[at] - k);
                s1 += d;
                s2 += d * d;
            }
        }
        s1 = pg_block_sum(s1, red);
        s2 = pg_block_sum(s2, red);
        if (threadIdx.x == 0) {
            part[(c * S + s) * 2] = s1;
            part[(c * S + s) * 2 + 1] = s2;
        }
    }
}

/* Pass 2, a thread per channel: the pieces' sums added in piece order (the same bits from
 * run to run), then forward the batch statistics (save), the running ones and the output's
 * scale and shift; backward dw, db and dx's three factors; into kc[c * 3 + {0, 1, 2}] */
template <typename T, bool BWD>
__global__ void pg_bn_finish_kernel(pg_cuda_bn_args a, const double *part, int64_t S, double *kc)
{
    const int64_t M = a.N * a.L;
    for (int64_t c = pg_thread_index(); c < a.C; c += pg_thread_count()) {
        double s1 = 0, s2 = 0;
        for (int64_t s = 0; s < S; s++) {
            s1 += part[(c * S + s) * 2];
            s2 += part[(c * S + s) * 2 + 1];
        }
        const double w = a.w ? (double)((const T *)a.w)[c] : 1.0;
        T *save = (T *)a.save;
        if (BWD) {
            const T rstd = save[a.C + c];
            s2 *= (double)rstd; /* sum(g * xhat) */
            if (a.dw)
                ((T *)a.dw)[c] = (T)s2;
            if (a.db)
                ((T *)a.db)[c] = (T)s1;
            kc[c * 3] = w * (double)rstd;
            kc[c * 3 + 1] = s1 / (double)M;
            kc[c * 3 + 2] = s2 / (double)M * (double)rstd;
        } else {
            const double dmean = s1 / (double)M;
            double var = s2 / (double)M - dmean * dmean;
            var = var < 0 ? 0 : var;
            const double mean = (double)((const T *)a.x)[c * a.L] + dmean;
            const double rstd = 1.0 / sqrt(var + a.eps);
            save[c] = (T)mean;
            save[a.C + c] = (T)rstd;
            if (a.running_mean) {
                T *rm = (T *)a.running_mean, *rv = (T *)a.running_var;
                rm[c] = (T)((1 - a.momentum) * (double)rm[c] + a.momentum * mean);
                rv[c] = (T)((1 - a.momentum) * (double)rv[c] +
                            a.momentum * var * (double)M / (double)(M - 1));
            }
            const double b = a.b ? (double)((const T *)a.b)[c] : 0.0;
            kc[c * 3] = w * rstd;
            kc[c * 3 + 1] = b - mean * w * rstd;
        }
    }
}

/* one element: forward y = x * sc + sh (then the ReLU), backward dx = k1 (g - k2 - (x - mean) k3) */
template <typename T, bool BWD>
__device__ __forceinline__ T pg_bn_elem(const pg_cuda_bn_args &a, int64_t at, const double *k,
                                        T mean)
{
    const T *x = (const T *)a.x;
    if (BWD) {
        const T g = a.relu && !(((const T *)a.y)[at] > 0) ? T(0) : ((const T *)a.dy)[at];
        return (T)k[0] * (g - (T)k[1] - (x[at] - mean) * (T)k[2]);
    }
    const T v = x[at] * (T)k[0] + (T)k[1];
    return a.relu && !(v > 0) ? T(0) : v;
}

/* Pass 3, the output (forward y, backward dx). PLANAR: blocks take tiles of one (n, c)
 * plane of L elements, so the channel is known per tile, not per element; for short planes
 * (BatchNorm1d's L = 1) a thread per element finds its channel by division. */
template <typename T, bool BWD, bool PLANAR>
__global__ void pg_bn_apply_kernel(pg_cuda_bn_args a, const double *kc, int64_t tile)
{
    T *out = BWD ? (T *)a.dx : (T *)a.y;
    const T *save = (const T *)a.save;
    if (PLANAR) {
        const int64_t per_plane = (a.L + tile - 1) / tile, tiles = a.N * a.C * per_plane;
        for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
            const int64_t plane = t / per_plane, c = plane % a.C;
            const int64_t lo = (t - plane * per_plane) * tile;
            const int64_t hi = lo + tile < a.L ? lo + tile : a.L;
            const T mean = BWD ? save[c] : T(0);
            for (int64_t l = lo + threadIdx.x; l < hi; l += blockDim.x) {
                const int64_t at = plane * a.L + l;
                out[at] = pg_bn_elem<T, BWD>(a, at, kc + c * 3, mean);
            }
        }
    } else {
        const int64_t n = a.N * a.C * a.L;
        for (int64_t at = pg_thread_index(); at < n; at += pg_thread_count()) {
            const int64_t c = (at / a.L) % a.C;
            out[at] = pg_bn_elem<T, BWD>(a, at, kc + c * 3, BWD ? save[c] : T(0));
        }
    }
}

/* Pieces a channel is cut into so that C * S blocks fill the GPU (about 4 a SM), each at
 * least PG_BN_MIN_CHUNK elements. The first version took one block per channel: 32 and 64
 * blocks for a CIFAR CNN's layers on the H200's 132 SMs, its backward 36% of the step
 * (2026-11-28). */
static int64_t pg_bn_splits(int64_t C, int64_t M, int sms)
{
    const int64_t want = ((int64_t)sms * 4 + C - 1) / C, most = M / PG_BN_MIN_CHUNK;
    int64_t s = want < most ? want : most;
    return s < 1 ? 1 : s > 1024 ? 1024 : s;
}

template <typename T, bool BWD>
static cudaError_t pg_bn_launch(const pg_cuda_ctx *ctx, const pg_cuda_bn_args *a)
{
    const int sms = ctx->sm_count > 0 ? ctx->sm_count : 16;
    const int64_t M = a->N * a->L, S = pg_bn_splits(a->C, M, sms), chunk = (M + S - 1) / S;
    double *scratch = NULL; /* part (C, S, 2), then kc (C, 3): stream-ordered, no host sync */
    cudaError_t err = cudaMallocAsync((void **)&scratch,
                                      (size_t)(a->C * S * 2 + a->C * 3) * sizeof(double),
                                      ctx->stream);
    if (err != cudaSuccess)
        return err;
    double *part = scratch, *kc = scratch + a->C * S * 2;
    const dim3 pgrid((unsigned)S, (unsigned)(a->C < 65535 ? a->C : 65535));
    pg_bn_part_kernel<T, BWD>
        <<<pgrid, PG_BN_BLOCK, 0,
           pg_cuda_noted(ctx, BWD ? "pg_bn_bwd_part_kernel" : "pg_bn_part_kernel")>>>(
            *a, part, S, chunk);
    err = cudaGetLastError();
    if (err == cudaSuccess) {
        pg_bn_finish_kernel<T, BWD>
            <<<pg_cuda_grid(a->C, PG_BN_BLOCK, ctx), PG_BN_BLOCK, 0,
               pg_cuda_noted(ctx, BWD ? "pg_bn_bwd_finish_kernel" : "pg_bn_finish_kernel")>>>(
                *a, part, S, kc);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess) {
        const char *name = BWD ? "pg_bn_bwd_apply_kernel" : "pg_bn_apply_kernel";
        const int64_t tile = PG_BN_BLOCK * 8;
        if (a->L >= PG_BN_BLOCK) {
            const int64_t tiles = a->N * a->C * ((a->L + tile - 1) / tile);
            const int64_t cap = (int64_t)sms * 16;
            pg_bn_apply_kernel<T, BWD, true>
                <<<(unsigned)(tiles < cap ? tiles : cap), PG_BN_BLOCK, 0,
                   pg_cuda_noted(ctx, name)>>>(*a, kc, tile);
        } else {
            pg_bn_apply_kernel<T, BWD, false>
                <<<pg_cuda_grid(a->N * a->C * a->L, PG_BN_BLOCK, ctx), PG_BN_BLOCK, 0,
                   pg_cuda_noted(ctx, name)>>>(*a, kc, tile);
        }
        err = cudaGetLastError();
    }
    cudaError_t free_err = cudaFreeAsync(scratch, ctx->stream);
    return err != cudaSuccess ? err : free_err;
}

extern "C" cudaError_t pg_kernel_batch_norm(const pg_cuda_ctx *ctx, const pg_cuda_bn_args *a)
{
    if (a->C == 0 || a->N * a->L == 0)
        return cudaSuccess;
    return pg_dispatch_dtype(a->dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_floating_point<T>::value)
            return a->backward ? pg_bn_launch<T, true>(ctx, a) : pg_bn_launch<T, false>(ctx, a);
        return cudaErrorInvalidValue;
    });
}
