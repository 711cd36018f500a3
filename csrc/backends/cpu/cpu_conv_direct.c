/* cpu_conv_direct.c - depthwise convolution (one input channel per group, C/g == 1) as
 * direct loops: its GEMMs would have one row, so the taps are applied to whole output rows
 * instead, vectorized along the row (PG_CPU_DISPATCH: AVX-512, AVX2 or baseline). Output
 * channel o reads input channel o / (O/g) (a channel multiplier O/g >= 1).
 *
 *   forward        y[n,o] = b[o] + sum over taps (i, j) of w[o,i,j] * x[n,o/m] shifted
 *   input grad     dx[n,c] = sum over its m output channels and taps of w * dy shifted back
 *   weight grad    dW[o,i,j] = sum over n and the output plane of dy[n,o] * x[n,o/m] shifted
 * Planes (forward, input gradient) or output channels (weight gradient: each task sums
 * whole channels over every sample, so no partial sums) are shared among the threads. */
#include <string.h>

#include "../../core/pg_ops_conv.h"
#include "cpu_conv.h"
#include "cpu_part.h"
#include "cpu_vecmath.h"

#define DATA(T, t) ((T *)pg_tensor_data(t))

/* out[k] += a * in[k * s] for k < n, and its reverse scatter; f32 and f64 */
#define ROW_OPS(SUF, T)                                                                        \
    PG_CPU_DISPATCH(void, axpy_##SUF, (int64_t n, T a, const T *in, int64_t s, T *out),        \
                    (n, a, in, s, out))                                                        \
    {                                                                                          \
        if (s == 1) {                                                                          \
            _Pragma("omp simd") for (int64_t k = 0; k < n; k++) out[k] += a * in[k];           \
        } else {                                                                               \
            for (int64_t k = 0; k < n; k++)                                                    \
                out[k] += a * in[k * s];                                                       \
        }                                                                                      \
    }                                                                                          \
    PG_CPU_DISPATCH(void, scatter_##SUF, (int64_t n, T a, const T *in, int64_t s, T *out),     \
                    (n, a, in, s, out))                                                        \
    {                                                                                          \
        if (s == 1) {                                                                          \
            _Pragma("omp simd") for (int64_t k = 0; k < n; k++) out[k] += a * in[k];           \
        } else {                                                                               \
            for (int64_t k = 0; k < n; k++)                                                    \
                out[k * s] += a * in[k];                                                       \
        }                                                                                      \
    }                                                                                          \
    PG_CPU_DISPATCH(double, dot_##SUF, (int64_t n, const T *a, const T *b, int64_t s),         \
                    (n, a, b, s))                                                              \
    {                                                                                          \
        T acc = 0;                                                                             \
        if (s == 1) {                                                                          \
            _Pragma("omp simd reduction(+:acc)") for (int64_t k = 0; k < n; k++) acc +=        \
                a[k] * b[k];                                                                   \
        } else {                                                                               \
            for (int64_t k = 0; k < n; k++)                                                    \
                acc += a[k] * b[k * s];                                                        \
        }                                                                                      \
        return acc;                                                                            \
    }

ROW_OPS(f32, float)
ROW_OPS(f64, double)

typedef struct dw_job {
    const pg_node *n;
    int64_t N, C, H, W, O, OH, OW, m; /* m: output channels per input channel */
    int64_t ntasks, units;
    int computes; /* the operand in dst (pg_conv_role): y forward, x or w backward */
} dw_job;

/* valid output range of one tap along an axis (cpu_conv.c's tap_range) */
static void tap(int64_t out, int64_t in, int64_t s, int64_t p, int64_t off, int64_t *lo,
                int64_t *hi)
{
    int64_t a = p - off, b = in + p - off;
    int64_t l = a <= 0 ? 0 : (a + s - 1) / s, h = b <= 0 ? 0 : (b + s - 1) / s;
    *lo = l < out ? l : out;
    *hi = h < out ? h : out;
    if (*hi < *lo)
        *hi = *lo;
}

#define DW_KERNELS(SUF, T)                                                                      \
    /* y plane of output channel o of sample n */                                               \
    static void fwd_plane_##SUF(const dw_job *j, int64_t n, int64_t o)                          \
    {                                                                                           \
        const pg_conv_geom *g = &j->n->p.conv;                                                  \
        const T *x = DATA(T, &j->n->src[0]) + (n * j->C + o / j->m) * j->H * j->W;              \
        const T *w = DATA(T, &j->n->src[1]) + o * g->kh * g->kw;                                \
        T *y = DATA(T, &j->n->dst) + (n * j->O + o) * j->OH * j->OW;                            \
        T b0 = j->n->src[2].storage ? DATA(T, &j->n->src[2])[o] : (T)0;                         \
        for (int64_t k = 0; k < j->OH * j->OW; k++)                                             \
            y[k] = b0;                                                                          \
        for (int64_t i = 0; i < g->kh; i++) {                                                   \
            int64_t oh0, oh1;                                                                   \
            tap(j->OH, j->H, g->sh, g->ph, i * g->dh, &oh0, &oh1);                              \
            for (int64_t jj = 0; jj < g->kw; jj++) {                                            \
                int64_t ow0, ow1;                                                               \
                tap(j->OW, j->W, g->sw, g->pw, jj * g->dw, &ow0, &ow1);                         \
                T wv = w[i * g->kw + jj];                                                       \
                for (int64_t oh = oh0; oh < oh1; oh++) {                                        \
                    const T *xr = x + (oh * g->sh - g->ph + i * g->dh) * j->W + jj * g->dw -    \
                                  g->pw;                                                        \
                    axpy_##SUF(ow1 - ow0, wv, xr + ow0 * g->sw, g->sw, y + oh * j->OW + ow0);   \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    /* dx plane of input channel c of sample n */                                               \
    static void data_plane_##SUF(const dw_job *j, int64_t n, int64_t c)                         \
    {                                                                                           \
        const pg_conv_geom *g = &j->n->p.conv;                                                  \
        T *dx = DATA(T, &j->n->dst) + (n * j->C + c) * j->H * j->W;                             \
        T b0 = j->n->src[2].storage ? DATA(T, &j->n->src[2])[c] : (T)0;                         \
        for (int64_t k = 0; k < j->H * j->W; k++)                                               \
            dx[k] = b0;                                                                         \
        for (int64_t o = c * j->m; o < (c + 1) * j->m; o++) {                                   \
            const T *dy = DATA(T, &j->n->src[0]) + (n * j->O + o) * j->OH * j->OW;              \
            const T *w = DATA(T, &j->n->src[1]) + o * g->kh * g->kw;                            \
            for (int64_t i = 0; i < g->kh; i++) {                                               \
                int64_t oh0, oh1;                                                               \
                tap(j->OH, j->H, g->sh, g->ph, i * g->dh, &oh0, &oh1);                          \
                for (int64_t jj = 0; jj < g->kw; jj++) {                                        \
                    int64_t ow0, ow1;                                                           \
                    tap(j->OW, j->W, g->sw, g->pw, jj * g->dw, &ow0, &ow1);                     \
                    T wv = w[i * g->kw + jj];                                                   \
                    for (int64_t oh = oh0; oh < oh1; oh++) {                                    \
                        T *xr = dx + (oh * g->sh - g->ph + i * g->dh) * j->W + jj * g->dw -     \
                                g->pw;                                                          \
                        scatter_##SUF(ow1 - ow0, wv, dy + oh * j->OW + ow0, g->sw,              \
                                      xr + ow0 * g->sw);                                        \
                    }                                                                           \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    /* dW (and db) of output channel o over every sample */                                     \
    static void weight_channel_##SUF(const dw_job *j, int64_t o)                                \
    {                                                                                           \
        const pg_conv_geom *g = &j->n->p.conv;                                                  \
        T *dw = DATA(T, &j->n->dst) + o * g->kh * g->kw;                                        \
        for (int64_t i = 0; i < g->kh; i++) {                                                   \
            int64_t oh0, oh1;                                                                   \
            tap(j->OH, j->H, g->sh, g->ph, i * g->dh, &oh0, &oh1);                              \
            for (int64_t jj = 0; jj < g->kw; jj++) {                                            \
                int64_t ow0, ow1;                                                               \
                tap(j->OW, j->W, g->sw, g->pw, jj * g->dw, &ow0, &ow1);                         \
                double s = 0;                                                                   \
                for (int64_t n = 0; n < j->N; n++) {                                            \
                    const T *x = DATA(T, &j->n->src[1]) + (n * j->C + o / j->m) * j->H * j->W;  \
                    const T *dy = DATA(T, &j->n->src[0]) + (n * j->O + o) * j->OH * j->OW;      \
                    for (int64_t oh = oh0; oh < oh1; oh++) {                                    \
                        const T *xr = x + (oh * g->sh - g->ph + i * g->dh) * j->W +             \
                                      jj * g->dw - g->pw;                                       \
                        s += dot_##SUF(ow1 - ow0, dy + oh * j->OW + ow0, xr + ow0 * g->sw,      \
                                       g->sw);                                                  \
                    }                                                                           \
                }                                                                               \
                dw[i * g->kw + jj] = (T)s;                                                      \
            }                                                                                   \
        }                                                                                       \
        if (j->n->extra[0].storage) {                                                           \
            double s = 0;                                                                       \
            for (int64_t n = 0; n < j->N; n++) {                                                \
                const T *dy = DATA(T, &j->n->src[0]) + (n * j->O + o) * j->OH * j->OW;          \
                for (int64_t k = 0; k < j->OH * j->OW; k++)                                     \
                    s += dy[k];                                                                 \
            }                                                                                   \
            DATA(T, &j->n->extra[0])[o] = (T)s;                                                 \
        }                                                                                       \
    }

DW_KERNELS(f32, float)
DW_KERNELS(f64, double)

static pg_status dw_task(void *ctx, int64_t t)
{
    const dw_job *j = ctx;
    int64_t lo, hi;
    pg_cpu_part(j->units, j->ntasks, t, &lo, &hi);
    bool f32 = j->n->dst.dtype == PG_FLOAT32;
    for (int64_t u = lo; u < hi; u++) {
        if (j->computes == PG_CONV_Y) {
            if (f32)
                fwd_plane_f32(j, u / j->O, u % j->O);
            else
                fwd_plane_f64(j, u / j->O, u % j->O);
        } else if (j->computes == PG_CONV_X) {
            if (f32)
                data_plane_f32(j, u / j->C, u % j->C);
            else
                data_plane_f64(j, u / j->C, u % j->C);
        } else if (f32) {
            weight_channel_f32(j, u);
        } else {
            weight_channel_f64(j, u);
        }
    }
    return PG_OK;
}

pg_status pg_cpu_conv_direct(pg_pool *pool, const pg_node *n)
{
    dw_job j;
    memset(&j, 0, sizeof j);
    j.n = n;
    /* the operands where the sub-op's row puts them; the one in dst is what it computes */
    const pg_tensor *x = pg_conv_operand(n, PG_CONV_X), *y = pg_conv_operand(n, PG_CONV_Y);
    j.computes = pg_conv_computes(n->subop);
    j.N = x->shape[0];
    j.C = x->shape[1];
    j.H = x->shape[2];
    j.W = x->shape[3];
    j.O = y->shape[1];
    j.OH = y->shape[2];
    j.OW = y->shape[3];
    j.m = j.O / j.C;
    j.units = j.computes == PG_CONV_Y ? j.N * j.O : j.computes == PG_CONV_X ? j.N * j.C : j.O;
    /* a task per thread, when there is enough work to share */
    int64_t work = j.units * (j.computes == PG_CONV_W ? j.N : 1) * j.OH * j.OW *
                   n->p.conv.kh * n->p.conv.kw;
    int64_t threads = pg_pool_threads(pool);
    j.ntasks = work >= 32768 ? threads : 1;
    if (j.ntasks > j.units)
        j.ntasks = j.units > 0 ? j.units : 1;
    return pg_pool_run(pool, j.ntasks, dw_task, &j);
}
