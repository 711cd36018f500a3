/* pg_math_unary.cuh - the device functions of the op table's unary math functions
 * (sin ... isneginf: the rows after isfinite in csrc/core/pg_ops.def).
 * elementwise_unary.cu's pg_unary_apply hands every op it does not compute itself to
 * pg_unary_apply_math; a row with a branch in neither fails to compile.
 * CPU twin: csrc/backends/cpu/cpu_math_unary.c, with the same formulas: float32 calls
 * the f-suffixed libm functions, the special functions (digamma, erfinv, the Bessel
 * functions) are csrc/core/pg_special.h's in double, the code the CPU runs.
 * T is the computed type: float (float16/bfloat16 widened), double, and for the ops
 * whose `in` column takes them int64 (square, signbit, the inf tests) and bool. */
#ifndef PG_MATH_UNARY_CUH
#define PG_MATH_UNARY_CUH

#include "pg_cuda_half.cuh"
#include "pg_special.h"

/* the libm function of the element type: sinf for float, sin for double; its other
 * arguments (atan2's, hypot's: pg_math_binary.cuh) are passed on as they are. The one
 * definition of this helper: elementwise_unary.cu and pg_math_binary.cuh use it too. */
#define PG_MATH_FN(name, fn)                                                        \
    template <typename T, typename... More> __device__ __forceinline__ T name(T x, More... more) \
    {                                                                               \
        if constexpr (std::is_same<T, float>::value)                                \
            return fn##f(x, more...);                                               \
        else                                                                        \
            return fn(x, more...);                                                  \
    }
PG_MATH_FN(pgm_sin, sin)
PG_MATH_FN(pgm_cos, cos)
PG_MATH_FN(pgm_tan, tan)
PG_MATH_FN(pgm_asin, asin)
PG_MATH_FN(pgm_acos, acos)
PG_MATH_FN(pgm_atan, atan)
PG_MATH_FN(pgm_sinh, sinh)
PG_MATH_FN(pgm_cosh, cosh)
PG_MATH_FN(pgm_asinh, asinh)
PG_MATH_FN(pgm_acosh, acosh)
PG_MATH_FN(pgm_atanh, atanh)
PG_MATH_FN(pgm_log1p, log1p)
PG_MATH_FN(pgm_expm1, expm1)
PG_MATH_FN(pgm_log2, log2)
PG_MATH_FN(pgm_log10, log10)
PG_MATH_FN(pgm_exp2, exp2)
PG_MATH_FN(pgm_erf, erf)
PG_MATH_FN(pgm_erfc, erfc)
PG_MATH_FN(pgm_lgamma, lgamma)
PG_MATH_FN(pgm_log, log)
PG_MATH_FN(pgm_trunc, trunc)
PG_MATH_FN(pgm_fabs, fabs)
PG_MATH_FN(pgm_exp, exp)
PG_MATH_FN(pgm_tanh, tanh)
PG_MATH_FN(pgm_sqrt, sqrt)

/* GELU's derivative, exact and tanh form (cpu_math_binary.c's formulas and why; the rows
 * gelu_backward and gelu_tanh_backward multiply it by g) */
template <typename T> __device__ __forceinline__ T pg_gelu_grad(T x)
{
    return T(0.5) * (T(1) + pgm_erf(x * T(0.70710678118654752440))) +
           x * pgm_exp(T(-0.5) * x * x) * T(0.39894228040143267794);
}
template <typename T> __device__ __forceinline__ T pg_gelu_tanh_grad(T x)
{
    const T beta = T(0.79788456080286535588), kappa = T(0.044715);
    T m2u = T(-2) * beta * (x + kappa * x * x * x);
    T e = pgm_exp(m2u < T(80) ? m2u : T(80)), s = T(1) / (T(1) + e); /* s = (1 + tanh u) / 2 */
    return s * (T(1) + T(2) * x * (e * s) * (beta * (T(1) + T(3) * kappa * x * x)));
}

template <typename T> __device__ __forceinline__ T pg_math_copysign1(T x)
{
    if constexpr (std::is_same<T, float>::value)
        return copysignf(1.0f, x);
    else
        return copysign(1.0, x);
}

template <int OP, typename T> __device__ __forceinline__ T pg_unary_apply_math(T x)
{
    constexpr bool flt = std::is_floating_point<T>::value;
    if constexpr (OP == PG_CUDA_UN_SIN) {
        return pgm_sin(x);
    } else if constexpr (OP == PG_CUDA_UN_COS) {
        return pgm_cos(x);
    } else if constexpr (OP == PG_CUDA_UN_TAN) {
        return pgm_tan(x);
    } else if constexpr (OP == PG_CUDA_UN_ASIN) {
        return pgm_asin(x);
    } else if constexpr (OP == PG_CUDA_UN_ACOS) {
        return pgm_acos(x);
    } else if constexpr (OP == PG_CUDA_UN_ATAN) {
        return pgm_atan(x);
    } else if constexpr (OP == PG_CUDA_UN_SINH) {
        return pgm_sinh(x);
    } else if constexpr (OP == PG_CUDA_UN_COSH) {
        return pgm_cosh(x);
    } else if constexpr (OP == PG_CUDA_UN_ASINH) {
        return pgm_asinh(x);
    } else if constexpr (OP == PG_CUDA_UN_ACOSH) {
        return pgm_acosh(x);
    } else if constexpr (OP == PG_CUDA_UN_ATANH) {
        return pgm_atanh(x);
    } else if constexpr (OP == PG_CUDA_UN_LOG1P) {
        return pgm_log1p(x);
    } else if constexpr (OP == PG_CUDA_UN_EXPM1) {
        return pgm_expm1(x);
    } else if constexpr (OP == PG_CUDA_UN_LOG2) {
        return pgm_log2(x);
    } else if constexpr (OP == PG_CUDA_UN_LOG10) {
        return pgm_log10(x);
    } else if constexpr (OP == PG_CUDA_UN_EXP2) {
        return pgm_exp2(x);
    } else if constexpr (OP == PG_CUDA_UN_ERF) {
        return pgm_erf(x);
    } else if constexpr (OP == PG_CUDA_UN_ERFC) {
        return pgm_erfc(x);
    } else if constexpr (OP == PG_CUDA_UN_ERFINV) {
        return T(pg_erfinv(double(x)));
    } else if constexpr (OP == PG_CUDA_UN_LGAMMA) {
        return pgm_lgamma(x);
    } else if constexpr (OP == PG_CUDA_UN_DIGAMMA) {
        return T(pg_digamma(double(x)));
    } else if constexpr (OP == PG_CUDA_UN_LOGIT) {
        return pgm_log(x / (T(1) - x));
    } else if constexpr (OP == PG_CUDA_UN_SINC) {
        return x == T(0) ? T(1) : pgm_sin(T(PG_PI) * x) / (T(PG_PI) * x);
    } else if constexpr (OP == PG_CUDA_UN_DEG2RAD) {
        return x * T(PG_PI / 180);
    } else if constexpr (OP == PG_CUDA_UN_RAD2DEG) {
        return x * T(180 / PG_PI);
    } else if constexpr (OP == PG_CUDA_UN_FRAC) {
        return x - pgm_trunc(x);
    } else if constexpr (OP == PG_CUDA_UN_I0) {
        return T(pg_bessel_i_scaled(0, double(x), 0));
    } else if constexpr (OP == PG_CUDA_UN_I0E) {
        return T(pg_bessel_i_scaled(0, double(x), 1));
    } else if constexpr (OP == PG_CUDA_UN_I1) {
        return T(pg_bessel_i_scaled(1, double(x), 0));
    } else if constexpr (OP == PG_CUDA_UN_I1E) {
        return T(pg_bessel_i_scaled(1, double(x), 1));
    } else if constexpr (OP == PG_CUDA_UN_NDTR) {
        return T(0.5) * pgm_erfc(-x * T(0.70710678118654752440));
    } else if constexpr (OP == PG_CUDA_UN_GELU) {
        return x * T(0.5) * (T(1) + pgm_erf(x * T(0.70710678118654752440)));
    } else if constexpr (OP == PG_CUDA_UN_GELU_TANH) {
        return T(0.5) * x * (T(1) + pgm_tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x)));
    } else if constexpr (OP == PG_CUDA_UN_ENTR) {
        return x > T(0) ? -x * pgm_log(x) : x == T(0) ? T(0) : x < T(0) ? -T(INFINITY) : x;
    } else if constexpr (OP == PG_CUDA_UN_BITWISE_NOT) {
        if constexpr (pg_is_int<T>)
            return T(~x);
        else
            return !x; /* a bool's bitwise not is its logical not */
    } else if constexpr (OP == PG_CUDA_UN_SQUARE) {
        if constexpr (pg_is_int<T>)
            return (T)((pg_uwide_t<T>)x * (pg_uwide_t<T>)x); /* wraps, as the CPU's */
        else
            return x * x;
    } else if constexpr (OP == PG_CUDA_UN_SIGNBIT) {
        if constexpr (flt) /* copysign carries the sign bit of -0.0 and of a NaN too */
            return T(pg_math_copysign1(x) < T(0) ? 1 : 0);
        else if constexpr (pg_is_int<T>)
            return T(pg_neg(x));
        else
            return T(0); /* a bool has no sign */
    } else if constexpr (OP == PG_CUDA_UN_ISINF || OP == PG_CUDA_UN_ISPOSINF ||
                         OP == PG_CUDA_UN_ISNEGINF) {
        if constexpr (!flt)
            return T(0); /* an integer is never infinite */
        else if constexpr (OP == PG_CUDA_UN_ISINF)
            return T(pgm_fabs(x) == T(INFINITY));
        else if constexpr (OP == PG_CUDA_UN_ISPOSINF)
            return T(x == T(INFINITY));
        else
            return T(x == -T(INFINITY));
    } else {
        static_assert(OP < 0, "a unary op of pg_ops.def has no CUDA kernel");
        return x;
    }
}

#endif
