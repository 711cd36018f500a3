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
 * Small output planes (a CIFAR net's 16x16 and 8x8 layers) make narrow products, which
 * GEMM kernels run well below their speed: there a chunk of nb samples is unrolled side by
 * side, col (K, nb*OH*OW), and multiplied at once (about COLS_TARGET columns), the output
 * block copied out per sample (adding the bias on the way), and dy gathered the same way.
 * The (chunk, g) units are shared among the pool's threads, the chunks evened out (and, when
 * few, made a multiple of the threads) so no thread waits on another's larger share; with
 * fewer units than threads (batch-1 inference), each product is cut over the pool by the
 * GEMM scheduler instead. The weight gradient sums over samples: each task owns a slice of
 * the samples and a partial dW, summed in task order at the end (that sum itself cut over
 * the pool by flat slices), so a run repeats bit for bit.
 *
 * Depthwise convolution (one input channel per group: C/g == 1) is a direct loop instead
 * (cpu_conv_direct.c): its products would be 1-row GEMMs. A 3x3 convolution at stride 1
 * (forward and input gradient, float32, one group, 64 channels and more each side, 512 tiles
 * and more a call) runs by
 * Winograd's transforms instead (cpu_conv_winograd.c), 2.25x or 4x fewer multiplies. */
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
    int64_t nb, chunks; /* samples per product, and chunks of the batch */
    size_t esz;
    bool direct_col; /* 1x1, stride 1, no padding: col is the input plane itself */
} conv_dims;

#define COLS_TARGET 1024 /* columns a product should have at least, where samples allow */
#define COL_BYTES_MAX (8u << 20) /* at most this much unrolled input per thread */

static void dims_of(const pg_node *n, conv_dims *d)
{
    /* x and y where the sub-op's row puts them (pg_subops.def) */
    const pg_tensor *x = pg_conv_operand(n, PG_CONV_X), *y = pg_conv_operand(n, PG_CONV_Y);
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
    d->nb = 1;
    if (!d->direct_col && d->OHW > 0 && d->OHW < COLS_TARGET) {
        d->nb = (COLS_TARGET + d->OHW - 1) / d->OHW;
        int64_t cap = (int64_t)(COL_BYTES_MAX / d->esz) / (d->K * d->OHW);
        if (d->nb > cap)
            d->nb = cap > 1 ? cap : 1;
        if (d->nb > d->N)
            d->nb = d->N > 0 ? d->N : 1;
    }
    d->chunks = d->N > 0 ? (d->N + d->nb - 1) / d->nb : 0;
}

/* Forward and input gradient on several threads: even chunks and, when there are few, a
 * multiple of the threads of them, so the threads' shares are even (512 channels at 4 x 4,
 * batch 32: 2 chunks of 16, not 28 + 4, which kept one of 2 threads idle 40% of the node;
 * issue 45). One thread keeps the widest chunks. */
static void chunks_for_threads(conv_dims *d, int64_t threads)
{
    if (threads < 2 || d->nb < 2)
        return;
    d->nb = (d->N + d->chunks - 1) / d->chunks; /* 32 samples by at most 28: 16 + 16 */
    if (d->G % threads == 0)
        return;
    int64_t units = d->chunks * d->G;
    if (units % threads == 0 || units >= 8 * threads)
        return; /* already even, or enough units that the rest is small */
    int64_t want = (d->chunks + threads - 1) / threads * threads;
    d->nb = (d->N + want - 1) / want;
    d->chunks = (d->N + d->nb - 1) / d->nb;
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
    static void im2col_##SUF(const T *x, T *col, int64_t ld, const conv_dims *d,               \
                             const pg_conv_geom *g)                                             \
    {                                                                                           \
        for (int64_t c = 0; c < d->Cg; c++)                                                     \
            for (int64_t i = 0; i < g->kh; i++)                                                 \
                for (int64_t j = 0; j < g->kw; j++) {                                           \
                    T *row = col + ((c * g->kh + i) * g->kw + j) * ld;                          \
                    int64_t oh0, oh1, ow0, ow1;                                                 \
                    tap_range(d->OH, d->H, g->sh, g->ph, i * g->dh, &oh0, &oh1);                \
                    tap_range(d->OW, d->W, g->sw, g->pw, j * g->dw, &ow0, &ow1);                \
                    memset(row, 0, sizeof(T) * (size_t)(oh0 * d->OW));                          \
                    if (g->sh == 1 && g->sw == 1 && d->OW == d->W && oh1 > oh0) {              \
                        /* rows of the output and of the input line up: one shifted copy of   \
                         * the whole valid span, then the few wrapped border columns zeroed */ \
                        int64_t shift = (i * g->dh - g->ph) * d->W + j * g->dw - g->pw;        \
                        int64_t k0 = oh0 * d->OW + ow0, k1 = (oh1 - 1) * d->OW + ow1;          \
                        if (k1 > k0)                                                            \
                            memcpy(row + k0, x + c * d->HW + k0 + shift,                       \
                                   sizeof(T) * (size_t)(k1 - k0));                              \
                        for (int64_t oh = oh0; oh < oh1; oh++) {                                \
                            T *r = row + oh * d->OW;                                            \
                            for (int64_t ow = 0; ow < ow0; ow++)                                \
                                r[ow] = 0;                                                      \
                            for (int64_t ow = ow1; ow < d->OW; ow++)                            \
                                r[ow] = 0;                                                      \
                        }                                                                       \
                        memset(row + oh1 * d->OW, 0,                                            \
                               sizeof(T) * (size_t)((d->OH - oh1) * d->OW));                    \
                        continue;                                                               \
                    }                                                                           \
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
    static void col2im_##SUF(const T *col, T *x, int64_t ld, const conv_dims *d,               \
                             const pg_conv_geom *g)                                             \
    {                                                                                           \
        memset(x, 0, sizeof(T) * (size_t)(d->Cg * d->HW));                                      \
        for (int64_t c = 0; c < d->Cg; c++)                                                     \
            for (int64_t i = 0; i < g->kh; i++)                                                 \
                for (int64_t j = 0; j < g->kw; j++) {                                           \
                    const T *row = col + ((c * g->kh + i) * g->kw + j) * ld;                    \
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
    /* dst (rows, cols) at leading dimension ldd = src (rows, cols) at lds, + b per row */   \
    static void copy_rows_##SUF(T *dst, int64_t ldd, const T *src, int64_t lds, int64_t rows,   \
                                int64_t cols, const T *b)                                       \
    {                                                                                           \
        for (int64_t r = 0; r < rows; r++) {                                                    \
            T v = b ? b[r] : (T)0, *o = dst + r * ldd;                                          \
            const T *in = src + r * lds;                                                        \
            _Pragma("omp simd") for (int64_t k = 0; k < cols; k++) o[k] = in[k] + v;            \
        }                                                                                       \
    }                                                                                           \
    /* each row's sum (in T's vector lanes, as PyTorch's) added to acc (double, across     \
     * chunks and tasks) */                                                                  \
    static void row_sums_##SUF(const T *y, int64_t rows, int64_t cols, double *acc)             \
    {                                                                                           \
        for (int64_t r = 0; r < rows; r++) {                                                    \
            T s = 0;                                                                            \
            const T *yr = y + r * cols;                                                         \
            _Pragma("omp simd reduction(+:s)") for (int64_t k = 0; k < cols; k++) s += yr[k];   \
            acc[r] += s;                                                                        \
        }                                                                                       \
    }

IM2COL(f32, float)
IM2COL(f64, double)

static void im2col(const void *x, void *col, int64_t ld, const conv_dims *d,
                   const pg_conv_geom *g)
{
    if (d->esz == 4)
        im2col_f32(x, col, ld, d, g);
    else
        im2col_f64(x, col, ld, d, g);
}

static void col2im(const void *col, void *x, int64_t ld, const conv_dims *d,
                   const pg_conv_geom *g)
{
    if (d->esz == 4)
        col2im_f32(col, x, ld, d, g);
    else
        col2im_f64(col, x, ld, d, g);
}

static void copy_rows(void *dst, int64_t ldd, const void *src, int64_t lds, int64_t rows,
                      int64_t cols, const void *b, size_t esz)
{
    if (esz == 4)
        copy_rows_f32(dst, ldd, src, lds, rows, cols, b);
    else
        copy_rows_f64(dst, ldd, src, lds, rows, cols, b);
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
    void *partial;   /* BWD_WEIGHT: tasks 1.. 's dW of O*K elements each (task 0's: dst) */
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

static void *col_buffer(const conv_dims *d, int64_t nb)
{
    return pg_cpu_scratch(PG_SCRATCH_CONV, (size_t)(d->K * nb * d->OHW) * d->esz);
}

/* a chunk's (Og, nb*OHW) block of outputs or output gradients */
static void *block_buffer(const conv_dims *d, int64_t nb)
{
    return pg_cpu_scratch(PG_SCRATCH_CONV_BLOCK, (size_t)(d->Og * nb * d->OHW) * d->esz);
}

/* samples [n0, n0 + nb) of group grp unrolled side by side into col (K, nb*OHW) */
static const void *unroll(const conv_dims *d, const pg_conv_geom *g, const void *x, int64_t n0,
                          int64_t nb, int64_t grp, void *buf)
{
    const char *x0 = at(x, (n0 * d->C + grp * d->Cg) * d->HW, d->esz);
    if (d->direct_col) /* nb == 1: the input plane itself */
        return x0;
    for (int64_t i = 0; i < nb; i++)
        im2col(x0 + i * d->C * d->HW * (int64_t)d->esz, at(buf, i * d->OHW, d->esz), nb * d->OHW,
               d, g);
    return buf;
}

/* dy of samples [n0, n0 + nb), group grp, as one (Og, nb*OHW) matrix: dy itself when
 * nb == 1, else gathered into buf */
static const void *gather_dy(const conv_dims *d, const void *dy, int64_t n0, int64_t nb,
                             int64_t grp, void *buf)
{
    const char *y0 = at(dy, (n0 * d->O + grp * d->Og) * d->OHW, d->esz);
    if (nb == 1)
        return y0;
    for (int64_t i = 0; i < nb; i++)
        copy_rows(at(buf, i * d->OHW, d->esz), nb * d->OHW, y0 + i * d->O * d->OHW *
                  (int64_t)d->esz, d->OHW, d->Og, d->OHW, NULL, d->esz);
    return buf;
}

static pg_status no_memory(void)
{
    return pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for the unrolled input");
}

/* forward of samples [n0, n0 + nb), group grp */
static pg_status fwd_unit(conv_job *j, int64_t n0, int64_t nb, int64_t grp)
{
    const pg_node *nd = j->n;
    const conv_dims *d = &j->d;
    void *cbuf = d->direct_col ? NULL : col_buffer(d, nb);
    void *ybuf = nb > 1 ? block_buffer(d, nb) : NULL;
    if ((!d->direct_col && !cbuf) || (nb > 1 && !ybuf))
        return no_memory();
    const void *bias = nd->src[2].storage
                           ? at(pg_tensor_data(&nd->src[2]), grp * d->Og, d->esz) : NULL;
    void *y = at(pg_tensor_data(&nd->dst), (n0 * d->O + grp * d->Og) * d->OHW, d->esz);
    pg_gemm g = gemm_base(j->dtype);
    g.M = d->Og;
    g.N = nb * d->OHW;
    g.K = d->K;
    g.a = at(pg_tensor_data(&nd->src[1]), grp * d->Og * d->K, d->esz);
    g.lda = d->K;
    g.b = unroll(d, &nd->p.conv, pg_tensor_data(&nd->src[0]), n0, nb, grp, cbuf);
    g.ldb = nb * d->OHW;
    g.c = nb > 1 ? ybuf : y;
    g.ldc = nb * d->OHW;
    PG_TRY(run_gemm(j->gemm_pool, &g));
    if (nb > 1) /* each sample's block out to (N, O, OH, OW), the bias added on the way */
        for (int64_t i = 0; i < nb; i++)
            copy_rows(at(y, i * d->O * d->OHW, d->esz), d->OHW, at(ybuf, i * d->OHW, d->esz),
                      nb * d->OHW, d->Og, d->OHW, bias, d->esz);
    else if (bias)
        add_rows(y, d->Og, d->OHW, bias, d->esz);
    return PG_OK;
}

/* input gradient of samples [n0, n0 + nb), group grp */
static pg_status data_unit(conv_job *j, int64_t n0, int64_t nb, int64_t grp)
{
    const pg_node *nd = j->n;
    const conv_dims *d = &j->d;
    void *dx = at(pg_tensor_data(&nd->dst), (n0 * d->C + grp * d->Cg) * d->HW, d->esz);
    void *dcol = d->direct_col ? dx : col_buffer(d, nb);
    void *ybuf = nb > 1 ? block_buffer(d, nb) : NULL;
    if (!dcol || (nb > 1 && !ybuf))
        return no_memory();
    pg_gemm g = gemm_base(j->dtype);
    g.M = d->K;
    g.N = nb * d->OHW;
    g.K = d->Og;
    g.trans_a = true; /* W_g stored (Og, K) */
    g.a = at(pg_tensor_data(&nd->src[1]), grp * d->Og * d->K, d->esz);
    g.lda = d->K;
    g.b = gather_dy(d, pg_tensor_data(&nd->src[0]), n0, nb, grp, ybuf);
    g.ldb = nb * d->OHW;
    g.c = dcol;
    g.ldc = nb * d->OHW;
    PG_TRY(run_gemm(j->gemm_pool, &g));
    const void *bias = nd->src[2].storage
                           ? at(pg_tensor_data(&nd->src[2]), grp * d->Cg, d->esz) : NULL;
    for (int64_t i = 0; i < nb; i++) {
        void *dxi = at(dx, i * d->C * d->HW, d->esz);
        if (!d->direct_col)
            col2im(at(dcol, i * d->OHW, d->esz), dxi, nb * d->OHW, d, &nd->p.conv);
        if (bias)
            add_rows(dxi, d->Cg, d->HW, bias, d->esz);
    }
    return PG_OK;
}

/* dW_g (+)= dy[n0..n0+nb, g] @ col^T into `dw` (the task's partial); db rows into bsum */
static pg_status weight_unit(conv_job *j, int64_t n0, int64_t nb, int64_t grp, void *dw,
                             bool first, double *bsum)
{
    const pg_node *nd = j->n;
    const conv_dims *d = &j->d;
    void *cbuf = d->direct_col ? NULL : col_buffer(d, nb);
    void *ybuf = nb > 1 ? block_buffer(d, nb) : NULL;
    if ((!d->direct_col && !cbuf) || (nb > 1 && !ybuf))
        return no_memory();
    const void *dyb = gather_dy(d, pg_tensor_data(&nd->src[0]), n0, nb, grp, ybuf);
    pg_gemm g = gemm_base(j->dtype);
    g.M = d->Og;
    g.N = d->K;
    g.K = nb * d->OHW;
    g.trans_b = true; /* col stored (K, nb*OHW) */
    g.a = dyb;
    g.lda = nb * d->OHW;
    g.b = unroll(d, &nd->p.conv, pg_tensor_data(&nd->src[1]), n0, nb, grp, cbuf);
    g.ldb = nb * d->OHW;
    g.c = at(dw, grp * d->Og * d->K, d->esz);
    g.ldc = d->K;
    g.beta = first ? 0.0 : 1.0;
    PG_TRY(run_gemm(j->gemm_pool, &g));
    if (bsum) {
        if (nb > 1)
            row_sums(dyb, d->Og, nb * d->OHW, bsum + grp * d->Og, d->esz);
        else
            row_sums(dyb, d->Og, d->OHW, bsum + grp * d->Og, d->esz);
    }
    return PG_OK;
}

/* task t: units [lo, hi) of chunks*G (forward, input gradient), or a slice of the samples
 * (weight gradient), taken a chunk at a time */
static pg_status conv_task(void *ctx, int64_t t)
{
    conv_job *j = ctx;
    const conv_dims *d = &j->d;
    int sub = j->n->subop;
    if (sub == PG_CONV_BWD_WEIGHT) {
        int64_t lo, hi;
        pg_cpu_part(d->N, j->ntasks, t, &lo, &hi);
        void *dw = t == 0 ? pg_tensor_data(&j->n->dst)
                          : at(j->partial, (t - 1) * d->O * d->K, d->esz);
        double *bs = j->bsum ? j->bsum + t * d->O : NULL;
        if (hi <= lo) {
            memset(dw, 0, (size_t)(d->O * d->K) * d->esz);
            return PG_OK;
        }
        for (int64_t n = lo; n < hi; n += d->nb) {
            int64_t nb = hi - n < d->nb ? hi - n : d->nb;
            for (int64_t grp = 0; grp < d->G; grp++)
                PG_TRY(weight_unit(j, n, nb, grp, dw, n == lo, bs));
        }
        return PG_OK;
    }
    int64_t lo, hi;
    pg_cpu_part(d->chunks * d->G, j->ntasks, t, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        int64_t n0 = (u / d->G) * d->nb, grp = u % d->G;
        int64_t nb = d->N - n0 < d->nb ? d->N - n0 : d->nb;
        PG_TRY(sub == PG_CONV_FWD ? fwd_unit(j, n0, nb, grp) : data_unit(j, n0, nb, grp));
    }
    return PG_OK;
}

/* dW = the tasks' partials summed in task order: task 0's partial is dW's own memory, the
 * others' follow in `partial`; each element gets p0 + p1 + ... in that order whichever
 * thread sums it, so the sum is cut over the pool by flat slices (it was a serial pass on
 * the caller: 3 ms of each 512 x 512 x 3 x 3 layer's backward at 2 threads) */
#define SUM_PARTIALS(SUF, T)                                                                   \
    static void sum_partials_##SUF(T *dw, const T *part, int64_t nparts, int64_t len,         \
                                   int64_t lo, int64_t hi)                                     \
    {                                                                                          \
        for (int64_t t = 0; t < nparts; t++) {                                                 \
            const T *p = part + t * len;                                                       \
            _Pragma("omp simd") for (int64_t k = lo; k < hi; k++) dw[k] += p[k];               \
        }                                                                                      \
    }
SUM_PARTIALS(f32, float)
SUM_PARTIALS(f64, double)

static pg_status sum_task(void *ctx, int64_t t)
{
    conv_job *j = ctx;
    const pg_node *n = j->n;
    int64_t len = j->d.O * j->d.K, lo, hi;
    pg_cpu_part_aligned(len, j->ntasks, t, 16, &lo, &hi);
    if (j->d.esz == 4)
        sum_partials_f32(DATA(float, &n->dst), j->partial, j->ntasks - 1, len, lo, hi);
    else
        sum_partials_f64(DATA(double, &n->dst), j->partial, j->ntasks - 1, len, lo, hi);
    return PG_OK;
}

/* partial elements below which the sum stays on the caller (a pool job costs microseconds) */
#define SUM_GRAIN 32768

static pg_status run_sum_here(conv_job *j)
{
    for (int64_t t = 0; t < j->ntasks; t++) /* the same slices, one after another */
        PG_TRY(sum_task(j, t));
    return PG_OK;
}

static pg_status run_weight(pg_pool *pool, conv_job *j)
{
    const pg_node *n = j->n;
    const conv_dims *d = &j->d;
    int64_t threads = pg_pool_threads(pool);
    j->ntasks = d->N < threads ? (d->N > 0 ? d->N : 1) : threads;
    int64_t len = d->O * d->K;
    bool own = j->ntasks > 1;
    j->partial = own ? malloc((size_t)(len * (j->ntasks - 1)) * d->esz) : NULL;
    bool want_db = n->extra[0].storage != NULL;
    j->bsum = want_db ? calloc((size_t)(d->O * j->ntasks), sizeof(double)) : NULL;
    if ((own && !j->partial) || (want_db && !j->bsum)) {
        free(j->partial);
        free(j->bsum);
        return pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for the weight gradient");
    }
    j->gemm_pool = j->ntasks > 1 ? NULL : pool;
    pg_status st = pg_pool_run(pool, j->ntasks, conv_task, j);
    if (st == PG_OK && own) /* each element summed in task order, whoever sums it */
        st = len * (j->ntasks - 1) >= SUM_GRAIN ? pg_pool_run(pool, j->ntasks, sum_task, j)
                                                : run_sum_here(j);
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
    if (pg_cpu_conv_dnnl_wants(n)) {
        bool ran;
        pg_status st = pg_cpu_conv_dnnl(pool, n, &ran);
        if (st != PG_OK || ran)
            return st;
    }
    if (j.d.Cg == 1 && n->p.conv.groups > 1)
        return pg_cpu_conv_direct(pool, n);
    int wino = pg_cpu_conv_winograd_tile(n);
    if (wino)
        return pg_cpu_conv_winograd(pool, n, wino);
    if (n->subop == PG_CONV_BWD_WEIGHT)
        return run_weight(pool, &j);
    int64_t threads = pg_pool_threads(pool);
    chunks_for_threads(&j.d, threads); /* one chunk per thread at least, and even shares */
    int64_t units = j.d.chunks * j.d.G;
    if (units >= threads && threads > 1) {
        j.ntasks = threads;
        return pg_pool_run(pool, j.ntasks, conv_task, &j);
    }
    j.ntasks = 1; /* few units: each product is cut over the pool instead */
    j.gemm_pool = pool;
    return conv_task(&j, 0);
}

pg_status pg_cpu_conv(const pg_node *n) { return pg_cpu_conv_on(NULL, n); }
