/* pg_binary_more.cuh - the device functions of the binary ops added with the
 * op table (csrc/core/pg_ops.def): pow, the logical ops and the bitwise ops.
 * elementwise_binary.cu's pg_binary_apply hands every op it does not compute
 * itself to pg_binary_apply_more, which hands the math functions to
 * pg_math_binary.cuh; a row with a branch in none fails to compile. CPU twins:
 * csrc/backends/cpu/cpu_elementwise.c.
 *
 * pow computes a half operand in float32 (pg_load / pg_store) and returns the
 * storage type. Its element functions are csrc/core/pg_pow.h's, which the CPU kernels
 * run too: int64 ** int64 squares with wrapping (0 for a negative exponent unless the
 * base is 1 or -1, as PyTorch's tensor pow), and a whole-number power that is exact in
 * double is computed by squaring, so it is exact here as on the CPU (CUDA's pow is
 * off by an ulp or two: -2.9999999999999996 for (-3.0) ** 1.0 on the first H200 run).
 * The logical ops see bool operands only (the generic layer casts them), the
 * bitwise ones bool and the integers, the shifts the integers (PyTorch's: a count below
 * 0 or of the width or more gives 0 to the left, the sign to the right). */
#ifndef PG_BINARY_MORE_CUH
#define PG_BINARY_MORE_CUH

#include "pg_cuda_half.cuh"
#include "pg_math_binary.cuh"
#include "pg_pow.h" /* pg_ipow, pg_pow_f32/f64: the CPU's code too */

template <int OP, typename T> __device__ __forceinline__ T pg_binary_apply_more(T a, T b)
{
    if constexpr (OP == PG_CUDA_BIN_POW) {
        if constexpr (pg_is_int<T>)
            return T(pg_ipow(a, b)); /* wrapped: exact, wrapping commutes with products */
        else if constexpr (std::is_same<T, double>::value)
            return pg_pow_f64(a, b);
        else
            return pg_store<T>(pg_pow_f32(pg_load(a), pg_load(b)));
    } else if constexpr (OP == PG_CUDA_BIN_LOGICAL_AND || OP == PG_CUDA_BIN_BITWISE_AND) {
        return T(a & b);
    } else if constexpr (OP == PG_CUDA_BIN_LOGICAL_OR || OP == PG_CUDA_BIN_BITWISE_OR) {
        return T(a | b);
    } else if constexpr (OP == PG_CUDA_BIN_LOGICAL_XOR || OP == PG_CUDA_BIN_BITWISE_XOR) {
        return T(a ^ b);
    } else if constexpr (OP == PG_CUDA_BIN_BITWISE_LEFT_SHIFT) {
        constexpr T width = T(8 * sizeof(T));
        return (pg_neg(b) || b >= width) ? T(0) : T(pg_uwide_t<T>(a) << b);
    } else if constexpr (OP == PG_CUDA_BIN_BITWISE_RIGHT_SHIFT) {
        constexpr T width = T(8 * sizeof(T));
        return (pg_neg(b) || b >= width) ? T(pg_neg(a) ? -1 : 0) : T(a >> b);
    } else {
        return pg_binary_apply_math<OP, T>(a, b); /* pg_math_binary.cuh */
    }
}

#endif
