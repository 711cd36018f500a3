/* conv_layers.cu - the convolutional layers' own nodes on CUDA besides the convolution
 * (which runs on cuDNN, cuda_cudnn.c): POOL (max, average and adaptive windows, and their
 * gradients) and BATCH_NORM in training (statistics, running statistics, output with an
 * optional fused ReLU, and the backward). Operands: csrc/core/pg_ops_conv.h; CPU twins:
 * csrc/backends/cpu/cpu_pool.c and cpu_batchnorm.c. float32 and float64.
 *
 * Until these, cuda composed both from tensor ops (pygpu/_conv_ops.py): an average pooling
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
 *   batch norm        one block per channel: forward, the shifted sums of x and x^2 (the
 *                     shift is the channel's first value, as the CPU's, so the variance does
 *                     not cancel) accumulated in double, then the output pass; backward, the
 *                     sums of dy and dy * (x - mean) in double (through the fused ReLU's mask,
 *                     read from y), then dx. Equal to the CPU's to rounding (other order). */
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

#define PG_BN_BLOCK 512

/* A thread's walk over one channel's N*L elements of x (N, C, L), blockDim.x apart: the
 * flat position j as (n, l), stepped without a division per element */
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
#define PG_BN_FOR(w, a, M)                                                                         \
    pg_bn_walk w(threadIdx.x, blockDim.x, (a).L);                                                  \
    for (int64_t j_ = threadIdx.x; j_ < (M); j_ += blockDim.x, w.next())

/* one block per channel c (grid-stride over channels): x (N, C, L) */
template <typename T> __global__ void pg_bn_fwd_kernel(pg_cuda_bn_args a)
{
    __shared__ double red[32];
    const T *x = (const T *)a.x;
    T *y = (T *)a.y;
    const int64_t M = a.N * a.L;
    for (int64_t c = blockIdx.x; c < a.C; c += gridDim.x) {
        const T k = x[c * a.L];
        double s1 = 0, s2 = 0;
        PG_BN_FOR(w0, a, M)
        {
            const double d = (double)(x[w0.at(a.C, c)] - k);
            s1 += d;
            s2 += d * d;
        }
        s1 = pg_block_sum(s1, red);
        s2 = pg_block_sum(s2, red);
        const double dmean = s1 / (double)M;
        double var = s2 / (double)M - dmean * dmean;
        var = var < 0 ? 0 : var;
        const double mean = (double)k + dmean, rstd = 1.0 / sqrt(var + a.eps);
        if (threadIdx.x == 0) {
            T *save = (T *)a.save;
            save[c] = (T)mean;
            save[a.C + c] = (T)rstd;
            if (a.running_mean) {
                T *rm = (T *)a.running_mean, *rv = (T *)a.running_var;
                rm[c] = (T)((1 - a.momentum) * (double)rm[c] + a.momentum * mean);
                rv[c] = (T)((1 - a.momentum) * (double)rv[c] +
                            a.momentum * var * (double)M / (double)(M - 1));
            }
        }
        const double w = a.w ? (double)((const T *)a.w)[c] : 1.0;
        const double b = a.b ? (double)((const T *)a.b)[c] : 0.0;
        const T sc = (T)(w * rstd), sh = (T)(b - mean * w * rstd);
        PG_BN_FOR(w2, a, M)
        {
            const int64_t at = w2.at(a.C, c);
            const T v = x[at] * sc + sh;
            y[at] = a.relu && !(v > 0) ? T(0) : v;
        }
    }
}

template <typename T> __global__ void pg_bn_bwd_kernel(pg_cuda_bn_args a)
{
    __shared__ double red[32];
    const T *dy = (const T *)a.dy, *x = (const T *)a.x, *y = (const T *)a.y;
    const T *save = (const T *)a.save;
    T *dx = (T *)a.dx;
    const int64_t M = a.N * a.L;
    for (int64_t c = blockIdx.x; c < a.C; c += gridDim.x) {
        const T mean = save[c], rstd = save[a.C + c];
        double s1 = 0, s2 = 0;
        PG_BN_FOR(w1, a, M)
        {
            const int64_t at = w1.at(a.C, c);
            const T g = a.relu && !(y[at] > 0) ? T(0) : dy[at];
            s1 += (double)g;
            s2 += (double)(g * (x[at] - mean));
        }
        s1 = pg_block_sum(s1, red);
        s2 = pg_block_sum(s2, red) * (double)rstd; /* sum(dy * xhat) */
        if (threadIdx.x == 0) {
            if (a.dw)
                ((T *)a.dw)[c] = (T)s2;
            if (a.db)
                ((T *)a.db)[c] = (T)s1;
        }
        const double w = a.w ? (double)((const T *)a.w)[c] : 1.0;
        const T k1 = (T)(w * (double)rstd), k2 = (T)(s1 / (double)M),
                k3 = (T)(s2 / (double)M * (double)rstd);
        PG_BN_FOR(w2, a, M)
        {
            const int64_t at = w2.at(a.C, c);
            const T g = a.relu && !(y[at] > 0) ? T(0) : dy[at];
            dx[at] = k1 * (g - k2 - (x[at] - mean) * k3);
        }
    }
}

extern "C" cudaError_t pg_kernel_batch_norm(const pg_cuda_ctx *ctx, const pg_cuda_bn_args *a)
{
    if (a->C == 0 || a->N * a->L == 0)
        return cudaSuccess;
    const int64_t cap = 65535;
    const unsigned grid = (unsigned)(a->C < cap ? a->C : cap);
    return pg_dispatch_dtype(a->dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_floating_point<T>::value) {
            if (a->backward)
                pg_bn_bwd_kernel<T>
                    <<<grid, PG_BN_BLOCK, 0, pg_cuda_noted(ctx, "pg_bn_bwd_kernel")>>>(*a);
            else
                pg_bn_fwd_kernel<T>
                    <<<grid, PG_BN_BLOCK, 0, pg_cuda_noted(ctx, "pg_bn_fwd_kernel")>>>(*a);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}
