/* cpu_layer_norm.c - layer normalization over the rows of (R, C) on the CPU: the LAYER_NORM
 * node's two sub-ops (operands: csrc/core/pg_ops_norm.c), the twin of the CUDA kernels in
 * csrc/backends/cuda/kernels/rows.cu; sim runs these on its device threads.
 *
 *   FWD  per row: the mean, then the variance of x - mean (two passes: no cancellation;
 *        sums in T's vector lanes, as torch's), y = (x - mean) * rstd (* w) (+ b); the
 *        row's mean and rstd saved when the node has a save. Rows cut among the threads.
 *   BWD  per row, from the saved mean and rstd, with xhat = (x - mean) * rstd, gw = dy * w:
 *        pass 1: a = sum(gw), b = sum(gw * xhat);
 *        pass 2: dx = rstd * (gw - a / C - xhat * b / C), and dw += dy * xhat, db += dy
 *        into the partial sums of the row's block.
 *        dw and db sum over rows: the rows are cut into blocks fixed by the shape alone
 *        (LN_BLOCK_ROWS rows, at most LN_MAX_BLOCKS blocks), each block's sums go to a
 *        scratch row of its own and the blocks are added in block order, so the result
 *        has the same bits at any thread count. The threads share whole blocks. */
/* runtime trip counts: the dynamic cost model vectorises them (as cpu_train.c) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_pool.h"
#include "../../core/pg_status.h"
#include "cpu_kernels.h"
#include "cpu_part.h"
#include "cpu_vecmath.h"

#define DATA(T, t) ((T *)pg_tensor_data(t))
#define OPT(T, t) ((t)->storage ? DATA(T, t) : NULL)

#define LN_GRAIN 16384     /* elements a task at least (a row op: cpu_parallel.c's rows) */
#define LN_BLOCK_ROWS 32   /* rows of one partial sum of dw and db */
#define LN_MAX_BLOCKS 64   /* so the scratch stays 64 rows of 2C whatever R is */

#define LAYER_NORM_ROWS(SUF, T)                                                                \
    PG_CPU_DISPATCH(void, ln_fwd_row_##SUF, (const T *x, T *y, int64_t C, const T *w,         \
                                             const T *b, double eps, T *save),                 \
                    (x, y, C, w, b, eps, save))                                                \
    {                                                                                          \
        T s = 0, q = 0;                                                                        \
        _Pragma("omp simd reduction(+:s)") for (int64_t j = 0; j < C; j++) s += x[j];          \
        T mean = s / (T)C;                                                                     \
        _Pragma("omp simd reduction(+:q)") for (int64_t j = 0; j < C; j++)                     \
        {                                                                                      \
            T d = x[j] - mean;                                                                 \
            q += d * d;                                                                        \
        }                                                                                      \
        T rstd = (T)(1.0 / sqrt((double)q / (double)C + eps));                                 \
        if (save) {                                                                            \
            save[0] = mean;                                                                    \
            save[1] = rstd;                                                                    \
        }                                                                                      \
        if (w && b) {                                                                          \
            _Pragma("omp simd") for (int64_t j = 0; j < C; j++) y[j] =                         \
                (x[j] - mean) * rstd * w[j] + b[j];                                            \
        } else {                                                                               \
            _Pragma("omp simd") for (int64_t j = 0; j < C; j++) y[j] = (x[j] - mean) * rstd;  \
            if (w)                                                                             \
                _Pragma("omp simd") for (int64_t j = 0; j < C; j++) y[j] *= w[j];              \
            if (b)                                                                             \
                _Pragma("omp simd") for (int64_t j = 0; j < C; j++) y[j] += b[j];              \
        }                                                                                      \
    }                                                                                          \
    /* one row's dx; dw, db (NULL: not wanted) += its share */                                 \
    PG_CPU_DISPATCH(void, ln_bwd_row_##SUF, (const T *dy, const T *x, T *dx, int64_t C,       \
                                             const T *w, T mean, T rstd, T *dw, T *db),        \
                    (dy, x, dx, C, w, mean, rstd, dw, db))                                     \
    {                                                                                          \
        T a = 0, bs = 0;                                                                       \
        if (w) {                                                                               \
            _Pragma("omp simd reduction(+:a,bs)") for (int64_t j = 0; j < C; j++)              \
            {                                                                                  \
                T gw = dy[j] * w[j];                                                           \
                a += gw;                                                                       \
                bs += gw * (x[j] - mean);                                                      \
            }                                                                                  \
        } else {                                                                               \
            _Pragma("omp simd reduction(+:a,bs)") for (int64_t j = 0; j < C; j++)              \
            {                                                                                  \
                a += dy[j];                                                                    \
                bs += dy[j] * (x[j] - mean);                                                   \
            }                                                                                  \
        }                                                                                      \
        const T ka = a / (T)C, kb = bs * rstd / (T)C; /* mean(gw), mean(gw * xhat) */          \
        if (w) {                                                                               \
            _Pragma("omp simd") for (int64_t j = 0; j < C; j++) dx[j] =                        \
                rstd * (dy[j] * w[j] - ka - (x[j] - mean) * rstd * kb);                        \
        } else {                                                                               \
            _Pragma("omp simd") for (int64_t j = 0; j < C; j++) dx[j] =                        \
                rstd * (dy[j] - ka - (x[j] - mean) * rstd * kb);                               \
        }                                                                                      \
        if (dw)                                                                                \
            _Pragma("omp simd") for (int64_t j = 0; j < C; j++) dw[j] +=                       \
                dy[j] * ((x[j] - mean) * rstd);                                                \
        if (db)                                                                                \
            _Pragma("omp simd") for (int64_t j = 0; j < C; j++) db[j] += dy[j];                \
    }                                                                                          \
    /* out[j] = the sum over the blocks of part[k][j], in block order */                       \
    PG_CPU_DISPATCH(void, ln_add_blocks_##SUF, (const T *part, int64_t nblk, int64_t stride,  \
                                                int64_t C, T *out), (part, nblk, stride, C, out)) \
    {                                                                                          \
        memcpy(out, part, sizeof(T) * (size_t)C);                                              \
        for (int64_t k = 1; k < nblk; k++)                                                     \
            _Pragma("omp simd") for (int64_t j = 0; j < C; j++) out[j] += part[k * stride + j]; \
    }
LAYER_NORM_ROWS(f32, float)
LAYER_NORM_ROWS(f64, double)

typedef struct ln_job {
    const pg_node *n;
    int64_t R, C, ntasks;
    int64_t nblk; /* BWD: the row blocks of dw and db (1 when neither is wanted) */
    void *part;   /* BWD: nblk scratch rows of 2C (dw's C, then db's C); NULL: none */
} ln_job;

static void fwd_rows(const ln_job *j, int64_t lo, int64_t hi)
{
    const pg_node *n = j->n;
    int64_t C = j->C;
    double eps = n->p.norm.eps;
    for (int64_t r = lo; r < hi; r++) {
        if (n->dst.dtype == PG_FLOAT32) {
            float *save = OPT(float, &n->extra[0]);
            ln_fwd_row_f32(DATA(float, &n->src[0]) + r * C, DATA(float, &n->dst) + r * C, C,
                           OPT(float, &n->src[1]), OPT(float, &n->src[2]), eps,
                           save ? save + 2 * r : NULL);
        } else {
            double *save = OPT(double, &n->extra[0]);
            ln_fwd_row_f64(DATA(double, &n->src[0]) + r * C, DATA(double, &n->dst) + r * C, C,
                           OPT(double, &n->src[1]), OPT(double, &n->src[2]), eps,
                           save ? save + 2 * r : NULL);
        }
    }
}

/* the rows of block k: dx, and the block's dw and db partial sums (zeroed first) */
#define BWD_BLOCK(SUF, T)                                                                      \
    static void bwd_block_##SUF(const ln_job *j, int64_t k)                                    \
    {                                                                                          \
        const pg_node *n = j->n;                                                               \
        int64_t C = j->C, lo, hi;                                                              \
        pg_cpu_part(j->R, j->nblk, k, &lo, &hi);                                               \
        const T *dy = DATA(T, &n->src[0]), *x = DATA(T, &n->src[1]);                           \
        const T *w = OPT(T, &n->src[2]), *save = DATA(T, &n->src[3]);                          \
        T *dx = DATA(T, &n->dst), *dw = NULL, *db = NULL;                                      \
        if (j->part) {                                                                         \
            T *p = (T *)j->part + k * 2 * C;                                                   \
            memset(p, 0, sizeof(T) * (size_t)(2 * C));                                         \
            dw = n->extra[0].storage ? p : NULL;                                               \
            db = n->extra[1].storage ? p + C : NULL;                                           \
        }                                                                                      \
        for (int64_t r = lo; r < hi; r++)                                                      \
            ln_bwd_row_##SUF(dy + r * C, x + r * C, dx + r * C, C, w, save[2 * r],             \
                             save[2 * r + 1], dw, db);                                         \
    }
BWD_BLOCK(f32, float)
BWD_BLOCK(f64, double)

static pg_status ln_task(void *ctx, int64_t t)
{
    const ln_job *j = ctx;
    bool f32 = j->n->dst.dtype == PG_FLOAT32;
    int64_t lo, hi;
    if (j->n->subop == PG_LAYER_NORM_FWD) {
        pg_cpu_part(j->R, j->ntasks, t, &lo, &hi);
        fwd_rows(j, lo, hi);
        return PG_OK;
    }
    pg_cpu_part(j->nblk, j->ntasks, t, &lo, &hi);
    for (int64_t k = lo; k < hi; k++)
        f32 ? bwd_block_f32(j, k) : bwd_block_f64(j, k);
    return PG_OK;
}

pg_status pg_cpu_layer_norm_on(pg_pool *pool, const pg_node *n)
{
    ln_job j = {.n = n, .R = n->dst.shape[0], .C = n->dst.shape[1], .nblk = 1};
    bool bwd = n->subop == PG_LAYER_NORM_BWD;
    bool sums = bwd && (n->extra[0].storage || n->extra[1].storage);
    if (j.R == 0 || j.C == 0)
        return PG_OK;
    if (sums) {
        j.nblk = (j.R + LN_BLOCK_ROWS - 1) / LN_BLOCK_ROWS;
        if (j.nblk > LN_MAX_BLOCKS)
            j.nblk = LN_MAX_BLOCKS;
        size_t esz = pg_dtype_size((pg_dtype)n->dst.dtype);
        j.part = malloc((size_t)(j.nblk * 2 * j.C) * esz);
        if (!j.part)
            return pg_error_set(PG_ERR_NOMEM, "layer_norm_backward: no memory for the partial "
                                              "sums of %lld blocks of %lld columns",
                                (long long)j.nblk, (long long)j.C);
    } else if (bwd) {
        j.nblk = j.R; /* no sums: rows are independent, any cut */
    }
    int64_t units = bwd ? j.nblk : j.R;
    j.ntasks = j.R * j.C / LN_GRAIN;
    if (j.ntasks > pg_pool_threads(pool))
        j.ntasks = pg_pool_threads(pool);
    if (j.ntasks > units)
        j.ntasks = units;
    if (j.ntasks < 1)
        j.ntasks = 1;
    pg_status st = pg_pool_run(pool, j.ntasks, ln_task, &j);
    if (st == PG_OK && j.part) {
        for (int e = 0; e < 2; e++) {
            if (!n->extra[e].storage)
                continue;
            if (n->dst.dtype == PG_FLOAT32)
                ln_add_blocks_f32((const float *)j.part + e * j.C, j.nblk, 2 * j.C, j.C,
                                  DATA(float, &n->extra[e]));
            else
                ln_add_blocks_f64((const double *)j.part + e * j.C, j.nblk, 2 * j.C, j.C,
                                  DATA(double, &n->extra[e]));
        }
    }
    free(j.part);
    return st;
}

pg_status pg_cpu_layer_norm(const pg_node *n) { return pg_cpu_layer_norm_on(NULL, n); }
