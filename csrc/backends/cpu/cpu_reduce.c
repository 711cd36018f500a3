/* cpu_reduce.c - sum, max, min and argmax over one axis on the CPU.
 *
 * The generic layer hands us a contiguous src viewed as (outer, R, inner) and
 * a contiguous dst (outer, inner). Rows are walked in memory order, folding
 * each row of `inner` elements into a row of accumulators, so reducing the
 * first axis of a matrix streams through memory instead of striding down
 * columns. float32 sums accumulate in double. NaN wins max/min/argmax, as in
 * NumPy. */
#include <stdlib.h>

#include "cpu_kernels.h"

typedef uint8_t pg_bool_t;

#define REDUCE_IMPL(SUF, T, ACC)                                                              \
    static pg_status reduce_##SUF(int op, const T *src, void *dst, int64_t outer, int64_t R,  \
                                  int64_t inner)                                              \
    {                                                                                         \
        ACC *acc = malloc(sizeof(ACC) * (size_t)(inner ? inner : 1));                         \
        int64_t *arg = op == PG_RED_ARGMAX ? malloc(sizeof(int64_t) * (size_t)(inner ? inner : 1)) \
                                           : NULL;                                            \
        if (!acc || (op == PG_RED_ARGMAX && !arg)) {                                          \
            free(acc);                                                                        \
            free(arg);                                                                        \
            return pg_error_set(PG_ERR_NOMEM, "out of host memory in a reduction");           \
        }                                                                                     \
        for (int64_t o = 0; o < outer; o++) {                                                 \
            const T *base = src + o * R * inner;                                              \
            for (int64_t i = 0; i < inner; i++) {                                             \
                acc[i] = op == PG_RED_SUM ? (ACC)0 : (ACC)base[i];                            \
                if (arg)                                                                      \
                    arg[i] = 0;                                                               \
            }                                                                                 \
            for (int64_t r = op == PG_RED_SUM ? 0 : 1; r < R; r++) {                          \
                const T *row = base + r * inner;                                              \
                switch (op) {                                                                 \
                case PG_RED_SUM:                                                              \
                    for (int64_t i = 0; i < inner; i++)                                       \
                        acc[i] += (ACC)row[i];                                                \
                    break;                                                                    \
                case PG_RED_MAX:                                                              \
                    for (int64_t i = 0; i < inner; i++)                                       \
                        if (row[i] > acc[i] || row[i] != row[i])                              \
                            acc[i] = acc[i] != acc[i] ? acc[i] : (ACC)row[i];                 \
                    break;                                                                    \
                case PG_RED_MIN:                                                              \
                    for (int64_t i = 0; i < inner; i++)                                       \
                        if (row[i] < acc[i] || row[i] != row[i])                              \
                            acc[i] = acc[i] != acc[i] ? acc[i] : (ACC)row[i];                 \
                    break;                                                                    \
                default: /* argmax: strictly greater keeps the first; the first NaN sticks */ \
                    for (int64_t i = 0; i < inner; i++)                                       \
                        if (acc[i] == acc[i] && (row[i] > acc[i] || row[i] != row[i])) {      \
                            acc[i] = (ACC)row[i];                                             \
                            arg[i] = r;                                                       \
                        }                                                                     \
                    break;                                                                    \
                }                                                                             \
            }                                                                                 \
            if (arg) {                                                                        \
                int64_t *out = (int64_t *)dst + o * inner;                                    \
                for (int64_t i = 0; i < inner; i++)                                           \
                    out[i] = arg[i];                                                          \
            } else {                                                                          \
                T *out = (T *)dst + o * inner;                                                \
                for (int64_t i = 0; i < inner; i++)                                           \
                    out[i] = (T)acc[i];                                                       \
            }                                                                                 \
        }                                                                                     \
        free(acc);                                                                            \
        free(arg);                                                                            \
        return PG_OK;                                                                         \
    }

REDUCE_IMPL(i64, int64_t, int64_t)
REDUCE_IMPL(f32, float, double)
REDUCE_IMPL(f64, double, double)
REDUCE_IMPL(b, pg_bool_t, int64_t)

pg_status pg_cpu_reduce(const pg_node *node)
{
    const pg_tensor *s = &node->src[0];
    int axis = node->p.reduce.axis;
    int64_t outer = 1, inner = 1, R = s->shape[axis];
    for (int d = 0; d < axis; d++)
        outer *= s->shape[d];
    for (int d = axis + 1; d < s->ndim; d++)
        inner *= s->shape[d];
    if (outer == 0 || inner == 0)
        return PG_OK;
    const void *src = pg_tensor_data(s);
    void *dst = pg_tensor_data(&node->dst);
    switch (s->dtype) {
    case PG_INT64: return reduce_i64(node->subop, src, dst, outer, R, inner);
    case PG_FLOAT32: return reduce_f32(node->subop, src, dst, outer, R, inner);
    case PG_FLOAT64: return reduce_f64(node->subop, src, dst, outer, R, inner);
    default: return reduce_b(node->subop, src, dst, outer, R, inner);
    }
}
