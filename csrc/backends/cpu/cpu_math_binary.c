/* cpu_math_binary.c - the CPU kernels of the op table's binary math functions
 * (atan2, hypot, fmod, remainder, floor_divide, copysign, xlogy, logaddexp, heaviside,
 * fmax, fmin, nextafter, zeta, and the GELU and ReLU gradients: the rows after ge in
 * csrc/core/pg_ops.def), one
 * BIN_LOOP per (op, element type) and the op's row of pg_cpu_math_binary, which
 * pg_cpu_binary (cpu_elementwise.c) reads where its own table has no kernel.
 *
 * Formulas are PyTorch's CPU ones: remainder takes the divisor's sign (Python's %),
 * floor_divide rounds the exact quotient (a - fmod(a, b)) / b to the floor, so
 * -7.0 // 2 is -4 and 7 // 0.0 is inf; logaddexp is max + log1p(exp(-|a - b|)) (and
 * inf where both are the same infinity). Integers never trap: a zero divisor gives 0
 * (the core refuses a zero number divisor; a tensor's zeros are the caller's) and
 * INT64_MIN // -1 wraps. atan2 and hypot have libmvec vector variants (cpu_vecmath.h);
 * zeta is csrc/core/pg_special.h's, the code the CUDA kernels run. */
#include <math.h>
#include <stdint.h>

#include "../../core/pg_special.h"
#include "cpu_gelu.h"
#include "cpu_kernels.h"
#include "cpu_loops.h"

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
 * PyTorch's formula (cpu_gelu.h: float32's erf as PyTorch's vector kernels approximate it,
 * sharing exp(-x^2 / 2) with phi); tanh form, with u = sqrt(2/pi) (x + 0.044715 x^3), t = tanh u,
 * e = exp(-2u) and s = (1 + t) / 2 = 1 / (1 + e): 0.5 (1 + t) + 0.5 x (1 - t^2) u' written
 * as s (1 + 2 x e s u'), u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2), so that neither 1 + t nor
 * 1 - t cancels (PyTorch's float32 form loses 1e-4 relative below x = -2). -2u is capped at
 * 80, where e s is 1 to float precision (e would overflow float32 near 89) */
#define GELU_GRAD(T, F)                                                                        \
    static inline T gelu_grad_##T(T x)                                                         \
    {                                                                                          \
        return _Generic(x, float: pg_gelu_grad_f32, default: pg_gelu_grad_f64)(x);           \
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
    BIN_LOOP(gelu_tanh_bwd_##SUF, T, T, x * gelu_tanh_grad_##T(y))                              \
    BIN_LOOP(relu_bwd_##SUF, T, T, y <= 0 ? (T)0 : x)
BIN_MATH(float, f32, f)
BIN_MATH(double, f64, )

BIN_LOOP(fmax_b, pg_bool_t, pg_bool_t, x | y)
BIN_LOOP(fmin_b, pg_bool_t, pg_bool_t, x & y)
static const pg_cpu_loop_fn math_bin_b[PG_NUM_BINARY] = {[PG_BIN_FMAX] = fmax_b,
                                                         [PG_BIN_FMIN] = fmin_b};

#define MATH_ROW(SUF)                                                                      \
    [PG_BIN_ATAN2] = atan2_##SUF, [PG_BIN_HYPOT] = hypot_##SUF, [PG_BIN_FMOD] = fmod_##SUF, \
    [PG_BIN_REMAINDER] = remainder_##SUF, [PG_BIN_FLOOR_DIVIDE] = floordiv_##SUF,          \
    [PG_BIN_COPYSIGN] = copysign_##SUF, [PG_BIN_XLOGY] = xlogy_##SUF,                      \
    [PG_BIN_XLOG1PY] = xlog1py_##SUF, [PG_BIN_LOGADDEXP] = logaddexp_##SUF,                \
    [PG_BIN_LOGADDEXP2] = logaddexp2_##SUF, [PG_BIN_HEAVISIDE] = heaviside_##SUF,          \
    [PG_BIN_FMAX] = fmax_##SUF, [PG_BIN_FMIN] = fmin_##SUF,                                \
    [PG_BIN_NEXTAFTER] = nextafter_##SUF, [PG_BIN_ZETA] = zeta_##SUF,                  \
    [PG_BIN_GELU_BWD] = gelu_bwd_##SUF, [PG_BIN_GELU_TANH_BWD] = gelu_tanh_bwd_##SUF,      \
    [PG_BIN_RELU_BWD] = relu_bwd_##SUF
static const pg_cpu_loop_fn math_bin_f32[PG_NUM_BINARY] = {MATH_ROW(f32)};
static const pg_cpu_loop_fn math_bin_f64[PG_NUM_BINARY] = {MATH_ROW(f64)};

/* The integer dtypes, one body per row of PG_INT_DTYPES: C's remainder and the floor
 * quotient defined for every divisor (a zero divisor gives 0; x // -1 and x % -1 never
 * trap: the quotient wraps in the calc type U, as INT_MIN // -1 does in PyTorch) */
#define BIN_MATH_INT(ID, name, size, T, kind, U, ...)                                      \
    static inline T cmod_##ID(T a, T b)                                                    \
    {                                                                                      \
        return (b == 0 || PG_INT_MINUS_ONE(kind, b)) ? (T)0 : (T)(a % b);                  \
    }                                                                                      \
    static inline T remainder_##ID##_(T a, T b)                                            \
    {                                                                                      \
        T r = cmod_##ID(a, b);                                                             \
        return (r != 0 && PG_INT_NEG(kind, r) != PG_INT_NEG(kind, b)) ? (T)(r + b) : r;    \
    }                                                                                      \
    static inline T floordiv_##ID##_(T a, T b)                                             \
    {                                                                                      \
        if (b == 0)                                                                        \
            return 0;                                                                      \
        if (PG_INT_MINUS_ONE(kind, b))                                                     \
            return (T)(0u - (U)a);                                                         \
        T q = (T)(a / b);                                                                  \
        return ((T)(a % b) != 0 && PG_INT_NEG(kind, a) != PG_INT_NEG(kind, b)) ? (T)(q - 1) \
                                                                                : q;       \
    }                                                                                      \
    BIN_LOOP(fmod_##ID, T, T, cmod_##ID(x, y))                                             \
    BIN_LOOP(remainder_##ID, T, T, remainder_##ID##_(x, y))                                \
    BIN_LOOP(floordiv_##ID, T, T, floordiv_##ID##_(x, y))                                  \
    BIN_LOOP(heaviside_##ID, T, T, x == 0 ? y : (T)(x > 0))                                \
    BIN_LOOP(fmax_##ID, T, T, x > y ? x : y)                                               \
    BIN_LOOP(fmin_##ID, T, T, x < y ? x : y)                                               \
    static const pg_cpu_loop_fn math_bin_##ID[PG_NUM_BINARY] = {                           \
        [PG_BIN_FMOD] = fmod_##ID, [PG_BIN_REMAINDER] = remainder_##ID,                    \
        [PG_BIN_FLOOR_DIVIDE] = floordiv_##ID, [PG_BIN_HEAVISIDE] = heaviside_##ID,        \
        [PG_BIN_FMAX] = fmax_##ID, [PG_BIN_FMIN] = fmin_##ID};
PG_INT_DTYPES(BIN_MATH_INT)

/* [dtype][subop]: NULL where the row's `in` column sends no such dtype */
#define BIN_MATH_ENTRY(ID, ...) [PG_##ID] = math_bin_##ID,
const pg_cpu_loop_fn *const pg_cpu_math_binary[PG_NUM_DTYPES] = {
    [PG_BOOL] = math_bin_b, [PG_FLOAT32] = math_bin_f32, [PG_FLOAT64] = math_bin_f64,
    PG_INT_DTYPES(BIN_MATH_ENTRY)};
