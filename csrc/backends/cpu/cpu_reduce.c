/* cpu_reduce.c - sum, max, min and argmax over one axis on the CPU, vectorized.
 *
 * A reduction node is src (any shape, any strides) reduced over `axis` into
 * dst (the same shape with that axis 1). The generic layer passes both
 * contiguous, but the thread pool splits nodes into views, so any strides must
 * work; the fast paths are for unit-stride runs. Two kernels, chosen by which
 * axis has unit stride in src:
 *
 *  - the reduced axis (sum(axis=-1), or everything): each output is one
 *    contiguous run of R elements, reduced with 16 independent lanes the
 *    compiler maps to vector registers. Sums are pairwise over 256-element
 *    leaves like NumPy's, so the error grows with log(R), not R.
 *  - another axis (sum(axis=0) of a matrix): rows are folded in memory order
 *    into a tile of 256 accumulators (on the stack: kernels are reentrant and
 *    run on several pool threads at once), so reducing the first axis streams
 *    through memory with vector adds instead of striding down columns.
 *
 * float32 sums accumulate in float64 (more accurate than NumPy's float32
 * pairwise sum, at no cost once memory-bound); int64 sums wrap like NumPy's
 * (computed in uint64: no signed-overflow UB). NaN wins max/min/argmax, as in
 * NumPy; argmax returns the first index of the maximum (or of the first NaN):
 * a vector max, then a vector search for it. */
#include <stdbool.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_vecmath.h"

#define LANES 16          /* independent accumulators of a run: 2 AVX-512 / 4 AVX2 registers */
#define PAIRWISE_LEAF 256 /* elements summed directly before the pairwise split */
#define TILE 256          /* accumulators of the row kernel (2 KiB of float64) */

/* NaN-propagating picks; for integers x != x is false and folds away */
#define PICK_MAX(v, acc) (((v) > (acc) || (v) != (v)) ? (v) : (acc))
#define PICK_MIN(v, acc) (((v) < (acc) || (v) != (v)) ? (v) : (acc))

static inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- one contiguous run of n elements -> one value ------------------------------------- */

#define RUN_SUM(SUF, T, ACC)                                                                  \
    static PG_CPU_CLONES ACC sum_leaf_##SUF(const T *a, int64_t n)                           \
    {                                                                                         \
        ACC lane[LANES] = {0};                                                                \
        int64_t i = 0;                                                                        \
        for (; i + LANES <= n; i += LANES) {                                                  \
            _Pragma("omp simd") for (int k = 0; k < LANES; k++) lane[k] += (ACC)a[i + k];     \
        }                                                                                     \
        for (int k = 0; i < n; i++, k++)                                                      \
            lane[k] += (ACC)a[i];                                                             \
        for (int w = LANES / 2; w > 0; w /= 2)                                                \
            for (int k = 0; k < w; k++)                                                       \
                lane[k] += lane[k + w];                                                       \
        return lane[0];                                                                       \
    }                                                                                         \
    static ACC sum_run_##SUF(const T *a, int64_t n)                                           \
    {                                                                                         \
        if (n <= PAIRWISE_LEAF)                                                               \
            return sum_leaf_##SUF(a, n);                                                      \
        int64_t half = (n / 2) / LANES * LANES;                                               \
        return sum_run_##SUF(a, half) + sum_run_##SUF(a + half, n - half);                   \
    }

#define RUN_PICK(NAME, T, PICK)                                                               \
    static PG_CPU_CLONES T NAME(const T *a, int64_t n)                                        \
    {                                                                                         \
        T lane[LANES];                                                                        \
        for (int k = 0; k < LANES; k++)                                                       \
            lane[k] = a[0];                                                                   \
        int64_t i = 0;                                                                        \
        for (; i + LANES <= n; i += LANES) {                                                  \
            _Pragma("omp simd") for (int k = 0; k < LANES; k++) lane[k] =                     \
                PICK(a[i + k], lane[k]);                                                      \
        }                                                                                     \
        for (; i < n; i++)                                                                    \
            lane[0] = PICK(a[i], lane[0]);                                                    \
        T m = lane[0];                                                                        \
        for (int k = 1; k < LANES; k++)                                                       \
            m = PICK(lane[k], m);                                                             \
        return m;                                                                             \
    }

/* The first index holding m (or the first NaN when m is NaN), 64 at a time. */
#define RUN_FIND(SUF, T)                                                                      \
    static PG_CPU_CLONES int64_t find_##SUF(const T *a, int64_t n, T m)                       \
    {                                                                                         \
        bool nan = m != m;                                                                    \
        for (int64_t i0 = 0; i0 < n; i0 += 64) {                                              \
            int64_t w = min_i64(64, n - i0);                                                  \
            int hit = 0;                                                                      \
            _Pragma("omp simd reduction(|:hit)") for (int64_t k = 0; k < w; k++) hit |=       \
                nan ? a[i0 + k] != a[i0 + k] : a[i0 + k] == m;                                \
            if (hit)                                                                          \
                for (int64_t k = 0; k < w; k++)                                               \
                    if (nan ? a[i0 + k] != a[i0 + k] : a[i0 + k] == m)                        \
                        return i0 + k;                                                        \
        }                                                                                     \
        return 0; /* not reached: m came from a */                                            \
    }

/* ---- R rows of m elements (row stride sR bytes, element stride s_in) -> m values --------- */

#define ROWS_SUM(SUF, T, ACC)                                                                 \
    static PG_CPU_CLONES void sum_rows_##SUF(const char *src, int64_t sR, int64_t R,          \
                                             int64_t m, int64_t s_in, char *dst, int64_t d_in)\
    {                                                                                         \
        ACC acc[TILE];                                                                        \
        for (int64_t j0 = 0; j0 < m; j0 += TILE) {                                            \
            int64_t w = min_i64(TILE, m - j0);                                                \
            for (int64_t j = 0; j < w; j++)                                                   \
                acc[j] = 0;                                                                   \
            for (int64_t r = 0; r < R; r++) {                                                 \
                const char *row = src + r * sR + j0 * s_in;                                   \
                if (s_in == (int64_t)sizeof(T)) {                                             \
                    const T *x = (const T *)row;                                              \
                    _Pragma("omp simd") for (int64_t j = 0; j < w; j++) acc[j] += (ACC)x[j];  \
                } else {                                                                      \
                    for (int64_t j = 0; j < w; j++)                                           \
                        acc[j] += (ACC) * (const T *)(row + j * s_in);                        \
                }                                                                             \
            }                                                                                 \
            for (int64_t j = 0; j < w; j++)                                                   \
                *(T *)(dst + (j0 + j) * d_in) = (T)acc[j];                                    \
        }                                                                                     \
    }

#define ROWS_PICK(NAME, T, PICK)                                                              \
    static PG_CPU_CLONES void NAME(const char *src, int64_t sR, int64_t R, int64_t m,         \
                                   int64_t s_in, char *dst, int64_t d_in)                     \
    {                                                                                         \
        T acc[TILE];                                                                          \
        for (int64_t j0 = 0; j0 < m; j0 += TILE) {                                            \
            int64_t w = min_i64(TILE, m - j0);                                                \
            for (int64_t j = 0; j < w; j++)                                                   \
                acc[j] = *(const T *)(src + (j0 + j) * s_in);                                 \
            for (int64_t r = 1; r < R; r++) {                                                 \
                const char *row = src + r * sR + j0 * s_in;                                   \
                if (s_in == (int64_t)sizeof(T)) {                                             \
                    const T *x = (const T *)row;                                              \
                    _Pragma("omp simd") for (int64_t j = 0; j < w; j++) acc[j] =              \
                        PICK(x[j], acc[j]);                                                   \
                } else {                                                                      \
                    for (int64_t j = 0; j < w; j++) {                                         \
                        T v = *(const T *)(row + j * s_in);                                   \
                        acc[j] = PICK(v, acc[j]);                                             \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
            for (int64_t j = 0; j < w; j++)                                                   \
                *(T *)(dst + (j0 + j) * d_in) = acc[j];                                       \
        }                                                                                     \
    }

/* argmax: strictly greater keeps the first maximum; once a lane holds NaN it sticks */
#define ARGMAX_TAKE(v, acc) ((acc) == (acc) && ((v) > (acc) || (v) != (v)))
#define ROWS_ARGMAX(SUF, T)                                                                   \
    static PG_CPU_CLONES void argmax_rows_##SUF(const char *src, int64_t sR, int64_t R,       \
                                                int64_t m, int64_t s_in, char *dst,           \
                                                int64_t d_in)                                 \
    {                                                                                         \
        T acc[TILE];                                                                          \
        int64_t arg[TILE];                                                                    \
        for (int64_t j0 = 0; j0 < m; j0 += TILE) {                                            \
            int64_t w = min_i64(TILE, m - j0);                                                \
            for (int64_t j = 0; j < w; j++) {                                                 \
                acc[j] = *(const T *)(src + (j0 + j) * s_in);                                 \
                arg[j] = 0;                                                                   \
            }                                                                                 \
            for (int64_t r = 1; r < R; r++) {                                                 \
                const char *row = src + r * sR + j0 * s_in;                                   \
                if (s_in == (int64_t)sizeof(T)) {                                             \
                    const T *x = (const T *)row;                                              \
                    _Pragma("omp simd") for (int64_t j = 0; j < w; j++)                       \
                    {                                                                         \
                        bool take = ARGMAX_TAKE(x[j], acc[j]);                                \
                        acc[j] = take ? x[j] : acc[j];                                        \
                        arg[j] = take ? r : arg[j];                                           \
                    }                                                                         \
                } else {                                                                      \
                    for (int64_t j = 0; j < w; j++) {                                         \
                        T v = *(const T *)(row + j * s_in);                                   \
                        if (ARGMAX_TAKE(v, acc[j])) {                                         \
                            acc[j] = v;                                                       \
                            arg[j] = r;                                                       \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
            for (int64_t j = 0; j < w; j++)                                                   \
                *(int64_t *)(dst + (j0 + j) * d_in) = arg[j];                                 \
        }                                                                                     \
    }

#define REDUCE_KERNELS(SUF, T, SUM_ACC)          \
    RUN_SUM(SUF, T, SUM_ACC)                     \
    RUN_PICK(max_run_##SUF, T, PICK_MAX)         \
    RUN_PICK(min_run_##SUF, T, PICK_MIN)         \
    RUN_FIND(SUF, T)                             \
    ROWS_SUM(SUF, T, SUM_ACC)                    \
    ROWS_PICK(max_rows_##SUF, T, PICK_MAX)       \
    ROWS_PICK(min_rows_##SUF, T, PICK_MIN)       \
    ROWS_ARGMAX(SUF, T)

REDUCE_KERNELS(i64, int64_t, uint64_t)
REDUCE_KERNELS(f32, float, double)
REDUCE_KERNELS(f64, double, double)

/* One contiguous run of R elements into *out (int64 for argmax). */
typedef void (*run_fn)(int op, const char *src, int64_t R, char *out);
typedef void (*rows_fn)(const char *src, int64_t sR, int64_t R, int64_t m, int64_t s_in,
                        char *dst, int64_t d_in);

#define RUN_DISPATCH(SUF, T)                                                        \
    static void run_##SUF(int op, const char *src, int64_t R, char *out)            \
    {                                                                               \
        const T *a = (const T *)src;                                                \
        switch (op) {                                                               \
        case PG_RED_SUM: *(T *)out = (T)sum_run_##SUF(a, R); break;                 \
        case PG_RED_MAX: *(T *)out = max_run_##SUF(a, R); break;                    \
        case PG_RED_MIN: *(T *)out = min_run_##SUF(a, R); break;                    \
        default: *(int64_t *)out = find_##SUF(a, R, max_run_##SUF(a, R)); break;    \
        }                                                                           \
    }
RUN_DISPATCH(i64, int64_t)
RUN_DISPATCH(f32, float)
RUN_DISPATCH(f64, double)

static const run_fn run_table[3] = {run_i64, run_f32, run_f64};
static const rows_fn rows_table[PG_NUM_REDUCE][3] = {
    [PG_RED_SUM] = {sum_rows_i64, sum_rows_f32, sum_rows_f64},
    [PG_RED_MAX] = {max_rows_i64, max_rows_f32, max_rows_f64},
    [PG_RED_MIN] = {min_rows_i64, min_rows_f32, min_rows_f64},
    [PG_RED_ARGMAX] = {argmax_rows_i64, argmax_rows_f32, argmax_rows_f64},
};

pg_status pg_cpu_reduce(const pg_node *node)
{
    const pg_tensor *s = &node->src[0], *d = &node->dst;
    int axis = node->p.reduce.axis, op = node->subop;
    int slot = s->dtype == PG_INT64 ? 0 : s->dtype == PG_FLOAT32 ? 1 : s->dtype == PG_FLOAT64 ? 2 : -1;
    if (slot < 0) /* the generic layer reduces bool as int64 */
        return pg_error_set(PG_ERR_DTYPE, "%s: no CPU reduction for dtype %s", node->name,
                            pg_dtype_name((pg_dtype)s->dtype));
    if (pg_tensor_numel(d) == 0)
        return PG_OK;
    int64_t es = (int64_t)pg_dtype_size((pg_dtype)s->dtype);
    int64_t ds = (int64_t)pg_dtype_size((pg_dtype)d->dtype);
    int64_t R = s->shape[axis], sR = s->strides[axis] * es;
    if (R == 0 && op != PG_RED_SUM)
        return pg_error_set(PG_ERR_VALUE, "%s: cannot reduce over an empty axis", node->name);

    /* the other axes (size 1 dropped), byte strides in src and dst */
    int n = 0;
    int64_t shape[PG_MAX_DIMS], ss[PG_MAX_DIMS], dstr[PG_MAX_DIMS];
    for (int k = 0; k < s->ndim; k++) {
        if (k == axis || s->shape[k] == 1)
            continue;
        shape[n] = s->shape[k];
        ss[n] = s->strides[k] * es;
        dstr[n] = d->strides[k] * ds;
        n++;
    }
    /* Unit-stride reduced axis: a run per output. Otherwise the last other axis
     * is the row the tile kernel folds (unit stride in the contiguous case). */
    bool run = R <= 1 ? n == 0 : sR == es;
    int64_t m = 1, s_in = es, d_in = ds;
    if (!run && n > 0) {
        n--;
        m = shape[n];
        s_in = ss[n];
        d_in = dstr[n];
    }
    const char *sp = pg_tensor_data(s);
    char *dp = pg_tensor_data(d);
    int64_t idx[PG_MAX_DIMS] = {0};
    for (;;) {
        if (run)
            run_table[slot](op, sp, R, dp);
        else
            rows_table[op][slot](sp, sR, R, m, s_in, dp, d_in);
        int k = n - 1;
        for (; k >= 0; k--) { /* odometer over the remaining axes */
            sp += ss[k];
            dp += dstr[k];
            if (++idx[k] < shape[k])
                break;
            sp -= ss[k] * shape[k];
            dp -= dstr[k] * shape[k];
            idx[k] = 0;
        }
        if (k < 0)
            return PG_OK;
    }
}
