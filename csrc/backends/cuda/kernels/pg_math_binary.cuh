/* pg_math_binary.cuh - the device functions of the op table's binary math functions
 * (atan2 ... zeta: the rows after ge in csrc/core/pg_ops.def). pg_binary_more.cuh's
 * pg_binary_apply_more hands every op it does not compute itself to
 * pg_binary_apply_math; a row with a branch nowhere fails to compile.
 * CPU twin: csrc/backends/cpu/cpu_math_binary.c, with the same formulas (PyTorch's):
 * remainder takes the divisor's sign, floor_divide rounds (a - fmod(a, b)) / b to the
 * floor, integers never trap (a zero divisor gives 0, INT64_MIN // -1 wraps), zeta is
 * csrc/core/pg_special.h's. T is the computed type (float for float16/bfloat16). */
#ifndef PG_MATH_BINARY_CUH
#define PG_MATH_BINARY_CUH

#include "pg_cuda_half.cuh"
#include "pg_math_unary.cuh"
#include "pg_special.h"

PG_MATH_FN(pgm_atan2, atan2) /* pg_math_unary.cuh's helper, two arguments */
PG_MATH_FN(pgm_hypot, hypot)
PG_MATH_FN(pgm_fmod, fmod)
PG_MATH_FN(pgm_copysign, copysign)
PG_MATH_FN(pgm_nextafter, nextafter)

template <typename T> __device__ __forceinline__ T pgm_floor(T x)
{
    if constexpr (std::is_same<T, float>::value)
        return floorf(x);
    else
        return floor(x);
}

template <typename T> __device__ __forceinline__ T pgm_log1p_exp_neg(T d, bool base2)
{
    /* log1p(exp(-d)) (or log1p(2**-d) / ln 2) for d >= 0 */
    if constexpr (std::is_same<T, float>::value)
        return base2 ? log1pf(exp2f(-d)) * float(1 / 0.69314718055994530942) : log1pf(expf(-d));
    else
        return base2 ? log1p(exp2(-d)) * (1 / 0.69314718055994530942) : log1p(exp(-d));
}

template <int OP, typename T> __device__ __forceinline__ T pg_binary_apply_math(T a, T b)
{
    constexpr bool i64 = pg_is_int<T>; /* every integer dtype */
    if constexpr (OP == PG_CUDA_BIN_ATAN2) {
        return pgm_atan2(a, b);
    } else if constexpr (OP == PG_CUDA_BIN_HYPOT) {
        return pgm_hypot(a, b);
    } else if constexpr (OP == PG_CUDA_BIN_FMOD || OP == PG_CUDA_BIN_REMAINDER) {
        T mod;
        if constexpr (i64)
            mod = (b == 0 || pg_minus_one(b)) ? T(0) : T(a % b);
        else
            mod = pgm_fmod(a, b);
        if constexpr (OP == PG_CUDA_BIN_REMAINDER)
            return (mod != T(0) && pg_neg(b) != pg_neg(mod)) ? T(mod + b) : mod;
        else
            return mod;
    } else if constexpr (OP == PG_CUDA_BIN_FLOOR_DIVIDE) {
        if constexpr (i64) {
            if (b == 0)
                return 0;
            if (pg_minus_one(b))
                return (T)(0u - (pg_uwide_t<T>)a);
            T q = T(a / b);
            return (T(a % b) != 0 && pg_neg(a) != pg_neg(b)) ? T(q - 1) : q;
        } else {
            if (b == T(0))
                return a / b;
            T mod = pgm_fmod(a, b);
            T div = (a - mod) / b;
            if (mod != T(0) && (b < T(0)) != (mod < T(0)))
                div -= T(1);
            if (div == T(0))
                return pgm_copysign(T(0), a / b);
            T fl = pgm_floor(div);
            return div - fl > T(0.5) ? fl + T(1) : fl;
        }
    } else if constexpr (OP == PG_CUDA_BIN_COPYSIGN) {
        return pgm_copysign(a, b);
    } else if constexpr (OP == PG_CUDA_BIN_XLOGY || OP == PG_CUDA_BIN_XLOG1PY) {
        if (a == T(0) && b == b)
            return T(0);
        constexpr bool f32 = std::is_same<T, float>::value;
        if constexpr (OP == PG_CUDA_BIN_XLOGY && f32)
            return a * logf(b);
        else if constexpr (OP == PG_CUDA_BIN_XLOGY)
            return a * log(b);
        else if constexpr (f32)
            return a * log1pf(b);
        else
            return a * log1p(b);
    } else if constexpr (OP == PG_CUDA_BIN_LOGADDEXP || OP == PG_CUDA_BIN_LOGADDEXP2) {
        if (a == b && (a == T(INFINITY) || a == -T(INFINITY)))
            return a;
        T d = a - b;
        return (a > b ? a : b) +
               pgm_log1p_exp_neg(d < T(0) ? -d : d, OP == PG_CUDA_BIN_LOGADDEXP2);
    } else if constexpr (OP == PG_CUDA_BIN_HEAVISIDE) {
        return a == T(0) ? b : T(a > T(0));
    } else if constexpr (OP == PG_CUDA_BIN_FMAX || OP == PG_CUDA_BIN_FMIN) {
        constexpr bool mx = OP == PG_CUDA_BIN_FMAX;
        if constexpr (std::is_same<T, bool>::value)
            return mx ? (a || b) : (a && b);
        else if (a != a)
            return b;
        else if (b != b)
            return a;
        else
            return mx ? (a > b ? a : b) : (a < b ? a : b);
    } else if constexpr (OP == PG_CUDA_BIN_NEXTAFTER) {
        return pgm_nextafter(a, b);
    } else if constexpr (OP == PG_CUDA_BIN_ZETA) {
        return T(pg_zeta(double(a), double(b)));
    } else if constexpr (OP == PG_CUDA_BIN_GELU_BWD) {
        return a * pg_gelu_grad(b); /* pg_math_unary.cuh */
    } else if constexpr (OP == PG_CUDA_BIN_GELU_TANH_BWD) {
        return a * pg_gelu_tanh_grad(b);
    } else if constexpr (OP == PG_CUDA_BIN_RELU_BWD) {
        return b <= T(0) ? T(0) : a; /* PyTorch's threshold_backward(g, y, 0) */
    } else {
        static_assert(OP < 0, "a binary op of pg_ops.def has no CUDA kernel");
        return a;
    }
}

#endif
