/* cpu_train.c - the CPU kernels of the fused training ops (see pg_ops_train.c
 * for each node's operands). The reference the CUDA kernels (kernels/train.cu)
 * are tested against; sim runs these on its device threads.
 *
 * Linear layers call OpenBLAS for the matmuls and fuse everything else into
 * one pass: forward, the bias + activation epilogue over y; backward, the
 * activation-derivative prologue dz = dy * act'(y) that also sums db. Every
 * kernel is written once as a macro over the element type (float, double);
 * sums accumulate in double. */
/* The loops below have runtime trip counts, which -O2's "very cheap" vectoriser
 * skips; the dynamic cost model vectorises them (checked with -fopt-info-vec). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "../../core/pg_status.h"
#include "cpu_gemm_half.h"
#include "cpu_kernels.h"

#define DATA(T, t) ((T *)pg_tensor_data(t))

/* ---- linear ------------------------------------------------------------------------- */

/* The epilogue/prologue loops are written once per activation (the switch is outside
 * the loops) so that the compiler vectorises the relu and identity cases. */
#define ROWS_LOOP(N, O, BODY)                                                                  \
    for (int64_t r = 0; r < (N); r++)                                                          \
        for (int64_t j = 0; j < (O); j++) {                                                    \
            int64_t k = r * (O) + j;                                                           \
            BODY;                                                                              \
        }
#define ACT_SWITCH(act, LOOP)                                                                  \
    switch (act) {                                                                             \
    case PG_ACT_RELU: LOOP(v > 0 ? v : 0); break;                                              \
    case PG_ACT_TANH: LOOP(tanh(v)); break;                                                    \
    case PG_ACT_SIGMOID: LOOP(1.0 / (1.0 + exp(-v))); break;                                   \
    default: LOOP(v); break;                                                                   \
    }

/* y (N,O) = act(x (N,Kin) @ W (O,Kin)^T + b (O)); Kin: in_features (I is complex.h's) */
#define LINEAR_FWD(T, GEMM)                                                                    \
    static void linear_fwd_##T(const pg_node *n)                                               \
    {                                                                                          \
        const pg_tensor *x = &n->src[0], *w = &n->src[1], *b = &n->src[2], *y = &n->dst;       \
        blasint N = (blasint)x->shape[0], Kin = (blasint)x->shape[1], O = (blasint)w->shape[0]; \
        T *Y = DATA(T, y);                                                                     \
        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, N, O, Kin, 1, DATA(T, x), Kin, DATA(T, w),  \
             Kin, 0, Y, O);                                                                      \
        const T *B = b->storage ? DATA(T, b) : NULL;                                           \
        int act = n->subop;                                                                    \
        if (B) {                                                                               \
            ACT_SWITCH(act, EPI_BIAS_##T)                                                      \
        } else if (act != PG_ACT_NONE) {                                                       \
            ACT_SWITCH(act, EPI_NOBIAS_##T)                                                    \
        }                                                                                      \
    }
#define EPI_BIAS_float(EXPR) ROWS_LOOP(N, O, { float v = Y[k] + B[j]; Y[k] = (float)(EXPR); })
#define EPI_BIAS_double(EXPR) ROWS_LOOP(N, O, { double v = Y[k] + B[j]; Y[k] = (double)(EXPR); })
#define EPI_NOBIAS_float(EXPR) ROWS_LOOP(N, O, { float v = Y[k]; Y[k] = (float)(EXPR); })
#define EPI_NOBIAS_double(EXPR) ROWS_LOOP(N, O, { double v = Y[k]; Y[k] = (double)(EXPR); })
LINEAR_FWD(float, scipy_cblas_sgemm)
LINEAR_FWD(double, scipy_cblas_dgemm)

/* dz = dy * act'(y) in one pass that also sums db (when wanted) */
#define PRO_LOOP(T, EXPR)                                                                      \
    if (acc) {                                                                                 \
        ROWS_LOOP(N, O, { T v = (T)(EXPR); dz[k] = v; acc[j] += v; })                          \
    } else {                                                                                   \
        ROWS_LOOP(N, O, dz[k] = (T)(EXPR))                                                     \
    }

/* dz = dy * act'(y), db = sum_rows dz; dW (O,Kin) = dz^T @ x; dx (N,Kin) = dz @ W */
#define LINEAR_BWD(T, GEMM)                                                                    \
    static pg_status linear_bwd_##T(const pg_node *n)                                         \
    {                                                                                          \
        const pg_tensor *dy = &n->src[0], *x = &n->src[1], *w = &n->src[2], *y = &n->src[3];  \
        const pg_tensor *dw = &n->dst, *dx = &n->extra[0], *db = &n->extra[1],                 \
                        *dzt = &n->extra[2];                                                   \
        blasint N = (blasint)x->shape[0], Kin = (blasint)x->shape[1], O = (blasint)w->shape[0]; \
        int act = n->subop;                                                                    \
        const T *DZ = DATA(T, dy);                                                             \
        double *acc = NULL;                                                                    \
        if (db->storage) {                                                                     \
            acc = calloc((size_t)O + 1, sizeof *acc);                                          \
            if (!acc)                                                                          \
                return pg_error_set(PG_ERR_NOMEM, "linear_backward: out of host memory");      \
        }                                                                                      \
        if (act != PG_ACT_NONE) {                                                              \
            T *dz = DATA(T, dzt);                                                              \
            const T *D = DATA(T, dy), *Yv = DATA(T, y);                                        \
            switch (act) {                                                                     \
            case PG_ACT_RELU: PRO_LOOP(T, Yv[k] > 0 ? D[k] : 0); break;                        \
            case PG_ACT_TANH: PRO_LOOP(T, D[k] * (1 - Yv[k] * Yv[k])); break;                  \
            default: PRO_LOOP(T, D[k] * (Yv[k] * (1 - Yv[k]))); break;                         \
            }                                                                                  \
            DZ = dz;                                                                           \
        } else if (acc) {                                                                      \
            ROWS_LOOP(N, O, acc[j] += DZ[k]);                                                  \
        }                                                                                      \
        if (acc) {                                                                             \
            T *DB = DATA(T, db);                                                               \
            for (blasint j = 0; j < O; j++)                                                    \
                DB[j] = (T)acc[j];                                                             \
            free(acc);                                                                         \
        }                                                                                      \
        if (dw->storage) /* absent in a row panel of a split backward (cpu_parallel.c) */      \
            GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, O, Kin, N, 1, DZ, O, DATA(T, x), Kin,   \
                 0, DATA(T, dw), Kin);                                                           \
        if (dx->storage)                                                                       \
            GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, Kin, O, 1, DZ, O, DATA(T, w), Kin, \
                 0, DATA(T, dx), Kin);                                                           \
        return PG_OK;                                                                          \
    }
LINEAR_BWD(float, scipy_cblas_sgemm)
LINEAR_BWD(double, scipy_cblas_dgemm)

pg_status pg_cpu_linear_fwd(const pg_node *n)
{
    if (n->dst.dtype == PG_FLOAT16 || n->dst.dtype == PG_BFLOAT16) /* cpu_train_half.c */
        return pg_cpu_linear_fwd_half(n);
    if (n->dst.dtype == PG_FLOAT32)
        linear_fwd_float(n);
    else
        linear_fwd_double(n);
    return PG_OK;
}

pg_status pg_cpu_linear_bwd(const pg_node *n)
{
    if (n->src[0].dtype == PG_FLOAT16 || n->src[0].dtype == PG_BFLOAT16) /* cpu_train_half.c */
        return pg_cpu_linear_bwd_half(n);
    return n->dst.dtype == PG_FLOAT32 ? linear_bwd_float(n) : linear_bwd_double(n);
}

/* ---- softmax cross-entropy ---------------------------------------------------------- */

/* probs (N,C) = softmax(logits); loss = sum_r (logsumexp(row r) - logits[r, label r]) (/ N) */
#define XENT_FWD(T)                                                                            \
    static void xent_fwd_##T(const pg_node *n, int64_t N, int64_t C, const int64_t *L)        \
    {                                                                                          \
        const T *X = DATA(T, &n->src[0]);                                                      \
        T *P = DATA(T, &n->extra[0]);                                                          \
        double total = 0;                                                                      \
        for (int64_t r = 0; r < N; r++) {                                                      \
            const T *row = X + r * C;                                                          \
            T *prow = P + r * C;                                                               \
            double m = -INFINITY, s = 0;                                                       \
            for (int64_t j = 0; j < C; j++)                                                    \
                m = row[j] > m ? row[j] : m;                                                   \
            for (int64_t j = 0; j < C; j++) {                                                  \
                double e = exp(row[j] - m);                                                    \
                prow[j] = (T)e;                                                                \
                s += e;                                                                        \
            }                                                                                  \
            for (int64_t j = 0; j < C; j++)                                                    \
                prow[j] = (T)(prow[j] / s);                                                    \
            total += m + log(s) - row[L[r]];                                                   \
        }                                                                                      \
        *DATA(T, &n->dst) = (T)(n->p.train.i[0] ? total / (double)N : total);                 \
    }
XENT_FWD(float)
XENT_FWD(double)

pg_status pg_cpu_xent_fwd(const pg_node *n)
{
    int64_t N = n->src[0].shape[0], C = n->src[0].shape[1];
    const int64_t *L = DATA(int64_t, &n->src[1]);
    for (int64_t r = 0; r < N; r++)
        if (L[r] < 0 || L[r] >= C)
            return pg_error_set(PG_ERR_INDEX,
                                "cross_entropy: label %lld (row %lld) is out of range for %lld "
                                "classes; labels must be in [0, %lld)",
                                (long long)L[r], (long long)r, (long long)C, (long long)C);
    if (n->dst.dtype == PG_FLOAT32)
        xent_fwd_float(n, N, C, L);
    else
        xent_fwd_double(n, N, C, L);
    return PG_OK;
}

/* dlogits = (probs - onehot(labels)) * g (/ N) */
#define XENT_BWD(T)                                                                            \
    static void xent_bwd_##T(const pg_node *n)                                                 \
    {                                                                                          \
        int64_t N = n->src[0].shape[0], C = n->src[0].shape[1];                                \
        const T *P = DATA(T, &n->src[0]);                                                      \
        const int64_t *L = DATA(int64_t, &n->src[1]);                                          \
        double g = *DATA(T, &n->src[2]);                                                       \
        if (n->p.train.i[0])                                                                   \
            g /= (double)N;                                                                    \
        T *D = DATA(T, &n->dst);                                                               \
        for (int64_t r = 0; r < N; r++) {                                                      \
            for (int64_t j = 0; j < C; j++)                                                    \
                D[r * C + j] = (T)(P[r * C + j] * g);                                          \
            if (L[r] >= 0 && L[r] < C)                                                         \
                D[r * C + L[r]] = (T)((P[r * C + L[r]] - 1.0) * g);                            \
        }                                                                                      \
    }
XENT_BWD(float)
XENT_BWD(double)

pg_status pg_cpu_xent_bwd(const pg_node *n)
{
    if (n->dst.dtype == PG_FLOAT32)
        xent_bwd_float(n);
    else
        xent_bwd_double(n);
    return PG_OK;
}

/* ---- optimizers ----------------------------------------------------------------------- */

/* PyTorch's SGD: d = g + wd*p; buf = first ? d : mom*buf + (1-damp)*d;
 * d = nesterov ? d + mom*buf : buf; p -= lr*d */
#define SGD(T)                                                                                 \
    static void sgd_##T(const pg_node *n)                                                      \
    {                                                                                          \
        int64_t count = pg_tensor_numel(&n->dst);                                              \
        const T *G = DATA(T, &n->src[0]);                                                      \
        T *P = DATA(T, &n->dst);                                                               \
        T *BUF = n->extra[0].storage ? DATA(T, &n->extra[0]) : NULL;                           \
        T lr = (T)n->p.train.f[0], mom = (T)n->p.train.f[1], damp = (T)n->p.train.f[2],        \
          wd = (T)n->p.train.f[3];                                                             \
        int nesterov = (int)n->p.train.i[0], first = (int)n->p.train.i[1];                     \
        /* one branch-free loop per case, so each vectorises */                                \
        if (!BUF) {                                                                            \
            for (int64_t k = 0; k < count; k++)                                                \
                P[k] -= lr * (G[k] + wd * P[k]);                                               \
        } else if (first) {                                                                    \
            T f = nesterov ? 1 + mom : 1;                                                      \
            for (int64_t k = 0; k < count; k++) {                                              \
                T d = G[k] + wd * P[k];                                                        \
                BUF[k] = d;                                                                    \
                P[k] -= lr * (f * d);                                                          \
            }                                                                                  \
        } else if (nesterov) {                                                                 \
            for (int64_t k = 0; k < count; k++) {                                              \
                T d = G[k] + wd * P[k];                                                        \
                T b = mom * BUF[k] + (1 - damp) * d;                                           \
                BUF[k] = b;                                                                    \
                P[k] -= lr * (d + mom * b);                                                    \
            }                                                                                  \
        } else {                                                                               \
            for (int64_t k = 0; k < count; k++) {                                              \
                T b = mom * BUF[k] + (1 - damp) * (G[k] + wd * P[k]);                          \
                BUF[k] = b;                                                                    \
                P[k] -= lr * b;                                                                \
            }                                                                                  \
        }                                                                                      \
    }
SGD(float)
SGD(double)

/* PyTorch's Adam: g += wd*p; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2;
 * p -= step_size * m / (sqrt(v)/bc2_sqrt + eps) */
#define ADAM(T)                                                                                \
    static void adam_##T(const pg_node *n)                                                     \
    {                                                                                          \
        int64_t count = pg_tensor_numel(&n->dst);                                              \
        const T *G = DATA(T, &n->src[0]);                                                      \
        T *P = DATA(T, &n->dst), *M = DATA(T, &n->extra[0]), *V = DATA(T, &n->extra[1]);       \
        T step = (T)n->p.train.f[0], b1 = (T)n->p.train.f[1], b2 = (T)n->p.train.f[2],         \
          eps = (T)n->p.train.f[3], wd = (T)n->p.train.f[4], bc2 = (T)n->p.train.f[5];         \
        for (int64_t k = 0; k < count; k++) {                                                  \
            T g = G[k] + wd * P[k];                                                            \
            T m = b1 * M[k] + (1 - b1) * g;                                                    \
            T v = b2 * V[k] + (1 - b2) * g * g;                                                \
            M[k] = m;                                                                          \
            V[k] = v;                                                                          \
            P[k] -= step * m / (sqrt(v) / bc2 + eps);                                          \
        }                                                                                      \
    }
ADAM(float)
ADAM(double)

pg_status pg_cpu_sgd(const pg_node *n)
{
    if (n->dst.dtype == PG_FLOAT32)
        sgd_float(n);
    else
        sgd_double(n);
    return PG_OK;
}

pg_status pg_cpu_adam(const pg_node *n)
{
    if (n->dst.dtype == PG_FLOAT32)
        adam_float(n);
    else
        adam_double(n);
    return PG_OK;
}
