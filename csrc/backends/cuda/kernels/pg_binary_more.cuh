/* pg_binary_more.cuh - the device functions of the binary ops added with the
 * op table (csrc/core/pg_ops.def): pow, the logical ops and the bitwise ops.
 * elementwise_binary.cu's pg_binary_apply hands every op it does not compute
 * itself to pg_binary_apply_more, which hands the math functions to
 * pg_math_binary.cuh; a row with a branch in none fails to compile. CPU twins: csrc/backends/cpu/cpu_elementwise.c.
 *
 * pow computes a half operand in float32 (pg_load / pg_store) and returns the
 * storage type; int64 ** int64 squares with wrapping and gives 0 for a negative
 * exponent unless the base is 1 or -1, as the CPU (and PyTorch's tensor pow).
 * The logical ops see bool operands only (the generic layer casts them), the
 * bitwise ones bool and int64. */
#ifndef PG_BINARY_MORE_CUH
#define PG_BINARY_MORE_CUH

#include "pg_cuda_half.cuh"
#include "pg_math_binary.cuh"

__device__ __forceinline__ int64_t pg_ipow(int64_t x, int64_t y)
{
    if (y < 0)
        return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x;
    for (; y; y >>= 1, b *= b)
        if (y & 1)
            r *= b;
    return (int64_t)r;
}

template <int OP, typename T> __device__ __forceinline__ T pg_binary_apply_more(T a, T b)
{
    if constexpr (OP == PG_CUDA_BIN_POW) {
        if constexpr (std::is_same<T, int64_t>::value)
            return pg_ipow(a, b);
        else
            return pg_store<T>(pow(pg_load(a), pg_load(b)));
    } else if constexpr (OP == PG_CUDA_BIN_LOGICAL_AND || OP == PG_CUDA_BIN_BITWISE_AND) {
        return T(a & b);
    } else if constexpr (OP == PG_CUDA_BIN_LOGICAL_OR || OP == PG_CUDA_BIN_BITWISE_OR) {
        return T(a | b);
    } else if constexpr (OP == PG_CUDA_BIN_LOGICAL_XOR || OP == PG_CUDA_BIN_BITWISE_XOR) {
        return T(a ^ b);
    } else {
        return pg_binary_apply_math<OP, T>(a, b); /* pg_math_binary.cuh */
    }
}

#endif
