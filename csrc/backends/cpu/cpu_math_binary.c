/* cpu_math_binary.c - the CPU kernels of the op table's binary math functions
 * (atan2, hypot, fmod, remainder, floor_divide, copysign, xlogy, logaddexp, heaviside,
 * fmax, fmin, nextafter, zeta: the rows after ge in csrc/core/pg_ops.def), one
 * BIN_LOOP per (op, element type) and the op's row of pg_cpu_math_binary, which
 * pg_cpu_binary (cpu_elementwise.c) reads where its own table has no kernel.
 *
 * Formulas are PyTorch's CPU ones: remainder takes the divisor's sign (Python's %),
 * floor_divide rounds the exact quotient (a - fmod(a, b)) / b to the floor, so
 * -7.0 // 2 is -4 and 7 // 0.0 is inf; logaddexp is max + log1p(exp(-|a - b|)) (and
 * inf where both are the same infinity). int64 never traps: a zero divisor gives 0
 * (the core refuses a zero number divisor; a tensor's zeros are the caller's) and
 * INT64_MIN // -1 wraps. atan2 and hypot have libmvec vector variants (cpu_vecmath.h);
 * zeta is csrc/core/pg_special.h's, the code the CUDA kernels run. */
#include <math.h>
#include <stdint.h>

#include "../../core/pg_special.h"
#include "cpu_kernels.h"
#include "cpu_loops.h"

/* int64 C remainder and floor quotient, defined for every divisor */
static inline int64_t cmod_i64(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }

static inline int64_t remainder_i64_(int64_t a, int64_t b)
{
    int64_t r = cmod_i64(a, b);
    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}

static inline int64_t floordiv_i64_(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    if (b == -1)
        return (int64_t)(0ull - (uint64_t)a);
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

#define FLOAT_DIVMOD(T, SUF, F)                                                          \
    static inline T remainder_##SUF##_(T a, T b)                                         \
    {                                                                                    \
        T mod = fmod##F(a, b);                                                           \
        return (mod != 0 && (b < 0) != (mod < 0)) ? mod + b : mod;                       \
    }                                                                                    \
    static inline T floordiv_##SUF##_(T a, T b)                                          \
    {                                                                                    \
        if (b == 0)                                                                      \
            return a / b;                                                                \
        T mod = fmod##F(a, b);                                                           \
        T div = (a - mod) / b;                                                           \
        if (mod != 0 && (b < 0) != (mod < 0))                                            \
            div -= 1;                                                                    \
        if (div == 0)                                                                    \
            return copysign##F((T)0, a / b);                                             \
        T fl = floor##F(div);                                                            \
        return div - fl > (T)0.5 ? fl + 1 : fl;                                          \
    }
FLOAT_DIVMOD(float, f32, f)
FLOAT_DIVMOD(double, f64, )

/* GELU's derivatives (the CUDA twin is pg_math_binary.cuh's): exact Phi(x) + x phi(x),
 * PyTorch's formula; tanh form, with u = sqrt(2/pi) (x + 0.044715 x^3), t = tanh u,
 * e = exp(-2u) and s = (1 + t) / 2 = 1 / (1 + e): 0.5 (1 + t) + 0.5 x (1 - t^2) u' written
 * as s (1 + 2 x e s u'), u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2), so that neither 1 + t nor
 * 1 - t cancels (PyTorch's float32 form loses 1e-4 relative below x = -2). -2u is capped at
 * 80, where e s is 1 to float precision (e would overflow float32 near 89) */
#define GELU_GRAD(T, F)                                                                        \
    static inline T gelu_grad_##T(T x)                                                         \
    {                                                                                          \
        return (T)0.5 * ((T)1 + erf##F(x * (T)0.70710678118654752440)) +                       \
               x * exp##F((T)-0.5 * x * x) * (T)0.39894228040143267794;                        \
    }                                                                                          \
    static inline T gelu_tanh_grad_##T(T x)                                                    \
    {                                                                                          \
        const T beta = (T)0.79788456080286535588, kappa = (T)0.044715;                         \
        T m2u = (T)-2 * beta * (x + kappa * x * x * x);                                        \
        T e = exp##F(m2u < (T)80 ? m2u : (T)80), s = (T)1 / ((T)1 + e);                          \
        return s * ((T)1 + (T)2 * x * (e * s) * (beta * ((T)1 + (T)3 * kappa * x * x)));     \
    }
GELU_GRAD(float, f)
GELU_GRAD(double, )

#define LN2 0.69314718055994530942
#define BIN_MATH(T, SUF, F)                                                                     \
    BIN_LOOP(atan2_##SUF, T, T, atan2##F(x, y))                                                 \
    BIN_LOOP(hypot_##SUF, T, T, hypot##F(x, y))                                                 \
    BIN_LOOP(fmod_##SUF, T, T, fmod##F(x, y))                                                   \
    BIN_LOOP(remainder_##SUF, T, T, remainder_##SUF##_(x, y))                                   \
    BIN_LOOP(floordiv_##SUF, T, T, floordiv_##SUF##_(x, y))                                     \
    BIN_LOOP(copysign_##SUF, T, T, copysign##F(x, y))                                           \
    BIN_LOOP(xlogy_##SUF, T, T, (x == 0 && y == y) ? (T)0 : x * log##F(y))                      \
    BIN_LOOP(xlog1py_##SUF, T, T, (x == 0 && y == y) ? (T)0 : x * log1p##F(y))                  \
    BIN_LOOP(logaddexp_##SUF, T, T,                                                             \
             (x == y && fabs##F(x) == (T)INFINITY) ? x                                          \
                 : (x > y ? x : y) + log1p##F(exp##F(-fabs##F(x - y))))                         \
    BIN_LOOP(logaddexp2_##SUF, T, T,                                                            \
             (x == y && fabs##F(x) == (T)INFINITY) ? x                                          \
                 : (x > y ? x : y) + log1p##F(exp2##F(-fabs##F(x - y))) * (T)(1 / LN2))         \
    BIN_LOOP(heaviside_##SUF, T, T, x == 0 ? y : (T)(x > 0))                                    \
    BIN_LOOP(fmax_##SUF, T, T, x != x ? y : (y != y ? x : (x > y ? x : y)))                     \
    BIN_LOOP(fmin_##SUF, T, T, x != x ? y : (y != y ? x : (x < y ? x : y)))                     \
    BIN_LOOP(nextafter_##SUF, T, T, nextafter##F(x, y))                                         \
    BIN_LOOP(zeta_##SUF, T, T, (T)pg_zeta(x, y))                                                \
    BIN_LOOP(gelu_bwd_##SUF, T, T, x * gelu_grad_##T(y))                                        \
    BIN_LOOP(gelu_tanh_bwd_##SUF, T, T, x * gelu_tanh_grad_##T(y))
BIN_MATH(float, f32, f)
BIN_MATH(double, f64, )

BIN_LOOP(fmod_i64, int64_t, int64_t, cmod_i64(x, y))
BIN_LOOP(remainder_i64, int64_t, int64_t, remainder_i64_(x, y))
BIN_LOOP(floordiv_i64, int64_t, int64_t, floordiv_i64_(x, y))
BIN_LOOP(heaviside_i64, int64_t, int64_t, x == 0 ? y : (int64_t)(x > 0))
BIN_LOOP(fmax_i64, int64_t, int64_t, x > y ? x : y)
BIN_LOOP(fmin_i64, int64_t, int64_t, x < y ? x : y)
BIN_LOOP(fmax_b, pg_bool_t, pg_bool_t, x | y)
BIN_LOOP(fmin_b, pg_bool_t, pg_bool_t, x & y)

#define FLOAT_ROW(NAME) {NULL, NULL, NAME##_f32, NAME##_f64}
#define NUM_ROW(NAME) {NULL, NAME##_i64, NAME##_f32, NAME##_f64}
/* [subop][dtype: bool, int64, float32, float64]: NULL where the row's `in` column sends
 * no such dtype */
const pg_cpu_loop_fn pg_cpu_math_binary[PG_NUM_BINARY][4] = {
    [PG_BIN_ATAN2] = FLOAT_ROW(atan2),
    [PG_BIN_HYPOT] = FLOAT_ROW(hypot),
    [PG_BIN_FMOD] = NUM_ROW(fmod),
    [PG_BIN_REMAINDER] = NUM_ROW(remainder),
    [PG_BIN_FLOOR_DIVIDE] = NUM_ROW(floordiv),
    [PG_BIN_COPYSIGN] = FLOAT_ROW(copysign),
    [PG_BIN_XLOGY] = FLOAT_ROW(xlogy),
    [PG_BIN_XLOG1PY] = FLOAT_ROW(xlog1py),
    [PG_BIN_LOGADDEXP] = FLOAT_ROW(logaddexp),
    [PG_BIN_LOGADDEXP2] = FLOAT_ROW(logaddexp2),
    [PG_BIN_HEAVISIDE] = NUM_ROW(heaviside),
    [PG_BIN_FMAX] = {fmax_b, fmax_i64, fmax_f32, fmax_f64},
    [PG_BIN_FMIN] = {fmin_b, fmin_i64, fmin_f32, fmin_f64},
    [PG_BIN_NEXTAFTER] = FLOAT_ROW(nextafter),
    [PG_BIN_ZETA] = FLOAT_ROW(zeta),
    [PG_BIN_GELU_BWD] = FLOAT_ROW(gelu_bwd),
    [PG_BIN_GELU_TANH_BWD] = FLOAT_ROW(gelu_tanh_bwd),
};
