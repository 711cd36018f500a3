/* cpu_conv.c - convolution on the CPU (CONV nodes; operands in pg_ops_conv.h), for cpu and
 * sim.
 *
 * Through the GEMM contract (csrc/core/pg_gemm.h), as Caffe's im2col + GEMM: for each
 * sample n and group g, the input's windows are unrolled into col (K, OH*OW), K =
 * C/g*KH*KW, in a per-thread buffer (never the whole batch's), and
 *     forward        y[n,g] (O/g, OH*OW)  = W_g (O/g, K) @ col, then + b per row
 *     input grad     dcol (K, OH*OW)      = W_g^T @ dy[n,g], folded back into dx (col2im)
 *     weight grad    dW_g (O/g, K)       += dy[n,g] @ col^T      (db: dy's row sums)
 * each product one call of the CPU's single-thread GEMM kernel (pygpu's AVX2 float32
 * kernel, or OpenBLAS), so the ISA's kernels serve convolution as they serve Linear. A 1x1
 * convolution with stride 1 and no padding needs no unrolling: col is the input itself.
 * The (n, g) units are shared among the pool's threads; with fewer units than threads
 * (batch-1 inference), each product is cut over the pool by the GEMM scheduler instead.
 * The weight gradient sums over samples: each task owns a slice of the samples and a
 * partial dW, summed in task order at the end, so a run repeats bit for bit.
 *
 * Depthwise convolution (one input channel per group: C/g == 1) is a direct loop instead,
 * vectorized along each output row (cpu_conv_direct.c): its products would be 1-row GEMMs. */
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_ops_conv.h"
#include "cpu_conv.h"
#include "cpu_gemm.h"
#include "cpu_part.h"
#include "cpu_scratch.h"

#define DATA(T, t) ((T *)pg_tensor_data(t))

/* The shapes of a CONV node, whichever way it runs. */
typedef struct conv_dims {
    int64_t N, C, H, W, O, OH, OW, G, Cg, Og, K, HW, OHW;
    size_t esz;
    bool direct_col; /* 1x1, stride 1, no padding: col is the input plane itself */
} conv_dims;

static void dims_of(const pg_node *n, conv_dims *d)
{
    const pg_tensor *x, *y;
    if (n->subop == PG_CONV_FWD) {
        x = &n->src[0];
        y = &n->dst;
    } else if (n->subop == PG_CONV_BWD_DATA) {
        x = &n->dst;
        y = &n->src[0];
    } else {
        x = &n->src[1];
        y = &n->src[0];
    }
    const pg_conv_geom *g = &n->p.conv;
    d->N = x->shape[0];
    d->C = x->shape[1];
    d->H = x->shape[2];
    d->W = x->shape[3];
    d->O = y->shape[1];
    d->OH = y->shape[2];
    d->OW = y->shape[3];
    d->G = g->groups;
    d->Cg = d->C / d->G;
    d->Og = d->O / d->G;
    d->K = d->Cg * g->kh * g->kw;
    d->HW = d->H * d->W;
    d->OHW = d->OH * d->OW;
    d->esz = pg_dtype_size((pg_dtype)x->dtype);
    d->direct_col = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 &&
                    g->pw == 0 && d->OH == d->H && d->OW == d->W;
}

/* The valid output range [lo, hi) of one kernel tap along an axis: out * s - p + tap * dil
 * within [0, in). */
static void tap_range(int64_t out, int64_t in, int64_t s, int64_t p, int64_t off, int64_t *lo,
                      int64_t *hi)
{
    int64_t a = p - off; /* out * s >= a */
    int64_t l = a <= 0 ? 0 : (a + s - 1) / s;
    int64_t b = in + p - off; /* out * s < b */
    int64_t h = b <= 0 ? 0 : (b + s - 1) / s;
    *lo = l < out ? l : out;
    *hi = h < out ? h : out;
    if (*hi < *lo)
        *hi = *lo;
}

/* im2col of one group of one sample (Cg planes of H*W) into col (K, OH*OW), and col2im's
 * sum back. One instantiation per element type. */
#define IM2COL(SUF, T)                                                                          \
    static void im2col_##SUF(const T *x, T *col, const conv_dims *d, const pg_conv_geom *g)     \
    {                                                                                           \
        for (int64_t c = 0; c < d->Cg; c++)                                                     \
            for (int64_t i = 0; i < g->kh; i++)                                                 \
                for (int64_t j = 0; j < g->kw; j++) {                                           \
                    T *row = col + ((c * g->kh + i) * g->kw + j) * d->OHW;                      \
                    int64_t oh0, oh1, ow0, ow1;                                                 \
                    tap_range(d->OH, d->H, g->sh, g->ph, i * g->dh, &oh0, &oh1);                \
                    tap_range(d->OW, d->W, g->sw, g->pw, j * g->dw, &ow0, &ow1);                \
                    memset(row, 0, sizeof(T) * (size_t)(oh0 * d->OW));                          \
                    for (int64_t oh = oh0; oh < oh1; oh++) {                                    \
                        T *r = row + oh * d->OW;                                                \
                        const T *xr = x + c * d->HW + (oh * g->sh - g->ph + i * g->dh) * d->W + \
                                      j * g->dw - g->pw;                                        \
                        for (int64_t ow = 0; ow < ow0; ow++)                                    \
                            r[ow] = 0;                                                          \
                        if (g->sw == 1)                                                         \
                            memcpy(r + ow0, xr + ow0, sizeof(T) * (size_t)(ow1 - ow0));         \
                        else                                                                    \
                            for (int64_t ow = ow0; ow < ow1; ow++)                              \
                                r[ow] = xr[ow * g->sw];                                         \
                        for (int64_t ow = ow1; ow < d->OW; ow++)                                \
                            r[ow] = 0;                                                          \
                    }                                                                           \
                    memset(row + oh1 * d->OW, 0, sizeof(T) * (size_t)((d->OH - oh1) * d->OW));  \
                }                                                                               \
    }                                                                                           \
    static void col2im_##SUF(const T *col, T *x, const conv_dims *d, const pg_conv_geom *g)     \
    {                                                                                           \
        memset(x, 0, sizeof(T) * (size_t)(d->Cg * d->HW));                                      \
        for (int64_t c = 0; c < d->Cg; c++)                                                     \
            for (int64_t i = 0; i < g->kh; i++)                                                 \
                for (int64_t j = 0; j < g->kw; j++) {                                           \
                    const T *row = col + ((c * g->kh + i) * g->kw + j) * d->OHW;                \
                    int64_t oh0, oh1, ow0, ow1;                                                 \
                    tap_range(d->OH, d->H, g->sh, g->ph, i * g->dh, &oh0, &oh1);                \
                    tap_range(d->OW, d->W, g->sw, g->pw, j * g->dw, &ow0, &ow1);                \
                    for (int64_t oh = oh0; oh < oh1; oh++) {                                    \
                        const T *r = row + oh * d->OW;                                          \
                        T *xr = x + c * d->HW + (oh * g->sh - g->ph + i * g->dh) * d->W +       \
                                j * g->dw - g->pw;                                              \
                        if (g->sw == 1) {                                                       \
                            _Pragma("omp simd") for (int64_t ow = ow0; ow < ow1; ow++)          \
                                xr[ow] += r[ow];                                                \
                        } else {                                                                \
                            for (int64_t ow = ow0; ow < ow1; ow++)                              \
                                xr[ow * g->sw] += r[ow];                                        \
                        }                                                                       \
                    }                                                                           \
                }                                                                               \
    }                                                                                           \
    static void add_rows_##SUF(T *y, int64_t rows, int64_t cols, const T *b)                    \
    {                                                                                           \
        for (int64_t r = 0; r < rows; r++) {                                                    \
            T v = b[r], *yr = y + r * cols;                                                     \
            _Pragma("omp simd") for (int64_t k = 0; k < cols; k++) yr[k] += v;                  \
        }                                                                                       \
    }                                                                                           \
    static void row_sums_##SUF(const T *y, int64_t rows, int64_t cols, double *acc)             \
    {                                                                                           \
        for (int64_t r = 0; r < rows; r++) {                                                    \
            double s = 0;                                                                       \
            const T *yr = y + r * cols;                                                         \
            for (int64_t k = 0; k < cols; k++)                                                  \
                s += yr[k];                                                                     \
            acc[r] += s;                                                                        \
        }                                                                                       \
    }

IM2COL(f32, float)
IM2COL(f64, double)

static void im2col(const void *x, void *col, const conv_dims *d, const pg_conv_geom *g)
{
    if (d->esz == 4)
        im2col_f32(x, col, d, g);
    else
        im2col_f64(x, col, d, g);
}

static void col2im(const void *col, void *x, const conv_dims *d, const pg_conv_geom *g)
{
    if (d->esz == 4)
        col2im_f32(col, x, d, g);
    else
        col2im_f64(col, x, d, g);
}

static void add_rows(void *y, int64_t rows, int64_t cols, const void *b, size_t esz)
{
    if (esz == 4)
        add_rows_f32(y, rows, cols, b);
    else
        add_rows_f64(y, rows, cols, b);
}

static void row_sums(const void *y, int64_t rows, int64_t cols, double *acc, size_t esz)
{
    if (esz == 4)
        row_sums_f32(y, rows, cols, acc);
    else
        row_sums_f64(y, rows, cols, acc);
}

static pg_gemm gemm_base(int dtype)
{
    pg_gemm g = {0};
    g.batch = 1;
    g.dtype_ab = g.dtype_c = dtype;
    g.compute = pg_gemm_compute_of(dtype);
    g.alpha = 1.0;
    return g;
}

static char *at(const void *p, int64_t elems, size_t esz)
{
    return (char *)p + elems * (int64_t)esz;
}

/* ---- one (n, g) unit each way ---------------------------------------------------------- */

typedef struct conv_job {
    const pg_node *n;
    conv_dims d;
    int dtype;
    pg_pool *gemm_pool; /* NULL inside a pool task; the pool when units run one by one */
    int64_t ntasks;
    void *partial;   /* BWD_WEIGHT: ntasks dW of O*K elements */
    double *bsum;    /* BWD_WEIGHT: ntasks db of O doubles, or NULL */
} conv_job;

static pg_status run_gemm(pg_pool *pool, const pg_gemm *g)
{
    if (pool)
        return pg_cpu_gemm_run(pool, g);
    pg_gemm_kernel_fn fn = pg_cpu_gemm_kernel(g->dtype_ab, g->dtype_c);
    if (!fn)
        return pg_error_set(PG_ERR_DTYPE, "conv2d: no GEMM kernel for this dtype");
    return fn(g);
}

static void *col_buffer(const conv_dims *d)
{
    return pg_cpu_scratch(PG_SCRATCH_CONV, (size_t)(d->K * d->OHW) * d->esz);
}

static pg_status fwd_unit(conv_job *j, int64_t n, int64_t grp)
{
    const pg_node *nd = j->n;
    const conv_dims *d = &j->d;
    const void *x = at(pg_tensor_data(&nd->src[0]), (n * d->C + grp * d->Cg) * d->HW, d->esz);
    void *y = at(pg_tensor_data(&nd->dst), (n * d->O + grp * d->Og) * d->OHW, d->esz);
    const void *col = x;
    if (!d->direct_col) {
        void *buf = col_buffer(d);
        if (!buf)
            return pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for the unrolled input");
        im2col(x, buf, d, &nd->p.conv);
        col = buf;
    }
    pg_gemm g = gemm_base(j->dtype);
    g.M = d->Og;
    g.N = d->OHW;
    g.K = d->K;
    g.a = at(pg_tensor_data(&nd->src[1]), grp * d->Og * d->K, d->esz);
    g.lda = d->K;
    g.b = col;
    g.ldb = d->OHW;
    g.c = y;
    g.ldc = d->OHW;
    PG_TRY(run_gemm(j->gemm_pool, &g));
    if (nd->src[2].storage)
        add_rows(y, d->Og, d->OHW, at(pg_tensor_data(&nd->src[2]), grp * d->Og, d->esz), d->esz);
    return PG_OK;
}

static pg_status data_unit(conv_job *j, int64_t n, int64_t grp)
{
    const pg_node *nd = j->n;
    const conv_dims *d = &j->d;
    void *dx = at(pg_tensor_data(&nd->dst), (n * d->C + grp * d->Cg) * d->HW, d->esz);
    void *dcol = dx;
    if (!d->direct_col) {
        dcol = col_buffer(d);
        if (!dcol)
            return pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for the unrolled gradient");
    }
    pg_gemm g = gemm_base(j->dtype);
    g.M = d->K;
    g.N = d->OHW;
    g.K = d->Og;
    g.trans_a = true; /* W_g stored (Og, K) */
    g.a = at(pg_tensor_data(&nd->src[1]), grp * d->Og * d->K, d->esz);
    g.lda = d->K;
    g.b = at(pg_tensor_data(&nd->src[0]), (n * d->O + grp * d->Og) * d->OHW, d->esz);
    g.ldb = d->OHW;
    g.c = dcol;
    g.ldc = d->OHW;
    PG_TRY(run_gemm(j->gemm_pool, &g));
    if (!d->direct_col)
        col2im(dcol, dx, d, &nd->p.conv);
    if (nd->src[2].storage)
        add_rows(dx, d->Cg, d->HW, at(pg_tensor_data(&nd->src[2]), grp * d->Cg, d->esz), d->esz);
    return PG_OK;
}

/* dW_g (+)= dy[n,g] @ col^T into `dw` (the task's partial), db rows summed into bsum */
static pg_status weight_unit(conv_job *j, int64_t n, int64_t grp, void *dw, bool first,
                             double *bsum)
{
    const pg_node *nd = j->n;
    const conv_dims *d = &j->d;
    const void *x = at(pg_tensor_data(&nd->src[1]), (n * d->C + grp * d->Cg) * d->HW, d->esz);
    const void *dy = at(pg_tensor_data(&nd->src[0]), (n * d->O + grp * d->Og) * d->OHW, d->esz);
    const void *col = x;
    if (!d->direct_col) {
        void *buf = col_buffer(d);
        if (!buf)
            return pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for the unrolled input");
        im2col(x, buf, d, &nd->p.conv);
        col = buf;
    }
    pg_gemm g = gemm_base(j->dtype);
    g.M = d->Og;
    g.N = d->K;
    g.K = d->OHW;
    g.trans_b = true; /* col stored (K, OHW) */
    g.a = dy;
    g.lda = d->OHW;
    g.b = col;
    g.ldb = d->OHW;
    g.c = at(dw, grp * d->Og * d->K, d->esz);
    g.ldc = d->K;
    g.beta = first ? 0.0 : 1.0;
    PG_TRY(run_gemm(j->gemm_pool, &g));
    if (bsum)
        row_sums(dy, d->Og, d->OHW, bsum + grp * d->Og, d->esz);
    return PG_OK;
}

/* task t: units [lo, hi) of N*G (forward, input gradient), or samples (weight gradient) */
static pg_status conv_task(void *ctx, int64_t t)
{
    conv_job *j = ctx;
    const conv_dims *d = &j->d;
    int sub = j->n->subop;
    if (sub == PG_CONV_BWD_WEIGHT) {
        int64_t lo, hi;
        pg_cpu_part(d->N, j->ntasks, t, &lo, &hi);
        void *dw = at(j->partial, t * d->O * d->K, d->esz);
        double *bs = j->bsum ? j->bsum + t * d->O : NULL;
        if (hi <= lo) {
            memset(dw, 0, (size_t)(d->O * d->K) * d->esz);
            return PG_OK;
        }
        for (int64_t n = lo; n < hi; n++)
            for (int64_t grp = 0; grp < d->G; grp++)
                PG_TRY(weight_unit(j, n, grp, dw, n == lo, bs));
        return PG_OK;
    }
    int64_t lo, hi;
    pg_cpu_part(d->N * d->G, j->ntasks, t, &lo, &hi);
    for (int64_t u = lo; u < hi; u++)
        PG_TRY(sub == PG_CONV_FWD ? fwd_unit(j, u / d->G, u % d->G)
                                  : data_unit(j, u / d->G, u % d->G));
    return PG_OK;
}

/* dW = the tasks' partials summed in task order (the first is dW's own memory when there
 * is one task); db likewise from double sums */
#define SUM_PARTIALS(SUF, T)                                                                   \
    static void sum_partials_##SUF(T *dw, const T *part, int64_t ntasks, int64_t len)         \
    {                                                                                          \
        memcpy(dw, part, sizeof(T) * (size_t)len);                                             \
        for (int64_t t = 1; t < ntasks; t++) {                                                 \
            const T *p = part + t * len;                                                       \
            _Pragma("omp simd") for (int64_t k = 0; k < len; k++) dw[k] += p[k];               \
        }                                                                                      \
    }
SUM_PARTIALS(f32, float)
SUM_PARTIALS(f64, double)

static pg_status run_weight(pg_pool *pool, conv_job *j)
{
    const pg_node *n = j->n;
    const conv_dims *d = &j->d;
    int64_t threads = pg_pool_threads(pool);
    j->ntasks = d->N < threads ? (d->N > 0 ? d->N : 1) : threads;
    int64_t len = d->O * d->K;
    void *dw = pg_tensor_data(&n->dst);
    bool own = j->ntasks > 1;
    j->partial = own ? malloc((size_t)(len * j->ntasks) * d->esz) : dw;
    bool want_db = n->extra[0].storage != NULL;
    j->bsum = want_db ? calloc((size_t)(d->O * j->ntasks), sizeof(double)) : NULL;
    if (!j->partial || (want_db && !j->bsum)) {
        if (own)
            free(j->partial);
        free(j->bsum);
        return pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for the weight gradient");
    }
    j->gemm_pool = j->ntasks > 1 ? NULL : pool;
    pg_status st = pg_pool_run(pool, j->ntasks, conv_task, j);
    if (st == PG_OK && own) {
        if (d->esz == 4)
            sum_partials_f32(dw, j->partial, j->ntasks, len);
        else
            sum_partials_f64(dw, j->partial, j->ntasks, len);
    }
    if (st == PG_OK && want_db) {
        for (int64_t o = 0; o < d->O; o++) {
            double s = 0;
            for (int64_t t = 0; t < j->ntasks; t++)
                s += j->bsum[t * d->O + o];
            if (d->esz == 4)
                DATA(float, &n->extra[0])[o] = (float)s;
            else
                DATA(double, &n->extra[0])[o] = s;
        }
    }
    if (own)
        free(j->partial);
    free(j->bsum);
    return st;
}

pg_status pg_cpu_conv_on(pg_pool *pool, const pg_node *n)
{
    conv_job j;
    memset(&j, 0, sizeof j);
    j.n = n;
    dims_of(n, &j.d);
    j.dtype = n->dst.dtype;
    if (j.d.Cg == 1 && n->p.conv.groups > 1)
        return pg_cpu_conv_direct(pool, n);
    if (n->subop == PG_CONV_BWD_WEIGHT)
        return run_weight(pool, &j);
    int64_t units = j.d.N * j.d.G, threads = pg_pool_threads(pool);
    if (units >= threads && threads > 1) {
        j.ntasks = threads;
        return pg_pool_run(pool, j.ntasks, conv_task, &j);
    }
    j.ntasks = 1; /* few units: each product is cut over the pool instead */
    j.gemm_pool = pool;
    return conv_task(&j, 0);
}


