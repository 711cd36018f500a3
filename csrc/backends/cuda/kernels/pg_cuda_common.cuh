/* pg_cuda_common.cuh - device helpers every kernel file uses: the launch
 * shape of grid-stride loops, N-d strided offsets, NumPy-compatible casts and
 * NaN-propagating min/max, and the dtype -> C type dispatch.
 *
 * The element types: the dtype table's C types (csrc/core/pg_dtype.h), but PG_BOOL is
 * C++'s bool (one byte holding 0/1; the uint8 dtype is uint8_t). Integer arithmetic wraps
 * (done in pg_uwide_t, unsigned), which is what the CPU twins produce on every compiler
 * we use. PG_FLOAT16/PG_BFLOAT16 (__half, __nv_bfloat16), how they are computed and
 * cast, and the dispatches that include them and the narrow integers: pg_cuda_half.cuh. */
#ifndef PG_CUDA_COMMON_CUH
#define PG_CUDA_COMMON_CUH

#include <stdint.h>

#include <type_traits>

#include "pg_cuda_kernels.h"
#include "pg_dtype.h"

#define PG_CUDA_BLOCK 256

/* Launch shape of a 1-D grid-stride loop over n items with `block` threads:
 * one block per `block` items, capped at 8 blocks per SM (2048 resident
 * threads of 256) so a huge tensor is one full wave and each thread loops. */
static inline unsigned pg_cuda_grid(int64_t n, int block, const pg_cuda_ctx *ctx)
{
    int64_t blocks = (n + block - 1) / block;
    int64_t cap = (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 16) * (2048 / block);
    if (blocks > cap)
        blocks = cap;
    return (unsigned)(blocks > 0 ? blocks : 1);
}

/* V elements of T moved as one access: 16 bytes with V = pg_vec_width<T>() (float4's width
 * for float32, 8 halves, 2 doubles), the widest load and store a thread issues. */
template <typename T, int V> struct alignas(sizeof(T) * V) pg_pack {
    T v[V];
};
template <typename T> constexpr int pg_vec_width()
{
    return sizeof(T) >= 16 ? 1 : 16 / (int)sizeof(T);
}
/* whether p may be accessed as packs of `bytes` (NULL: an absent operand, no constraint) */
static inline bool pg_cuda_aligned(const void *p, size_t bytes)
{
    return p == NULL || ((uintptr_t)p % bytes) == 0;
}

__device__ __forceinline__ int64_t pg_thread_index()
{
    return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t pg_thread_count() { return (int64_t)gridDim.x * blockDim.x; }

/* Element offsets of C-order linear index i for each of NOPS operands. The
 * loop is unrolled over the fixed maximum so that shape/strides are read
 * straight from kernel-parameter space (no local-memory copy). A 64-bit
 * division is a long software sequence on the GPU: when the whole space has
 * fewer than 2^32 elements (it.numel, the same for every thread, so no
 * divergence) every index and extent fits in 32 bits and the 32-bit
 * hardware-assisted division is used instead. */
template <int NOPS>
__device__ __forceinline__ void pg_iter_offsets(const pg_cuda_iter &it, int64_t i,
                                                int64_t (&off)[NOPS])
{
#pragma unroll
    for (int op = 0; op < NOPS; op++)
        off[op] = 0;
    if (it.numel <= (int64_t)UINT32_MAX) {
        uint32_t u = (uint32_t)i;
#pragma unroll
        for (int d = PG_CUDA_MAX_DIMS - 1; d >= 0; d--) {
            if (d < it.ndim) {
                uint32_t ext = (uint32_t)it.shape[d];
                uint32_t q = u / ext;
                int64_t r = (int64_t)(u - q * ext);
                u = q;
#pragma unroll
                for (int op = 0; op < NOPS; op++)
                    off[op] += r * it.strides[op][d];
            }
        }
        return;
    }
#pragma unroll
    for (int d = PG_CUDA_MAX_DIMS - 1; d >= 0; d--) {
        if (d < it.ndim) {
            int64_t q = i / it.shape[d];
            int64_t r = i - q * it.shape[d];
            i = q;
#pragma unroll
            for (int op = 0; op < NOPS; op++)
                off[op] += r * it.strides[op][d];
        }
    }
}

/* a*b and a+b, rounded separately: nvcc never contracts these into an FMA.
 * The plugin is built with FMA contraction on (faster, often more accurate);
 * the kernels that must round like their CPU twins step after step (the
 * optimizers; arange uses __dmul_rn/__dadd_rn directly) say so here. */
__device__ __forceinline__ float pg_mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double pg_mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float pg_add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double pg_add_rn(double a, double b) { return __dadd_rn(a, b); }

/* an integer dtype (not bool): what wraps, shifts and divides as an integer */
template <typename T>
constexpr bool pg_is_int = std::is_integral<T>::value && !std::is_same<T, bool>::value;
/* the unsigned type integer arithmetic on T wraps in (at least unsigned int: no promotion
 * to a signed int whose overflow would be undefined) */
template <typename T>
using pg_uwide_t = typename std::conditional<sizeof(T) == 8, uint64_t, uint32_t>::type;
/* x < 0, compiled only for signed types (no always-false comparison of an unsigned) */
template <typename T> __host__ __device__ __forceinline__ bool pg_neg(T x)
{
    if constexpr (std::is_signed<T>::value)
        return x < T(0);
    else
        return false;
}
template <typename T> __host__ __device__ __forceinline__ bool pg_minus_one(T x)
{
    if constexpr (std::is_signed<T>::value)
        return x == T(-1);
    else
        return false;
}

template <typename T> __device__ __forceinline__ bool pg_isnan(T v)
{
    if constexpr (std::is_floating_point<T>::value)
        return v != v;
    else
        return false;
}

/* NumPy maximum/minimum: a NaN on either side wins. */
template <typename T> __device__ __forceinline__ T pg_max_nan(T a, T b)
{
    if (pg_isnan(a))
        return a;
    if (pg_isnan(b))
        return b;
    return a > b ? a : b;
}
template <typename T> __device__ __forceinline__ T pg_min_nan(T a, T b)
{
    if (pg_isnan(a))
        return a;
    if (pg_isnan(b))
        return b;
    return a < b ? a : b;
}

/* Casts as the CPU backend does them (csrc/backends/cpu/cpu_cast.c): to bool is x != 0
 * (NaN -> true); an integer to a narrower one wraps; a float to int64, uint8 or uint32 goes
 * through int64 and to int8, int16, int32 and uint16 through int32, truncating, with NaN and
 * out of range giving that type's minimum (x86's conversion) instead of the GPU's saturation,
 * then wraps: (int8) 200.0 is -56, as torch's CPU cast; to uint64 is x86's unsigned
 * conversion (a negative value in [-2**63, 0) wraps, 2**64 and above give 0, NaN 2**63). */
template <typename D, typename S> __host__ __device__ __forceinline__ D pg_cast(S s)
{
    if constexpr (std::is_same<D, bool>::value) {
        return s != S(0);
    } else if constexpr (pg_is_int<D> && std::is_floating_point<S>::value) {
        const double d = (double)s; /* exact */
        if constexpr (sizeof(D) == 8 && std::is_unsigned<D>::value) {
            if (d >= 0 && d < 18446744073709551616.0)
                return (D)d;
            if (d < 0 && d >= -9223372036854775808.0)
                return (D)(int64_t)d;
            return d >= 18446744073709551616.0 ? (D)0 : (D)(1ull << 63);
        } else if constexpr (sizeof(D) == 8 || (std::is_unsigned<D>::value && sizeof(D) != 2)) {
            return (D)((d >= -9223372036854775808.0 && d < 9223372036854775808.0) ? (int64_t)d
                                                                                 : INT64_MIN);
        } else {
            return (D)((d > -2147483649.0 && d < 2147483648.0) ? (int32_t)d : INT32_MIN);
        }
    } else {
        return static_cast<D>(s);
    }
}

/* Calls f(T()) with T the C type of `dtype`; an unknown code is an internal
 * error reported as cudaErrorInvalidValue. */
template <typename F> static cudaError_t pg_dispatch_dtype(int dtype, F &&f)
{
    switch (dtype) {
    case PG_BOOL:
        return f(bool());
    case PG_INT64:
        return f(int64_t());
    case PG_FLOAT32:
        return f(float());
    case PG_FLOAT64:
        return f(double());
    default:
        return cudaErrorInvalidValue;
    }
}

#endif
