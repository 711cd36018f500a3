/* cpu_math_unary.c - the CPU kernels of the op table's unary math functions (the
 * trigonometric and hyperbolic functions and their inverses, log1p, expm1, log2,
 * log10, exp2, erf, erfc, erfinv, lgamma, digamma, logit, sinc, i0, ...: the rows
 * after isfinite in csrc/core/pg_ops.def), one UN_LOOP per (op, element type) and
 * the op's row of pg_cpu_math_unary, which pg_cpu_unary (cpu_unary.c) reads where its
 * own table has no kernel.
 *
 * The libm functions with a libmvec variant (sin ... erfc; cpu_vecmath.h declares
 * them) become vector calls in the AVX2 and AVX-512 variants, within 4 ulp. The
 * special functions glibc lacks (digamma, erfinv, I0, I1) are csrc/core/pg_special.h's,
 * computed in double for every element type, the same code the CUDA kernels run;
 * lgamma is glibc's lgamma_r (thread-safe: no global signgam). float16 and bfloat16
 * run the float32 loops (pg_cpu_half_loop_run). */
#include <math.h>
#include <stdint.h>

#include "../../core/pg_special.h"
#include "cpu_gelu.h"
#include "cpu_kernels.h"
#include "cpu_loops.h"

static inline float lgammar_f32(float x)
{
    int sign;
    return lgammaf_r(x, &sign);
}

static inline double lgammar_f64(double x)
{
    int sign;
    return lgamma_r(x, &sign);
}

/* -x log x: 0 at 0, -inf below 0, NaN stays NaN (PyTorch's special.entr) */
#define ENTR(T, F) (x > 0 ? -x * log##F(x) : x == 0 ? (T)0 : x < 0 ? -(T)INFINITY : x)

#define UN_MATH(T, SUF, F)                                                              \
    UN_LOOP(sin_##SUF, T, sin##F(x))                                                    \
    UN_LOOP(cos_##SUF, T, cos##F(x))                                                    \
    UN_LOOP(tan_##SUF, T, tan##F(x))                                                    \
    UN_LOOP(asin_##SUF, T, asin##F(x))                                                  \
    UN_LOOP(acos_##SUF, T, acos##F(x))                                                  \
    UN_LOOP(atan_##SUF, T, atan##F(x))                                                  \
    UN_LOOP(sinh_##SUF, T, sinh##F(x))                                                  \
    UN_LOOP(cosh_##SUF, T, cosh##F(x))                                                  \
    UN_LOOP(asinh_##SUF, T, asinh##F(x))                                                \
    UN_LOOP(acosh_##SUF, T, acosh##F(x))                                                \
    UN_LOOP(atanh_##SUF, T, atanh##F(x))                                                \
    UN_LOOP(log1p_##SUF, T, log1p##F(x))                                                \
    UN_LOOP(expm1_##SUF, T, expm1##F(x))                                                \
    UN_LOOP(log2_##SUF, T, log2##F(x))                                                  \
    UN_LOOP(log10_##SUF, T, log10##F(x))                                                \
    UN_LOOP(exp2_##SUF, T, exp2##F(x))                                                  \
    UN_LOOP(erf_##SUF, T, erf##F(x))                                                    \
    UN_LOOP(erfc_##SUF, T, erfc##F(x))                                                  \
    UN_LOOP(erfinv_##SUF, T, (T)pg_erfinv(x))                                           \
    UN_LOOP(lgamma_##SUF, T, lgammar_##SUF(x))                                           \
    UN_LOOP(digamma_##SUF, T, (T)pg_digamma(x))                                         \
    UN_LOOP(logit_##SUF, T, log##F(x / ((T)1 - x)))                                     \
    UN_LOOP(sinc_##SUF, T, x == 0 ? (T)1 : sin##F((T)PG_PI * x) / ((T)PG_PI * x))       \
    UN_LOOP(deg2rad_##SUF, T, x * (T)(PG_PI / 180))                                     \
    UN_LOOP(rad2deg_##SUF, T, x * (T)(180 / PG_PI))                                     \
    UN_LOOP(frac_##SUF, T, x - trunc##F(x))                                             \
    UN_LOOP(i0_##SUF, T, (T)pg_bessel_i_scaled(0, x, 0))                                \
    UN_LOOP(i0e_##SUF, T, (T)pg_bessel_i_scaled(0, x, 1))                               \
    UN_LOOP(i1_##SUF, T, (T)pg_bessel_i_scaled(1, x, 0))                                \
    UN_LOOP(i1e_##SUF, T, (T)pg_bessel_i_scaled(1, x, 1))                               \
    UN_LOOP(ndtr_##SUF, T, (T)0.5 * erfc##F(-x * (T)0.70710678118654752440))            \
    UN_LOOP(entr_##SUF, T, ENTR(T, F))                                                  \
    UN_LOOP(gelu_##SUF, T, pg_gelu_##SUF(x)) /* cpu_gelu.h */                          \
    UN_LOOP(gelu_tanh_##SUF, T,                                                         \
            (T)0.5 * x * ((T)1 + tanh##F((T)0.79788456080286535588 *                    \
                                         (x + (T)0.044715 * x * x * x))))                \
    UN_LOOP(square_##SUF, T, x * x)                                                     \
    UN_LOOP_TO(signbit_##SUF, T, pg_bool_t, signbit(x) != 0)                            \
    UN_LOOP_TO(isinf_##SUF, T, pg_bool_t, fabs##F(x) == (T)INFINITY)                    \
    UN_LOOP_TO(isposinf_##SUF, T, pg_bool_t, x == (T)INFINITY)                          \
    UN_LOOP_TO(isneginf_##SUF, T, pg_bool_t, x == -(T)INFINITY)
UN_MATH(float, f32, f)
UN_MATH(double, f64, )

UN_LOOP(bnot_b, pg_bool_t, !x)
UN_LOOP_TO(false_b, pg_bool_t, pg_bool_t, ((void)x, 0)) /* a bool is never infinite */
static const pg_cpu_loop_fn math_un_b[PG_NUM_UNARY] = {
    [PG_UN_BITWISE_NOT] = bnot_b, [PG_UN_SIGNBIT] = false_b, [PG_UN_ISINF] = false_b,
    [PG_UN_ISPOSINF] = false_b, [PG_UN_ISNEGINF] = false_b};

#define MATH_ROW(SUF)                                                                      \
    [PG_UN_SIN] = sin_##SUF, [PG_UN_COS] = cos_##SUF, [PG_UN_TAN] = tan_##SUF,             \
    [PG_UN_ASIN] = asin_##SUF, [PG_UN_ACOS] = acos_##SUF, [PG_UN_ATAN] = atan_##SUF,       \
    [PG_UN_SINH] = sinh_##SUF, [PG_UN_COSH] = cosh_##SUF, [PG_UN_ASINH] = asinh_##SUF,     \
    [PG_UN_ACOSH] = acosh_##SUF, [PG_UN_ATANH] = atanh_##SUF, [PG_UN_LOG1P] = log1p_##SUF, \
    [PG_UN_EXPM1] = expm1_##SUF, [PG_UN_LOG2] = log2_##SUF, [PG_UN_LOG10] = log10_##SUF,   \
    [PG_UN_EXP2] = exp2_##SUF, [PG_UN_ERF] = erf_##SUF, [PG_UN_ERFC] = erfc_##SUF,         \
    [PG_UN_ERFINV] = erfinv_##SUF, [PG_UN_LGAMMA] = lgamma_##SUF,                          \
    [PG_UN_DIGAMMA] = digamma_##SUF, [PG_UN_LOGIT] = logit_##SUF, [PG_UN_SINC] = sinc_##SUF, \
    [PG_UN_DEG2RAD] = deg2rad_##SUF, [PG_UN_RAD2DEG] = rad2deg_##SUF,                      \
    [PG_UN_FRAC] = frac_##SUF, [PG_UN_I0] = i0_##SUF, [PG_UN_I0E] = i0e_##SUF,             \
    [PG_UN_I1] = i1_##SUF, [PG_UN_I1E] = i1e_##SUF, [PG_UN_NDTR] = ndtr_##SUF,             \
    [PG_UN_ENTR] = entr_##SUF, [PG_UN_SQUARE] = square_##SUF,                              \
    [PG_UN_GELU] = gelu_##SUF, [PG_UN_GELU_TANH] = gelu_tanh_##SUF,                        \
    [PG_UN_SIGNBIT] = signbit_##SUF, [PG_UN_ISINF] = isinf_##SUF,                          \
    [PG_UN_ISPOSINF] = isposinf_##SUF, [PG_UN_ISNEGINF] = isneginf_##SUF
static const pg_cpu_loop_fn math_un_f32[PG_NUM_UNARY] = {MATH_ROW(f32)};
static const pg_cpu_loop_fn math_un_f64[PG_NUM_UNARY] = {MATH_ROW(f64)};

/* The integer dtypes, one body per row of PG_INT_DTYPES (square wraps in the calc type U;
 * an integer is never infinite). The FLOAT rows compute integers in float32. */
#define UN_MATH_INT(ID, name, size, T, kind, U, ...)                                      \
    UN_LOOP(bnot_##ID, T, (T)~x)                                                          \
    UN_LOOP(square_##ID, T, (T)((U)x * (U)x))                                             \
    UN_LOOP_TO(signbit_##ID, T, pg_bool_t, PG_INT_NEG(kind, x))                           \
    UN_LOOP_TO(false_##ID, T, pg_bool_t, ((void)x, 0))                                    \
    static const pg_cpu_loop_fn math_un_##ID[PG_NUM_UNARY] = {                            \
        [PG_UN_BITWISE_NOT] = bnot_##ID, [PG_UN_SQUARE] = square_##ID,                    \
        [PG_UN_SIGNBIT] = signbit_##ID, [PG_UN_ISINF] = false_##ID,                       \
        [PG_UN_ISPOSINF] = false_##ID, [PG_UN_ISNEGINF] = false_##ID};
PG_INT_DTYPES(UN_MATH_INT)

/* [dtype][subop]: NULL where the row's `in` column sends no such dtype (FLOAT rows compute
 * integers in float32; float16 and bfloat16 run the float32 row) */
#define UN_MATH_ENTRY(ID, ...) [PG_##ID] = math_un_##ID,
const pg_cpu_loop_fn *const pg_cpu_math_unary[PG_NUM_DTYPES] = {
    [PG_BOOL] = math_un_b, [PG_FLOAT32] = math_un_f32, [PG_FLOAT64] = math_un_f64,
    PG_INT_DTYPES(UN_MATH_ENTRY)};
