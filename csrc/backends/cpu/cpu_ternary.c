/* cpu_ternary.c - the TERNARY node on the CPU (pg_ops_ternary.c builds it): addcmul,
 * addcdiv and lerp in one pass over three operands, float32 and float64. A vector
 * kernel where every operand is unit-stride, a strided loop otherwise (broadcast
 * operands, views). lerp is PyTorch's two-sided form: start + w (end - start) for
 * |w| < 1/2, end - (end - start)(1 - w) beyond, exact at w = 1. */
#include <stdint.h>

#include "cpu_kernels.h"
#include "cpu_vecmath.h"

#define LERP(T, s, e, w) ((w) < (T)0.5 && (w) > (T)-0.5 ? (s) + (w) * ((e) - (s)) \
                                                    : (e) - ((e) - (s)) * ((T)1 - (w)))

struct ternary_arg {
    double value;
    int three;
};

/* Three operands (x, y, z) and the number v: a vector kernel where all are unit-stride */
#define TERNARY_LOOP(NAME, T, EXPR)                                                        \
    PG_CPU_DISPATCH(void, NAME##_run,                                                      \
                    (int64_t n, T *o, const T *a, const T *b, const T *c, T v),            \
                    (n, o, a, b, c, v))                                                    \
    {                                                                                      \
        (void)v; /* lerp's weight is z */                                                  \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                                \
        {                                                                                  \
            T x = a[i], y = b[i], z = c[i];                                                \
            o[i] = (EXPR);                                                                 \
        }                                                                                  \
    }                                                                                      \
    static void NAME(int64_t n, char **p, const int64_t *s, const void *arg)               \
    {                                                                                      \
        T v = (T)((const struct ternary_arg *)arg)->value;                                 \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T) &&                 \
            s[3] == sizeof(T)) {                                                           \
            NAME##_run(n, (T *)p[0], (const T *)p[1], (const T *)p[2], (const T *)p[3], v); \
            return;                                                                        \
        }                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                  \
            T x = *(const T *)(p[1] + i * s[1]), y = *(const T *)(p[2] + i * s[2]);        \
            T z = *(const T *)(p[3] + i * s[3]);                                           \
            *(T *)(p[0] + i * s[0]) = (EXPR);                                              \
        }                                                                                  \
    }

/* lerp with a number weight w: the side of PyTorch's formula is chosen once */
#define LERP_SCALAR_LOOP(NAME, T)                                                          \
    PG_CPU_DISPATCH(void, NAME##_run, (int64_t n, T *o, const T *a, const T *b, T w),      \
                    (n, o, a, b, w))                                                       \
    {                                                                                      \
        if (w < (T)0.5 && w > (T)-0.5) {                                                   \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = a[i] + w * (b[i] - a[i]); \
        } else {                                                                           \
            T u = (T)1 - w;                                                                \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = b[i] - (b[i] - a[i]) * u; \
        }                                                                                  \
    }                                                                                      \
    static void NAME(int64_t n, char **p, const int64_t *s, const void *arg)               \
    {                                                                                      \
        T w = (T)((const struct ternary_arg *)arg)->value;                                 \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {                 \
            NAME##_run(n, (T *)p[0], (const T *)p[1], (const T *)p[2], w);                 \
            return;                                                                        \
        }                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                  \
            T x = *(const T *)(p[1] + i * s[1]), y = *(const T *)(p[2] + i * s[2]);        \
            *(T *)(p[0] + i * s[0]) = LERP(T, x, y, w);                                    \
        }                                                                                  \
    }

/* x: src0, y: src1, z: src2 (lerp's weight tensor); v: the value */
#define TERNARY_ROWS(T, SUF)                                                               \
    TERNARY_LOOP(addcmul_##SUF, T, x + v * y * z)                                          \
    TERNARY_LOOP(addcdiv_##SUF, T, x + v * y / z)                                          \
    TERNARY_LOOP(lerpt_##SUF, T, LERP(T, x, y, z))                                         \
    LERP_SCALAR_LOOP(lerp_##SUF, T)
TERNARY_ROWS(float, f32)
TERNARY_ROWS(double, f64)

pg_status pg_cpu_ternary(const pg_node *node)
{
    static const pg_cpu_loop_fn table[4][2] = {
        [PG_TERNARY_ADDCMUL] = {addcmul_f32, addcmul_f64},
        [PG_TERNARY_ADDCDIV] = {addcdiv_f32, addcdiv_f64},
        [PG_TERNARY_LERP] = {lerp_f32, lerp_f64},
        [PG_TERNARY_LERP_TENSOR] = {lerpt_f32, lerpt_f64},
    };
    int dt = node->dst.dtype;
    if ((dt != PG_FLOAT32 && dt != PG_FLOAT64) || node->subop < 0 || node->subop > 3)
        return pg_error_set(PG_ERR_DTYPE, "%s: no CPU kernel for dtype %s", node->name,
                            pg_dtype_name((pg_dtype)dt));
    struct ternary_arg arg = {node->p.ternary.value, node->nsrc == 3};
    const pg_tensor *ops[4] = {&node->dst, &node->src[0], &node->src[1], &node->src[2]};
    pg_cpu_iterate(node->nsrc + 1, ops, NULL, table[node->subop][dt == PG_FLOAT64], &arg);
    return PG_OK;
}
