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
    UN_LOOP(gelu_##SUF, T, x * (T)0.5 * ((T)1 + erf##F(x * (T)0.70710678118654752440)))  \
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

UN_LOOP(bnot_i64, int64_t, ~x)
UN_LOOP(bnot_b, pg_bool_t, !x)
UN_LOOP(square_i64, int64_t, (int64_t)((uint64_t)x * (uint64_t)x)) /* wraps, no UB */
UN_LOOP_TO(signbit_i64, int64_t, pg_bool_t, x < 0)
UN_LOOP_TO(false_i64, int64_t, pg_bool_t, ((void)x, 0)) /* an integer is never infinite */
UN_LOOP_TO(false_b, pg_bool_t, pg_bool_t, ((void)x, 0))

#define MATH_ROW(NAME) {NULL, NULL, NAME##_f32, NAME##_f64}
#define MATH_PRED(NAME) {false_b, false_i64, NAME##_f32, NAME##_f64}
/* [subop][dtype: bool, int64, float32, float64]: NULL where the row's `in` column sends
 * no such dtype (FLOAT rows compute integers in float32) */
const pg_cpu_loop_fn pg_cpu_math_unary[PG_NUM_UNARY][4] = {
    [PG_UN_SIN] = MATH_ROW(sin),
    [PG_UN_COS] = MATH_ROW(cos),
    [PG_UN_TAN] = MATH_ROW(tan),
    [PG_UN_ASIN] = MATH_ROW(asin),
    [PG_UN_ACOS] = MATH_ROW(acos),
    [PG_UN_ATAN] = MATH_ROW(atan),
    [PG_UN_SINH] = MATH_ROW(sinh),
    [PG_UN_COSH] = MATH_ROW(cosh),
    [PG_UN_ASINH] = MATH_ROW(asinh),
    [PG_UN_ACOSH] = MATH_ROW(acosh),
    [PG_UN_ATANH] = MATH_ROW(atanh),
    [PG_UN_LOG1P] = MATH_ROW(log1p),
    [PG_UN_EXPM1] = MATH_ROW(expm1),
    [PG_UN_LOG2] = MATH_ROW(log2),
    [PG_UN_LOG10] = MATH_ROW(log10),
    [PG_UN_EXP2] = MATH_ROW(exp2),
    [PG_UN_ERF] = MATH_ROW(erf),
    [PG_UN_ERFC] = MATH_ROW(erfc),
    [PG_UN_ERFINV] = MATH_ROW(erfinv),
    [PG_UN_LGAMMA] = MATH_ROW(lgamma),
    [PG_UN_DIGAMMA] = MATH_ROW(digamma),
    [PG_UN_LOGIT] = MATH_ROW(logit),
    [PG_UN_SINC] = MATH_ROW(sinc),
    [PG_UN_DEG2RAD] = MATH_ROW(deg2rad),
    [PG_UN_RAD2DEG] = MATH_ROW(rad2deg),
    [PG_UN_FRAC] = MATH_ROW(frac),
    [PG_UN_I0] = MATH_ROW(i0),
    [PG_UN_I0E] = MATH_ROW(i0e),
    [PG_UN_I1] = MATH_ROW(i1),
    [PG_UN_I1E] = MATH_ROW(i1e),
    [PG_UN_NDTR] = MATH_ROW(ndtr),
    [PG_UN_ENTR] = MATH_ROW(entr),
    [PG_UN_GELU] = MATH_ROW(gelu),
    [PG_UN_GELU_TANH] = MATH_ROW(gelu_tanh),
    [PG_UN_BITWISE_NOT] = {bnot_b, bnot_i64, NULL, NULL},
    [PG_UN_SQUARE] = {NULL, square_i64, square_f32, square_f64},
    [PG_UN_SIGNBIT] = {false_b, signbit_i64, signbit_f32, signbit_f64},
    [PG_UN_ISINF] = MATH_PRED(isinf),
    [PG_UN_ISPOSINF] = MATH_PRED(isposinf),
    [PG_UN_ISNEGINF] = MATH_PRED(isneginf),
};
