/* elementwise_unary.cu - UNARY: dst = f(src), same dtype and shape, N-d
 * strided. CPU twin: csrc/backends/cpu/cpu_elementwise.c (pg_cpu_unary).
 *
 * One `if constexpr` branch per row of the op table (csrc/core/pg_ops.def);
 * which dtypes each op is instantiated for and whether it stores bool come from
 * the row's `in` and `out` columns (pg_cuda_ops.cuh), the case list from the
 * rows themselves: a row without a branch here or in pg_math_unary.cuh (the math
 * functions) fails to compile.
 * NEG ABS RELU on int64/float; EXP LOG SQRT TANH SIGMOID on float only;
 * NOT and ABS (identity) on bool. Formulas are the CPU's: relu(x) = x > 0 ? x : 0 (NaN stays NaN),
 * sigmoid(x) = 1 / (1 + exp(-x)); float32 uses the f-suffixed libm functions.
 * int64 NEG/ABS wrap (INT64_MIN stays INT64_MIN). float16/bfloat16 take the
 * float ops, computed in float32 and rounded once at the store.
 *
 * Launch shape: one thread per element, grid-stride loop (pg_cuda_grid),
 * CONTIG instantiation for contiguous iteration spaces. */
#include "pg_cuda_half.cuh"
#include "pg_cuda_ops.cuh"
#include "pg_math_unary.cuh"

/* Which (op, dtype) pairs the generic layer can send: the op table's `in` column. */
template <int OP, typename T> constexpr bool pg_unary_supported()
{
    return pg_cuda_takes<T>(pg_cuda_un_in[OP]);
}

/* The stored result: bool where the `out` column says BOOL, else T. */
template <int OP, typename T>
using pg_un_out_t = typename std::conditional<pg_cuda_un_out[OP] == PG_OUT_BOOL, bool, T>::type;


template <int OP, typename T> __device__ __forceinline__ T pg_unary_apply(T x)
{
    constexpr bool i64 = pg_is_int<T>; /* every integer dtype: negation wraps */
    if constexpr (OP == PG_CUDA_UN_NEG) {
        if constexpr (i64)
            return (T)(0u - (pg_uwide_t<T>)x);
        else
            return -x;
    } else if constexpr (OP == PG_CUDA_UN_ABS) {
        if constexpr (i64)
            return pg_neg(x) ? (T)(0u - (pg_uwide_t<T>)x) : x;
        else if constexpr (std::is_same<T, bool>::value)
            return x; /* abs of a bool is itself */
        else
            return pgm_fabs(x);
    } else if constexpr (OP == PG_CUDA_UN_EXP) {
        return pgm_exp(x);
    } else if constexpr (OP == PG_CUDA_UN_LOG) {
        return pgm_log(x);
    } else if constexpr (OP == PG_CUDA_UN_SQRT) {
        return pgm_sqrt(x);
    } else if constexpr (OP == PG_CUDA_UN_TANH) {
        return pgm_tanh(x);
    } else if constexpr (OP == PG_CUDA_UN_SIGMOID) {
        return T(1) / (T(1) + pgm_exp(-x));
    } else if constexpr (OP == PG_CUDA_UN_RELU) {
        return (x > 0 || x != x) ? x : T(0); /* NaN stays NaN, as NumPy and torch */
    } else if constexpr (OP == PG_CUDA_UN_NOT) {
        return !x; /* NOT on bool */
    } else if constexpr (OP == PG_CUDA_UN_SIGN) {
        if constexpr (std::is_same<T, bool>::value)
            return x; /* a bool is its own sign */
        else if constexpr (pg_is_int<T>)
            return T(int(x > T(0)) - int(pg_neg(x)));
        else
            return T((x > T(0)) - (x < T(0))); /* NaN: 0, as PyTorch */
    } else if constexpr (OP == PG_CUDA_UN_FLOOR || OP == PG_CUDA_UN_CEIL ||
                         OP == PG_CUDA_UN_ROUND || OP == PG_CUDA_UN_TRUNC) {
        if constexpr (!std::is_floating_point<T>::value)
            return x; /* an integer is its own floor */
        else if constexpr (OP == PG_CUDA_UN_FLOOR)
            return floor(x);
        else if constexpr (OP == PG_CUDA_UN_CEIL)
            return ceil(x);
        else if constexpr (OP == PG_CUDA_UN_ROUND)
            return rint(x); /* halves to even, as the CPU's nearbyint */
        else
            return trunc(x);
    } else if constexpr (OP == PG_CUDA_UN_RECIPROCAL) {
        return T(1) / x;
    } else if constexpr (OP == PG_CUDA_UN_RSQRT) {
        return T(1) / pgm_sqrt(x); /* not rsqrtf (approximate): the CPU's formula */
    } else if constexpr (OP == PG_CUDA_UN_ISNAN) {
        return T(x != x);
    } else if constexpr (OP == PG_CUDA_UN_ISFINITE) {
        if constexpr (std::is_floating_point<T>::value)
            return T(x - x == T(0)); /* inf - inf and NaN are NaN */
        else
            return T(1);
    } else {
        return pg_unary_apply_math<OP, T>(x); /* pg_math_unary.cuh */
    }
}

// dst: operand 0, src: operand 1 of it
template <int OP, typename T, bool CONTIG>
__global__ void pg_unary_kernel(pg_cuda_iter it, pg_un_out_t<OP, T> *dst, const T *src)
{
    for (int64_t i = pg_thread_index(); i < it.numel; i += pg_thread_count()) {
        int64_t off[2] = {i, i};
        if constexpr (!CONTIG)
            pg_iter_offsets<2>(it, i, off);
        auto r = pg_unary_apply<OP, pg_calc_t<T>>(pg_load(src[off[1]]));
        if constexpr (std::is_same<pg_un_out_t<OP, T>, T>::value)
            dst[off[0]] = pg_store<T>(r);
        else
            dst[off[0]] = bool(r); /* a bool result */
    }
}

/* the contiguous, aligned case: n elements as 16-byte packs (pg_pack), the tail element-wise,
 * no index arithmetic (elementwise_binary.cu says why) */
template <int OP, typename T, int V>
__global__ void pg_unary_vec_kernel(int64_t n, pg_un_out_t<OP, T> *dst, const T *src)
{
    using Out = pg_un_out_t<OP, T>;
    const int64_t packs = n / V;
    const pg_pack<T, V> *sp = reinterpret_cast<const pg_pack<T, V> *>(src);
    pg_pack<Out, V> *dp = reinterpret_cast<pg_pack<Out, V> *>(dst);
    for (int64_t p = pg_thread_index(); p < packs; p += pg_thread_count()) {
        pg_pack<T, V> x = sp[p];
        pg_pack<Out, V> r;
#pragma unroll
        for (int k = 0; k < V; k++) {
            auto o = pg_unary_apply<OP, pg_calc_t<T>>(pg_load(x.v[k]));
            if constexpr (std::is_same<Out, T>::value)
                r.v[k] = pg_store<T>(o);
            else
                r.v[k] = bool(o);
        }
        dp[p] = r;
    }
    for (int64_t i = packs * V + pg_thread_index(); i < n; i += pg_thread_count()) {
        auto o = pg_unary_apply<OP, pg_calc_t<T>>(pg_load(src[i]));
        if constexpr (std::is_same<Out, T>::value)
            dst[i] = pg_store<T>(o);
        else
            dst[i] = bool(o);
    }
}

template <int OP, typename T>
static cudaError_t pg_unary_launch(const pg_cuda_ctx *ctx, void *dst, const void *src,
                                   const pg_cuda_iter *it)
{
    if constexpr (!pg_unary_supported<OP, T>()) {
        return cudaErrorInvalidValue; /* the generic layer never sends this */
    } else {
        using Out = pg_un_out_t<OP, T>;
        constexpr int V = pg_vec_width<T>();
        if (pg_cuda_iter_contiguous(it) && pg_cuda_aligned(src, 16) &&
            pg_cuda_aligned(dst, V * sizeof(Out))) {
            unsigned grid = pg_cuda_grid((it->numel + V - 1) / V, PG_CUDA_BLOCK, ctx);
            pg_unary_vec_kernel<OP, T, V>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_unary_vec_kernel")>>>(
                    it->numel, (Out *)dst, (const T *)src);
            return cudaGetLastError();
        }
        /* views, unaligned offsets: the strided kernel */
        unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
        pg_unary_kernel<OP, T, false>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_unary_kernel")>>>(
                    *it, (Out *)dst, (const T *)src);
        return cudaGetLastError();
    }
}

extern "C" cudaError_t pg_kernel_unary(const pg_cuda_ctx *ctx, int op, int dtype, void *dst,
                                     const void *src, const pg_cuda_iter *it)
{
    if (it->numel == 0)
        return cudaSuccess;
    return pg_dispatch_dtype_every(dtype, [&](auto tag) {
        using T = decltype(tag);
        switch (op) {
#define PG_UNARY_CASE(OP) \
    case OP:              \
        return pg_unary_launch<OP, T>(ctx, dst, src, it);
#define PG_UNARY(ID, ...) PG_UNARY_CASE(PG_CUDA_UN_##ID) /* every row of the op table */
#include "pg_ops.def"
#undef PG_UNARY_CASE
        default:
            return cudaErrorInvalidValue;
        }
    });
}
