/* cpu_rnn.c - the fused recurrent cells: RNN_CELL and RNN_CELL_BWD (slots and shapes in
 * csrc/core/pg_ops_rnn.c), one timestep's rows each, and their split over a device pool.
 *
 * Forward, per row: every gate's pre-activation (input projection + hidden projection +
 * bias), its activation, the cell update and the output in one pass, saving what the
 * backward needs (the activated gates, h_prev, c_prev) as it goes; backward, per row:
 * the output's and the carried state's gradients in, every gate's pre-activation
 * gradient and the carried state's out, in one pass. c_t is recomputed in the backward
 * from the saved gates (f * c_prev + i * g, the same float operations: the same bits)
 * rather than saved. The CUDA twins are csrc/backends/cuda/kernels/rnn.cu. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

#include <math.h>
#include <string.h>

#include "../../core/pg_ops.h"
#include "../../core/pg_pool.h"
#include "cpu_kernels.h"
#include "cpu_part.h"
#include "cpu_vecmath.h"

#define DATA(T, t) ((T *)pg_tensor_data(t))
#define OPT(T, t) ((t)->storage ? (T *)pg_tensor_data(t) : NULL)

/* One row of each cell, forward. g, hw: (KG) pre-activation parts; b (KG); hp (P) h_prev;
 * cp (H) c_prev; y (H) the output; hn (P) the new h (NULL: a projection writes it later);
 * cn (H) the new c; s (S) the saved row or NULL. Columns of the gates: H each, in
 * PyTorch's order (LSTM i f g o; GRU r z n). */
#define RNN_ROWS(SUF, T, EXP, TANH)                                                             \
    static inline T sig_##SUF(T x) { return (T)1 / ((T)1 + EXP(-x)); }                       \
    PG_CPU_DISPATCH(void, lstm_row_##SUF,                                                       \
                    (const T *g, const T *hw, const T *b, const T *cp, T *y, T *cn, T *s,       \
                     int64_t H),                                                                \
                    (g, hw, b, cp, y, cn, s, H))                                                \
    {                                                                                           \
        _Pragma("omp simd") for (int64_t j = 0; j < H; j++)                                     \
        {                                                                                       \
            T i = sig_##SUF(g[j] + hw[j] + b[j]);                                               \
            T f = sig_##SUF(g[H + j] + hw[H + j] + b[H + j]);                                   \
            T gg = TANH(g[2 * H + j] + hw[2 * H + j] + b[2 * H + j]);                           \
            T o = sig_##SUF(g[3 * H + j] + hw[3 * H + j] + b[3 * H + j]);                       \
            T c = f * cp[j] + i * gg;                                                           \
            y[j] = o * TANH(c);                                                                 \
            cn[j] = c;                                                                          \
            if (s) {                                                                            \
                s[j] = i;                                                                       \
                s[H + j] = f;                                                                   \
                s[2 * H + j] = gg;                                                              \
                s[3 * H + j] = o;                                                               \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    PG_CPU_DISPATCH(void, gru_row_##SUF,                                                        \
                    (const T *g, const T *hw, const T *b, const T *hp, T *y, T *s, int64_t H),  \
                    (g, hw, b, hp, y, s, H))                                                    \
    {                                                                                           \
        _Pragma("omp simd") for (int64_t j = 0; j < H; j++)                                     \
        {                                                                                       \
            T r = sig_##SUF(g[j] + hw[j] + b[j]);                                               \
            T z = sig_##SUF(g[H + j] + hw[H + j] + b[H + j]);                                   \
            T hn = hw[2 * H + j] + b[2 * H + j];                                                \
            T n = TANH(g[2 * H + j] + r * hn);                                                  \
            T h = hp[j];                                                                        \
            y[j] = ((T)1 - z) * n + z * h;                                                      \
            if (s) {                                                                            \
                s[j] = r;                                                                       \
                s[H + j] = z;                                                                   \
                s[2 * H + j] = n;                                                               \
                s[3 * H + j] = hn;                                                              \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    PG_CPU_DISPATCH(void, rnn_row_##SUF,                                                        \
                    (const T *g, const T *hw, const T *b, T *y, int relu, int64_t H),           \
                    (g, hw, b, y, relu, H))                                                     \
    {                                                                                           \
        if (relu) {                                                                             \
            _Pragma("omp simd") for (int64_t j = 0; j < H; j++)                                 \
            {                                                                                   \
                T a = g[j] + hw[j] + b[j];                                                      \
                y[j] = a > 0 ? a : (T)0;                                                        \
            }                                                                                   \
        } else {                                                                                \
            _Pragma("omp simd") for (int64_t j = 0; j < H; j++) y[j] = TANH(g[j] + hw[j] + b[j]); \
        }                                                                                       \
    }                                                                                           \
    /* backward rows: dy (H) | NULL, dh (P) | NULL: the output's gradient is their sum */      \
    PG_CPU_DISPATCH(void, lstm_bwd_row_##SUF,                                                   \
                    (const T *s, const T *dy, const T *dh, T *dc, T *dg, int64_t H, int64_t P), \
                    (s, dy, dh, dc, dg, H, P))                                                  \
    {                                                                                           \
        const T *cp = s + 4 * H + P;                                                            \
        _Pragma("omp simd") for (int64_t j = 0; j < H; j++)                                     \
        {                                                                                       \
            T i = s[j], f = s[H + j], gg = s[2 * H + j], o = s[3 * H + j];                      \
            T c = f * cp[j] + i * gg, tc = TANH(c);                                             \
            T d = (dy ? dy[j] : (T)0) + (dh ? dh[j] : (T)0);                                    \
            T dct = dc[j] + d * o * ((T)1 - tc * tc);                                           \
            dg[j] = dct * gg * i * ((T)1 - i);                                                  \
            dg[H + j] = dct * cp[j] * f * ((T)1 - f);                                           \
            dg[2 * H + j] = dct * i * ((T)1 - gg * gg);                                         \
            dg[3 * H + j] = d * tc * o * ((T)1 - o);                                            \
            dc[j] = dct * f;                                                                    \
        }                                                                                       \
    }                                                                                           \
    PG_CPU_DISPATCH(void, gru_bwd_row_##SUF,                                                    \
                    (const T *s, const T *dy, const T *dhin, T *dhout, T *dg, T *dhw,           \
                     int64_t H),                                                                \
                    (s, dy, dhin, dhout, dg, dhw, H))                                           \
    {                                                                                           \
        const T *hp = s + 4 * H;                                                                \
        _Pragma("omp simd") for (int64_t j = 0; j < H; j++)                                     \
        {                                                                                       \
            T r = s[j], z = s[H + j], n = s[2 * H + j], hn = s[3 * H + j];                      \
            T d = (dy ? dy[j] : (T)0) + (dhin ? dhin[j] : (T)0);                                \
            T dan = d * ((T)1 - z) * ((T)1 - n * n);                                            \
            T dar = dan * hn * r * ((T)1 - r);                                                  \
            T daz = d * (hp[j] - n) * z * ((T)1 - z);                                           \
            dg[j] = dhw[j] = dar;                                                               \
            dg[H + j] = dhw[H + j] = daz;                                                       \
            dg[2 * H + j] = dan;                                                                \
            dhw[2 * H + j] = dan * r;                                                           \
            dhout[j] = d * z;                                                                   \
        }                                                                                       \
    }                                                                                           \
    PG_CPU_DISPATCH(void, rnn_bwd_row_##SUF,                                                    \
                    (const T *s, const T *dy, const T *dh, T *dg, int relu, int64_t H),         \
                    (s, dy, dh, dg, relu, H))                                                   \
    {                                                                                           \
        _Pragma("omp simd") for (int64_t j = 0; j < H; j++)                                     \
        {                                                                                       \
            T d = (dy ? dy[j] : (T)0) + (dh ? dh[j] : (T)0), h = s[j];                          \
            dg[j] = relu ? (h > 0 ? d : (T)0) : d * ((T)1 - h * h);                             \
        }                                                                                       \
    }                                                                                           \
    /* each family's step for row r (an RNN_CELL row's family column, pg_subops.def) */    \
    static void fwd_RNN_##SUF(const pg_node *n, int64_t r, const T *g, const T *hw,            \
                              const T *b, const T *hp, T *y, T *s, int64_t H)                   \
    {                                                                                           \
        (void)r;                                                                                \
        (void)hp;                                                                               \
        rnn_row_##SUF(g, hw, b, y, (pg_subop_flags(n->subop) & PG_SUBF_RELU) != 0, H);          \
        if (s)                                                                                  \
            memcpy(s, y, sizeof(T) * (size_t)H);                                                \
    }                                                                                           \
    static void fwd_LSTM_##SUF(const pg_node *n, int64_t r, const T *g, const T *hw,           \
                               const T *b, const T *hp, T *y, T *s, int64_t H)                  \
    {                                                                                           \
        (void)hp;                                                                               \
        T *c = DATA(T, &n->extra[1]) + r * H;                                                   \
        lstm_row_##SUF(g, hw, b, c, y, c, s, H);                                                \
    }                                                                                           \
    static void fwd_GRU_##SUF(const pg_node *n, int64_t r, const T *g, const T *hw,            \
                              const T *b, const T *hp, T *y, T *s, int64_t H)                   \
    {                                                                                           \
        (void)n;                                                                                \
        (void)r;                                                                                \
        gru_row_##SUF(g, hw, b, hp, y, s, H);                                                   \
    }                                                                                           \
    static void bwd_RNN_##SUF(const pg_node *n, int64_t r, const T *s, const T *dy,            \
                              const T *dh, T *dg, int64_t H, int64_t P)                         \
    {                                                                                           \
        (void)r;                                                                                \
        (void)P;                                                                                \
        rnn_bwd_row_##SUF(s, dy, dh, dg, (pg_subop_flags(n->subop) & PG_SUBF_RELU) != 0, H);    \
    }                                                                                           \
    static void bwd_LSTM_##SUF(const pg_node *n, int64_t r, const T *s, const T *dy,           \
                               const T *dh, T *dg, int64_t H, int64_t P)                        \
    {                                                                                           \
        lstm_bwd_row_##SUF(s, dy, dh, DATA(T, &n->src[3]) + r * H, dg, H, P);                   \
    }                                                                                           \
    static void bwd_GRU_##SUF(const pg_node *n, int64_t r, const T *s, const T *dy,            \
                              const T *dh, T *dg, int64_t H, int64_t P)                         \
    {                                                                                           \
        gru_bwd_row_##SUF(s, dy, dh, DATA(T, &n->extra[1]) + r * P, dg,                         \
                          DATA(T, &n->extra[0]) + r * n->extra[0].strides[0], H);               \
    }                                                                                           \
    typedef void (*fwd_row_##SUF)(const pg_node *, int64_t, const T *, const T *, const T *,   \
                                  const T *, T *, T *, int64_t);                                \
    typedef void (*bwd_row_##SUF)(const pg_node *, int64_t, const T *, const T *, const T *,   \
                                  T *, int64_t, int64_t);                                       \
    static void cell_fwd_##SUF(const pg_node *n, fwd_row_##SUF step)                            \
    {                                                                                           \
        int64_t R = n->dst.shape[0], H = n->dst.shape[1], P = n->src[3].shape[1];               \
        int64_t KG = n->src[1].shape[1];                                                        \
        pg_rnn_cell_cols cell = pg_rnn_cell(n->subop);                                          \
        const pg_tensor *gt = &n->src[0], *yt = &n->dst, *st = &n->extra[2];                    \
        const T *b = DATA(const T, &n->src[2]);                                                 \
        T *S = OPT(T, st);                                                                      \
        int64_t sw = st->storage ? st->strides[0] : 0, ks = cell.saved * H;                     \
        for (int64_t r = 0; r < R; r++) {                                                       \
            const T *g = DATA(const T, gt) + r * gt->strides[0];                                \
            const T *hw = DATA(const T, &n->src[1]) + r * KG;                                   \
            const T *hp = DATA(const T, &n->src[3]) + r * P;                                    \
            T *y = DATA(T, yt) + r * yt->strides[0];                                            \
            T *s = S ? S + r * sw : NULL;                                                       \
            if (s) { /* h_prev (and c_prev) first: the state rows are rewritten below */       \
                memcpy(s + ks, hp, sizeof(T) * (size_t)P);                                      \
                if (cell.cell_state)                                                            \
                    memcpy(s + ks + P, DATA(const T, &n->src[4]) + r * H, sizeof(T) * (size_t)H); \
            }                                                                                   \
            step(n, r, g, hw, b, hp, y, s, H);                                                  \
            if (n->extra[0].storage) /* the carried h (none with a projection) */              \
                memcpy(DATA(T, &n->extra[0]) + r * P, y, sizeof(T) * (size_t)P);                \
        }                                                                                       \
    }                                                                                           \
    static void cell_bwd_##SUF(const pg_node *n, bwd_row_##SUF step)                            \
    {                                                                                           \
        const pg_tensor *st = &n->src[0], *dyt = &n->src[1], *dgt = &n->dst;                    \
        pg_rnn_cell_cols cell = pg_rnn_cell(n->subop);                                          \
        int64_t R = dgt->shape[0], KG = dgt->shape[1];                                          \
        int64_t H = KG / cell.gates, ks = cell.saved * H;                                       \
        int64_t P = st->shape[1] - ks - (cell.cell_state ? H : 0);                              \
        const T *DY = OPT(const T, dyt), *DH = OPT(const T, &n->src[2]);                        \
        for (int64_t r = 0; r < R; r++) {                                                       \
            const T *s = DATA(const T, st) + r * st->strides[0];                                \
            const T *dy = DY ? DY + r * dyt->strides[0] : NULL;                                 \
            const T *dh = DH ? DH + r * P : NULL;                                               \
            T *dg = DATA(T, dgt) + r * dgt->strides[0];                                         \
            step(n, r, s, dy, dh, dg, H, P);                                                    \
        }                                                                                       \
    }
RNN_ROWS(f32, float, expf, tanhf)
RNN_ROWS(f64, double, exp, tanh)

/* each RNN_CELL row's steps, by its family column (pg_subops.def) */
static const struct {
    fwd_row_f32 fwd32;
    fwd_row_f64 fwd64;
    bwd_row_f32 bwd32;
    bwd_row_f64 bwd64;
} cell_steps[PG_NUM_SUBOPS] = {
#define PG_SUBOP_RNN_CELL(ID, name, flags, family, ...)                                            \
    [PG_RNN_CELL_##ID] = {fwd_##family##_f32, fwd_##family##_f64, bwd_##family##_f32,              \
                          bwd_##family##_f64},
#include "../../core/pg_subops.def"
};

pg_status pg_cpu_rnn_cell(const pg_node *n)
{
    if (pg_subop_node(n->subop) != PG_OP_RNN_CELL)
        return pg_error_set(PG_ERR_RUNTIME, "%s: %s is not a cell kind", n->name,
                            pg_subop_id(n->subop));
    bool fwd = n->op == PG_OP_RNN_CELL;
    if (n->dst.dtype == PG_FLOAT32)
        fwd ? cell_fwd_f32(n, cell_steps[n->subop].fwd32) : cell_bwd_f32(n, cell_steps[n->subop].bwd32);
    else
        fwd ? cell_fwd_f64(n, cell_steps[n->subop].fwd64) : cell_bwd_f64(n, cell_steps[n->subop].bwd64);
    return PG_OK;
}

/* ---- the split over a pool: whole rows per task, every 2-d operand cut alike ----------- */

#define RNN_GRAIN 8192 /* gate elements per task (each a few transcendentals) */

typedef struct rnn_split {
    const pg_node *n;
    int64_t R, ntasks;
} rnn_split;

static void cut_rows(pg_tensor *t, int64_t lo, int64_t hi)
{
    if (t->storage && t->ndim == 2) {
        t->offset += lo * t->strides[0];
        t->shape[0] = hi - lo;
    }
}

static pg_status rnn_task(void *ctx, int64_t task)
{
    rnn_split *j = ctx;
    int64_t lo, hi;
    pg_cpu_part_aligned(j->R, j->ntasks, task, 1, &lo, &hi);
    if (hi <= lo)
        return PG_OK;
    pg_node sub = *j->n;
    for (int i = 0; i < sub.nsrc; i++)
        cut_rows(&sub.src[i], lo, hi);
    for (int i = 0; i < sub.nextra; i++)
        cut_rows(&sub.extra[i], lo, hi);
    cut_rows(&sub.dst, lo, hi);
    return pg_cpu_rnn_cell(&sub);
}

pg_status pg_cpu_rnn_cell_on(pg_pool *pool, const pg_node *n)
{
    int64_t R = n->dst.shape[0];
    int64_t ntasks = pool ? pg_tensor_numel(&n->dst) / RNN_GRAIN : 0;
    if (ntasks > pg_pool_threads(pool))
        ntasks = pg_pool_threads(pool);
    if (ntasks > R)
        ntasks = R;
    if (ntasks < 2)
        return pg_cpu_rnn_cell(n);
    rnn_split j = {n, R, ntasks};
    return pg_pool_run(pool, ntasks, rnn_task, &j);
}
