/* cpu_attention.c - scaled-dot-product attention as one fused kernel that never writes
 * the L x S score matrix: SDPA (forward) and SDPA_BWD (slots in csrc/core/pg_ops_attention.c).
 *
 * Forward, per (batch, head, block of BR query rows): the key/value rows in blocks of BC;
 * per block one GEMM for the scores (Q_i K_j^T, scaled), the mask, the causal cut and the
 * online softmax (running row max m and sum l; the accumulator rescaled by exp(m_old -
 * m_new)) on the BR x BC tile while it is in cache, dropout on the tile, then one GEMM
 * accumulating P V_j. out = acc / l; the row's logsumexp m + log l is saved. Scratch is
 * BR x BC + BR x Ev per task: memory grows with T, not T^2.
 * Backward (FlashAttention-2's, recomputing): per (batch, key/value head), for each
 * key block j, each query block i: the scores again, P = exp(S - lse), then dV_j += P^T
 * dO_i, dP = dO_i V_j^T, dS = P (dP - D_i) (D = rowsum(dO * O)), dQ_i += scale dS K_j,
 * dK_j += scale dS^T Q_i: five GEMMs per tile, no T x T buffer. The query heads that share
 * a key/value head (enable_gqa) run in one task, so dK and dV are each written by one.
 * Every GEMM goes through the GEMM contract's kernel for the dtype (pg_cpu_gemm_kernel,
 * cpu_gemm.h: pygpu's AVX2 float32 kernel or OpenBLAS), one tile per call on the task's
 * thread. Dropout keeps element (row i, column j) of head (b, h) when Philox's uniform at
 * offset + ((b * Hq + h) * L + i) * S + j is >= p, the same decision both ways (and on
 * cuda: kernels/attention.cu is the CUDA twin). A fully masked row gives 0 (PyTorch's).
 * Causal (is_causal, top-left: key j <= query i): no tile right of a query block's last row
 * is visited either way; a diagonal tile is narrowed to the columns its last row sees, and
 * each row masks, searches, exponentiates only its own w = i + 1 - j0 columns (the rest
 * are zeroed, never written as -inf and exponentiated): GPT's causal forward + backward
 * 1.7x faster for it (docs/performance.md, "Causal attention and the linear layers"). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_philox.h"
#include "../../core/pg_pool.h"
#include "cpu_gemm.h"
#include "cpu_kernels.h"
#include "cpu_vecmath.h"

#define BR 64  /* query rows per tile */
#define BC 128 /* key rows per tile */

typedef struct attn_args {
    const pg_node *n;
    int64_t Bt, Hq, Hk, L, S, E, Ev, group;
    double scale, p;
    bool causal;
    uint64_t seed, offset;
} attn_args;

static void gemm(int dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                 const void *A, int64_t lda, const void *B, int64_t ldb, double beta, void *C,
                 int64_t ldc)
{
    pg_gemm g;
    memset(&g, 0, sizeof g);
    g.M = M;
    g.N = N;
    g.K = K;
    g.batch = 1;
    g.trans_a = ta;
    g.trans_b = tb;
    g.dtype_ab = g.dtype_c = dt;
    g.compute = pg_gemm_compute_of(dt);
    g.a = A;
    g.lda = lda;
    g.b = B;
    g.ldb = ldb;
    g.c = C;
    g.ldc = ldc;
    g.alpha = alpha;
    g.beta = beta;
    pg_cpu_gemm_kernel(dt, dt)(&g);
}

/* keep[c] = 1 (kept) or 0 for the bc columns from flat index base; the caller scales by
 * 1 / (1 - p) in its own element type */
static void dropout_row(const attn_args *a, uint64_t base, int64_t bc, float *keep)
{
    uint32_t thresh = (uint32_t)(a->p * 4294967296.0); /* p < 1 (checked by the core) */
    if (thresh == 0)
        thresh = 1; /* p below 2^-32: as cuda's kernel (kernels/attention.cu) */
    for (int64_t c = 0; c < bc;) {
        uint64_t idx = base + (uint64_t)c;
        pg_philox_out o = pg_philox4x32_10(idx >> 2, a->seed);
        for (int w = (int)(idx & 3); w < 4 && c < bc; w++, c++)
            keep[c] = o.v[w] >= thresh ? 1.0f : 0.0f;
    }
}

/* The causal cut of row i in the tile of columns [j0, j0 + bc): keys j > i are masked out,
 * so only the first w columns take part (w = 0: the whole tile is masked). The rest of the
 * row is never masked, exponentiated or searched for its max, only zeroed: on the diagonal
 * tiles of a causal product that is half the row work. */
static int64_t causal_width(const attn_args *a, int64_t i, int64_t j0, int64_t bc)
{
    if (!a->causal)
        return bc;
    int64_t w = i + 1 - j0;
    return w < 0 ? 0 : w > bc ? bc : w;
}

/* The mask and (forward) the online softmax of one score row; shared by both directions
 * through the element type. */
#define ATTN_KERNELS(SUF, T, EXP, LOG)                                                          \
    /* s[c] += mask, or -inf where a boolean mask is false, over the row's w columns */        \
    static void mask_row_##SUF(const attn_args *a, T *s, int64_t w, int64_t j0,                 \
                               const char *mrow)                                                \
    {                                                                                           \
        const pg_tensor *mt = &a->n->src[3];                                                    \
        if (!mrow)                                                                              \
            return;                                                                             \
        int64_t ms = mt->strides[3];                                                            \
        if (mt->dtype == PG_BOOL) {                                                             \
            const uint8_t *mb = (const uint8_t *)mrow;                                          \
            for (int64_t c = 0; c < w; c++)                                                     \
                if (!mb[(j0 + c) * ms])                                                         \
                    s[c] = -(T)INFINITY;                                                        \
        } else {                                                                                \
            const T *mf = (const T *)mrow;                                                      \
            for (int64_t c = 0; c < w; c++)                                                     \
                s[c] += mf[(j0 + c) * ms];                                                      \
        }                                                                                       \
    }                                                                                           \
    /* the max of w > 0 values, in vector lanes (a NaN in the row makes its output NaN        \
     * whichever way the lanes order it: exp(NaN - m) enters the sum) */                       \
    PG_CPU_DISPATCH(T, row_max_##SUF, (const T *s, int64_t w), (s, w))                          \
    {                                                                                           \
        T mx = s[0];                                                                            \
        _Pragma("omp simd reduction(max:mx)") for (int64_t c = 0; c < w; c++) mx =             \
            s[c] > mx ? s[c] : mx;                                                              \
        return mx;                                                                              \
    }                                                                                           \
    PG_CPU_DISPATCH(T, exp_sum_##SUF, (T *s, int64_t bc, T m), (s, bc, m))                      \
    {                                                                                           \
        T sum = 0;                                                                              \
        _Pragma("omp simd reduction(+:sum)") for (int64_t c = 0; c < bc; c++)                   \
        {                                                                                       \
            T e = EXP(s[c] - m);                                                                \
            s[c] = e;                                                                           \
            sum += e;                                                                           \
        }                                                                                       \
        return sum;                                                                             \
    }                                                                                           \
    PG_CPU_DISPATCH(void, exp_only_##SUF, (T *s, int64_t bc, T m), (s, bc, m))                  \
    {                                                                                           \
        _Pragma("omp simd") for (int64_t c = 0; c < bc; c++) s[c] = EXP(s[c] - m);              \
    }                                                                                           \
    static const char *mask_ptr_##SUF(const attn_args *a, int64_t b, int64_t h, int64_t i)     \
    {                                                                                           \
        const pg_tensor *mt = &a->n->src[3];                                                    \
        if (!mt->storage)                                                                       \
            return NULL;                                                                        \
        return pg_tensor_data(mt) + (b * mt->strides[0] + h * mt->strides[1] +                 \
                                     i * mt->strides[2]) * (int64_t)pg_dtype_size((pg_dtype)mt->dtype); \
    }                                                                                           \
    /* forward: one (b, h, query block) */                                                     \
    static pg_status fwd_tile_##SUF(const attn_args *a, int64_t b, int64_t h, int64_t i0,       \
                                    int64_t br, T *sc, T *acc, T *m, T *l, float *keep)         \
    {                                                                                           \
        const pg_node *n = a->n;                                                                \
        const pg_tensor *qt = &n->src[0], *kt = &n->src[1], *vt = &n->src[2];                   \
        int64_t hk = h / a->group, E = a->E, Ev = a->Ev, dt = qt->dtype;                        \
        const T *Q = (const T *)pg_tensor_data(qt) + b * qt->strides[0] + h * qt->strides[1] +  \
                     i0 * qt->strides[2];                                                       \
        const T *K = (const T *)pg_tensor_data(kt) + b * kt->strides[0] + hk * kt->strides[1];  \
        const T *V = (const T *)pg_tensor_data(vt) + b * vt->strides[0] + hk * vt->strides[1];  \
        for (int64_t r = 0; r < br; r++) {                                                      \
            m[r] = -(T)INFINITY;                                                                \
            l[r] = 0;                                                                           \
        }                                                                                       \
        memset(acc, 0, sizeof(T) * (size_t)(br * Ev));                                         \
        int64_t jend = a->causal ? (i0 + br < a->S ? i0 + br : a->S) : a->S;                    \
        for (int64_t j0 = 0; j0 < jend; j0 += BC) {                                             \
            int64_t bc = jend - j0 < BC ? jend - j0 : BC;                                       \
            gemm((int)dt, false, true, br, bc, E, a->scale, Q, qt->strides[2],                  \
                 K + j0 * kt->strides[2], kt->strides[2], 0.0, sc, bc);                         \
            for (int64_t r = 0; r < br; r++) {                                                  \
                int64_t i = i0 + r;                                                             \
                T *s = sc + r * bc;                                                             \
                int64_t w = causal_width(a, i, j0, bc);                                         \
                mask_row_##SUF(a, s, w, j0, mask_ptr_##SUF(a, b, h, i));                        \
                T mx = w > 0 ? row_max_##SUF(s, w) : -(T)INFINITY;                              \
                T mnew = mx > m[r] ? mx : m[r];                                                 \
                if (mnew == -(T)INFINITY) { /* every column so far masked out */              \
                    memset(s, 0, sizeof(T) * (size_t)bc);                                       \
                    continue;                                                                   \
                }                                                                               \
                T alpha = m[r] == -(T)INFINITY ? (T)0 : EXP(m[r] - mnew);                       \
                T sum = w > 0 ? exp_sum_##SUF(s, w, mnew) : (T)0;                               \
                memset(s + w, 0, sizeof(T) * (size_t)(bc - w)); /* the causal cut: P = 0 */     \
                l[r] = l[r] * alpha + sum;                                                      \
                m[r] = mnew;                                                                    \
                if (alpha != (T)1) {                                                            \
                    T *ar = acc + r * Ev;                                                       \
                    for (int64_t e = 0; e < Ev; e++)                                            \
                        ar[e] *= alpha;                                                         \
                }                                                                               \
                if (a->p > 0) {                                                                 \
                    dropout_row(a, a->offset + (uint64_t)(((b * a->Hq + h) * a->L + i) * a->S + j0), \
                                bc, keep);                                                      \
                    T inv = (T)(1.0 / (1.0 - a->p));                                            \
                    for (int64_t c = 0; c < bc; c++)                                            \
                        s[c] *= (T)keep[c] * inv;                                               \
                }                                                                               \
            }                                                                                   \
            gemm((int)dt, false, false, br, Ev, bc, 1.0, sc, bc, V + j0 * vt->strides[2],       \
                 vt->strides[2], 1.0, acc, Ev);                                                 \
        }                                                                                       \
        const pg_tensor *ot = &n->dst, *lt = &n->extra[0];                                      \
        T *O = (T *)pg_tensor_data(ot) + b * ot->strides[0] + h * ot->strides[1];               \
        T *LSE = (T *)pg_tensor_data(lt) + b * lt->strides[0] + h * lt->strides[1];             \
        for (int64_t r = 0; r < br; r++) {                                                      \
            T *orow = O + (i0 + r) * ot->strides[2], *ar = acc + r * Ev;                        \
            T inv = l[r] > 0 ? (T)1 / l[r] : (T)0;                                              \
            for (int64_t e = 0; e < Ev; e++)                                                    \
                orow[e] = ar[e] * inv;                                                          \
            LSE[(i0 + r) * lt->strides[2]] = l[r] > 0 ? m[r] + LOG(l[r]) : (T)INFINITY;         \
        }                                                                                       \
        return PG_OK;                                                                           \
    }                                                                                           \
    /* backward: one (b, key/value head), every query head of its group */                    \
    static pg_status bwd_head_##SUF(const attn_args *a, int64_t b, int64_t hk, T *sc, T *pd,    \
                                    T *dp, T *dkb, T *dvb, T *D, float *keep)                   \
    {                                                                                           \
        const pg_node *n = a->n;                                                                \
        const pg_tensor *qt = &n->src[0], *kt = &n->src[1], *vt = &n->src[2];                   \
        const pg_tensor *Ot = &n->src[4], *dOt = &n->src[5], *lt = &n->src[6];                  \
        const pg_tensor *dqt = &n->dst, *dkt = &n->extra[0], *dvt = &n->extra[1];               \
        int64_t E = a->E, Ev = a->Ev, L = a->L, S = a->S, dt = qt->dtype;                       \
        const T *K = (const T *)pg_tensor_data(kt) + b * kt->strides[0] + hk * kt->strides[1];  \
        const T *V = (const T *)pg_tensor_data(vt) + b * vt->strides[0] + hk * vt->strides[1];  \
        T *dK = (T *)pg_tensor_data(dkt) + b * dkt->strides[0] + hk * dkt->strides[1];          \
        T *dV = (T *)pg_tensor_data(dvt) + b * dvt->strides[0] + hk * dvt->strides[1];          \
        for (int64_t j = 0; j < S; j++) {                                                       \
            memset(dK + j * dkt->strides[2], 0, sizeof(T) * (size_t)E);                         \
            memset(dV + j * dvt->strides[2], 0, sizeof(T) * (size_t)Ev);                        \
        }                                                                                       \
        for (int64_t h = hk * a->group; h < (hk + 1) * a->group; h++) {                         \
            const T *Q = (const T *)pg_tensor_data(qt) + b * qt->strides[0] + h * qt->strides[1]; \
            const T *O = (const T *)pg_tensor_data(Ot) + b * Ot->strides[0] + h * Ot->strides[1]; \
            const T *dO = (const T *)pg_tensor_data(dOt) + b * dOt->strides[0] +                \
                          h * dOt->strides[1];                                                  \
            const T *LSE = (const T *)pg_tensor_data(lt) + b * lt->strides[0] + h * lt->strides[1]; \
            T *dQ = (T *)pg_tensor_data(dqt) + b * dqt->strides[0] + h * dqt->strides[1];       \
            int64_t qs = qt->strides[2], os = Ot->strides[2], dos = dOt->strides[2];            \
            int64_t dqs = dqt->strides[2], ks = kt->strides[2], vs = vt->strides[2];            \
            for (int64_t i = 0; i < L; i++) {                                                   \
                T d = 0;                                                                        \
                const T *orow = O + i * os, *dorow = dO + i * dos;                              \
                for (int64_t e = 0; e < Ev; e++)                                                \
                    d += orow[e] * dorow[e];                                                    \
                D[i] = d;                                                                       \
                memset(dQ + i * dqs, 0, sizeof(T) * (size_t)E);                                 \
            }                                                                                   \
            for (int64_t j0 = 0; j0 < S; j0 += BC) {                                            \
                int64_t bc = S - j0 < BC ? S - j0 : BC;                                         \
                memset(dkb, 0, sizeof(T) * (size_t)(bc * E));                                   \
                memset(dvb, 0, sizeof(T) * (size_t)(bc * Ev));                                  \
                int64_t istart = a->causal ? j0 / BR * BR : 0;                                  \
                for (int64_t i0 = istart; i0 < L; i0 += BR) {                                   \
                    int64_t br = L - i0 < BR ? L - i0 : BR;                                     \
                    /* causal: the tile's columns past its last query row are all masked */   \
                    int64_t tw = a->causal && i0 + br - j0 < bc ? i0 + br - j0 : bc;            \
                    if (tw <= 0)                                                                \
                        continue;                                                               \
                    gemm((int)dt, false, true, br, tw, E, a->scale, Q + i0 * qs, qs,            \
                         K + j0 * ks, ks, 0.0, sc, tw);                                         \
                    for (int64_t r = 0; r < br; r++) {                                          \
                        int64_t i = i0 + r;                                                     \
                        T *s = sc + r * tw, *sd = pd + r * tw;                                  \
                        int64_t w = causal_width(a, i, j0, tw);                                 \
                        mask_row_##SUF(a, s, w, j0, mask_ptr_##SUF(a, b, h, i));                \
                        T lse = LSE[i * lt->strides[2]];                                        \
                        if (lse == (T)INFINITY)                                                 \
                            w = 0; /* a fully masked row: P = 0 */                              \
                        exp_only_##SUF(s, w, lse);                                              \
                        memset(s + w, 0, sizeof(T) * (size_t)(tw - w));                         \
                        if (a->p > 0) {                                                         \
                            dropout_row(a, a->offset + (uint64_t)(((b * a->Hq + h) * L + i) * S + j0), \
                                        tw, keep + r * tw);                                     \
                            T inv = (T)(1.0 / (1.0 - a->p));                                    \
                            for (int64_t c = 0; c < tw; c++)                                    \
                                sd[c] = s[c] * ((T)keep[r * tw + c] * inv);                     \
                        }                                                                       \
                    }                                                                           \
                    const T *P = a->p > 0 ? pd : sc;                                            \
                    /* dV_j += P^T dO_i */                                                     \
                    gemm((int)dt, true, false, tw, Ev, br, 1.0, P, tw, dO + i0 * dos, dos, 1.0,  \
                         dvb, Ev);                                                              \
                    /* dP = dO_i V_j^T */                                                      \
                    gemm((int)dt, false, true, br, tw, Ev, 1.0, dO + i0 * dos, dos, V + j0 * vs, \
                         vs, 0.0, dp, tw);                                                      \
                    for (int64_t r = 0; r < br; r++) {                                          \
                        T *s = sc + r * tw, *g = dp + r * tw, Di = D[i0 + r];                   \
                        if (a->p > 0) {                                                         \
                            T inv = (T)(1.0 / (1.0 - a->p));                                    \
                            for (int64_t c = 0; c < tw; c++)                                    \
                                g[c] *= (T)keep[r * tw + c] * inv;                              \
                        }                                                                       \
                        _Pragma("omp simd") for (int64_t c = 0; c < tw; c++) g[c] =             \
                            s[c] * (g[c] - Di);                                                 \
                    }                                                                           \
                    /* dQ_i += scale dS K_j;  dK_j += scale dS^T Q_i */                        \
                    gemm((int)dt, false, false, br, E, tw, a->scale, dp, tw, K + j0 * ks, ks,   \
                         1.0, dQ + i0 * dqs, dqs);                                              \
                    gemm((int)dt, true, false, tw, E, br, a->scale, dp, tw, Q + i0 * qs, qs,    \
                         1.0, dkb, E);                                                          \
                }                                                                               \
                for (int64_t c = 0; c < bc; c++) {                                              \
                    T *kr = dK + (j0 + c) * dkt->strides[2], *vr = dV + (j0 + c) * dvt->strides[2]; \
                    for (int64_t e = 0; e < E; e++)                                             \
                        kr[e] += dkb[c * E + e];                                                \
                    for (int64_t e = 0; e < Ev; e++)                                            \
                        vr[e] += dvb[c * Ev + e];                                               \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
        return PG_OK;                                                                           \
    }
ATTN_KERNELS(f32, float, expf, logf)
ATTN_KERNELS(f64, double, exp, log)

static void args_of(const pg_node *n, attn_args *a)
{
    const pg_tensor *q = &n->src[0], *k = &n->src[1], *v = &n->src[2];
    a->n = n;
    a->Bt = q->shape[0];
    a->Hq = q->shape[1];
    a->L = q->shape[2];
    a->E = q->shape[3];
    a->Hk = k->shape[1];
    a->S = k->shape[2];
    a->Ev = v->shape[3];
    a->group = a->Hq / a->Hk;
    a->scale = n->p.sdpa.scale;
    a->p = n->p.sdpa.dropout_p;
    a->offset = n->p.sdpa.offset;
    a->causal = n->p.sdpa.causal != 0;
    a->seed = n->p.sdpa.seed;
}

typedef struct attn_job {
    attn_args a;
    int64_t ntasks, nunits, qblocks, rb; /* rb: query rows per block, <= BR */
} attn_job;

/* forward units: (b, h, query block); backward units: (b, key/value head) */
static pg_status attn_task(void *ctx, int64_t task)
{
    attn_job *j = ctx;
    const attn_args *a = &j->a;
    int64_t lo = j->nunits * task / j->ntasks, hi = j->nunits * (task + 1) / j->ntasks;
    if (hi <= lo)
        return PG_OK;
    bool f32 = a->n->dst.dtype == PG_FLOAT32, fwd = a->n->op == PG_OP_SDPA;
    size_t es = f32 ? sizeof(float) : sizeof(double);
    int64_t E = a->E, Ev = a->Ev, big = E > Ev ? E : Ev;
    size_t nelem = fwd ? (size_t)(BR * BC + BR * Ev + 2 * BR)
                       : (size_t)(3 * BR * BC + BC * big * 2 + a->L);
    char *buf = malloc(nelem * es + sizeof(float) * BR * BC);
    if (!buf)
        return pg_error_set(PG_ERR_NOMEM, "scaled_dot_product_attention: out of host memory "
                                           "for a tile's scratch");
    float *keep = (float *)(buf + nelem * es);
    for (int64_t u = lo; u < hi; u++) {
        if (fwd) {
            int64_t qb = u % j->qblocks, bh = u / j->qblocks;
            int64_t b = bh / a->Hq, h = bh % a->Hq, i0 = qb * j->rb;
            int64_t br = a->L - i0 < j->rb ? a->L - i0 : j->rb;
            if (f32) {
                float *sc = (float *)buf, *acc = sc + BR * BC, *m = acc + BR * Ev, *l = m + BR;
                fwd_tile_f32(a, b, h, i0, br, sc, acc, m, l, keep);
            } else {
                double *sc = (double *)buf, *acc = sc + BR * BC, *m = acc + BR * Ev, *l = m + BR;
                fwd_tile_f64(a, b, h, i0, br, sc, acc, m, l, keep);
            }
        } else {
            int64_t b = u / a->Hk, hk = u % a->Hk;
            if (f32) {
                float *sc = (float *)buf, *pd = sc + BR * BC, *dp = pd + BR * BC;
                float *dkb = dp + BR * BC, *dvb = dkb + BC * big, *D = dvb + BC * big;
                bwd_head_f32(a, b, hk, sc, pd, dp, dkb, dvb, D, keep);
            } else {
                double *sc = (double *)buf, *pd = sc + BR * BC, *dp = pd + BR * BC;
                double *dkb = dp + BR * BC, *dvb = dkb + BC * big, *D = dvb + BC * big;
                bwd_head_f64(a, b, hk, sc, pd, dp, dkb, dvb, D, keep);
            }
        }
    }
    free(buf);
    return PG_OK;
}

pg_status pg_cpu_attention_on(pg_pool *pool, const pg_node *n)
{
    attn_job j;
    args_of(n, &j.a);
    /* query blocks of even size (65 rows: 33 + 32, not 64 + 1), so that units, cut evenly
     * by count between the threads, are even in work too: a ViT's 3 heads x 65 rows on 2
     * threads ran 129 rows on one and 66 on the other */
    j.qblocks = (j.a.L + BR - 1) / BR;
    j.rb = j.qblocks ? (j.a.L + j.qblocks - 1) / j.qblocks : BR;
    j.nunits = n->op == PG_OP_SDPA ? j.a.Bt * j.a.Hq * j.qblocks : j.a.Bt * j.a.Hk;
    int threads = pool ? pg_pool_threads(pool) : 1;
    j.ntasks = j.nunits < threads ? j.nunits : threads;
    if (j.ntasks < 1)
        return PG_OK;
    if (j.ntasks == 1)
        return attn_task(&j, 0);
    return pg_pool_run(pool, j.ntasks, attn_task, &j);
}

pg_status pg_cpu_attention(const pg_node *n) { return pg_cpu_attention_on(NULL, n); }
