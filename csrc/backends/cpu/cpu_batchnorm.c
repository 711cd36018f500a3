/* cpu_batchnorm.c - batch normalization in training on the CPU (BATCH_NORM nodes;
 * operands in csrc/core/pg_ops_conv.h): x seen as (N, C, L), channels shared among the
 * pool's threads, run in groups (below), each channel read twice each way:
 *
 *   forward   pass 1: the shifted sums of x and x^2 (shift: the channel's first value, so
 *             the variance does not cancel away), in double: mean, var, 1/sqrt(var + eps);
 *             the running statistics updated (running_var with the unbiased variance);
 *             pass 2: y = x * scale + shift, scale = w/sqrt(var+eps), shift = b - mean*scale
 *   backward  pass 1: sum(dy) and sum(dy * xhat) (db and dw);
 *             pass 2: dx = w * rstd * (dy - sum(dy)/M - xhat * sum(dy*xhat)/M), M = N*L
 *             (dy through the fused ReLU's mask as it is read, in both passes)
 *   evaluation  (EVAL_FWD, no gradient): scale and shift from the running statistics, then
 *             the forward's pass 2 alone, with the fused ReLU or ReLU6 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_ops_conv.h"
#include "cpu_conv.h"
#include "cpu_part.h"
#include "cpu_vecmath.h"

#define DATA(T, t) ((T *)pg_tensor_data(t))

/* Channels run in groups of `cnt` (about GROUP_ELEMS elements of x a group), sample by
 * sample: each vector routine takes one sample's rows of the group's channels, cnt rows of
 * L contiguous elements, so memory is read in order and a group costs one dispatched call
 * per sample and pass however small L is. (It was one call per row, channel by channel: at
 * 960 channels of 4 x 4 that was 30720 calls a pass and a stride of 61 KB between rows, and
 * batch norm's backward ran at 0.14-0.37x PyTorch's CPU time; issue 45.) Each channel's
 * rows are still summed in T's vector lanes, row by row, and added in double in sample
 * order, as before, so the bits did not change. The backward's fused ReLU mask is applied
 * as dy is read in both passes instead of in a pass of its own that wrote it to dx. */
#define GROUP_ELEMS 262144

#define BN_ROWS(SUF, T)                                                                         \
    PG_CPU_DISPATCH(void, shifted_sums_##SUF, (const T *x, int64_t cnt, int64_t L, const T *k,  \
                                               double *s1, double *s2),                         \
                    (x, cnt, L, k, s1, s2))                                                     \
    {                                                                                           \
        for (int64_t c = 0; c < cnt; c++) {                                                     \
            const T *xr = x + c * L;                                                            \
            T a = 0, b = 0, kc = k[c];                                                          \
            _Pragma("omp simd reduction(+:a,b)") for (int64_t i = 0; i < L; i++) {              \
                T d = xr[i] - kc;                                                               \
                a += d;                                                                         \
                b += d * d;                                                                     \
            }                                                                                   \
            s1[c] += a;                                                                         \
            s2[c] += b;                                                                         \
        }                                                                                       \
    }                                                                                           \
    /* act: 0, PG_BN_F_RELU or PG_BN_F_RELU6 */                                             \
    PG_CPU_DISPATCH(void, scale_shift_##SUF, (const T *x, T *y, int64_t cnt, int64_t L,         \
                                              const T *sc, const T *sh, int act),               \
                    (x, y, cnt, L, sc, sh, act))                                                \
    {                                                                                           \
        for (int64_t c = 0; c < cnt; c++) {                                                     \
            const T *xr = x + c * L;                                                            \
            T *yr = y + c * L, a = sc[c], b = sh[c];                                            \
            if (act == PG_BN_F_RELU) {                                                          \
                _Pragma("omp simd") for (int64_t i = 0; i < L; i++) {                           \
                    T v = xr[i] * a + b;                                                        \
                    yr[i] = v > 0 ? v : 0;                                                      \
                }                                                                               \
            } else if (act == PG_BN_F_RELU6) {                                                  \
                _Pragma("omp simd") for (int64_t i = 0; i < L; i++) {                           \
                    T v = xr[i] * a + b;                                                        \
                    v = v > 0 ? v : 0;                                                          \
                    yr[i] = v < 6 ? v : 6;                                                      \
                }                                                                               \
            } else {                                                                            \
                _Pragma("omp simd") for (int64_t i = 0; i < L; i++) yr[i] = xr[i] * a + b;      \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    /* sum(dy) and sum(dy * (x - mean)), dy taken as 0 where the fused ReLU's output y is not \
     * positive (y: NULL without the ReLU) */                                                \
    PG_CPU_DISPATCH(void, grad_sums_##SUF, (const T *dy, const T *x, const T *y, int64_t cnt,   \
                                            int64_t L, const T *mean, double *s1, double *s2),  \
                    (dy, x, y, cnt, L, mean, s1, s2))                                           \
    {                                                                                           \
        for (int64_t c = 0; c < cnt; c++) {                                                     \
            const T *g = dy + c * L, *xr = x + c * L;                                           \
            T a = 0, b = 0, m = mean[c];                                                        \
            if (y) {                                                                            \
                const T *yr = y + c * L;                                                        \
                _Pragma("omp simd reduction(+:a,b)") for (int64_t i = 0; i < L; i++) {          \
                    T d = yr[i] > 0 ? g[i] : 0;                                                 \
                    a += d;                                                                     \
                    b += d * (xr[i] - m);                                                       \
                }                                                                               \
            } else {                                                                            \
                _Pragma("omp simd reduction(+:a,b)") for (int64_t i = 0; i < L; i++) {          \
                    a += g[i];                                                                  \
                    b += g[i] * (xr[i] - m);                                                    \
                }                                                                               \
            }                                                                                   \
            s1[c] += a;                                                                         \
            s2[c] += b;                                                                         \
        }                                                                                       \
    }                                                                                           \
    /* dx = k1 * (dy - k2 - (x - mean) * k3), per channel k1..k3 (k[0..2][c]) */               \
    PG_CPU_DISPATCH(void, grad_input_##SUF, (const T *dy, const T *x, const T *y, T *dx,        \
                                             int64_t cnt, int64_t L, const T *mean,             \
                                             const T *k),                                       \
                    (dy, x, y, dx, cnt, L, mean, k))                                            \
    {                                                                                           \
        for (int64_t c = 0; c < cnt; c++) {                                                     \
            const T *g = dy + c * L, *xr = x + c * L;                                           \
            T *o = dx + c * L, m = mean[c], k1 = k[c], k2 = k[cnt + c], k3 = k[2 * cnt + c];    \
            if (y) {                                                                            \
                const T *yr = y + c * L;                                                        \
                _Pragma("omp simd") for (int64_t i = 0; i < L; i++) {                           \
                    T d = yr[i] > 0 ? g[i] : 0;                                                 \
                    o[i] = k1 * (d - k2 - (xr[i] - m) * k3);                                    \
                }                                                                               \
            } else {                                                                            \
                _Pragma("omp simd") for (int64_t i = 0; i < L; i++) o[i] =                      \
                    k1 * (g[i] - k2 - (xr[i] - m) * k3);                                        \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    /* channels [c0, c0 + cnt); s1, s2: cnt doubles each; tv: 3 * cnt T */                   \
    static void fwd_group_##SUF(const pg_node *nd, int64_t c0, int64_t cnt, double *s1,         \
                                double *s2, T *tv)                                              \
    {                                                                                           \
        int64_t N = nd->dst.shape[0], C = nd->dst.shape[1], L = nd->dst.shape[2];               \
        const T *x = DATA(T, &nd->src[0]);                                                      \
        T *y = DATA(T, &nd->dst), *k = tv, *sc = tv + cnt, *sh = tv + 2 * cnt;                  \
        for (int64_t c = 0; c < cnt; c++) { /* the shift: the channel's first value */         \
            k[c] = x[(c0 + c) * L];                                                             \
            s1[c] = s2[c] = 0;                                                                  \
        }                                                                                       \
        for (int64_t n = 0; n < N; n++)                                                         \
            shifted_sums_##SUF(x + (n * C + c0) * L, cnt, L, k, s1, s2);                        \
        double M = (double)(N * L);                                                             \
        T *save = DATA(T, &nd->extra[0]);                                                       \
        for (int64_t i = 0; i < cnt; i++) {                                                     \
            int64_t c = c0 + i;                                                                 \
            double dmean = s1[i] / M, var = s2[i] / M - dmean * dmean;                          \
            if (var < 0)                                                                        \
                var = 0;                                                                        \
            double mean = (double)k[i] + dmean, rstd = 1.0 / sqrt(var + nd->p.norm.eps);        \
            save[c] = (T)mean;                                                                  \
            save[C + c] = (T)rstd;                                                              \
            if (nd->extra[1].storage) {                                                         \
                double m = nd->p.norm.momentum;                                                 \
                T *rm = DATA(T, &nd->extra[1]), *rv = DATA(T, &nd->extra[2]);                   \
                rm[c] = (T)((1 - m) * rm[c] + m * mean);                                        \
                rv[c] = (T)((1 - m) * rv[c] + m * var * M / (M - 1));                           \
            }                                                                                   \
            double w = nd->src[1].storage ? DATA(T, &nd->src[1])[c] : 1.0;                      \
            double b = nd->src[2].storage ? DATA(T, &nd->src[2])[c] : 0.0;                      \
            sc[i] = (T)(w * rstd);                                                              \
            sh[i] = (T)(b - mean * w * rstd);                                                   \
        }                                                                                       \
        int act = (int)(nd->p.norm.flags & PG_BN_F_RELU);                                       \
        for (int64_t n = 0; n < N; n++)                                                         \
            scale_shift_##SUF(x + (n * C + c0) * L, y + (n * C + c0) * L, cnt, L, sc, sh, act); \
    }                                                                                           \
    /* evaluation: scale and shift from the running statistics, in double, then one pass */   \
    static void eval_group_##SUF(const pg_node *nd, int64_t c0, int64_t cnt, T *tv)             \
    {                                                                                           \
        int64_t N = nd->dst.shape[0], C = nd->dst.shape[1], L = nd->dst.shape[2];               \
        const T *x = DATA(T, &nd->src[0]), *rm = DATA(T, &nd->src[3]);                          \
        const T *rv = DATA(T, &nd->src[4]);                                                     \
        T *y = DATA(T, &nd->dst), *sc = tv, *sh = tv + cnt;                                     \
        for (int64_t i = 0; i < cnt; i++) {                                                     \
            int64_t c = c0 + i;                                                                 \
            double rstd = 1.0 / sqrt((double)rv[c] + nd->p.norm.eps);                           \
            double w = nd->src[1].storage ? DATA(T, &nd->src[1])[c] : 1.0;                      \
            double b = nd->src[2].storage ? DATA(T, &nd->src[2])[c] : 0.0;                      \
            sc[i] = (T)(w * rstd);                                                              \
            sh[i] = (T)(b - (double)rm[c] * w * rstd);                                          \
        }                                                                                       \
        int act = (int)nd->p.norm.flags;                                                        \
        for (int64_t n = 0; n < N; n++)                                                         \
            scale_shift_##SUF(x + (n * C + c0) * L, y + (n * C + c0) * L, cnt, L, sc, sh, act); \
    }                                                                                           \
    static void bwd_group_##SUF(const pg_node *nd, int64_t c0, int64_t cnt, double *s1,         \
                                double *s2, T *tv)                                              \
    {                                                                                           \
        int64_t N = nd->dst.shape[0], C = nd->dst.shape[1], L = nd->dst.shape[2];               \
        const T *dy = DATA(T, &nd->src[0]), *x = DATA(T, &nd->src[1]);                          \
        const T *save = DATA(T, &nd->src[3]), *mean = save + c0;                                \
        /* the fused ReLU's output, whose sign masks dy */                                     \
        const T *y = nd->p.norm.flags & PG_BN_F_RELU ? DATA(T, &nd->src[4]) : NULL;             \
        T *dx = DATA(T, &nd->dst);                                                              \
        for (int64_t c = 0; c < cnt; c++)                                                       \
            s1[c] = s2[c] = 0;                                                                  \
        for (int64_t n = 0; n < N; n++) {                                                       \
            int64_t at = (n * C + c0) * L;                                                      \
            grad_sums_##SUF(dy + at, x + at, y ? y + at : NULL, cnt, L, mean, s1, s2);          \
        }                                                                                       \
        double M = (double)(N * L);                                                             \
        for (int64_t i = 0; i < cnt; i++) {                                                     \
            int64_t c = c0 + i;                                                                 \
            T rstd = save[C + c];                                                               \
            double sx = s2[i] * rstd; /* sum(dy * xhat) */                                      \
            if (nd->extra[0].storage)                                                           \
                DATA(T, &nd->extra[0])[c] = (T)sx;                                              \
            if (nd->extra[1].storage)                                                           \
                DATA(T, &nd->extra[1])[c] = (T)s1[i];                                           \
            double w = nd->src[2].storage ? DATA(T, &nd->src[2])[c] : 1.0;                      \
            tv[i] = (T)(w * rstd);                                                              \
            tv[cnt + i] = (T)(s1[i] / M);                                                       \
            tv[2 * cnt + i] = (T)(sx / M * rstd);                                               \
        }                                                                                       \
        for (int64_t n = 0; n < N; n++) {                                                       \
            int64_t at = (n * C + c0) * L;                                                      \
            grad_input_##SUF(dy + at, x + at, y ? y + at : NULL, dx + at, cnt, L, mean, tv);    \
        }                                                                                       \
    }

BN_ROWS(f32, float)
BN_ROWS(f64, double)

typedef struct bn_job {
    const pg_node *n;
    int64_t C, ntasks, group; /* channels a group */
} bn_job;

static pg_status bn_task(void *ctx, int64_t t)
{
    const bn_job *j = ctx;
    int64_t lo, hi;
    pg_cpu_part(j->C, j->ntasks, t, &lo, &hi);
    if (hi <= lo)
        return PG_OK;
    bool f32 = j->n->dst.dtype == PG_FLOAT32, fwd = j->n->subop == PG_BATCH_NORM_TRAIN_FWD;
    bool eval = j->n->subop == PG_BATCH_NORM_EVAL_FWD;
    double *s = malloc((size_t)j->group * (2 * sizeof(double) + 3 * sizeof(double)));
    if (!s)
        return pg_error_set(PG_ERR_NOMEM, "batch_norm: out of host memory for its sums");
    double *s1 = s, *s2 = s + j->group;
    void *tv = s + 2 * j->group; /* 3 * group values of the dtype */
    for (int64_t c0 = lo; c0 < hi; c0 += j->group) {
        int64_t cnt = hi - c0 < j->group ? hi - c0 : j->group;
        if (eval)
            f32 ? eval_group_f32(j->n, c0, cnt, tv) : eval_group_f64(j->n, c0, cnt, tv);
        else if (fwd)
            f32 ? fwd_group_f32(j->n, c0, cnt, s1, s2, tv)
                : fwd_group_f64(j->n, c0, cnt, s1, s2, tv);
        else
            f32 ? bwd_group_f32(j->n, c0, cnt, s1, s2, tv)
                : bwd_group_f64(j->n, c0, cnt, s1, s2, tv);
    }
    free(s);
    return PG_OK;
}

pg_status pg_cpu_batch_norm_on(pg_pool *pool, const pg_node *n)
{
    bn_job j = {.n = n, .C = n->dst.shape[1]};
    int64_t work = pg_tensor_numel(&n->dst), threads = pg_pool_threads(pool);
    int64_t per_channel = j.C > 0 ? work / j.C : 0; /* N * L */
    j.group = per_channel > 0 ? GROUP_ELEMS / per_channel : 1;
    if (j.group > j.C)
        j.group = j.C;
    if (j.group < 1)
        j.group = 1;
    j.ntasks = work >= 65536 ? threads : 1;
    if (j.ntasks > j.C)
        j.ntasks = j.C > 0 ? j.C : 1;
    return pg_pool_run(pool, j.ntasks, bn_task, &j);
}

pg_status pg_cpu_batch_norm(const pg_node *n) { return pg_cpu_batch_norm_on(NULL, n); }
