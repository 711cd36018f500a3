/* elementwise_binary.cu - BINARY: dst = a OP b over N-d strided tensors, or
 * a OP scalar / scalar OP a.
 * CPU twin: csrc/backends/cpu/cpu_elementwise.c (pg_cpu_binary).
 *
 * Sub-ops ADD SUB MUL DIV MAXIMUM MINIMUM (result in the operands' dtype)
 * and EQ NE LT LE GT GE (result bool, uint8 0/1). bool operands reach here
 * only for compares and MAXIMUM/MINIMUM (logical or/and); DIV only for
 * floats. MAXIMUM/MINIMUM propagate NaN like NumPy. int64 wraps on overflow.
 * float16/bfloat16 elements are loaded into float32, computed there and
 * rounded once at the store (pg_cuda_half.cuh); their scalar is a float32.
 *
 * Launch shape: one thread per element, grid-stride loop (pg_cuda_grid);
 * the op is a template parameter so each kernel is a straight line, and a
 * contiguous iteration space takes the CONTIG instantiation. */
#include "pg_cuda_half.cuh"

template <int OP, typename T>
using pg_bin_out_t = typename std::conditional<(OP >= PG_CUDA_BIN_EQ), uint8_t, T>::type;

/* Which (op, dtype) pairs the generic layer can send. */
template <int OP, typename T> constexpr bool pg_binary_supported()
{
    if (std::is_same<T, uint8_t>::value)
        return OP >= PG_CUDA_BIN_MAXIMUM;
    if (std::is_same<T, int64_t>::value)
        return OP != PG_CUDA_BIN_DIV;
    return true;
}

template <int OP, typename T>
__device__ __forceinline__ pg_bin_out_t<OP, T> pg_binary_apply(T a, T b)
{
    constexpr bool wrap = std::is_same<T, int64_t>::value;
    if constexpr (OP == PG_CUDA_BIN_ADD && wrap)
        return (T)((uint64_t)a + (uint64_t)b);
    else if constexpr (OP == PG_CUDA_BIN_ADD)
        return a + b;
    else if constexpr (OP == PG_CUDA_BIN_SUB && wrap)
        return (T)((uint64_t)a - (uint64_t)b);
    else if constexpr (OP == PG_CUDA_BIN_SUB)
        return a - b;
    else if constexpr (OP == PG_CUDA_BIN_MUL && wrap)
        return (T)((uint64_t)a * (uint64_t)b);
    else if constexpr (OP == PG_CUDA_BIN_MUL)
        return a * b;
    else if constexpr (OP == PG_CUDA_BIN_DIV)
        return a / b;
    else if constexpr (OP == PG_CUDA_BIN_MAXIMUM)
        return pg_max_nan(a, b);
    else if constexpr (OP == PG_CUDA_BIN_MINIMUM)
        return pg_min_nan(a, b);
    else if constexpr (OP == PG_CUDA_BIN_EQ)
        return a == b;
    else if constexpr (OP == PG_CUDA_BIN_NE)
        return a != b;
    else if constexpr (OP == PG_CUDA_BIN_LT)
        return a < b;
    else if constexpr (OP == PG_CUDA_BIN_LE)
        return a <= b;
    else if constexpr (OP == PG_CUDA_BIN_GT)
        return a > b;
    else
        return a >= b;
}

enum { PG_OPERAND_TENSOR = 0, PG_OPERAND_SCALAR_RIGHT = 1, PG_OPERAND_SCALAR_LEFT = 2 };

// dst, a, b: operands 0, 1, 2 of it; with a scalar, b is unused and the
// mode (uniform over the grid, so the branch costs nothing) says its side.
template <int OP, typename T, bool CONTIG>
__global__ void pg_binary_kernel(pg_cuda_iter it, pg_bin_out_t<OP, T> *dst, const T *a,
                                 const T *b, T scalar, int mode)
{
    for (int64_t i = pg_thread_index(); i < it.numel; i += pg_thread_count()) {
        int64_t off[3] = {i, i, i};
        if constexpr (!CONTIG)
            pg_iter_offsets<3>(it, i, off);
        T x = a[off[1]];
        T y = mode == PG_OPERAND_TENSOR ? b[off[2]] : scalar;
        dst[off[0]] = mode == PG_OPERAND_SCALAR_LEFT ? pg_binary_apply<OP, T>(y, x)
                                                     : pg_binary_apply<OP, T>(x, y);
    }
}

template <int OP, typename T>
static cudaError_t pg_binary_launch(const pg_cuda_ctx *ctx, void *dst, const void *a,
                                    const void *b, const pg_cuda_scalar *s,
                                    const pg_cuda_iter *it)
{
    if constexpr (!pg_binary_supported<OP, T>()) {
        return cudaErrorInvalidValue; /* the generic layer never sends this */
    } else {
        using Out = pg_bin_out_t<OP, T>;
        using C = pg_calc_t<T>;
        C scalar = C(0);
        int mode = PG_OPERAND_TENSOR;
        if (b == NULL) {
            scalar = std::is_floating_point<C>::value ? (C)s->f : pg_cast<C, int64_t>(s->i);
            mode = s->left ? PG_OPERAND_SCALAR_LEFT : PG_OPERAND_SCALAR_RIGHT;
            b = a; /* never read in scalar mode; a valid address all the same */
        }
        unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
        if (pg_cuda_iter_contiguous(it))
            pg_binary_kernel<OP, T, true><<<grid, PG_CUDA_BLOCK, 0, ctx->stream>>>(
                *it, (Out *)dst, (const T *)a, (const T *)b, scalar, mode);
        else
            pg_binary_kernel<OP, T, false><<<grid, PG_CUDA_BLOCK, 0, ctx->stream>>>(
                *it, (Out *)dst, (const T *)a, (const T *)b, scalar, mode);
        return cudaGetLastError();
    }
}

extern "C" cudaError_t pg_kernel_binary(const pg_cuda_ctx *ctx, int op, int dtype, void *dst,
                                      const void *a, const void *b, const pg_cuda_scalar *scalar,
                                      const pg_cuda_iter *it)
{
    if (it->numel == 0)
        return cudaSuccess;
    return pg_dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        switch (op) {
#define PG_BINARY_CASE(OP) \
    case OP:               \
        return pg_binary_launch<OP, T>(ctx, dst, a, b, scalar, it);
            PG_BINARY_CASE(PG_CUDA_BIN_ADD)
            PG_BINARY_CASE(PG_CUDA_BIN_SUB)
            PG_BINARY_CASE(PG_CUDA_BIN_MUL)
            PG_BINARY_CASE(PG_CUDA_BIN_DIV)
            PG_BINARY_CASE(PG_CUDA_BIN_MAXIMUM)
            PG_BINARY_CASE(PG_CUDA_BIN_MINIMUM)
            PG_BINARY_CASE(PG_CUDA_BIN_EQ)
            PG_BINARY_CASE(PG_CUDA_BIN_NE)
            PG_BINARY_CASE(PG_CUDA_BIN_LT)
            PG_BINARY_CASE(PG_CUDA_BIN_LE)
            PG_BINARY_CASE(PG_CUDA_BIN_GT)
            PG_BINARY_CASE(PG_CUDA_BIN_GE)
#undef PG_BINARY_CASE
        default:
            return cudaErrorInvalidValue;
        }
    });
}

/* A launcher the plugin now links that this old file predates (the BINARY list of the
 * multi-tensor step, kernels/elementwise_binary.cu today): refused here, so that the
 * reverted build links; the harness's test runs only the half binary ops. */
extern "C" cudaError_t pg_kernel_multi_binary(PG_CUDA_MULTI_ARGS)
{
    (void)ctx, (void)subop, (void)dtype, (void)e, (void)count, (void)f, (void)i;
    return cudaErrorNotSupported;
}
