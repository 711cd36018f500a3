/* elementwise_binary.cu - BINARY: dst = a OP b over N-d strided tensors, or
 * a OP scalar / scalar OP a.
 * CPU twin: csrc/backends/cpu/cpu_elementwise.c (pg_cpu_binary).
 *
 * Sub-ops ADD SUB MUL DIV MAXIMUM MINIMUM (result in the operands' dtype)
 * and EQ NE LT LE GT GE (result bool). bool operands reach here
 * only for compares and MAXIMUM/MINIMUM (logical or/and); DIV only for
 * floats. MAXIMUM/MINIMUM propagate NaN like NumPy. Integers wrap on overflow
 * (computed in pg_uwide_t), every integer dtype of the table instantiated.
 * float16/bfloat16 elements are loaded into float32, computed there and
 * rounded once at the store (pg_cuda_half.cuh); their scalar is a float32.
 *
 * Launch shape: one thread per element, grid-stride loop (pg_cuda_grid);
 * the op is a template parameter so each kernel is a straight line. A contiguous
 * iteration space whose pointers are 16-byte aligned (every tensor the allocator gives,
 * and most views) takes the packed kernel: 16 bytes per load and store (float4's width)
 * and no index arithmetic, where the first H200 run's one-element accesses moved 2.9
 * TB/s against PyTorch's 4.1; the rest takes the strided kernel. */
#include "pg_cuda_half.cuh"
#include "pg_cuda_ops.cuh"
#include "pg_binary_more.cuh"
#include "pg_multi_tensor.cuh"

/* The stored result: bool (uint8 0/1) where the op table's `out` column says BOOL. */
template <int OP, typename T>
using pg_bin_out_t = typename std::conditional<pg_cuda_bin_out[OP] == PG_OUT_BOOL, bool, T>::type;

/* Which (op, dtype) pairs the generic layer can send: the op table's `in` column. */
template <int OP, typename T> constexpr bool pg_binary_supported()
{
    return pg_cuda_takes<T>(pg_cuda_bin_in[OP]);
}

template <int OP, typename T>
__device__ __forceinline__ pg_bin_out_t<OP, T> pg_binary_apply(T a, T b)
{
    constexpr bool wrap = pg_is_int<T>;
    using U = pg_uwide_t<T>;
    if constexpr (OP == PG_CUDA_BIN_ADD && wrap)
        return (T)((U)a + (U)b);
    else if constexpr (OP == PG_CUDA_BIN_ADD)
        return a + b;
    else if constexpr (OP == PG_CUDA_BIN_SUB && wrap)
        return (T)((U)a - (U)b);
    else if constexpr (OP == PG_CUDA_BIN_SUB)
        return a - b;
    else if constexpr (OP == PG_CUDA_BIN_MUL && wrap)
        return (T)((U)a * (U)b);
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
    else if constexpr (OP == PG_CUDA_BIN_GE)
        return a >= b;
    else
        return pg_binary_apply_more<OP, T>(a, b); /* pg_binary_more.cuh */
}

enum { PG_OPERAND_TENSOR = 0, PG_OPERAND_SCALAR_RIGHT = 1, PG_OPERAND_SCALAR_LEFT = 2 };

// dst, a, b: operands 0, 1, 2 of it; with a scalar, b is unused and the
// mode (uniform over the grid, so the branch costs nothing) says its side.
// The operands are loaded into the calc type (float32 for the halves), the
// op runs there (so NaN tests, division and the scalar are float32's) and the
// result is rounded once at the store; a compare stores its bool as it is.
template <int OP, typename T, bool CONTIG>
__global__ void pg_binary_kernel(pg_cuda_iter it, pg_bin_out_t<OP, T> *dst, const T *a,
                                 const T *b, pg_calc_t<T> scalar, int mode)
{
    using C = pg_calc_t<T>;
    for (int64_t i = pg_thread_index(); i < it.numel; i += pg_thread_count()) {
        int64_t off[3] = {i, i, i};
        if constexpr (!CONTIG)
            pg_iter_offsets<3>(it, i, off);
        C x = pg_load(a[off[1]]);
        C y = mode == PG_OPERAND_TENSOR ? pg_load(b[off[2]]) : scalar;
        pg_bin_out_t<OP, C> r = mode == PG_OPERAND_SCALAR_LEFT ? pg_binary_apply<OP, C>(y, x)
                                                               : pg_binary_apply<OP, C>(x, y);
        if constexpr (std::is_same<pg_bin_out_t<OP, C>, C>::value)
            dst[off[0]] = pg_store<T>(r);
        else
            dst[off[0]] = r;
    }
}

/* the contiguous, aligned case: n elements as packs of V (pg_pack), the tail element-wise */
template <int OP, typename T, int V>
__global__ void pg_binary_vec_kernel(int64_t n, pg_bin_out_t<OP, T> *dst, const T *a, const T *b,
                                     pg_calc_t<T> scalar, int mode)
{
    using C = pg_calc_t<T>;
    using Out = pg_bin_out_t<OP, T>;
    const int64_t packs = n / V;
    const pg_pack<T, V> *ap = reinterpret_cast<const pg_pack<T, V> *>(a);
    const pg_pack<T, V> *bp = reinterpret_cast<const pg_pack<T, V> *>(b);
    pg_pack<Out, V> *dp = reinterpret_cast<pg_pack<Out, V> *>(dst);
    for (int64_t p = pg_thread_index(); p < packs; p += pg_thread_count()) {
        pg_pack<T, V> x = ap[p], y = mode == PG_OPERAND_TENSOR ? bp[p] : x;
        pg_pack<Out, V> r;
#pragma unroll
        for (int k = 0; k < V; k++) {
            C xv = pg_load(x.v[k]), yv = mode == PG_OPERAND_TENSOR ? pg_load(y.v[k]) : scalar;
            auto o = mode == PG_OPERAND_SCALAR_LEFT ? pg_binary_apply<OP, C>(yv, xv)
                                                    : pg_binary_apply<OP, C>(xv, yv);
            if constexpr (std::is_same<Out, T>::value)
                r.v[k] = pg_store<T>(o);
            else
                r.v[k] = o;
        }
        dp[p] = r;
    }
    for (int64_t i = packs * V + pg_thread_index(); i < n; i += pg_thread_count()) {
        C xv = pg_load(a[i]), yv = mode == PG_OPERAND_TENSOR ? pg_load(b[i]) : scalar;
        auto o = mode == PG_OPERAND_SCALAR_LEFT ? pg_binary_apply<OP, C>(yv, xv)
                                                : pg_binary_apply<OP, C>(xv, yv);
        if constexpr (std::is_same<Out, T>::value)
            dst[i] = pg_store<T>(o);
        else
            dst[i] = o;
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
        constexpr int V = pg_vec_width<T>();
        if (pg_cuda_iter_contiguous(it) && pg_cuda_aligned(a, 16) &&
            (mode != PG_OPERAND_TENSOR || pg_cuda_aligned(b, 16)) &&
            pg_cuda_aligned(dst, V * sizeof(Out))) {
            unsigned grid = pg_cuda_grid((it->numel + V - 1) / V, PG_CUDA_BLOCK, ctx);
            pg_binary_vec_kernel<OP, T, V>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_binary_vec_kernel")>>>(
                    it->numel, (Out *)dst, (const T *)a, (const T *)b, scalar, mode);
            return cudaGetLastError();
        }
        /* views, broadcasts, unaligned offsets: the strided kernel */
        unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
        pg_binary_kernel<OP, T, false>
                <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_binary_kernel")>>>(
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
    return pg_dispatch_dtype_every(dtype, [&](auto tag) {
        using T = decltype(tag);
        switch (op) {
#define PG_BINARY_CASE(OP) \
    case OP:               \
        return pg_binary_launch<OP, T>(ctx, dst, a, b, scalar, it);
#define PG_BINARY(ID, ...) PG_BINARY_CASE(PG_CUDA_BIN_##ID) /* every row of the op table */
#include "pg_ops.def"
#undef PG_BINARY_CASE
        default:
            return cudaErrorInvalidValue;
        }
    });
}

/* ---- the list op: x_i = x_i OP s for every x_i of a MULTI node's list (torch._foreach_mul_
 * and friends; clip_grad_norm_'s scaling). Slots (pg_cuda_kernels.h): 0 x_i written, 1 x_i
 * read, 2 s, one element broadcast (its bcast bit). float32/float64, ops whose result has
 * the operands' dtype (the core refuses the others): the element is pg_binary_apply's, so a
 * list op equals the op on each tensor bit for bit. Table and blocks: pg_multi_tensor.cuh */

template <int OP, typename T>
__global__ void pg_multi_binary_kernel(pg_mt_table<3> tab)
{
    int64_t lo, hi;
    const int t = pg_mt_chunk(tab, &lo, &hi);
    T *dst = (T *)tab.ptr[0][t];
    const T *a = (const T *)tab.ptr[1][t], *b = (const T *)tab.ptr[2][t];
    const unsigned bcast = tab.bcast[t];
    for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x)
        dst[k] = pg_binary_apply<OP, T>(a[pg_mt_at(bcast, 1, k)], b[pg_mt_at(bcast, 2, k)]);
}

template <int OP, typename T>
static cudaError_t pg_multi_binary_launch(const pg_cuda_ctx *ctx, const pg_cuda_mt_entry *e,
                                          int count)
{
    if constexpr (!pg_binary_supported<OP, T>() || pg_cuda_bin_out[OP] != PG_OUT_SAME) {
        return cudaErrorInvalidValue; /* the core never sends this */
    } else {
        return pg_mt_apply<3>(e, count, [&](const pg_mt_table<3> &tab, int blocks,
                                            int64_t) -> cudaError_t {
            pg_multi_binary_kernel<OP, T>
                <<<blocks, PG_MT_THREADS, 0, pg_cuda_noted(ctx, "pg_multi_binary_kernel")>>>(tab);
            return cudaGetLastError();
        });
    }
}

extern "C" cudaError_t pg_kernel_multi_binary(PG_CUDA_MULTI_ARGS)
{
    (void)f;
    (void)i;
    return pg_dispatch_dtype(dtype, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        if constexpr (!std::is_floating_point<T>::value) {
            return cudaErrorInvalidValue;
        } else {
            switch (subop) {
#define PG_BINARY(ID, ...)                                                                         \
    case PG_CUDA_BIN_##ID:                                                                         \
        return pg_multi_binary_launch<PG_CUDA_BIN_##ID, T>(ctx, e, count);
#include "pg_ops.def"
            default:
                return cudaErrorInvalidValue;
            }
        }
    });
}
