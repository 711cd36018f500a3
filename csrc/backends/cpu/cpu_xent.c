/* cpu_xent.c - the fused softmax cross-entropy on the CPU (XENT_FWD, XENT_BWD; operands in
 * csrc/core/pg_ops_train.c), for cpu and sim.
 *
 * Forward, per row of the logits x (N,C): the row's max m, then one pass p = exp(x - m) with
 * its sum s, then p /= s: the probabilities the backward reads; the row's loss is
 * m + log s - x[label]. Backward: dx = (p - onehot(label)) * g (/ N for the mean). Each pass
 * is a vector loop (libmvec's exp: cpu_vecmath.h), dispatched once per row's work to the
 * CPU's ISA; s is summed in double. A language model's vocabulary (10,000 columns, 1,120
 * rows for a 35 x 32 batch) made the scalar double exp of the first version 5% of an LSTM
 * step, on one thread (issue 45).
 * Rows are shared among the pool's threads (the kind's split column is OWN); each row's loss
 * goes to its own slot and the slots are summed in row order afterwards, so the loss has the
 * same bits at every thread count. */
#include <math.h>
#include <stdlib.h>

#include "../../core/pg_pool.h"
#include "cpu_kernels.h"
#include "cpu_part.h"
#include "cpu_vecmath.h"

#define DATA(T, t) ((T *)pg_tensor_data(t))

#define XENT_ROW(SUF, T, EXP)                                                                   \
    /* p (C) = softmax(x); returns logsumexp(x) - x[label] */                                  \
    PG_CPU_DISPATCH(double, xent_row_##SUF, (const T *x, T *p, int64_t C, int64_t label),       \
                    (x, p, C, label))                                                           \
    {                                                                                           \
        T m = -(T)INFINITY;                                                                     \
        _Pragma("omp simd reduction(max:m)") for (int64_t j = 0; j < C; j++) m =                \
            x[j] > m ? x[j] : m;                                                                \
        double s = 0;                                                                           \
        _Pragma("omp simd reduction(+:s)") for (int64_t j = 0; j < C; j++)                      \
        {                                                                                       \
            T e = EXP(x[j] - m);                                                                \
            p[j] = e;                                                                           \
            s += (double)e;                                                                     \
        }                                                                                       \
        T inv = (T)(1.0 / s);                                                                   \
        _Pragma("omp simd") for (int64_t j = 0; j < C; j++) p[j] *= inv;                        \
        return (double)m + log(s) - (double)x[label];                                           \
    }                                                                                           \
    /* d (C) = p * g, and (p[label] - 1) * g at the label */                                   \
    PG_CPU_DISPATCH(void, xent_grad_row_##SUF, (const T *p, T *d, int64_t C, int64_t label,     \
                                                T g), (p, d, C, label, g))                      \
    {                                                                                           \
        _Pragma("omp simd") for (int64_t j = 0; j < C; j++) d[j] = p[j] * g;                    \
        if (label >= 0 && label < C)                                                            \
            d[label] = (p[label] - (T)1) * g;                                                   \
    }
XENT_ROW(f32, float, expf)
XENT_ROW(f64, double, exp)

typedef struct xent_job {
    const pg_node *n;
    int64_t N, C, ntasks;
    double *loss; /* forward: each row's loss */
    double g;     /* backward: the loss's gradient, / N for the mean */
} xent_job;

static pg_status xent_task(void *ctx, int64_t t)
{
    const xent_job *j = ctx;
    const pg_node *n = j->n;
    int64_t lo, hi, C = j->C;
    pg_cpu_part(j->N, j->ntasks, t, &lo, &hi);
    const int64_t *L = DATA(int64_t, &n->src[1]);
    bool f32 = n->src[0].dtype == PG_FLOAT32;
    for (int64_t r = lo; r < hi; r++) {
        if (n->op == PG_OP_XENT_FWD) {
            if (f32)
                j->loss[r] = xent_row_f32(DATA(float, &n->src[0]) + r * C,
                                          DATA(float, &n->extra[0]) + r * C, C, L[r]);
            else
                j->loss[r] = xent_row_f64(DATA(double, &n->src[0]) + r * C,
                                          DATA(double, &n->extra[0]) + r * C, C, L[r]);
        } else if (f32) {
            xent_grad_row_f32(DATA(float, &n->src[0]) + r * C, DATA(float, &n->dst) + r * C, C,
                              L[r], (float)j->g);
        } else {
            xent_grad_row_f64(DATA(double, &n->src[0]) + r * C, DATA(double, &n->dst) + r * C,
                              C, L[r], j->g);
        }
    }
    return PG_OK;
}

/* one task per thread when the rows carry enough work (a few exps per element: 16K
 * elements a slice, cpu_parallel.c's grain for transcendental ops) */
static int64_t tasks_for(pg_pool *pool, int64_t N, int64_t C)
{
    int64_t threads = pool ? pg_pool_threads(pool) : 1;
    int64_t by_work = N * C / 16384;
    int64_t t = threads < by_work ? threads : by_work;
    t = t < N ? t : N;
    return t > 1 ? t : 1;
}

pg_status pg_cpu_xent_fwd_on(pg_pool *pool, const pg_node *n)
{
    xent_job j = {.n = n, .N = n->src[0].shape[0], .C = n->src[0].shape[1]};
    const int64_t *L = DATA(int64_t, &n->src[1]);
    for (int64_t r = 0; r < j.N; r++)
        if (L[r] < 0 || L[r] >= j.C)
            return pg_error_set(PG_ERR_INDEX,
                                "cross_entropy: label %lld (row %lld) is out of range for %lld "
                                "classes; labels must be in [0, %lld)",
                                (long long)L[r], (long long)r, (long long)j.C, (long long)j.C);
    j.loss = malloc((size_t)(j.N > 0 ? j.N : 1) * sizeof *j.loss);
    if (!j.loss)
        return pg_error_set(PG_ERR_NOMEM, "cross_entropy: out of host memory for %lld row "
                                          "losses", (long long)j.N);
    j.ntasks = tasks_for(pool, j.N, j.C);
    pg_status st = j.ntasks > 1 ? pg_pool_run(pool, j.ntasks, xent_task, &j) : xent_task(&j, 0);
    if (st == PG_OK) {
        double total = 0;
        for (int64_t r = 0; r < j.N; r++) /* in row order: the same bits at any thread count */
            total += j.loss[r];
        if (n->p.xent.mean)
            total /= (double)j.N;
        if (n->dst.dtype == PG_FLOAT32)
            *DATA(float, &n->dst) = (float)total;
        else
            *DATA(double, &n->dst) = total;
    }
    free(j.loss);
    return st;
}

pg_status pg_cpu_xent_bwd_on(pg_pool *pool, const pg_node *n)
{
    xent_job j = {.n = n, .N = n->src[0].shape[0], .C = n->src[0].shape[1]};
    j.g = n->src[0].dtype == PG_FLOAT32 ? (double)*DATA(float, &n->src[2])
                                        : *DATA(double, &n->src[2]);
    if (n->p.xent.mean)
        j.g /= (double)j.N;
    j.ntasks = tasks_for(pool, j.N, j.C);
    return j.ntasks > 1 ? pg_pool_run(pool, j.ntasks, xent_task, &j) : xent_task(&j, 0);
}

pg_status pg_cpu_xent_fwd(const pg_node *n) { return pg_cpu_xent_fwd_on(NULL, n); }

pg_status pg_cpu_xent_bwd(const pg_node *n) { return pg_cpu_xent_bwd_on(NULL, n); }
