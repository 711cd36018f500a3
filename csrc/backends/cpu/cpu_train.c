/* cpu_train.c - the CPU kernels of the fused training ops (see pg_ops_train.c
 * for each node's operands). The reference the CUDA kernels (csrc/backends/cuda/kernels/train.cu)
 * are tested against; sim runs these on its device threads.
 *
 * Linear layers describe their matmuls as GEMM descriptors (pg_gemm.h) run by
 * the CPU's GEMM kernels and scheduler (cpu_gemm.h) on the device's pool:
 * forward, one product with the bias + activation epilogue; backward, the
 * activation-derivative prologue dz = dy * act'(y) that also sums db, fused
 * with dW per slice of output features, then dx. Every kernel is written once
 * as a macro over the element type (float, double); sums accumulate in double.
 * float16/bfloat16 layers take the same path: their descriptors go to the half
 * GEMM kernels (cpu_gemm_half.c, float32 accumulation) and their prologue
 * computes in float32, rounding dz once to the half dtype.
 * Also the row op softmax over the last axis (SOFTMAX), one row at a time; layer_norm,
 * forward and backward, is cpu_layer_norm.c's. */
/* The loops below have runtime trip counts, which -O2's "very cheap" vectoriser
 * skips; the dynamic cost model vectorises them (checked with -fopt-info-vec). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_status.h"
#include "cpu_act.h"
#include "cpu_gemm.h"
#include "cpu_gemm_bf16.h"
#include "cpu_half_convert.h"
#include "cpu_kernels.h"
#include "cpu_part.h"
#include "cpu_vecmath.h"

#define DATA(T, t) ((T *)pg_tensor_data(t))

/* ---- linear ------------------------------------------------------------------------- */

/* y (N,O) = act(x (N,I) @ W (O,I)^T + b (O)): ONE descriptor, BIAS|act epilogue, cut by the
 * scheduler (for a batch smaller than the layer, by output features: each thread packs
 * only its own rows of W). */
pg_status pg_cpu_linear_fwd_on(pg_pool *pool, const pg_node *n)
{
    return pg_cpu_linear_fwd_packed(pool, n, NULL);
}

/* w_panels: W's pre-packed bfloat16 panels for x @ W^T (cpu_bf16_panels.h), or NULL */
pg_status pg_cpu_linear_fwd_packed(pg_pool *pool, const pg_node *n, const void *w_panels)
{
    const pg_tensor *x = &n->src[0], *w = &n->src[1], *b = &n->src[2];
    pg_gemm g;
    memset(&g, 0, sizeof g);
    g.batch = 1;
    g.M = x->shape[0];
    g.N = w->shape[0];
    g.K = x->shape[1];
    g.trans_b = true;
    g.dtype_ab = g.dtype_c = n->dst.dtype;
    g.b_f32 = w->dtype != n->dst.dtype; /* half x, float32 W: autocast (pg_ops_train.c) */
    g.compute = pg_gemm_compute_of(n->dst.dtype);
    g.a = pg_tensor_data(x);
    g.lda = g.K;
    g.b = pg_tensor_data(w);
    g.ldb = g.K;
    g.c = pg_tensor_data(&n->dst);
    g.ldc = g.N;
    g.alpha = 1.0;
    g.epilogue = b->storage ? PG_EPI_BIAS : PG_EPI_NONE;
    g.bias = b->storage ? pg_tensor_data(b) : NULL;
    g.act = n->subop;
    /* a pruned layer's mask (src 3), multiplied in as the GEMM packs W (pg_gemm.h b_mask) */
    g.b_mask = n->src[3].storage ? DATA(const float, &n->src[3]) : NULL;
    if (w_panels && g.b_f32 && !g.b_mask) {
        g.b_packed = w_panels;
        g.b_packed_np = pg_cpu_gemm_bf16_packed_np(g.N);
    }
    return pg_cpu_gemm_run(pool, &g);
}

pg_status pg_cpu_linear_fwd(const pg_node *n) { return pg_cpu_linear_fwd_on(NULL, n); }

/* Backward, in two jobs on the pool:
 *   1. each task owns a slice [lo, hi) of the output features: dz[:, lo:hi] = dy * act'(y)
 *      and db[lo:hi] (column sums, in row order, in double) in one pass, then dW[lo:hi, :]
 *      = dz[:, lo:hi]^T @ x with one BLAS call on the rows of dW it alone writes;
 *   2. dx (N,I) = dz @ W, one descriptor the scheduler cuts (it needs every slice's dz).
 * Every output element is summed whole by one task and the slices depend on the shape and
 * thread count only, so a run repeats bit for bit (tests/test_training_schedule.py). db is
 * summed in row order whatever the slices, so it is the same for any thread count. */
/* One row of the prologue: dz = dy * act'(y) over w features, and acc += dz (db's sums,
 * when acc). Vector code through PG_CPU_DISPATCH (AVX2/AVX-512 where the CPU has them);
 * each element is computed on its own and added to its own sum, so every ISA variant gives
 * the same bits. The activation's switch is outside the loops, one simd loop each. */
#define PRO_ROW(T)                                                                             \
    PG_CPU_DISPATCH(void, pro_row_##T,                                                         \
                    (int act, int64_t w, const T *restrict d, const T *restrict y,             \
                     T *restrict dz, double *restrict acc),                                    \
                    (act, w, d, y, dz, acc))                                                   \
    {                                                                                          \
        if (act == PG_ACT_NONE) {                                                              \
            _Pragma("omp simd") for (int64_t j = 0; j < w; j++) acc[j] += d[j];                \
            return;                                                                            \
        }                                                                                      \
        pg_act_bwd_##T(act, w, dz, d, y); /* the op table's PG_ACT rows (cpu_act.h) */        \
        if (acc) /* a second pass over the row, in L1: GCC leaves the fused loop scalar */     \
            _Pragma("omp simd") for (int64_t j = 0; j < w; j++) acc[j] += dz[j];               \
    }
PRO_ROW(float)
PRO_ROW(double)

/* Rows 0..N of the slice [lo, hi): with no activation only db's sums (dz is dy itself). */
#define PROLOGUE(T)                                                                            \
    static void prologue_##T(const pg_node *n, int64_t lo, int64_t hi, double *acc)           \
    {                                                                                          \
        int64_t N = n->src[1].shape[0], O = n->src[2].shape[0], w = hi - lo;                   \
        int act = n->subop;                                                                    \
        const T *D = DATA(T, &n->src[0]);                                                      \
        if (act == PG_ACT_NONE && !acc)                                                        \
            return;                                                                            \
        const T *Yv = act != PG_ACT_NONE ? DATA(T, &n->src[3]) : NULL;                         \
        T *dz = act != PG_ACT_NONE ? DATA(T, &n->extra[2]) : NULL;                             \
        for (int64_t r = 0; r < N; r++) {                                                      \
            int64_t base = r * O + lo;                                                         \
            pro_row_##T(act, w, D + base, Yv ? Yv + base : NULL, dz ? dz + base : NULL, acc); \
        }                                                                                      \
    }
PROLOGUE(float)
PROLOGUE(double)

/* The same over float16/bfloat16 operands, in float32 through pro_row_float: dz rounded
 * once to the half dtype (as autocast's activation backward is), and db sums what dW and dx
 * will see, the rounded dz. buf: 3 * (hi - lo) floats. */
static void prologue_half(const pg_node *n, int64_t lo, int64_t hi, double *acc, float *buf)
{
    const int dt = n->src[0].dtype, act = n->subop;
    int64_t N = n->src[1].shape[0], O = n->src[2].shape[0], w = hi - lo;
    const uint16_t *dy = (const uint16_t *)pg_tensor_data(&n->src[0]);
    const uint16_t *yv = act != PG_ACT_NONE ? (const uint16_t *)pg_tensor_data(&n->src[3]) : NULL;
    uint16_t *dz = act != PG_ACT_NONE ? (uint16_t *)pg_tensor_data(&n->extra[2]) : NULL;
    float *d = buf, *yr = buf + w, *dzf = buf + 2 * w;
    if (act == PG_ACT_NONE && !acc)
        return;
    for (int64_t r = 0; r < N; r++) {
        int64_t base = r * O + lo;
        pg_cpu_half_to_f32(dt, w, dy + base, d);
        if (act != PG_ACT_NONE) {
            pg_cpu_half_to_f32(dt, w, yv + base, yr);
            pro_row_float(act, w, d, yr, dzf, NULL);
            pg_cpu_f32_to_half(dt, w, dzf, dz + base);
            if (acc)
                pg_cpu_half_to_f32(dt, w, dz + base, d);
        }
        if (acc)
            pro_row_float(PG_ACT_NONE, w, d, NULL, NULL, acc); /* acc += d */
    }
}

static bool is_half(int dt) { return dt == PG_FLOAT16 || dt == PG_BFLOAT16; }

typedef struct bwd_job {
    const pg_node *n;
    pg_gemm dw; /* dW (O,I) = dz^T @ x, cut by rows per task */
    int64_t ntasks, align;
} bwd_job;

static pg_status bwd_slice(void *ctx, int64_t task)
{
    bwd_job *j = ctx;
    const pg_node *n = j->n;
    int64_t O = j->dw.M, lo, hi;
    pg_cpu_part_aligned(O, j->ntasks, task, j->align, &lo, &hi);
    if (hi <= lo)
        return PG_OK;
    const pg_tensor *db = &n->extra[1];
    const int dt = n->src[0].dtype; /* dy: every operand has its dtype */
    const bool half = is_half(dt);
    /* acc: (hi - lo) column sums of db; buf: prologue_half's float32 rows and db's */
    double *acc = db->storage ? calloc((size_t)(hi - lo) + 1, sizeof *acc) : NULL;
    float *buf = half ? malloc((size_t)(hi - lo) * 3 * sizeof(float)) : NULL;
    if ((db->storage && !acc) || (half && !buf)) {
        free(acc);
        free(buf);
        return pg_error_set(PG_ERR_NOMEM, "linear_backward: out of host memory");
    }
    if (half)
        prologue_half(n, lo, hi, acc, buf);
    else if (dt == PG_FLOAT32)
        prologue_float(n, lo, hi, acc);
    else
        prologue_double(n, lo, hi, acc);
    if (acc) { /* db has dy's dtype, or float32 for half operands under autocast */
        for (int64_t k = 0; k < hi - lo; k++) {
            if (is_half(db->dtype))
                buf[k] = (float)acc[k];
            else if (db->dtype == PG_FLOAT32)
                DATA(float, db)[lo + k] = (float)acc[k];
            else
                DATA(double, db)[lo + k] = acc[k];
        }
        if (is_half(db->dtype))
            pg_cpu_f32_to_half(dt, hi - lo, buf, DATA(uint16_t, db) + lo);
        free(acc);
    }
    free(buf);
    if (!n->dst.storage)
        return PG_OK;
    size_t isz = pg_dtype_size((pg_dtype)dt), csz = pg_dtype_size((pg_dtype)j->dw.dtype_c);
    pg_gemm p = j->dw;
    p.M = hi - lo;
    p.a = (const char *)p.a + lo * (int64_t)isz; /* columns lo.. of dz, read transposed */
    p.c = (char *)p.c + lo * p.ldc * (int64_t)csz;
    PG_TRY(pg_cpu_gemm_kernel(p.dtype_ab, p.dtype_c)(&p));
    if (n->src[4].storage) { /* a pruned layer: dW of the unmasked W is (dz^T x) * mask, */
        float *d = p.c;       /* float32 (pg_ops_train.c), while the rows are in cache */
        const float *m = DATA(float, &n->src[4]) + lo * p.ldc;
        for (int64_t i = 0; i < (hi - lo) * p.ldc; i++)
            d[i] *= m[i];
    }
    return PG_OK;
}

pg_status pg_cpu_linear_bwd_on(pg_pool *pool, const pg_node *n)
{
    return pg_cpu_linear_bwd_packed(pool, n, NULL);
}

/* w_panels: W's pre-packed bfloat16 panels for dz @ W (cpu_bf16_panels.h), or NULL */
pg_status pg_cpu_linear_bwd_packed(pg_pool *pool, const pg_node *n, const void *w_panels)
{
    const pg_tensor *x = &n->src[1], *w = &n->src[2], *dx = &n->extra[0];
    int64_t N = x->shape[0], I = x->shape[1], O = w->shape[0];
    const void *dz = n->subop == PG_ACT_NONE ? pg_tensor_data(&n->src[0])
                                             : pg_tensor_data(&n->extra[2]);
    bwd_job j = {.n = n, .ntasks = 1, .align = 1};
    memset(&j.dw, 0, sizeof j.dw);
    j.dw.batch = 1;
    j.dw.M = O;
    j.dw.N = I;
    j.dw.K = N;
    j.dw.trans_a = true;
    const int dt = n->src[0].dtype;
    j.dw.dtype_ab = dt;
    j.dw.dtype_c = n->dst.dtype; /* dt, or float32 for half operands under autocast */
    j.dw.compute = pg_gemm_compute_of(dt);
    j.dw.a = dz;
    j.dw.lda = O;
    j.dw.b = pg_tensor_data(x);
    j.dw.ldb = I;
    j.dw.c = n->dst.storage ? pg_tensor_data(&n->dst) : NULL;
    j.dw.ldc = I;
    j.dw.alpha = 1.0;
    int64_t nt = O * I * (N > 0 ? N : 1) / PG_GEMM_GRAIN, threads = pg_pool_threads(pool);
    if (nt > threads)
        nt = threads;
    if (nt > O)
        nt = O;
    if (nt > 1) {
        j.ntasks = nt;
        j.align = O >= 16 * nt ? 16 : 1;
    }
    PG_TRY(pg_pool_run(pool, j.ntasks, bwd_slice, &j));
    if (!dx->storage || N == 0)
        return PG_OK;
    pg_gemm g; /* dx (N,I) = dz (N,O) @ W (O,I) */
    memset(&g, 0, sizeof g);
    g.batch = 1;
    g.M = N;
    g.N = I;
    g.K = O;
    g.dtype_ab = g.dtype_c = dt;
    g.b_f32 = g.b_exact = w->dtype != dt; /* half dz, float32 W (autocast): pg_gemm.h b_exact */
    g.compute = pg_gemm_compute_of(dt);
    g.a = dz;
    g.lda = O;
    g.b = pg_tensor_data(w);
    g.ldb = I;
    g.c = pg_tensor_data(dx);
    g.ldc = I;
    g.alpha = 1.0;
    g.b_mask = n->src[4].storage ? DATA(const float, &n->src[4]) : NULL; /* dx = dz @ (W * mask) */
    if (w_panels && g.b_f32 && !g.b_mask) {
        g.b_packed = w_panels;
        g.b_packed_np = pg_cpu_gemm_bf16_packed_np(g.N);
    }
    return pg_cpu_gemm_run(pool, &g);
}

pg_status pg_cpu_linear_bwd(const pg_node *n) { return pg_cpu_linear_bwd_on(NULL, n); }

/* ---- softmax over rows ---------------------------------------------------------------- */

/* one row: max, then e = exp(x - max) with its sum (vector exp: libmvec; the sum in T's
 * vector lanes, as torch's: float64 lanes halved the vector width), then e / sum:
 * two reads of the row and one write, where max, subtract, exp, sum and divide as
 * separate nodes read or write five whole tensors. NaN anywhere gives a NaN row.
 * log_softmax (its SOFTMAX row's LOG flag): (x - max) - log(sum), the same sum, written in a
 * third pass. */
#define SOFTMAX_ROW(SUF, T, EXP, LOG)                                                          \
    PG_CPU_DISPATCH(void, softmax_row_##SUF, (const T *x, T *y, int64_t C, int lg),           \
                    (x, y, C, lg))                                                             \
    {                                                                                          \
        T m = x[0];                                                                            \
        _Pragma("omp simd reduction(max:m)") for (int64_t j = 0; j < C; j++) m =              \
            x[j] > m ? x[j] : m;                                                               \
        T s = 0;                                                                               \
        _Pragma("omp simd reduction(+:s)") for (int64_t j = 0; j < C; j++)                    \
        {                                                                                      \
            T e = EXP(x[j] - m);                                                               \
            y[j] = e;                                                                          \
            s += e;                                                                            \
        }                                                                                      \
        if (lg) {                                                                              \
            T ls = LOG(s);                                                                     \
            _Pragma("omp simd") for (int64_t j = 0; j < C; j++) y[j] = (x[j] - m) - ls;       \
            return;                                                                            \
        }                                                                                      \
        T inv = (T)1 / s;                                                                      \
        _Pragma("omp simd") for (int64_t j = 0; j < C; j++) y[j] *= inv;                       \
    }
SOFTMAX_ROW(f32, float, expf, logf)
SOFTMAX_ROW(f64, double, exp, log)

pg_status pg_cpu_softmax(const pg_node *n)
{
    int64_t R = n->src[0].shape[0], C = n->src[0].shape[1];
    int lg = (pg_subop_flags(n->subop) & PG_SUBF_LOG) != 0;
    for (int64_t r = 0; r < R; r++) {
        if (n->dst.dtype == PG_FLOAT32)
            softmax_row_f32(DATA(float, &n->src[0]) + r * C, DATA(float, &n->dst) + r * C, C, lg);
        else
            softmax_row_f64(DATA(double, &n->src[0]) + r * C, DATA(double, &n->dst) + r * C, C,
                            lg);
    }
    return PG_OK;
}

/* ---- optimizers ----------------------------------------------------------------------- */

/* PyTorch's SGD: d = g + wd*p; buf = first ? d : mom*buf + (1-damp)*d;
 * d = nesterov ? d + mom*buf : buf; p -= lr*d. One branch-free simd loop per case, in
 * vector code through PG_CPU_DISPATCH; per element, so every ISA variant gives the same bits. */
#define SGD(T)                                                                                 \
    PG_CPU_DISPATCH(void, sgd_loop_##T,                                                        \
                    (int64_t count, const T *restrict G, T *restrict P, T *restrict BUF, T lr, \
                     T mom, T damp, T wd, int nesterov, int first),                            \
                    (count, G, P, BUF, lr, mom, damp, wd, nesterov, first))                    \
    {                                                                                          \
        if (!BUF) {                                                                            \
            _Pragma("omp simd") for (int64_t k = 0; k < count; k++)                            \
                P[k] -= lr * (G[k] + wd * P[k]);                                               \
        } else if (first) {                                                                    \
            T f = nesterov ? 1 + mom : 1;                                                      \
            _Pragma("omp simd") for (int64_t k = 0; k < count; k++)                            \
            {                                                                                  \
                T d = G[k] + wd * P[k];                                                        \
                BUF[k] = d;                                                                    \
                P[k] -= lr * (f * d);                                                          \
            }                                                                                  \
        } else if (nesterov) {                                                                 \
            _Pragma("omp simd") for (int64_t k = 0; k < count; k++)                            \
            {                                                                                  \
                T d = G[k] + wd * P[k];                                                        \
                T b = mom * BUF[k] + (1 - damp) * d;                                           \
                BUF[k] = b;                                                                    \
                P[k] -= lr * (d + mom * b);                                                    \
            }                                                                                  \
        } else {                                                                               \
            _Pragma("omp simd") for (int64_t k = 0; k < count; k++)                            \
            {                                                                                  \
                T b = mom * BUF[k] + (1 - damp) * (G[k] + wd * P[k]);                          \
                BUF[k] = b;                                                                    \
                P[k] -= lr * b;                                                                \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void sgd_##T(const pg_node *n)                                                      \
    {                                                                                          \
        sgd_loop_##T(pg_tensor_numel(&n->dst), DATA(T, &n->src[0]), DATA(T, &n->dst),          \
                     n->extra[0].storage ? DATA(T, &n->extra[0]) : NULL,                       \
                     (T)n->p.optim.hyper[0], (T)n->p.optim.hyper[1], (T)n->p.optim.hyper[2],   \
                     (T)n->p.optim.hyper[3], (int)n->p.optim.flag[0], (int)n->p.optim.flag[1]); \
    }
SGD(float)
SGD(double)

/* The adaptive optimizers (PG_OP_ADAM, RMSPROP, ADAGRAD, ADADELTA, RADAM, ADAMAX; slots and f
 * in pg_ops_train.c).
 * Each kind is one branch-free simd loop per flag case, written as PyTorch's rule is
 * (torch/optim/adam.py, rmsprop.py, adagrad.py, adadelta.py, single-tensor path).
 *
 * Adam: g += wd*p (or p *= 1 - lr*wd, AdamW); m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2;
 * vmax = max(vmax, v) with amsgrad; p -= step * m / (sqrt(v or vmax)/bc2 + eps). */
#define ADAM(T, SQRT)                                                                          \
    PG_CPU_DISPATCH(void, adam_loop_##T,                                                       \
                    (int64_t count, const T *restrict G, T *restrict P, T *restrict M,         \
                     T *restrict V, T *restrict VMAX, T step, T b1, T b2, T eps, T wd, T bc2,  \
                     int decoupled),                                                           \
                    (count, G, P, M, V, VMAX, step, b1, b2, eps, wd, bc2, decoupled))          \
    {                                                                                          \
        T l2 = decoupled ? 0 : wd, keep = decoupled ? 1 - wd : 1;                              \
        if (VMAX) {                                                                            \
            _Pragma("omp simd") for (int64_t k = 0; k < count; k++)                            \
            {                                                                                  \
                T p = P[k] * keep;                                                             \
                T g = G[k] + l2 * p;                                                           \
                T m = b1 * M[k] + (1 - b1) * g;                                                \
                T v = b2 * V[k] + (1 - b2) * g * g;                                            \
                T vm = VMAX[k] > v ? VMAX[k] : v;                                              \
                M[k] = m;                                                                      \
                V[k] = v;                                                                      \
                VMAX[k] = vm;                                                                  \
                P[k] = p - step * m / (SQRT(vm) / bc2 + eps);                                  \
            }                                                                                  \
        } else {                                                                               \
            _Pragma("omp simd") for (int64_t k = 0; k < count; k++)                            \
            {                                                                                  \
                T p = P[k] * keep;                                                             \
                T g = G[k] + l2 * p;                                                           \
                T m = b1 * M[k] + (1 - b1) * g;                                                \
                T v = b2 * V[k] + (1 - b2) * g * g;                                            \
                M[k] = m;                                                                      \
                V[k] = v;                                                                      \
                P[k] = p - step * m / (SQRT(v) / bc2 + eps);                                   \
            }                                                                                  \
        }                                                                                      \
    }
ADAM(float, sqrtf)
ADAM(double, sqrt)

/* RMSprop: g += wd*p; sq = a*sq + (1-a)*g^2; avg = sqrt(sq - ga^2) + eps with
 * ga = a*ga + (1-a)*g when centered, else sqrt(sq) + eps;
 * buf = mom*buf + g/avg, p -= lr*buf with momentum, else p -= lr*g/avg.
 * One branch-free loop per (centered, momentum) case, so each vectorizes. */
#define RMSPROP_LOOP(T, SQRT, CENTERED, MOMENTUM)                                              \
    _Pragma("omp simd") for (int64_t k = 0; k < count; k++)                                    \
    {                                                                                          \
        T g = G[k] + wd * P[k];                                                                \
        T sq = a * SQ[k] + (1 - a) * g * g;                                                    \
        SQ[k] = sq;                                                                            \
        T avg;                                                                                 \
        if (CENTERED) {                                                                        \
            T ga = a * GA[k] + (1 - a) * g;                                                    \
            GA[k] = ga;                                                                        \
            avg = SQRT(sq - ga * ga) + eps;                                                    \
        } else {                                                                               \
            avg = SQRT(sq) + eps;                                                              \
        }                                                                                      \
        if (MOMENTUM) {                                                                        \
            T b = mom * BUF[k] + g / avg;                                                      \
            BUF[k] = b;                                                                        \
            P[k] -= lr * b;                                                                    \
        } else {                                                                               \
            P[k] -= lr * (g / avg);                                                            \
        }                                                                                      \
    }
#define RMSPROP(T, SQRT)                                                                       \
    PG_CPU_DISPATCH(void, rmsprop_loop_##T,                                                    \
                    (int64_t count, const T *restrict G, T *restrict P, T *restrict SQ,        \
                     T *restrict BUF, T *restrict GA, T lr, T a, T eps, T wd, T mom),          \
                    (count, G, P, SQ, BUF, GA, lr, a, eps, wd, mom))                           \
    {                                                                                          \
        if (GA && BUF)                                                                         \
            RMSPROP_LOOP(T, SQRT, 1, 1)                                                        \
        else if (GA)                                                                           \
            RMSPROP_LOOP(T, SQRT, 1, 0)                                                        \
        else if (BUF)                                                                          \
            RMSPROP_LOOP(T, SQRT, 0, 1)                                                        \
        else                                                                                   \
            RMSPROP_LOOP(T, SQRT, 0, 0)                                                        \
    }
RMSPROP(float, sqrtf)
RMSPROP(double, sqrt)

/* Adagrad: g += wd*p; sum += g^2; p -= clr * g / (sqrt(sum) + eps). */
#define ADAGRAD(T, SQRT)                                                                       \
    PG_CPU_DISPATCH(void, adagrad_loop_##T,                                                    \
                    (int64_t count, const T *restrict G, T *restrict P, T *restrict S, T clr,  \
                     T wd, T eps),                                                             \
                    (count, G, P, S, clr, wd, eps))                                            \
    {                                                                                          \
        _Pragma("omp simd") for (int64_t k = 0; k < count; k++)                                \
        {                                                                                      \
            T g = G[k] + wd * P[k];                                                            \
            T s = S[k] + g * g;                                                                \
            S[k] = s;                                                                          \
            P[k] -= clr * (g / (SQRT(s) + eps));                                               \
        }                                                                                      \
    }
ADAGRAD(float, sqrtf)
ADAGRAD(double, sqrt)

/* Adadelta: g += wd*p; sq = rho*sq + (1-rho)*g^2; d = sqrt(acc + eps) / sqrt(sq + eps) * g;
 * acc = rho*acc + (1-rho)*d^2; p -= lr*d. */
#define ADADELTA(T, SQRT)                                                                      \
    PG_CPU_DISPATCH(void, adadelta_loop_##T,                                                   \
                    (int64_t count, const T *restrict G, T *restrict P, T *restrict SQ,        \
                     T *restrict ACC, T lr, T rho, T eps, T wd),                               \
                    (count, G, P, SQ, ACC, lr, rho, eps, wd))                                  \
    {                                                                                          \
        _Pragma("omp simd") for (int64_t k = 0; k < count; k++)                                \
        {                                                                                      \
            T g = G[k] + wd * P[k];                                                            \
            T sq = rho * SQ[k] + (1 - rho) * g * g;                                            \
            SQ[k] = sq;                                                                        \
            T d = SQRT(ACC[k] + eps) / SQRT(sq + eps) * g;                                     \
            ACC[k] = rho * ACC[k] + (1 - rho) * d * d;                                         \
            P[k] -= lr * d;                                                                    \
        }                                                                                      \
    }
ADADELTA(float, sqrtf)
ADADELTA(double, sqrt)

/* torch's lerp (aten/src/ATen/native/Lerp.h): a + w (b - a) for w < 0.5, else b - (b - a)(1 - w) */
#define LERP(T, a, b, w) ((w) < (T)0.5 ? (a) + (w) * ((b) - (a)) : (b) - ((b) - (a)) * (1 - (w)))

/* RAdam: g += wd*p (or p *= 1 - lr*wd, decoupled); m = lerp(m, g, 1-b1); v = b2*v + (1-b2)*g^2;
 * p -= (m/bc1) * a / (sqrt(v) + eps) when the step is rectified (a = lr * rect * sqrt(bc2)),
 * else p -= (m/bc1) * lr (a = lr). */
#define RADAM(T, SQRT)                                                                         \
    PG_CPU_DISPATCH(void, radam_loop_##T,                                                      \
                    (int64_t count, const T *restrict G, T *restrict P, T *restrict M,         \
                     T *restrict V, T a, T w, T b2, T eps, T wd, T bc1, int rect,              \
                     int decoupled),                                                           \
                    (count, G, P, M, V, a, w, b2, eps, wd, bc1, rect, decoupled))              \
    {                                                                                          \
        T l2 = decoupled ? 0 : wd, keep = decoupled ? 1 - wd : 1;                              \
        _Pragma("omp simd") for (int64_t k = 0; k < count; k++)                                \
        {                                                                                      \
            T p = P[k] * keep;                                                                 \
            T g = G[k] + l2 * p;                                                               \
            T m = LERP(T, M[k], g, w);                                                         \
            T v = b2 * V[k] + (1 - b2) * g * g;                                                \
            M[k] = m;                                                                          \
            V[k] = v;                                                                          \
            T mc = m / bc1;                                                                    \
            P[k] = rect ? p - mc * a / (SQRT(v) + eps) : p - mc * a;                           \
        }                                                                                      \
    }
RADAM(float, sqrtf)
RADAM(double, sqrt)

/* Adamax: g += wd*p; m = lerp(m, g, 1-b1); u = max(b2*u, |g| + eps) (NaN wins, as torch's
 * amax); p -= clr * (m / u). */
#define ADAMAX(T, FABS)                                                                        \
    PG_CPU_DISPATCH(void, adamax_loop_##T,                                                     \
                    (int64_t count, const T *restrict G, T *restrict P, T *restrict M,         \
                     T *restrict U, T clr, T w, T b2, T eps, T wd),                            \
                    (count, G, P, M, U, clr, w, b2, eps, wd))                                  \
    {                                                                                          \
        _Pragma("omp simd") for (int64_t k = 0; k < count; k++)                                \
        {                                                                                      \
            T g = G[k] + wd * P[k];                                                            \
            T m = LERP(T, M[k], g, w);                                                         \
            T a = b2 * U[k], b = FABS(g) + eps;                                                \
            T u = (a > b || a != a) ? a : b;                                                   \
            M[k] = m;                                                                          \
            U[k] = u;                                                                          \
            P[k] -= clr * (m / u);                                                             \
        }                                                                                      \
    }
ADAMAX(float, fabsf)
ADAMAX(double, fabs)

/* Each adaptive kind's node: G and P, the state slots S[0..2] (NULL where unused), its
 * scalars f and flags (p.optim), then the kind's loop (CALL, on element type T). */
#define OPTIM_TYPED(NAME, T, CALL)                                                             \
    static void NAME##_##T(const pg_node *n)                                                   \
    {                                                                                          \
        int64_t count = pg_tensor_numel(&n->dst);                                              \
        const T *G = DATA(T, &n->src[0]);                                                      \
        T *P = DATA(T, &n->dst);                                                               \
        T *S[3];                                                                               \
        for (int s = 0; s < 3; s++)                                                            \
            S[s] = n->extra[s].storage ? DATA(T, &n->extra[s]) : NULL;                         \
        const double *f = n->p.optim.hyper;                                                    \
        const int64_t *flag = n->p.optim.flag;                                                 \
        (void)flag;                                                                            \
        CALL(T);                                                                               \
    }
#define OPTIM_KERNEL(NAME, CALL)                                                               \
    OPTIM_TYPED(NAME, float, CALL)                                                             \
    OPTIM_TYPED(NAME, double, CALL)                                                            \
    pg_status pg_cpu_##NAME(const pg_node *n)                                                  \
    {                                                                                          \
        if (n->dst.dtype == PG_FLOAT32)                                                        \
            NAME##_float(n);                                                                   \
        else                                                                                   \
            NAME##_double(n);                                                                  \
        return PG_OK;                                                                          \
    }
#define ADAM_CALL(T)                                                                           \
    adam_loop_##T(count, G, P, S[0], S[1], flag[0] ? S[2] : NULL, (T)f[0], (T)f[1], (T)f[2],   \
                  (T)f[3], (T)f[4], (T)f[5], (int)flag[1])
#define RMSPROP_CALL(T)                                                                        \
    rmsprop_loop_##T(count, G, P, S[0], S[1], S[2], (T)f[0], (T)f[1], (T)f[2], (T)f[3], (T)f[4])
#define ADAGRAD_CALL(T) adagrad_loop_##T(count, G, P, S[0], (T)f[0], (T)f[1], (T)f[2])
#define ADADELTA_CALL(T)                                                                       \
    adadelta_loop_##T(count, G, P, S[0], S[1], (T)f[0], (T)f[1], (T)f[2], (T)f[3])
#define RADAM_CALL(T)                                                                          \
    radam_loop_##T(count, G, P, S[0], S[1], (T)f[0], (T)f[1], (T)f[2], (T)f[3], (T)f[4],       \
                   (T)f[5], (int)flag[0], (int)flag[1])
#define ADAMAX_CALL(T)                                                                         \
    adamax_loop_##T(count, G, P, S[0], S[1], (T)f[0], (T)f[1], (T)f[2], (T)f[3], (T)f[4])
OPTIM_KERNEL(radam, RADAM_CALL)
OPTIM_KERNEL(adamax, ADAMAX_CALL)
OPTIM_KERNEL(adam, ADAM_CALL)
OPTIM_KERNEL(rmsprop, RMSPROP_CALL)
OPTIM_KERNEL(adagrad, ADAGRAD_CALL)
OPTIM_KERNEL(adadelta, ADADELTA_CALL)

pg_status pg_cpu_sgd(const pg_node *n)
{
    if (n->dst.dtype == PG_FLOAT32)
        sgd_float(n);
    else
        sgd_double(n);
    return PG_OK;
}
