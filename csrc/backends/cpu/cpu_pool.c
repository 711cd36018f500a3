/* cpu_pool.c - 2-d pooling on the CPU (POOL nodes; operands in csrc/core/pg_ops_conv.h):
 * max (with each maximum's flat index in its plane), average and adaptive windows, and
 * their gradients, as direct loops over (N*C) planes shared among the pool's threads.
 *
 * PyTorch's semantics: a max window's NaN wins and the first of equal maxima is kept; an
 * average divides by the window clipped to the padded input (count_include_pad) or to the
 * input, or by divisor_override; adaptive windows are [floor(i*H/OH), ceil((i+1)*H/OH)).
 * Gradients are gathers per input plane: each task writes whole planes of dx, so no two
 * threads add into one element. */
#include <math.h>
#include <string.h>

#include "../../core/pg_ops_conv.h"
#include "cpu_conv.h"
#include "cpu_part.h"
#include "cpu_vecmath.h"

#define DATA(T, t) ((T *)pg_tensor_data(t))

typedef struct pool_job {
    const pg_node *n;
    int64_t planes, H, W, OH, OW;
    int64_t ntasks;
} pool_job;

static int64_t start_of(int64_t i, int64_t out, int64_t in) { return i * in / out; }
static int64_t end_of(int64_t i, int64_t out, int64_t in) { return ((i + 1) * in + out - 1) / out; }

/* an average window's bounds (clipped to the input) and its divisor, as PyTorch's CPU kernel */
static void avg_window(const pg_conv_geom *g, int64_t oh, int64_t ow, int64_t H, int64_t W,
                       int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1, int64_t *div)
{
    int64_t hs = oh * g->sh - g->ph, ws = ow * g->sw - g->pw;
    int64_t he = hs + g->kh < H + g->ph ? hs + g->kh : H + g->ph;
    int64_t we = ws + g->kw < W + g->pw ? ws + g->kw : W + g->pw;
    int64_t pool_size = (he - hs) * (we - ws);
    hs = hs > 0 ? hs : 0;
    ws = ws > 0 ? ws : 0;
    he = he < H ? he : H;
    we = we < W ? we : W;
    *h0 = hs;
    *h1 = he;
    *w0 = ws;
    *w1 = we;
    if (g->divisor)
        *div = g->divisor;
    else if (g->flags & PG_POOL_F_COUNT_PAD)
        *div = pool_size;
    else
        *div = (he - hs) * (we - ws);
}

#define POOL_KERNELS(SUF, T)                                                                    \
    /* the common 2x2, stride 2, unpadded window over whole pairs: no bounds to clip, and  \
     * branch-free (selects, not jumps: random data mispredicts half the comparisons)     \
     * so the row vectorizes */                                                            \
    PG_CPU_DISPATCH(void, max_row_2x2_##SUF, (const T *r0, const T *r1, T *y, int64_t *ix,      \
                                              int64_t n, int64_t base, int64_t W),              \
                    (r0, r1, y, ix, n, base, W))                                                \
    {                                                                                           \
        _Pragma("omp simd") for (int64_t ow = 0; ow < n; ow++) {                                \
            T a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];           \
            int64_t k = base + 2 * ow;                                                          \
            bool t = b > a || b != b;                                                           \
            T m = t ? b : a;                                                                    \
            k = t ? k + 1 : k;                                                                  \
            t = c > m || c != c;                                                                \
            m = t ? c : m;                                                                      \
            k = t ? base + W + 2 * ow : k;                                                      \
            t = d > m || d != d;                                                                \
            m = t ? d : m;                                                                      \
            k = t ? base + W + 2 * ow + 1 : k;                                                  \
            y[ow] = m;                                                                          \
            ix[ow] = k;                                                                         \
        }                                                                                       \
    }                                                                                           \
    static void max_plane_2x2_##SUF(const pool_job *j, const T *x, T *y, int64_t *ix)           \
    {                                                                                           \
        int64_t scratch[256];                                                                   \
        for (int64_t oh = 0; oh < j->OH; oh++) {                                                \
            const T *r0 = x + 2 * oh * j->W;                                                    \
            for (int64_t o0 = 0; o0 < j->OW; o0 += 256) {                                       \
                int64_t n = j->OW - o0 < 256 ? j->OW - o0 : 256;                                \
                int64_t *k = ix ? ix + oh * j->OW + o0 : scratch;                               \
                max_row_2x2_##SUF(r0 + 2 * o0, r0 + j->W + 2 * o0, y + oh * j->OW + o0, k, n,    \
                                  2 * oh * j->W + 2 * o0, j->W);                                \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    static void max_plane_##SUF(const pool_job *j, int64_t p, bool adaptive)                    \
    {                                                                                           \
        const pg_conv_geom *g = &j->n->p.conv;                                                  \
        const T *x = DATA(T, &j->n->src[0]) + p * j->H * j->W;                                  \
        T *y = DATA(T, &j->n->dst) + p * j->OH * j->OW;                                         \
        int64_t *ix = j->n->extra[0].storage ? DATA(int64_t, &j->n->extra[0]) + p * j->OH * j->OW \
                                             : NULL;                                            \
        if (!adaptive && g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 &&  \
            g->pw == 0 && g->dh == 1 && g->dw == 1 && 2 * j->OH <= j->H && 2 * j->OW <= j->W) { \
            max_plane_2x2_##SUF(j, x, y, ix);                                                   \
            return;                                                                             \
        }                                                                                       \
        for (int64_t oh = 0; oh < j->OH; oh++)                                                  \
            for (int64_t ow = 0; ow < j->OW; ow++) {                                            \
                int64_t h0, h1, w0, w1, dh = 1, dw = 1;                                         \
                if (adaptive) {                                                                 \
                    h0 = start_of(oh, j->OH, j->H);                                             \
                    h1 = end_of(oh, j->OH, j->H);                                               \
                    w0 = start_of(ow, j->OW, j->W);                                             \
                    w1 = end_of(ow, j->OW, j->W);                                               \
                } else {                                                                        \
                    dh = g->dh;                                                                 \
                    dw = g->dw;                                                                 \
                    h0 = oh * g->sh - g->ph;                                                    \
                    w0 = ow * g->sw - g->pw;                                                    \
                    h1 = h0 + (int64_t)(g->kh - 1) * dh + 1;                                    \
                    w1 = w0 + (int64_t)(g->kw - 1) * dw + 1;                                    \
                    if (h1 > j->H)                                                              \
                        h1 = j->H;                                                              \
                    if (w1 > j->W)                                                              \
                        w1 = j->W;                                                              \
                    while (h0 < 0)                                                              \
                        h0 += dh;                                                               \
                    while (w0 < 0)                                                              \
                        w0 += dw;                                                               \
                }                                                                               \
                T best = -INFINITY;                                                             \
                int64_t bi = h0 * j->W + w0;                                                    \
                for (int64_t ih = h0; ih < h1; ih += dh)                                        \
                    for (int64_t iw = w0; iw < w1; iw += dw) {                                  \
                        T v = x[ih * j->W + iw];                                                \
                        if (v > best || isnan(v)) {                                             \
                            best = v;                                                           \
                            bi = ih * j->W + iw;                                                \
                        }                                                                       \
                    }                                                                           \
                y[oh * j->OW + ow] = best;                                                      \
                if (ix)                                                                         \
                    ix[oh * j->OW + ow] = bi;                                                   \
            }                                                                                   \
    }                                                                                           \
    static void avg_plane_##SUF(const pool_job *j, int64_t p, bool adaptive)                    \
    {                                                                                           \
        const pg_conv_geom *g = &j->n->p.conv;                                                  \
        const T *x = DATA(T, &j->n->src[0]) + p * j->H * j->W;                                  \
        T *y = DATA(T, &j->n->dst) + p * j->OH * j->OW;                                         \
        for (int64_t oh = 0; oh < j->OH; oh++)                                                  \
            for (int64_t ow = 0; ow < j->OW; ow++) {                                            \
                int64_t h0, h1, w0, w1, div;                                                    \
                if (adaptive) {                                                                 \
                    h0 = start_of(oh, j->OH, j->H);                                             \
                    h1 = end_of(oh, j->OH, j->H);                                               \
                    w0 = start_of(ow, j->OW, j->W);                                             \
                    w1 = end_of(ow, j->OW, j->W);                                               \
                    div = (h1 - h0) * (w1 - w0);                                                \
                } else {                                                                        \
                    avg_window(g, oh, ow, j->H, j->W, &h0, &h1, &w0, &w1, &div);                \
                }                                                                               \
                T s = 0;                                                                        \
                for (int64_t ih = h0; ih < h1; ih++)                                            \
                    for (int64_t iw = w0; iw < w1; iw++)                                        \
                        s += x[ih * j->W + iw];                                                 \
                y[oh * j->OW + ow] = h0 >= h1 || w0 >= w1 ? (T)0 : s / (T)div;                  \
            }                                                                                   \
    }                                                                                           \
    static void max_bwd_plane_##SUF(const pool_job *j, int64_t p)                               \
    {                                                                                           \
        const T *dy = DATA(T, &j->n->src[0]) + p * j->OH * j->OW;                               \
        const int64_t *ix = DATA(int64_t, &j->n->src[1]) + p * j->OH * j->OW;                   \
        T *dx = DATA(T, &j->n->dst) + p * j->H * j->W;                                          \
        memset(dx, 0, sizeof(T) * (size_t)(j->H * j->W));                                       \
        for (int64_t k = 0; k < j->OH * j->OW; k++)                                             \
            if (ix[k] >= 0 && ix[k] < j->H * j->W)                                              \
                dx[ix[k]] += dy[k];                                                             \
    }                                                                                           \
    static void avg_bwd_plane_##SUF(const pool_job *j, int64_t p, bool adaptive)                \
    {                                                                                           \
        const pg_conv_geom *g = &j->n->p.conv;                                                  \
        const T *dy = DATA(T, &j->n->src[0]) + p * j->OH * j->OW;                               \
        T *dx = DATA(T, &j->n->dst) + p * j->H * j->W;                                          \
        memset(dx, 0, sizeof(T) * (size_t)(j->H * j->W));                                       \
        for (int64_t oh = 0; oh < j->OH; oh++)                                                  \
            for (int64_t ow = 0; ow < j->OW; ow++) {                                            \
                int64_t h0, h1, w0, w1, div;                                                    \
                if (adaptive) {                                                                 \
                    h0 = start_of(oh, j->OH, j->H);                                             \
                    h1 = end_of(oh, j->OH, j->H);                                               \
                    w0 = start_of(ow, j->OW, j->W);                                             \
                    w1 = end_of(ow, j->OW, j->W);                                               \
                    div = (h1 - h0) * (w1 - w0);                                                \
                } else {                                                                        \
                    avg_window(g, oh, ow, j->H, j->W, &h0, &h1, &w0, &w1, &div);                \
                }                                                                               \
                if (h0 >= h1 || w0 >= w1)                                                       \
                    continue;                                                                   \
                T v = dy[oh * j->OW + ow] / (T)div;                                             \
                for (int64_t ih = h0; ih < h1; ih++)                                            \
                    for (int64_t iw = w0; iw < w1; iw++)                                        \
                        dx[ih * j->W + iw] += v;                                                \
            }                                                                                   \
    }                                                                                           \
    /* the sub-op's row says which: max or average, adaptive windows, a gradient */          \
    static void plane_##SUF(const pool_job *j, int64_t p)                                       \
    {                                                                                           \
        const unsigned f = pg_subop_flags(j->n->subop);                                         \
        const bool adaptive = (f & PG_SUBF_ADAPTIVE) != 0;                                      \
        if (f & PG_SUBF_BWD) {                                                                  \
            if (f & PG_SUBF_MAX)                                                                \
                max_bwd_plane_##SUF(j, p);                                                      \
            else                                                                                \
                avg_bwd_plane_##SUF(j, p, adaptive);                                            \
        } else if (f & PG_SUBF_MAX) {                                                           \
            max_plane_##SUF(j, p, adaptive);                                                    \
        } else {                                                                                \
            avg_plane_##SUF(j, p, adaptive);                                                    \
        }                                                                                       \
    }

POOL_KERNELS(f32, float)
POOL_KERNELS(f64, double)

static pg_status pool_task(void *ctx, int64_t t)
{
    const pool_job *j = ctx;
    int64_t lo, hi;
    pg_cpu_part(j->planes, j->ntasks, t, &lo, &hi);
    for (int64_t p = lo; p < hi; p++) {
        if (j->n->dst.dtype == PG_FLOAT32)
            plane_f32(j, p);
        else
            plane_f64(j, p);
    }
    return PG_OK;
}

pg_status pg_cpu_pooling_on(pg_pool *pool, const pg_node *n)
{
    pool_job j;
    memset(&j, 0, sizeof j);
    j.n = n;
    bool fwd = !(pg_subop_flags(n->subop) & PG_SUBF_BWD);
    const pg_tensor *x = fwd ? &n->src[0] : &n->dst, *y = fwd ? &n->dst : &n->src[0];
    j.planes = x->shape[0] * x->shape[1];
    j.H = x->shape[2];
    j.W = x->shape[3];
    j.OH = y->shape[2];
    j.OW = y->shape[3];
    int64_t work = j.planes * (j.H * j.W + j.OH * j.OW);
    int64_t threads = pg_pool_threads(pool);
    j.ntasks = work >= 65536 ? threads : 1;
    if (j.ntasks > j.planes)
        j.ntasks = j.planes > 0 ? j.planes : 1;
    return pg_pool_run(pool, j.ntasks, pool_task, &j);
}

pg_status pg_cpu_pooling(const pg_node *n) { return pg_cpu_pooling_on(NULL, n); }
