/* elementwise_unary.cu - UNARY: dst = f(src), same dtype and shape, N-d
 * strided. CPU twin: csrc/backends/cpu/cpu_elementwise.c (pg_cpu_unary).
 *
 * NEG ABS RELU on int64/float; EXP LOG SQRT TANH SIGMOID on float only;
 * NOT and ABS (identity) on bool. Formulas are the CPU's: relu(x) = x > 0 ? x : 0 (NaN stays NaN),
 * sigmoid(x) = 1 / (1 + exp(-x)); float32 uses the f-suffixed libm functions.
 * int64 NEG/ABS wrap (INT64_MIN stays INT64_MIN). float16/bfloat16 take the
 * float ops, computed in float32 and rounded once at the store.
 *
 * Launch shape: one thread per element, grid-stride loop (pg_cuda_grid),
 * CONTIG instantiation for contiguous iteration spaces. */
#include "pg_cuda_half.cuh"

template <int OP, typename T> constexpr bool pg_unary_supported()
{
    if (std::is_same<T, uint8_t>::value)
        return OP == PG_CUDA_UN_NOT || OP == PG_CUDA_UN_ABS;
    if (std::is_same<T, int64_t>::value)
        return OP == PG_CUDA_UN_NEG || OP == PG_CUDA_UN_ABS || OP == PG_CUDA_UN_RELU;
    return OP != PG_CUDA_UN_NOT;
}

/* The libm function of the element type: expf for float, exp for double. */
#define PG_FLOAT_FN(name, fn)                                    \
    template <typename T> __device__ __forceinline__ T name(T x) \
    {                                                            \
        if constexpr (std::is_same<T, float>::value)             \
            return fn##f(x);                                     \
        else                                                     \
            return fn(x);                                        \
    }
PG_FLOAT_FN(pg_exp, exp)
PG_FLOAT_FN(pg_log, log)
PG_FLOAT_FN(pg_sqrt, sqrt)
PG_FLOAT_FN(pg_tanh, tanh)
PG_FLOAT_FN(pg_fabs, fabs)
#undef PG_FLOAT_FN

template <int OP, typename T> __device__ __forceinline__ T pg_unary_apply(T x)
{
    constexpr bool i64 = std::is_same<T, int64_t>::value;
    if constexpr (OP == PG_CUDA_UN_NEG) {
        if constexpr (i64)
            return (T)(0ull - (uint64_t)x);
        else
            return -x;
    } else if constexpr (OP == PG_CUDA_UN_ABS) {
        if constexpr (i64)
            return x < 0 ? (T)(0ull - (uint64_t)x) : x;
        else if constexpr (std::is_same<T, uint8_t>::value)
            return x; /* abs of a bool is itself */
        else
            return pg_fabs(x);
    } else if constexpr (OP == PG_CUDA_UN_EXP) {
        return pg_exp(x);
    } else if constexpr (OP == PG_CUDA_UN_LOG) {
        return pg_log(x);
    } else if constexpr (OP == PG_CUDA_UN_SQRT) {
        return pg_sqrt(x);
    } else if constexpr (OP == PG_CUDA_UN_TANH) {
        return pg_tanh(x);
    } else if constexpr (OP == PG_CUDA_UN_SIGMOID) {
        return T(1) / (T(1) + pg_exp(-x));
    } else if constexpr (OP == PG_CUDA_UN_RELU) {
        return (x > 0 || x != x) ? x : T(0); /* NaN stays NaN, as NumPy and torch */
    } else {
        return x ? 0 : 1; /* NOT on bool */
    }
}

// dst: operand 0, src: operand 1 of it
template <int OP, typename T, bool CONTIG>
__global__ void pg_unary_kernel(pg_cuda_iter it, T *dst, const T *src)
{
    for (int64_t i = pg_thread_index(); i < it.numel; i += pg_thread_count()) {
        int64_t off[2] = {i, i};
        if constexpr (!CONTIG)
            pg_iter_offsets<2>(it, i, off);
        dst[off[0]] = pg_store<T>(pg_unary_apply<OP, pg_calc_t<T>>(pg_load(src[off[1]])));
    }
}

template <int OP, typename T>
static cudaError_t pg_unary_launch(const pg_cuda_ctx *ctx, void *dst, const void *src,
                                   const pg_cuda_iter *it)
{
    if constexpr (!pg_unary_supported<OP, T>()) {
        return cudaErrorInvalidValue; /* the generic layer never sends this */
    } else {
        unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
        if (pg_cuda_iter_contiguous(it))
            pg_unary_kernel<OP, T, true>
                <<<grid, PG_CUDA_BLOCK, 0, ctx->stream>>>(*it, (T *)dst, (const T *)src);
        else
            pg_unary_kernel<OP, T, false>
                <<<grid, PG_CUDA_BLOCK, 0, ctx->stream>>>(*it, (T *)dst, (const T *)src);
        return cudaGetLastError();
    }
}

extern "C" cudaError_t pg_kernel_unary(const pg_cuda_ctx *ctx, int op, int dtype, void *dst,
                                     const void *src, const pg_cuda_iter *it)
{
    if (it->numel == 0)
        return cudaSuccess;
    return pg_dispatch_dtype_all(dtype, [&](auto tag) {
        using T = decltype(tag);
        switch (op) {
#define PG_UNARY_CASE(OP) \
    case OP:              \
        return pg_unary_launch<OP, T>(ctx, dst, src, it);
            PG_UNARY_CASE(PG_CUDA_UN_NEG)
            PG_UNARY_CASE(PG_CUDA_UN_ABS)
            PG_UNARY_CASE(PG_CUDA_UN_EXP)
            PG_UNARY_CASE(PG_CUDA_UN_LOG)
            PG_UNARY_CASE(PG_CUDA_UN_SQRT)
            PG_UNARY_CASE(PG_CUDA_UN_TANH)
            PG_UNARY_CASE(PG_CUDA_UN_SIGMOID)
            PG_UNARY_CASE(PG_CUDA_UN_RELU)
            PG_UNARY_CASE(PG_CUDA_UN_NOT)
#undef PG_UNARY_CASE
        default:
            return cudaErrorInvalidValue;
        }
    });
}
