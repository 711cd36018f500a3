/* cpu_batchnorm.c - batch normalization in training on the CPU (BATCH_NORM nodes;
 * operands in csrc/core/pg_ops_conv.h): x seen as (N, C, L), channels shared among the
 * pool's threads, each channel read twice each way:
 *
 *   forward   pass 1: the shifted sums of x and x^2 (shift: the channel's first value, so
 *             the variance does not cancel away), in double: mean, var, 1/sqrt(var + eps);
 *             the running statistics updated (running_var with the unbiased variance);
 *             pass 2: y = x * scale + shift, scale = w/sqrt(var+eps), shift = b - mean*scale
 *   backward  pass 1: sum(dy) and sum(dy * xhat) (db and dw);
 *             pass 2: dx = w * rstd * (dy - sum(dy)/M - xhat * sum(dy*xhat)/M), M = N*L
 *             (dy through the fused ReLU's mask as it is read, in both passes) */
#include <math.h>
#include <string.h>

#include "../../core/pg_ops_conv.h"
#include "cpu_conv.h"
#include "cpu_part.h"
#include "cpu_vecmath.h"

#define DATA(T, t) ((T *)pg_tensor_data(t))

/* Each vector routine takes a whole channel: its N rows of L elements, `ld` apart, so a
 * channel costs one dispatched call per pass however small L is (it was one per row: at
 * 960 channels of 4 x 4, 30720 calls per pass, and batch norm's backward ran at 0.42x
 * PyTorch's CPU time; issue 45). Each row's sum is taken in T's vector lanes, then added in
 * double, as before, so the bits did not change. The backward's fused ReLU mask is applied
 * as dy is read in both passes instead of in a pass of its own that wrote it to dx. */
#define BN_ROWS(SUF, T)                                                                         \
    PG_CPU_DISPATCH(void, shifted_sums_##SUF, (const T *x, int64_t N, int64_t ld, int64_t L,    \
                                               T k, double *s1, double *s2),                    \
                    (x, N, ld, L, k, s1, s2))                                                   \
    {                                                                                           \
        for (int64_t n = 0; n < N; n++) {                                                       \
            const T *xr = x + n * ld;                                                           \
            T a = 0, b = 0;                                                                     \
            _Pragma("omp simd reduction(+:a,b)") for (int64_t i = 0; i < L; i++) {              \
                T d = xr[i] - k;                                                                \
                a += d;                                                                         \
                b += d * d;                                                                     \
            }                                                                                   \
            *s1 += a;                                                                           \
            *s2 += b;                                                                           \
        }                                                                                       \
    }                                                                                           \
    PG_CPU_DISPATCH(void, scale_shift_##SUF, (const T *x, T *y, int64_t N, int64_t ld,          \
                                              int64_t L, T sc, T sh, bool relu),                \
                    (x, y, N, ld, L, sc, sh, relu))                                             \
    {                                                                                           \
        for (int64_t n = 0; n < N; n++) {                                                       \
            const T *xr = x + n * ld;                                                           \
            T *yr = y + n * ld;                                                                 \
            if (relu) {                                                                         \
                _Pragma("omp simd") for (int64_t i = 0; i < L; i++) {                           \
                    T v = xr[i] * sc + sh;                                                      \
                    yr[i] = v > 0 ? v : 0;                                                      \
                }                                                                               \
            } else {                                                                            \
                _Pragma("omp simd") for (int64_t i = 0; i < L; i++) yr[i] = xr[i] * sc + sh;    \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    /* sum(dy) and sum(dy * (x - mean)), dy taken as 0 where the fused ReLU's output y is not \
     * positive (y: NULL without the ReLU) */                                                \
    PG_CPU_DISPATCH(void, grad_sums_##SUF, (const T *dy, const T *x, const T *y, int64_t N,     \
                                            int64_t ld, int64_t L, T mean, double *s1,          \
                                            double *s2), (dy, x, y, N, ld, L, mean, s1, s2))    \
    {                                                                                           \
        for (int64_t n = 0; n < N; n++) {                                                       \
            const T *g = dy + n * ld, *xr = x + n * ld;                                         \
            T a = 0, b = 0;                                                                     \
            if (y) {                                                                            \
                const T *yr = y + n * ld;                                                       \
                _Pragma("omp simd reduction(+:a,b)") for (int64_t i = 0; i < L; i++) {          \
                    T d = yr[i] > 0 ? g[i] : 0;                                                 \
                    a += d;                                                                     \
                    b += d * (xr[i] - mean);                                                    \
                }                                                                               \
            } else {                                                                            \
                _Pragma("omp simd reduction(+:a,b)") for (int64_t i = 0; i < L; i++) {          \
                    a += g[i];                                                                  \
                    b += g[i] * (xr[i] - mean);                                                 \
                }                                                                               \
            }                                                                                   \
            *s1 += a;                                                                           \
            *s2 += b;                                                                           \
        }                                                                                       \
    }                                                                                           \
    PG_CPU_DISPATCH(void, grad_input_##SUF, (const T *dy, const T *x, const T *y, T *dx,        \
                                             int64_t N, int64_t ld, int64_t L, T mean, T k1,    \
                                             T k2, T k3),                                       \
                    (dy, x, y, dx, N, ld, L, mean, k1, k2, k3))                                 \
    {                                                                                           \
        for (int64_t n = 0; n < N; n++) {                                                       \
            const T *g = dy + n * ld, *xr = x + n * ld;                                         \
            T *o = dx + n * ld;                                                                 \
            if (y) {                                                                            \
                const T *yr = y + n * ld;                                                       \
                _Pragma("omp simd") for (int64_t i = 0; i < L; i++) {                           \
                    T d = yr[i] > 0 ? g[i] : 0;                                                 \
                    o[i] = k1 * (d - k2 - (xr[i] - mean) * k3);                                 \
                }                                                                               \
            } else {                                                                            \
                _Pragma("omp simd") for (int64_t i = 0; i < L; i++) o[i] =                      \
                    k1 * (g[i] - k2 - (xr[i] - mean) * k3);                                     \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    static void fwd_channel_##SUF(const pg_node *nd, int64_t c)                                 \
    {                                                                                           \
        int64_t N = nd->dst.shape[0], C = nd->dst.shape[1], L = nd->dst.shape[2];               \
        const T *x = DATA(T, &nd->src[0]) + c * L;                                              \
        T *y = DATA(T, &nd->dst) + c * L;                                                       \
        T k = x[0];                                                                             \
        double s1 = 0, s2 = 0, M = (double)(N * L);                                             \
        shifted_sums_##SUF(x, N, C * L, L, k, &s1, &s2);                                        \
        double dmean = s1 / M, var = s2 / M - dmean * dmean;                                    \
        if (var < 0)                                                                            \
            var = 0;                                                                            \
        double mean = (double)k + dmean, rstd = 1.0 / sqrt(var + nd->p.norm.eps);               \
        T *save = DATA(T, &nd->extra[0]);                                                       \
        save[c] = (T)mean;                                                                      \
        save[C + c] = (T)rstd;                                                                  \
        if (nd->extra[1].storage) {                                                             \
            double m = nd->p.norm.momentum;                                                     \
            T *rm = DATA(T, &nd->extra[1]), *rv = DATA(T, &nd->extra[2]);                       \
            rm[c] = (T)((1 - m) * rm[c] + m * mean);                                            \
            rv[c] = (T)((1 - m) * rv[c] + m * var * M / (M - 1));                               \
        }                                                                                       \
        double w = nd->src[1].storage ? DATA(T, &nd->src[1])[c] : 1.0;                          \
        double b = nd->src[2].storage ? DATA(T, &nd->src[2])[c] : 0.0;                          \
        T sc = (T)(w * rstd), sh = (T)(b - mean * w * rstd);                                    \
        scale_shift_##SUF(x, y, N, C * L, L, sc, sh, (nd->p.norm.flags & PG_BN_F_RELU) != 0);   \
    }                                                                                           \
    static void bwd_channel_##SUF(const pg_node *nd, int64_t c)                                 \
    {                                                                                           \
        int64_t N = nd->dst.shape[0], C = nd->dst.shape[1], L = nd->dst.shape[2];               \
        const T *dy = DATA(T, &nd->src[0]) + c * L, *x = DATA(T, &nd->src[1]) + c * L;          \
        const T *save = DATA(T, &nd->src[3]);                                                   \
        /* the fused ReLU's output, whose sign masks dy */                                     \
        const T *y = nd->p.norm.flags & PG_BN_F_RELU ? DATA(T, &nd->src[4]) + c * L : NULL;     \
        T *dx = DATA(T, &nd->dst) + c * L;                                                      \
        T mean = save[c], rstd = save[C + c];                                                   \
        double s1 = 0, s2 = 0, M = (double)(N * L);                                             \
        grad_sums_##SUF(dy, x, y, N, C * L, L, mean, &s1, &s2);                                 \
        s2 *= rstd; /* sum(dy * xhat) */                                                        \
        if (nd->extra[0].storage)                                                               \
            DATA(T, &nd->extra[0])[c] = (T)s2;                                                  \
        if (nd->extra[1].storage)                                                               \
            DATA(T, &nd->extra[1])[c] = (T)s1;                                                  \
        double w = nd->src[2].storage ? DATA(T, &nd->src[2])[c] : 1.0;                          \
        T k1 = (T)(w * rstd), k2 = (T)(s1 / M), k3 = (T)(s2 / M * rstd);                        \
        grad_input_##SUF(dy, x, y, dx, N, C * L, L, mean, k1, k2, k3);                          \
    }

BN_ROWS(f32, float)
BN_ROWS(f64, double)

typedef struct bn_job {
    const pg_node *n;
    int64_t C, ntasks;
} bn_job;

static pg_status bn_task(void *ctx, int64_t t)
{
    const bn_job *j = ctx;
    int64_t lo, hi;
    pg_cpu_part(j->C, j->ntasks, t, &lo, &hi);
    bool f32 = j->n->dst.dtype == PG_FLOAT32, fwd = j->n->subop == PG_BATCH_NORM_TRAIN_FWD;
    for (int64_t c = lo; c < hi; c++) {
        if (fwd)
            f32 ? fwd_channel_f32(j->n, c) : fwd_channel_f64(j->n, c);
        else
            f32 ? bwd_channel_f32(j->n, c) : bwd_channel_f64(j->n, c);
    }
    return PG_OK;
}

pg_status pg_cpu_batch_norm_on(pg_pool *pool, const pg_node *n)
{
    bn_job j = {.n = n, .C = n->dst.shape[1]};
    int64_t work = pg_tensor_numel(&n->dst), threads = pg_pool_threads(pool);
    j.ntasks = work >= 65536 ? threads : 1;
    if (j.ntasks > j.C)
        j.ntasks = j.C > 0 ? j.C : 1;
    return pg_pool_run(pool, j.ntasks, bn_task, &j);
}

pg_status pg_cpu_batch_norm(const pg_node *n) { return pg_cpu_batch_norm_on(NULL, n); }
