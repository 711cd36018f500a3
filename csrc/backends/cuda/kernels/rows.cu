/* rows.cu - the row ops as single CUDA kernels: softmax and log_softmax, layer_norm over
 * the rows of a contiguous (R, C) tensor, and clamp with two number bounds. CPU twins:
 * csrc/backends/cpu/cpu_train.c (softmax, layer_norm), cpu_unary.c (clamp).
 *
 * The first H200 run composed softmax from five kernels (max, subtract, exp, sum,
 * divide: 0.18x PyTorch's bandwidth at 64M elements) because cuda declined the SOFTMAX
 * node. Here one block takes a row. A row that fits the block's registers (up to 8
 * 16-byte packs a thread: 32768 floats at 1024 threads) is read once into them; its
 * maximum, its sum of exponentials and its output come from there. A longer row is read
 * once for its maximum and its sum of exponentials together (the running maximum rescales
 * the running sum, as the online softmax does) and a second time, from cache, to write.
 * The block combines the threads' values with warp shuffles, then one value per warp
 * (pg_cuda_block.cuh). layer_norm takes the CPU's two
 * passes (the mean, then the variance of x - mean: no cancellation) and a third that
 * writes, the row staying in cache; it saves each row's mean and rstd when asked. Its
 * backward (csrc/backends/cpu/cpu_layer_norm.c is the twin) is two kernels: one block per
 * row for dx (the row's two sums, then dx), then one block per 32 columns for dw and db,
 * its threads' rows summed through shared memory in a fixed order (no atomics: the same
 * bits on every run). Rows of float32 whose length is a multiple of 4 (16
 * bytes; 2 for float64) and whose pointers are 16-byte aligned move 16 bytes per access.
 * Arithmetic in the element type, as the CPU's vector lanes: float32 results agree with
 * the CPU's to rounding, not bit for bit (the sums run in another order). NaN anywhere in
 * a softmax row gives a NaN row, a row of -inf gives NaN, as the CPU and PyTorch. */
#include <math.h>

#include "pg_cuda_block.cuh"

/* the elements of V-packs this thread reads of a row of C / V packs */
#define PG_ROW_PACKS(j, C, V) for (int64_t j = threadIdx.x; j < (C) / (V); j += blockDim.x)

__device__ __forceinline__ float pg_row_exp(float v) { return expf(v); }
__device__ __forceinline__ double pg_row_exp(double v) { return exp(v); }
__device__ __forceinline__ float pg_row_log(float v) { return logf(v); }
__device__ __forceinline__ double pg_row_log(double v) { return log(v); }

/* y (R, C) = softmax (or log_softmax) of each row of x (R, C) */
template <typename T, int V, bool LOG>
__global__ void pg_softmax_rows_kernel(const T *x, T *y, int64_t R, int64_t C)
{
    __shared__ T red[32];
    for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
        const pg_pack<T, V> *row = reinterpret_cast<const pg_pack<T, V> *>(x + r * C);
        pg_pack<T, V> *out = reinterpret_cast<pg_pack<T, V> *>(y + r * C);
        T m = -INFINITY, s = 0; /* this thread's running maximum and sum of exp(x - m) */
        PG_ROW_PACKS(j, C, V)
        {
            pg_pack<T, V> p = row[j];
#pragma unroll
            for (int k = 0; k < V; k++) {
                T v = p.v[k];
                if (v > m) {
                    s = s * pg_row_exp(m - v) + T(1);
                    m = v;
                } else if (v != -INFINITY) { /* -inf adds 0 (and NaN gives NaN) */
                    s += pg_row_exp(v - m);
                }
            }
        }
        const T M = pg_block_max(m, red, T(-INFINITY));
        /* to the row's maximum (a thread that saw only -inf and NaN keeps its NaN) */
        s = m == -INFINITY ? s * T(0) : s * pg_row_exp(m - M);
        const T S = pg_block_sum(s, red);
        const T inv = T(1) / S, log_s = pg_row_log(S);
        PG_ROW_PACKS(j, C, V)
        {
            pg_pack<T, V> p = row[j];
#pragma unroll
            for (int k = 0; k < V; k++) /* a row of -inf only: 0 / 0 */
                p.v[k] = M == -INFINITY ? T(NAN)
                         : LOG          ? (p.v[k] - M) - log_s
                                        : pg_row_exp(p.v[k] - M) * inv;
            out[j] = p;
        }
    }
}

/* The same for rows that fit the block's registers, P packs a thread (C <= P * V * blockDim):
 * the row is read once into registers, its maximum and then its sum of exponentials are
 * block reductions, and the exponentials kept in registers are written: one read and one
 * write, no online rescaling, exp once per element (the online kernel above reached 0.83x
 * PyTorch's bandwidth on the H200 of 2026-11-28 at rows of 4096). A NaN gives a NaN row
 * through the sum, a row of -inf NaN, as above. */
template <typename T, int V, int P, bool LOG>
__global__ void pg_softmax_rows_reg_kernel(const T *x, T *y, int64_t R, int64_t C)
{
    __shared__ T red[32];
    const int64_t packs = C / V;
    for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
        const pg_pack<T, V> *row = reinterpret_cast<const pg_pack<T, V> *>(x + r * C);
        pg_pack<T, V> *out = reinterpret_cast<pg_pack<T, V> *>(y + r * C);
        pg_pack<T, V> p[P];
        T m = -INFINITY;
#pragma unroll
        for (int i = 0; i < P; i++) {
            const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
            if (j < packs) {
                p[i] = row[j];
#pragma unroll
                for (int k = 0; k < V; k++)
                    m = p[i].v[k] > m ? p[i].v[k] : m;
            }
        }
        const T M = pg_block_max(m, red, T(-INFINITY));
        T s = 0;
#pragma unroll
        for (int i = 0; i < P; i++) {
            if (threadIdx.x + (int64_t)i * blockDim.x < packs) {
#pragma unroll
                for (int k = 0; k < V; k++) {
                    const T e = p[i].v[k] == -INFINITY ? T(0) : pg_row_exp(p[i].v[k] - M);
                    s += e;
                    if (!LOG)
                        p[i].v[k] = e;
                }
            }
        }
        const T S = pg_block_sum(s, red);
        const T inv = T(1) / S, log_s = pg_row_log(S);
#pragma unroll
        for (int i = 0; i < P; i++) {
            const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
            if (j < packs) {
#pragma unroll
                for (int k = 0; k < V; k++)
                    p[i].v[k] = M == -INFINITY ? T(NAN)
                                : LOG          ? (p[i].v[k] - M) - log_s
                                               : p[i].v[k] * inv;
                out[j] = p[i];
            }
        }
    }
}

/* y (R, C) = (x - mean) / sqrt(var + eps) of each row (* w + b, each (C,) or NULL) */
template <typename T, int V>
__global__ void pg_layer_norm_rows_kernel(const T *x, T *y, const T *w, const T *b, T *save,
                                          int64_t R, int64_t C, double eps)
{
    __shared__ T red[32];
    const pg_pack<T, V> *wp = reinterpret_cast<const pg_pack<T, V> *>(w);
    const pg_pack<T, V> *bp = reinterpret_cast<const pg_pack<T, V> *>(b);
    for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
        const pg_pack<T, V> *row = reinterpret_cast<const pg_pack<T, V> *>(x + r * C);
        pg_pack<T, V> *out = reinterpret_cast<pg_pack<T, V> *>(y + r * C);
        T s = 0;
        PG_ROW_PACKS(j, C, V)
        {
            pg_pack<T, V> p = row[j];
#pragma unroll
            for (int k = 0; k < V; k++)
                s += p.v[k];
        }
        const T mean = pg_block_sum(s, red) / (T)C;
        T q = 0;
        PG_ROW_PACKS(j, C, V)
        {
            pg_pack<T, V> p = row[j];
#pragma unroll
            for (int k = 0; k < V; k++) {
                T d = p.v[k] - mean;
                q += d * d;
            }
        }
        q = pg_block_sum(q, red);
        const T rstd = (T)(1.0 / sqrt((double)q / (double)C + eps));
        if (save && threadIdx.x == 0) {
            save[2 * r] = mean;
            save[2 * r + 1] = rstd;
        }
        PG_ROW_PACKS(j, C, V)
        {
            pg_pack<T, V> p = row[j];
#pragma unroll
            for (int k = 0; k < V; k++)
                p.v[k] = (p.v[k] - mean) * rstd;
            if (w) {
                pg_pack<T, V> g = wp[j];
#pragma unroll
                for (int k = 0; k < V; k++)
                    p.v[k] *= g.v[k];
            }
            if (b) {
                pg_pack<T, V> c = bp[j];
#pragma unroll
                for (int k = 0; k < V; k++)
                    p.v[k] += c.v[k];
            }
            out[j] = p;
        }
    }
}

/* pack j of a row of dy, times pack j of w where there is a weight (wp NULL: none): the
 * gradient reaching xhat, which both passes of the backward below read */
template <typename T, int V>
__device__ __forceinline__ pg_pack<T, V> pg_ln_scaled_grad(const pg_pack<T, V> *grow,
                                                          const pg_pack<T, V> *wp, int64_t j)
{
    pg_pack<T, V> g = grow[j];
    if (wp) {
        const pg_pack<T, V> wv = wp[j];
#pragma unroll
        for (int k = 0; k < V; k++)
            g.v[k] *= wv.v[k];
    }
    return g;
}

/* dx (R, C) of layer_norm from dy, x (R, C), w (C,) or NULL and save (R, 2) (the rows' mean
 * and rstd): with gw = dy * w and xhat = (x - mean) * rstd,
 * dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)) */
template <typename T, int V>
__global__ void pg_layer_norm_bwd_rows_kernel(const T *dy, const T *x, const T *w, const T *save,
                                              T *dx, int64_t R, int64_t C)
{
    __shared__ T red[32];
    const pg_pack<T, V> *wp = reinterpret_cast<const pg_pack<T, V> *>(w);
    for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
        const pg_pack<T, V> *grow = reinterpret_cast<const pg_pack<T, V> *>(dy + r * C);
        const pg_pack<T, V> *xrow = reinterpret_cast<const pg_pack<T, V> *>(x + r * C);
        pg_pack<T, V> *out = reinterpret_cast<pg_pack<T, V> *>(dx + r * C);
        const T mean = save[2 * r], rstd = save[2 * r + 1];
        T a = 0, bs = 0;
        PG_ROW_PACKS(j, C, V)
        {
            pg_pack<T, V> g = pg_ln_scaled_grad(grow, wp, j), xv = xrow[j];
#pragma unroll
            for (int k = 0; k < V; k++) {
                a += g.v[k];
                bs += g.v[k] * (xv.v[k] - mean);
            }
        }
        const T ka = pg_block_sum(a, red) / (T)C;
        const T kb = pg_block_sum(bs, red) * rstd / (T)C;
        PG_ROW_PACKS(j, C, V)
        {
            pg_pack<T, V> g = pg_ln_scaled_grad(grow, wp, j), xv = xrow[j];
#pragma unroll
            for (int k = 0; k < V; k++)
                g.v[k] = rstd * (g.v[k] - ka - (xv.v[k] - mean) * rstd * kb);
            out[j] = g;
        }
    }
}

/* dw (C,) = sum over rows of dy * xhat, db (C,) = sum of dy (either NULL: not wanted). A
 * block of PG_LN_COLS x PG_LN_LANES threads takes PG_LN_COLS adjacent columns (coalesced
 * reads along a row); its lanes take every PG_LN_LANES-th row; the lanes' sums are then
 * added in lane order through shared memory. */
#define PG_LN_COLS 32
#define PG_LN_LANES 16
template <typename T>
__global__ void pg_layer_norm_bwd_cols_kernel(const T *dy, const T *x, const T *save, T *dw,
                                              T *db, int64_t R, int64_t C)
{
    __shared__ T sw[PG_LN_LANES][PG_LN_COLS], sb[PG_LN_LANES][PG_LN_COLS];
    const int64_t j = (int64_t)blockIdx.x * PG_LN_COLS + threadIdx.x;
    T aw = 0, ab = 0;
    if (j < C)
        for (int64_t r = threadIdx.y; r < R; r += PG_LN_LANES) {
            const T g = dy[r * C + j];
            aw += g * ((x[r * C + j] - save[2 * r]) * save[2 * r + 1]);
            ab += g;
        }
    sw[threadIdx.y][threadIdx.x] = aw;
    sb[threadIdx.y][threadIdx.x] = ab;
    __syncthreads();
    if (threadIdx.y == 0 && j < C) {
        T s1 = 0, s2 = 0;
        for (int k = 0; k < PG_LN_LANES; k++) {
            s1 += sw[k][threadIdx.x];
            s2 += sb[k][threadIdx.x];
        }
        if (dw)
            dw[j] = s1;
        if (db)
            db[j] = s2;
    }
}

/* dst = min(max(src, lo), hi) elementwise; NaN stays NaN (neither compare holds) */
template <typename T, bool CONTIG>
__global__ void pg_clamp_kernel(pg_cuda_iter it, T *dst, const T *src, T lo, T hi)
{
    for (int64_t i = pg_thread_index(); i < it.numel; i += pg_thread_count()) {
        int64_t off[2] = {i, i};
        if (!CONTIG)
            pg_iter_offsets<2>(it, i, off);
        T v = src[off[1]];
        v = v < lo ? lo : v;
        dst[off[0]] = v > hi ? hi : v;
    }
}

/* the contiguous, aligned case: n elements as 16-byte packs, the tail element-wise, no
 * index arithmetic (the element-wise kernel above moved 2.9 TB/s on the H200 of
 * 2026-11-28 against PyTorch's 4.2) */
template <typename T, int V>
__global__ void pg_clamp_vec_kernel(int64_t n, T *dst, const T *src, T lo, T hi)
{
    const int64_t packs = n / V;
    const pg_pack<T, V> *sp = reinterpret_cast<const pg_pack<T, V> *>(src);
    pg_pack<T, V> *dp = reinterpret_cast<pg_pack<T, V> *>(dst);
    for (int64_t p = pg_thread_index(); p < packs; p += pg_thread_count()) {
        pg_pack<T, V> x = sp[p];
#pragma unroll
        for (int k = 0; k < V; k++) {
            T v = x.v[k] < lo ? lo : x.v[k];
            x.v[k] = v > hi ? hi : v;
        }
        dp[p] = x;
    }
    for (int64_t i = packs * V + pg_thread_index(); i < n; i += pg_thread_count()) {
        T v = src[i] < lo ? lo : src[i];
        dst[i] = v > hi ? hi : v;
    }
}

/* V elements per access when the row length and every pointer allow 16-byte accesses */
template <typename T> static int pg_row_vec(int64_t C, const void *a, const void *b,
                                            const void *c, const void *d)
{
    constexpr int V = 16 / sizeof(T);
    const void *ps[4] = {a, b, c, d};
    if (C % V != 0)
        return 1;
    for (const void *p : ps)
        if (p != NULL && ((uintptr_t)p & 15u) != 0)
            return 1;
    return V;
}

/* f(std::integral_constant<int, W>{}) with W the elements a thread reads per access: each
 * row kernel is instantiated at both widths and the launchers choose here, once */
template <typename T, class F>
static void pg_row_width(int64_t C, const void *a, const void *b, const void *c, const void *d,
                         F f)
{
    constexpr int V = 16 / sizeof(T);
    if (pg_row_vec<T>(C, a, b, c, d) == V)
        f(std::integral_constant<int, V>{});
    else
        f(std::integral_constant<int, 1>{});
}

static unsigned pg_row_grid(int64_t R, int block, const pg_cuda_ctx *ctx)
{
    int64_t cap = (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 16) * (2048 / block) * 8;
    return (unsigned)(R < cap ? R : cap);
}

extern "C" cudaError_t pg_kernel_softmax_rows(const pg_cuda_ctx *ctx, int dtype, int log,
                                              const void *x, void *y, int64_t R, int64_t C)
{
    if (R == 0 || C == 0)
        return cudaSuccess;
    const int block = pg_cuda_row_block(C);
    const unsigned grid = pg_row_grid(R, block, ctx);
    return pg_dispatch_dtype(dtype, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        if constexpr (std::is_floating_point<T>::value) {
            constexpr int V = 16 / sizeof(T);
            const T *xs = (const T *)x;
            T *ys = (T *)y;
            const char *name = log ? "pg_log_softmax_rows_kernel" : "pg_softmax_rows_kernel";
            const bool vec = pg_row_vec<T>(C, x, y, NULL, NULL) == V;
            /* packs a thread holds when the row sits in registers */
            const int64_t per = ((vec ? C / V : C) + block - 1) / block;
            auto launch = [&](auto v, auto p, auto lg) {
                constexpr int VV = decltype(v)::value, PP = decltype(p)::value;
                constexpr bool LG = decltype(lg)::value;
                if constexpr (PP == 0)
                    pg_softmax_rows_kernel<T, VV, LG>
                        <<<grid, block, 0, pg_cuda_noted(ctx, name)>>>(xs, ys, R, C);
                else
                    pg_softmax_rows_reg_kernel<T, VV, PP, LG>
                        <<<grid, block, 0, pg_cuda_noted(ctx, name)>>>(xs, ys, R, C);
            };
            auto by_packs = [&](auto v, auto lg) {
                if (per <= 1)
                    launch(v, std::integral_constant<int, 1>{}, lg);
                else if (per <= 2)
                    launch(v, std::integral_constant<int, 2>{}, lg);
                else if (per <= 4)
                    launch(v, std::integral_constant<int, 4>{}, lg);
                else if (per <= 8)
                    launch(v, std::integral_constant<int, 8>{}, lg);
                else
                    launch(v, std::integral_constant<int, 0>{}, lg);
            };
            auto by_log = [&](auto v) {
                if (log)
                    by_packs(v, std::true_type{});
                else
                    by_packs(v, std::false_type{});
            };
            pg_row_width<T>(C, x, y, NULL, NULL, by_log);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}

extern "C" cudaError_t pg_kernel_layer_norm_rows(const pg_cuda_ctx *ctx, int dtype, const void *x,
                                                 void *y, const void *w, const void *b,
                                                 void *save, int64_t R, int64_t C, double eps)
{
    if (R == 0 || C == 0)
        return cudaSuccess;
    const int block = pg_cuda_row_block(C);
    const unsigned grid = pg_row_grid(R, block, ctx);
    return pg_dispatch_dtype(dtype, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        if constexpr (std::is_floating_point<T>::value) {
            pg_row_width<T>(C, x, y, w, b, [&](auto v) {
                pg_layer_norm_rows_kernel<T, decltype(v)::value>
                    <<<grid, block, 0, pg_cuda_noted(ctx, "pg_layer_norm_rows_kernel")>>>(
                        (const T *)x, (T *)y, (const T *)w, (const T *)b, (T *)save, R, C, eps);
            });
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}

extern "C" cudaError_t pg_kernel_layer_norm_bwd_rows(const pg_cuda_ctx *ctx, int dtype,
                                                     const void *dy, const void *x,
                                                     const void *w, const void *save, void *dx,
                                                     void *dw, void *db, int64_t R, int64_t C)
{
    if (R == 0 || C == 0)
        return cudaSuccess;
    const int block = pg_cuda_row_block(C);
    const unsigned grid = pg_row_grid(R, block, ctx);
    return pg_dispatch_dtype(dtype, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        if constexpr (std::is_floating_point<T>::value) {
            const T *g = (const T *)dy, *xs = (const T *)x, *ws = (const T *)w;
            const T *sv = (const T *)save;
            pg_row_width<T>(C, dy, x, w, dx, [&](auto v) {
                pg_layer_norm_bwd_rows_kernel<T, decltype(v)::value>
                    <<<grid, block, 0, pg_cuda_noted(ctx, "pg_layer_norm_bwd_rows_kernel")>>>(
                        g, xs, ws, sv, (T *)dx, R, C);
            });
            cudaError_t err = cudaGetLastError();
            if (err != cudaSuccess || (!dw && !db))
                return err;
            const dim3 cblock(PG_LN_COLS, PG_LN_LANES);
            const unsigned cgrid = (unsigned)((C + PG_LN_COLS - 1) / PG_LN_COLS);
            pg_layer_norm_bwd_cols_kernel<T>
                <<<cgrid, cblock, 0, pg_cuda_noted(ctx, "pg_layer_norm_bwd_cols_kernel")>>>(
                    g, xs, sv, (T *)dw, (T *)db, R, C);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}

extern "C" cudaError_t pg_kernel_clamp(const pg_cuda_ctx *ctx, int dtype, void *dst,
                                       const void *src, const pg_cuda_iter *it, double lo,
                                       double hi)
{
    if (it->numel == 0)
        return cudaSuccess;
    const unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
    return pg_dispatch_dtype(dtype, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        if constexpr (std::is_floating_point<T>::value) {
            constexpr int V = 16 / sizeof(T);
            if (pg_cuda_iter_contiguous(it) && pg_cuda_aligned(src, 16) &&
                pg_cuda_aligned(dst, 16)) {
                const unsigned vgrid = pg_cuda_grid((it->numel + V - 1) / V, PG_CUDA_BLOCK, ctx);
                pg_clamp_vec_kernel<T, V>
                    <<<vgrid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_clamp_vec_kernel")>>>(
                        it->numel, (T *)dst, (const T *)src, (T)lo, (T)hi);
            } else if (pg_cuda_iter_contiguous(it))
                pg_clamp_kernel<T, true>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_clamp_kernel")>>>(
                        *it, (T *)dst, (const T *)src, (T)lo, (T)hi);
            else
                pg_clamp_kernel<T, false>
                    <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_clamp_kernel")>>>(
                        *it, (T *)dst, (const T *)src, (T)lo, (T)hi);
            return cudaGetLastError();
        }
        return cudaErrorInvalidValue;
    });
}
