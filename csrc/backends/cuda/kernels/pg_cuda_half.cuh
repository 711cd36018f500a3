/* pg_cuda_half.cuh - float16 (__half) and bfloat16 (__nv_bfloat16) in the
 * kernels: how an element is loaded, computed and stored, and the casts.
 *
 * The contract (csrc/core/pg_node.h): a half operand is loaded, widened to
 * float32 (exact), computed in float32 registers, and rounded to nearest-even
 * once, at the store. So every templated kernel computes in pg_calc_t<T>
 * (float for the two half types, T itself otherwise) and goes through
 * pg_load / pg_store; for float, double, int64 and bool these are the
 * identity and the generated code is unchanged.
 *
 * Rounding is bit-exact with the CPU (csrc/core/pg_half.h, which matches
 * NumPy's float16 and ml_dtypes.bfloat16): float32 -> half uses the
 * hardware's round-to-nearest-even conversions (which handle overflow to
 * inf and subnormals), with NaN made quiet keeping its top payload bits as
 * pg_half.h does (the intrinsics would give one canonical NaN); float64 and
 * int64 -> half round once, straight from the double, by pg_half.h's own
 * pg_double_to_small_float, compiled for the device (a float32 step first
 * would round twice). */
#ifndef PG_CUDA_HALF_CUH
#define PG_CUDA_HALF_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "pg_cuda_common.cuh"
#include "pg_half.h" /* pg_double_to_small_float, host and device */

template <typename T>
constexpr bool pg_is_half =
    std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value;

/* The type an element is computed in. */
template <typename T>
using pg_calc_t = typename std::conditional<pg_is_half<T>, float, T>::type;

/* (exponent bits, mantissa bits) of a half type */
template <typename T> struct pg_half_fmt;
template <> struct pg_half_fmt<__half> {
    static constexpr int ebits = 5, mbits = 10;
};
template <> struct pg_half_fmt<__nv_bfloat16> {
    static constexpr int ebits = 8, mbits = 7;
};

template <typename H> __device__ __forceinline__ H pg_half_from_bits(uint16_t bits)
{
    if constexpr (std::is_same<H, __half>::value)
        return __ushort_as_half(bits);
    else
        return __ushort_as_bfloat16(bits);
}

/* float32 -> half, nearest-even; a NaN keeps its sign and top payload bits, quiet. */
template <typename H> __device__ __forceinline__ H pg_half_from_float(float x)
{
    if (x != x) {
        constexpr int mbits = pg_half_fmt<H>::mbits, ebits = pg_half_fmt<H>::ebits;
        const uint32_t u = __float_as_uint(x);
        const uint32_t bits = ((u >> 31) << (ebits + mbits)) | (((1u << ebits) - 1) << mbits) |
                              (1u << (mbits - 1)) | ((u & 0x7fffffu) >> (23 - mbits));
        return pg_half_from_bits<H>((uint16_t)bits);
    }
    if constexpr (std::is_same<H, __half>::value)
        return __float2half_rn(x);
    else
        return __float2bfloat16_rn(x);
}

template <typename H> __device__ __forceinline__ H pg_half_from_double(double x)
{
    return pg_half_from_bits<H>(
        pg_double_to_small_float(x, pg_half_fmt<H>::ebits, pg_half_fmt<H>::mbits));
}

template <typename H> __device__ __forceinline__ float pg_half_to_float(H h)
{
    if constexpr (std::is_same<H, __half>::value)
        return __half2float(h);
    else
        return __bfloat162float(h);
}

/* An element as computed, and a computed value as stored. */
template <typename T> __device__ __forceinline__ pg_calc_t<T> pg_load(T v)
{
    if constexpr (pg_is_half<T>)
        return pg_half_to_float(v);
    else
        return v;
}
template <typename T> __device__ __forceinline__ T pg_store(pg_calc_t<T> v)
{
    if constexpr (pg_is_half<T>)
        return pg_half_from_float<T>(v);
    else
        return v;
}

/* The element cast of COPY (astype), any dtype to any dtype. Non-half pairs
 * are pg_cast's; a half source is widened first (exact); a half destination
 * rounds once from float32, float64 or int64 (through double, as the CPU). */
template <typename D, typename S> __device__ __forceinline__ D pg_convert(S s)
{
    if constexpr (pg_is_half<S>) {
        const float f = pg_half_to_float(s);
        if constexpr (pg_is_half<D>)
            return pg_half_from_float<D>(f);
        else
            return pg_cast<D, float>(f);
    } else if constexpr (pg_is_half<D>) {
        if constexpr (std::is_same<S, float>::value)
            return pg_half_from_float<D>(s);
        else if constexpr (std::is_same<S, bool>::value)
            return pg_half_from_float<D>(s ? 1.0f : 0.0f);
        else
            return pg_half_from_double<D>((double)s);
    } else {
        return pg_cast<D, S>(s);
    }
}

/* pg_dispatch_dtype with the two half types too: f(T()) for the storage type
 * of bool, int64, the floats and the halves (the kernels that never see a narrow integer:
 * the core widens those to int64 first for reductions, sorts and matmul). */
template <typename F> static cudaError_t pg_dispatch_dtype_all(int dtype, F &&f)
{
    switch (dtype) {
    case PG_FLOAT16:
        return f(__half());
    case PG_BFLOAT16:
        return f(__nv_bfloat16());
    default:
        return pg_dispatch_dtype(dtype, static_cast<F &&>(f));
    }
}

/* The CUDA element type of each row of the dtype table: its ctype column, but bool for
 * bool (the uint8 dtype is uint8_t) and the CUDA half types for the halves' bits. */
template <int DT, typename C> struct pg_cuda_elem {
    using type = C;
};
template <typename C> struct pg_cuda_elem<PG_BOOL, C> {
    using type = bool;
};
template <typename C> struct pg_cuda_elem<PG_FLOAT16, C> {
    using type = __half;
};
template <typename C> struct pg_cuda_elem<PG_BFLOAT16, C> {
    using type = __nv_bfloat16;
};

/* f(T()) for every real dtype of the table, the narrow integers too (int8, uint8, int16, int32:
 * the elementwise ops, casts, fills and the index family's moves); one case per row. */
template <typename F> static cudaError_t pg_dispatch_dtype_every(int dtype, F &&f)
{
    switch (dtype) {
#define PG_CUDA_DTYPE_CASE(ID, name, size, ctype, ...) \
    case PG_##ID:                                     \
        return f(typename pg_cuda_elem<PG_##ID, ctype>::type());
        PG_COMPUTED_DTYPES(PG_CUDA_DTYPE_CASE) /* complex: the core runs its real view; float8: cpu and sim only */
#undef PG_CUDA_DTYPE_CASE
    default:
        return cudaErrorInvalidValue;
    }
}

#endif
