/* cpu_ternary.c - the TERNARY node on the CPU (pg_ops_ternary.c builds it): addcmul,
 * addcdiv and lerp in one pass over three operands, float32 and float64, one loop per
 * TERNARY row of pg_subops.def from its formula. A vector kernel where every operand is
 * unit-stride, a strided loop otherwise (broadcast operands, views). lerp is PyTorch's
 * two-sided form: start + w (end - start) for |w| < 1/2, end - (end - start)(1 - w)
 * beyond, exact at w = 1. */
#include <stdint.h>

#include "cpu_kernels.h"
#include "cpu_vecmath.h"

/* PyTorch's two-sided lerp, as the TERNARY rows' formulas name it (pg_subops.def) */
#define PG_TERN_LERP(s, e, w) ((w) < 0.5 && (w) > -0.5 ? (s) + (w) * ((e) - (s)) \
                                                     : (e) - ((e) - (s)) * (1 - (w)))

struct ternary_arg {
    double value;
};

/* A row's loop over its operands (x, y and, with three, z) and the number v: a vector
 * kernel where every operand is unit-stride, a strided loop otherwise. With two operands z
 * is v itself (lerp's number weight), the same in every element. */
#define TERNARY_LOOP(NAME, T, NSRC, EXPR)                                                  \
    PG_CPU_DISPATCH(void, NAME##_run,                                                      \
                    (int64_t n, T *o, const T *a, const T *b, const T *c, T v),            \
                    (n, o, a, b, c, v))                                                    \
    {                                                                                      \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                \
        {                                                                                  \
            T x = a[i], y = b[i], z = NSRC == 3 ? c[i] : v;                                \
            (void)z;                                                                       \
            o[i] = (T)(EXPR);                                                              \
        }                                                                                  \
    }                                                                                      \
    static void NAME(int64_t n, char **p, const int64_t *s, const void *arg)               \
    {                                                                                      \
        T v = (T)((const struct ternary_arg *)arg)->value;                                 \
        bool unit = s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T) &&         \
                    (NSRC == 2 || s[3] == sizeof(T));                                      \
        if (unit) {                                                                        \
            NAME##_run(n, (T *)p[0], (const T *)p[1], (const T *)p[2],                     \
                       NSRC == 3 ? (const T *)p[3] : (const T *)p[1], v);                  \
            return;                                                                        \
        }                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                  \
            T x = *(const T *)(p[1] + i * s[1]), y = *(const T *)(p[2] + i * s[2]);        \
            T z = NSRC == 3 ? *(const T *)(p[3] + i * s[3]) : v;                           \
            (void)z;                                                                       \
            *(T *)(p[0] + i * s[0]) = (T)(EXPR);                                           \
        }                                                                                  \
    }

/* x: src0, y: src1, z: src2 (absent for a two-operand row: then z is v); v: the value.
 * One loop per TERNARY row and element type, from its formula (pg_subops.def). */
#define PG_SUBOP_TERNARY(ID, name, flags, nsrc, f)                                         \
    TERNARY_LOOP(ID##_f32, float, nsrc, f)                                                 \
    TERNARY_LOOP(ID##_f64, double, nsrc, f)
#include "../../core/pg_subops.def"

pg_status pg_cpu_ternary(const pg_node *node)
{
    static const pg_cpu_loop_fn table[PG_NUM_SUBOPS][2] = {
#define PG_SUBOP_TERNARY(ID, ...) [PG_TERNARY_##ID] = {ID##_f32, ID##_f64},
#include "../../core/pg_subops.def"
    };
    int dt = node->dst.dtype, s = node->subop;
    if ((dt != PG_FLOAT32 && dt != PG_FLOAT64) || pg_subop_node(s) != PG_OP_TERNARY)
        return pg_error_set(PG_ERR_DTYPE, "%s: no CPU kernel for dtype %s", node->name,
                            pg_dtype_name((pg_dtype)dt));
    struct ternary_arg arg = {node->p.ternary.value};
    const pg_tensor *ops[4] = {&node->dst, &node->src[0], &node->src[1], &node->src[2]};
    pg_cpu_iterate(node->nsrc + 1, ops, NULL, table[s][dt == PG_FLOAT64], &arg);
    return PG_OK;
}
