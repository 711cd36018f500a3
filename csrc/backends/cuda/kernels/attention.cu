/* attention.cu - scaled-dot-product attention on CUDA, flash-attention style: SDPA and
 * SDPA_BWD (operands and parameters: csrc/core/pg_ops_attention.c; CPU twin:
 * csrc/backends/cpu/cpu_attention.c, which the tests hold these against).
 *
 * Forward: a block per (query tile of BR rows, head, batch), a thread per query row. The
 * block walks the key/value rows in tiles of BC, each loaded once into shared memory by
 * all its threads; each thread keeps its query row, its running max m, sum l and output
 * accumulator in registers (an online softmax: the accumulator is rescaled by
 * exp(m_old - m_new) when the max grows), so the L x S scores never exist. It writes the
 * output row and its logsumexp m + log l.
 * Backward, recomputing the scores from the logsumexp (FlashAttention-2's split, without
 * atomics): D = rowsum(dO * O) per query row; then a block per (key tile, key/value head,
 * batch) with a thread per key row accumulates dK and dV over every query tile (in shared
 * memory) of every query head of its group; and a block per (query tile, head, batch)
 * with a thread per query row accumulates dQ over the key tiles.
 * Dropout draws the CPU's decisions: element (row i, column j) of head (b, h) is kept when
 * Philox word (offset + ((b Hq + h) L + i) S + j) is >= p * 2^32 (pg_philox.h).
 * Head dimensions up to PG_ATT_MAXD; a first version that favours clarity over speed (a
 * thread per row, no tensor cores): no GPU was at hand to tune it on. */
#include <math.h>

#include "pg_cuda_common.cuh"
#include "pg_philox.h"

#define PG_ATT_MAXD PG_CUDA_SDPA_MAX_HEAD

template <typename T> struct pg_att_tile {
    static constexpr int BR = 32;                                   /* query rows per block */
    static constexpr int BC = std::is_same<T, float>::value ? 32 : 16; /* key rows per tile */
};

template <typename T> __device__ __forceinline__ T pg_att_exp(T x)
{
    if constexpr (std::is_same<T, float>::value)
        return expf(x);
    else
        return exp(x);
}
template <typename T> __device__ __forceinline__ T pg_att_log(T x)
{
    if constexpr (std::is_same<T, float>::value)
        return logf(x);
    else
        return log(x);
}
template <typename T> __device__ __forceinline__ T pg_att_inf()
{
    return (T)INFINITY;
}

/* the score s of (b, h, i, j) with the mask and the causal cut applied */
template <typename T>
__device__ __forceinline__ T pg_att_masked(const pg_cuda_sdpa_args &a, T s, int64_t b, int64_t h,
                                           int64_t i, int64_t j)
{
    if (a.causal && j > i)
        return -pg_att_inf<T>();
    if (a.mask) {
        int64_t off = b * a.ms[0] + h * a.ms[1] + i * a.ms[2] + j * a.ms[3];
        if (a.mask_bool)
            return ((const uint8_t *)a.mask)[off] ? s : -pg_att_inf<T>();
        return s + ((const T *)a.mask)[off];
    }
    return s;
}

/* dropout's factor for (b, h, i, j): 0 or 1 / (1 - p) */
template <typename T>
__device__ __forceinline__ T pg_att_keep(const pg_cuda_sdpa_args &a, int64_t b, int64_t h,
                                         int64_t i, int64_t j)
{
    uint64_t idx = a.offset + (uint64_t)(((b * a.Hq + h) * a.L + i) * a.S + j);
    pg_philox_out o = pg_philox4x32_10(idx >> 2, a.seed);
    return o.v[idx & 3] >= a.thresh ? (T)a.inv_keep : T(0);
}

template <typename T> __global__ void pg_sdpa_fwd_kernel(pg_cuda_sdpa_args a)
{
    constexpr int BR = pg_att_tile<T>::BR, BC = pg_att_tile<T>::BC;
    __shared__ T kt[BC][PG_ATT_MAXD];
    __shared__ T vt[BC][PG_ATT_MAXD];
    const int64_t b = blockIdx.z, h = blockIdx.y, i = (int64_t)blockIdx.x * BR + threadIdx.x;
    const int64_t hk = h / (a.Hq / a.Hk), E = a.E, Ev = a.Ev;
    const bool active = i < a.L;
    const T *K = (const T *)a.k + b * a.ks[0] + hk * a.ks[1];
    const T *V = (const T *)a.v + b * a.vs[0] + hk * a.vs[1];
    T q[PG_ATT_MAXD], acc[PG_ATT_MAXD];
    if (active) {
        const T *Q = (const T *)a.q + b * a.qs[0] + h * a.qs[1] + i * a.qs[2];
        for (int64_t e = 0; e < E; e++)
            q[e] = Q[e];
    }
    for (int64_t e = 0; e < Ev; e++)
        acc[e] = T(0);
    T m = -pg_att_inf<T>(), l = T(0);
    int64_t last = ((int64_t)blockIdx.x + 1) * BR;
    int64_t jend = a.causal ? (last < a.S ? last : a.S) : a.S; /* the same for the block */
    for (int64_t j0 = 0; j0 < jend; j0 += BC) {
        int64_t bc = jend - j0 < BC ? jend - j0 : BC;
        __syncthreads();
        for (int64_t x = threadIdx.x; x < bc * E; x += BR)
            kt[x / E][x % E] = K[(j0 + x / E) * a.ks[2] + x % E];
        for (int64_t x = threadIdx.x; x < bc * Ev; x += BR)
            vt[x / Ev][x % Ev] = V[(j0 + x / Ev) * a.vs[2] + x % Ev];
        __syncthreads();
        if (!active)
            continue;
        T s[BC], mx = -pg_att_inf<T>();
        for (int64_t c = 0; c < bc; c++) {
            T d = T(0);
            for (int64_t e = 0; e < E; e++)
                d += q[e] * kt[c][e];
            s[c] = pg_att_masked<T>(a, d * (T)a.scale, b, h, i, j0 + c);
            mx = s[c] > mx ? s[c] : mx;
        }
        T mnew = mx > m ? mx : m;
        if (mnew == -pg_att_inf<T>())
            continue; /* every column so far masked out */
        T alpha = m == -pg_att_inf<T>() ? T(0) : pg_att_exp<T>(m - mnew), sum = T(0);
        for (int64_t c = 0; c < bc; c++) {
            T p = pg_att_exp<T>(s[c] - mnew);
            sum += p;
            s[c] = a.thresh ? p * pg_att_keep<T>(a, b, h, i, j0 + c) : p;
        }
        l = l * alpha + sum;
        m = mnew;
        for (int64_t e = 0; e < Ev; e++) {
            T v = acc[e] * alpha;
            for (int64_t c = 0; c < bc; c++)
                v += s[c] * vt[c][e];
            acc[e] = v;
        }
    }
    if (!active)
        return;
    T *O = (T *)a.o + b * a.os[0] + h * a.os[1] + i * a.os[2];
    T inv = l > T(0) ? T(1) / l : T(0);
    for (int64_t e = 0; e < Ev; e++)
        O[e] = acc[e] * inv;
    ((T *)a.lse)[b * a.ls[0] + h * a.ls[1] + i * a.ls[2]] =
        l > T(0) ? m + pg_att_log<T>(l) : pg_att_inf<T>();
}

/* D (Bt, Hq, L) contiguous = rowsum(dO * O) */
template <typename T> __global__ void pg_sdpa_delta_kernel(pg_cuda_sdpa_args a)
{
    int64_t n = a.Bt * a.Hq * a.L;
    for (int64_t x = pg_thread_index(); x < n; x += pg_thread_count()) {
        int64_t i = x % a.L, h = (x / a.L) % a.Hq, b = x / (a.L * a.Hq);
        const T *O = (const T *)a.out + b * a.outs[0] + h * a.outs[1] + i * a.outs[2];
        const T *dO = (const T *)a.dout + b * a.douts[0] + h * a.douts[1] + i * a.douts[2];
        T d = T(0);
        for (int64_t e = 0; e < a.Ev; e++)
            d += O[e] * dO[e];
        ((T *)a.delta)[x] = d;
    }
}

/* dK, dV: a thread per key row j of the tile, over every query row of the group's heads */
template <typename T> __global__ void pg_sdpa_dkdv_kernel(pg_cuda_sdpa_args a)
{
    constexpr int BR = pg_att_tile<T>::BC, BC = pg_att_tile<T>::BC; /* BR query rows per tile */
    __shared__ T qt[BR][PG_ATT_MAXD];
    __shared__ T dot_[BR][PG_ATT_MAXD];
    __shared__ T lt[BR], dt[BR];
    const int64_t b = blockIdx.z, hk = blockIdx.y, j = (int64_t)blockIdx.x * BC + threadIdx.x;
    const int64_t E = a.E, Ev = a.Ev, group = a.Hq / a.Hk;
    const bool active = j < a.S;
    T k[PG_ATT_MAXD], v[PG_ATT_MAXD], dk[PG_ATT_MAXD], dv[PG_ATT_MAXD];
    if (active) {
        const T *K = (const T *)a.k + b * a.ks[0] + hk * a.ks[1] + j * a.ks[2];
        const T *V = (const T *)a.v + b * a.vs[0] + hk * a.vs[1] + j * a.vs[2];
        for (int64_t e = 0; e < E; e++)
            k[e] = K[e];
        for (int64_t e = 0; e < Ev; e++)
            v[e] = V[e];
    }
    for (int64_t e = 0; e < E; e++)
        dk[e] = T(0);
    for (int64_t e = 0; e < Ev; e++)
        dv[e] = T(0);
    int64_t istart = a.causal ? ((int64_t)blockIdx.x * BC) / BR * BR : 0;
    for (int64_t h = hk * group; h < (hk + 1) * group; h++) {
        const T *Q = (const T *)a.q + b * a.qs[0] + h * a.qs[1];
        const T *dO = (const T *)a.dout + b * a.douts[0] + h * a.douts[1];
        const T *LSE = (const T *)a.lse + b * a.ls[0] + h * a.ls[1];
        const T *D = (const T *)a.delta + (b * a.Hq + h) * a.L;
        for (int64_t i0 = istart; i0 < a.L; i0 += BR) {
            int64_t br = a.L - i0 < BR ? a.L - i0 : BR;
            __syncthreads();
            for (int64_t x = threadIdx.x; x < br * E; x += BC)
                qt[x / E][x % E] = Q[(i0 + x / E) * a.qs[2] + x % E];
            for (int64_t x = threadIdx.x; x < br * Ev; x += BC)
                dot_[x / Ev][x % Ev] = dO[(i0 + x / Ev) * a.douts[2] + x % Ev];
            for (int64_t x = threadIdx.x; x < br; x += BC) {
                lt[x] = LSE[(i0 + x) * a.ls[2]];
                dt[x] = D[i0 + x];
            }
            __syncthreads();
            if (!active)
                continue;
            for (int64_t r = 0; r < br; r++) {
                int64_t i = i0 + r;
                if (lt[r] == pg_att_inf<T>())
                    continue; /* a fully masked row: no gradient */
                T s = T(0);
                for (int64_t e = 0; e < E; e++)
                    s += qt[r][e] * k[e];
                s = pg_att_masked<T>(a, s * (T)a.scale, b, h, i, j);
                T p = pg_att_exp<T>(s - lt[r]);
                if (p == T(0))
                    continue;
                T z = a.thresh ? pg_att_keep<T>(a, b, h, i, j) : T(1);
                T dp = T(0);
                for (int64_t e = 0; e < Ev; e++) {
                    dv[e] += p * z * dot_[r][e];
                    dp += dot_[r][e] * v[e];
                }
                T ds = p * (dp * z - dt[r]) * (T)a.scale;
                for (int64_t e = 0; e < E; e++)
                    dk[e] += ds * qt[r][e];
            }
        }
    }
    if (!active)
        return;
    T *dK = (T *)a.dk + b * a.dks[0] + hk * a.dks[1] + j * a.dks[2];
    T *dV = (T *)a.dv + b * a.dvs[0] + hk * a.dvs[1] + j * a.dvs[2];
    for (int64_t e = 0; e < E; e++)
        dK[e] = dk[e];
    for (int64_t e = 0; e < Ev; e++)
        dV[e] = dv[e];
}

/* dQ: a thread per query row i, over the key tiles */
template <typename T> __global__ void pg_sdpa_dq_kernel(pg_cuda_sdpa_args a)
{
    constexpr int BR = pg_att_tile<T>::BR, BC = pg_att_tile<T>::BC;
    __shared__ T kt[BC][PG_ATT_MAXD];
    __shared__ T vt[BC][PG_ATT_MAXD];
    const int64_t b = blockIdx.z, h = blockIdx.y, i = (int64_t)blockIdx.x * BR + threadIdx.x;
    const int64_t hk = h / (a.Hq / a.Hk), E = a.E, Ev = a.Ev;
    const bool active = i < a.L;
    const T *K = (const T *)a.k + b * a.ks[0] + hk * a.ks[1];
    const T *V = (const T *)a.v + b * a.vs[0] + hk * a.vs[1];
    T q[PG_ATT_MAXD], go[PG_ATT_MAXD], dq[PG_ATT_MAXD], lse = T(0), D = T(0);
    if (active) {
        const T *Q = (const T *)a.q + b * a.qs[0] + h * a.qs[1] + i * a.qs[2];
        const T *dO = (const T *)a.dout + b * a.douts[0] + h * a.douts[1] + i * a.douts[2];
        for (int64_t e = 0; e < E; e++)
            q[e] = Q[e];
        for (int64_t e = 0; e < Ev; e++)
            go[e] = dO[e];
        lse = ((const T *)a.lse)[b * a.ls[0] + h * a.ls[1] + i * a.ls[2]];
        D = ((const T *)a.delta)[(b * a.Hq + h) * a.L + i];
    }
    for (int64_t e = 0; e < E; e++)
        dq[e] = T(0);
    int64_t last = ((int64_t)blockIdx.x + 1) * BR;
    int64_t jend = a.causal ? (last < a.S ? last : a.S) : a.S;
    for (int64_t j0 = 0; j0 < jend; j0 += BC) {
        int64_t bc = jend - j0 < BC ? jend - j0 : BC;
        __syncthreads();
        for (int64_t x = threadIdx.x; x < bc * E; x += BR)
            kt[x / E][x % E] = K[(j0 + x / E) * a.ks[2] + x % E];
        for (int64_t x = threadIdx.x; x < bc * Ev; x += BR)
            vt[x / Ev][x % Ev] = V[(j0 + x / Ev) * a.vs[2] + x % Ev];
        __syncthreads();
        if (!active || lse == pg_att_inf<T>())
            continue;
        for (int64_t c = 0; c < bc; c++) {
            T s = T(0);
            for (int64_t e = 0; e < E; e++)
                s += q[e] * kt[c][e];
            s = pg_att_masked<T>(a, s * (T)a.scale, b, h, i, j0 + c);
            T p = pg_att_exp<T>(s - lse);
            if (p == T(0))
                continue;
            T z = a.thresh ? pg_att_keep<T>(a, b, h, i, j0 + c) : T(1);
            T dp = T(0);
            for (int64_t e = 0; e < Ev; e++)
                dp += go[e] * vt[c][e];
            T ds = p * (dp * z - D) * (T)a.scale;
            for (int64_t e = 0; e < E; e++)
                dq[e] += ds * kt[c][e];
        }
    }
    if (!active)
        return;
    T *dQ = (T *)a.dq + b * a.dqs[0] + h * a.dqs[1] + i * a.dqs[2];
    for (int64_t e = 0; e < E; e++)
        dQ[e] = dq[e];
}

template <typename T> static cudaError_t pg_sdpa_launch(const pg_cuda_ctx *ctx,
                                                        const pg_cuda_sdpa_args *a, int bwd)
{
    constexpr int BR = pg_att_tile<T>::BR, BC = pg_att_tile<T>::BC;
    dim3 qgrid((unsigned)((a->L + BR - 1) / BR), (unsigned)a->Hq, (unsigned)a->Bt);
    if (!bwd) {
        pg_sdpa_fwd_kernel<T><<<qgrid, BR, 0, pg_cuda_noted(ctx, "pg_sdpa_fwd_kernel")>>>(*a);
        return cudaGetLastError();
    }
    int64_t rows = a->Bt * a->Hq * a->L;
    pg_sdpa_delta_kernel<T><<<pg_cuda_grid(rows, PG_CUDA_BLOCK, ctx), PG_CUDA_BLOCK, 0,
                              pg_cuda_noted(ctx, "pg_sdpa_delta_kernel")>>>(*a);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    dim3 kgrid((unsigned)((a->S + BC - 1) / BC), (unsigned)a->Hk, (unsigned)a->Bt);
    pg_sdpa_dkdv_kernel<T><<<kgrid, BC, 0, pg_cuda_noted(ctx, "pg_sdpa_dkdv_kernel")>>>(*a);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    pg_sdpa_dq_kernel<T><<<qgrid, BR, 0, pg_cuda_noted(ctx, "pg_sdpa_dq_kernel")>>>(*a);
    return cudaGetLastError();
}

extern "C" cudaError_t pg_kernel_sdpa(const pg_cuda_ctx *ctx, const pg_cuda_sdpa_args *a, int bwd)
{
    if (a->E > PG_ATT_MAXD || a->Ev > PG_ATT_MAXD || a->Hk == 0 || a->Hq % a->Hk != 0)
        return cudaErrorInvalidValue;
    if (a->Bt * a->Hq * a->L == 0 && !bwd)
        return cudaSuccess;
    if (a->dtype == PG_FLOAT32)
        return pg_sdpa_launch<float>(ctx, a, bwd);
    if (a->dtype == PG_FLOAT64)
        return pg_sdpa_launch<double>(ctx, a, bwd);
    return cudaErrorInvalidValue;
}
