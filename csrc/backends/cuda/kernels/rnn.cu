/* rnn.cu - the fused recurrent cells on CUDA: RNN_CELL and RNN_CELL_BWD (operand slots in
 * csrc/core/pg_ops_rnn.c; CPU twin csrc/backends/cpu/cpu_rnn.c, which the tests hold these
 * against). One thread per (row, hidden unit j): every gate's pre-activation (input
 * projection + hidden projection + bias), the activations, the cell update and the output
 * in one pass, saving the activated gates, h_prev and c_prev for the backward; the
 * backward reads them and writes the pre-activation gradients and the carried state's.
 * A thread reads and writes only its own column j of the state rows, so the in-place state
 * update has no race. The GEMMs around the cell (the hidden projection, the weight
 * gradients) are cuBLAS calls through the GEMM contract (cuda_gemm.c). */
#include "pg_cuda_common.cuh"

template <typename T> __device__ __forceinline__ T pg_rnn_exp(T x)
{
    if constexpr (std::is_same<T, float>::value)
        return expf(x);
    else
        return exp(x);
}
template <typename T> __device__ __forceinline__ T pg_rnn_tanh(T x)
{
    if constexpr (std::is_same<T, float>::value)
        return tanhf(x);
    else
        return tanh(x);
}
template <typename T> __device__ __forceinline__ T pg_rnn_sig(T x)
{
    return T(1) / (T(1) + pg_rnn_exp(-x));
}

template <typename T> __global__ void pg_rnn_cell_kernel(pg_cuda_rnn_args a)
{
    const int64_t H = a.H, P = a.P, n = a.rows * H;
    const int64_t ks = a.saved * H; /* the cell's saved gate blocks */
    for (int64_t idx = pg_thread_index(); idx < n; idx += pg_thread_count()) {
        int64_t r = idx / H, j = idx % H;
        const T *g = (const T *)a.g + r * a.ldg, *hw = (const T *)a.hw + r * a.KG;
        const T *b = (const T *)a.b, *hp = (const T *)a.hp + r * P;
        T *y = (T *)a.y + r * a.ldy;
        T *s = a.save ? (T *)a.save + r * a.S : nullptr;
        if (s && j < P)
            s[ks + j] = hp[j];
        T out;
        if (a.cell == PG_RNN_CELL_LSTM) {
            T *c = (T *)a.c + r * H;
            T cp = c[j];
            if (s)
                s[ks + P + j] = cp;
            T i = pg_rnn_sig<T>(g[j] + hw[j] + b[j]);
            T f = pg_rnn_sig<T>(g[H + j] + hw[H + j] + b[H + j]);
            T gg = pg_rnn_tanh<T>(g[2 * H + j] + hw[2 * H + j] + b[2 * H + j]);
            T o = pg_rnn_sig<T>(g[3 * H + j] + hw[3 * H + j] + b[3 * H + j]);
            T cn = f * cp + i * gg;
            out = o * pg_rnn_tanh<T>(cn);
            c[j] = cn;
            if (s) {
                s[j] = i;
                s[H + j] = f;
                s[2 * H + j] = gg;
                s[3 * H + j] = o;
            }
        } else if (a.cell == PG_RNN_CELL_GRU) {
            T r_ = pg_rnn_sig<T>(g[j] + hw[j] + b[j]);
            T z = pg_rnn_sig<T>(g[H + j] + hw[H + j] + b[H + j]);
            T hn = hw[2 * H + j] + b[2 * H + j];
            T nn = pg_rnn_tanh<T>(g[2 * H + j] + r_ * hn);
            out = (T(1) - z) * nn + z * hp[j];
            if (s) {
                s[j] = r_;
                s[H + j] = z;
                s[2 * H + j] = nn;
                s[3 * H + j] = hn;
            }
        } else {
            T v = g[j] + hw[j] + b[j];
            out = a.cell == PG_RNN_CELL_RNN_RELU ? (v > T(0) ? v : T(0)) : pg_rnn_tanh<T>(v);
            if (s)
                s[j] = out;
        }
        y[j] = out;
        if (a.hn)
            ((T *)a.hn)[r * P + j] = out;
    }
}

template <typename T> __global__ void pg_rnn_cell_bwd_kernel(pg_cuda_rnn_args a)
{
    const int64_t H = a.H, P = a.P, n = a.rows * H;
    for (int64_t idx = pg_thread_index(); idx < n; idx += pg_thread_count()) {
        int64_t r = idx / H, j = idx % H;
        const T *s = (const T *)a.save + r * a.S;
        T d = (a.dy ? ((const T *)a.dy)[r * a.lddy + j] : T(0)) +
              (a.dh ? ((const T *)a.dh)[r * P + j] : T(0));
        T *dg = (T *)a.dg + r * a.lddg;
        if (a.cell == PG_RNN_CELL_LSTM) {
            const T *cp = s + 4 * H + P;
            T i = s[j], f = s[H + j], gg = s[2 * H + j], o = s[3 * H + j];
            T c = f * cp[j] + i * gg, tc = pg_rnn_tanh<T>(c);
            T *dc = (T *)a.c + r * H;
            T dct = dc[j] + d * o * (T(1) - tc * tc);
            dg[j] = dct * gg * i * (T(1) - i);
            dg[H + j] = dct * cp[j] * f * (T(1) - f);
            dg[2 * H + j] = dct * i * (T(1) - gg * gg);
            dg[3 * H + j] = d * tc * o * (T(1) - o);
            dc[j] = dct * f;
        } else if (a.cell == PG_RNN_CELL_GRU) {
            const T *hp = s + 4 * H;
            T r_ = s[j], z = s[H + j], nn = s[2 * H + j], hn = s[3 * H + j];
            T dan = d * (T(1) - z) * (T(1) - nn * nn);
            T dar = dan * hn * r_ * (T(1) - r_);
            T daz = d * (hp[j] - nn) * z * (T(1) - z);
            T *dhw = (T *)a.dhw + r * a.KG;
            dg[j] = dhw[j] = dar;
            dg[H + j] = dhw[H + j] = daz;
            dg[2 * H + j] = dan;
            dhw[2 * H + j] = dan * r_;
            ((T *)a.dhout)[r * P + j] = d * z;
        } else {
            T h = s[j];
            dg[j] = a.cell == PG_RNN_CELL_RNN_RELU ? (h > T(0) ? d : T(0)) : d * (T(1) - h * h);
        }
    }
}

extern "C" cudaError_t pg_kernel_rnn_cell(const pg_cuda_ctx *ctx, const pg_cuda_rnn_args *a)
{
    int64_t n = a->rows * a->H;
    if (n == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(n, PG_CUDA_BLOCK, ctx);
    if (a->dtype == PG_FLOAT32) {
        if (a->bwd)
            pg_rnn_cell_bwd_kernel<float>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_rnn_cell_bwd_kernel")>>>(*a);
        else
            pg_rnn_cell_kernel<float>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_rnn_cell_kernel")>>>(*a);
    } else if (a->dtype == PG_FLOAT64) {
        if (a->bwd)
            pg_rnn_cell_bwd_kernel<double>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_rnn_cell_bwd_kernel")>>>(*a);
        else
            pg_rnn_cell_kernel<double>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_rnn_cell_kernel")>>>(*a);
    } else {
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
