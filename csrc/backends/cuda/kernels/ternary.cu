/* ternary.cu - TERNARY: addcmul, addcdiv and lerp in one pass over N-d strided operands,
 * float32 and float64. CPU twin: csrc/backends/cpu/cpu_ternary.c (pg_cpu_ternary); both
 * take each row's formula from csrc/core/pg_subops.def: x + v*y*z, x + v*y/z, and PyTorch's
 * two-sided lerp (x + w(y - x) for |w| < 1/2, y - (y - x)(1 - w) beyond), w the number v or
 * the operand z.
 *
 * Launch shape: one thread per element, grid-stride loop (pg_cuda_grid), CONTIG
 * instantiation for contiguous iteration spaces. */
#include "pg_cuda_common.cuh"

/* PyTorch's two-sided lerp, as the TERNARY rows' formulas name it (pg_subops.def) */
#define PG_TERN_LERP(s, e, w) (((w) < T(0.5) && (w) > T(-0.5)) ? (s) + (w) * ((e) - (s)) \
                                                              : (e) - ((e) - (s)) * (T(1) - (w)))

/* one element function per TERNARY row, from its formula: x = a, y = b, z = c (or v, for a
 * two-operand row), v the value */
#define PG_SUBOP_TERNARY(ID, name, flags, nsrc, f)                                                 \
    struct pg_ternary_##ID {                                                                       \
        static constexpr int operands = nsrc;                                                      \
        template <typename T> __device__ __forceinline__ static T apply(T x, T y, T z, T v)        \
        {                                                                                          \
            (void)z;                                                                               \
            (void)v;                                                                               \
            return f;                                                                              \
        }                                                                                          \
    };
#include "pg_subops.def"

// dst, a, b, c: operands 0..3 of it (c absent for LERP)
template <typename OP, typename T, bool CONTIG>
__global__ void pg_ternary_kernel(pg_cuda_iter it, T *dst, const T *a, const T *b, const T *c,
                                  T v)
{
    for (int64_t i = pg_thread_index(); i < it.numel; i += pg_thread_count()) {
        int64_t off[4] = {i, i, i, i};
        if constexpr (!CONTIG)
            pg_iter_offsets<4>(it, i, off);
        T z = OP::operands == 3 ? c[off[3]] : v;
        dst[off[0]] = OP::template apply<T>(a[off[1]], b[off[2]], z, v);
    }
}

template <typename OP, typename T>
static cudaError_t pg_ternary_launch(const pg_cuda_ctx *ctx, void *dst, const void *a,
                                     const void *b, const void *c, double value,
                                     const pg_cuda_iter *it)
{
    unsigned grid = pg_cuda_grid(it->numel, PG_CUDA_BLOCK, ctx);
    const T *cc = c ? (const T *)c : (const T *)a; /* never read for LERP; a valid address */
    if (pg_cuda_iter_contiguous(it))
        pg_ternary_kernel<OP, T, true>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_ternary_kernel")>>>(
            *it, (T *)dst, (const T *)a, (const T *)b, cc, (T)value);
    else
        pg_ternary_kernel<OP, T, false>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_ternary_kernel")>>>(
            *it, (T *)dst, (const T *)a, (const T *)b, cc, (T)value);
    return cudaGetLastError();
}

typedef cudaError_t (*pg_ternary_launcher)(const pg_cuda_ctx *, void *, const void *,
                                           const void *, const void *, double,
                                           const pg_cuda_iter *);

/* each TERNARY row's launcher, by its code (csrc/core/pg_subops.def), for element type T */
template <typename T> static pg_ternary_launcher pg_ternary_for(int op)
{
    static const struct {
        int code;
        pg_ternary_launcher launch;
    } rows[] = {
#define PG_SUBOP_TERNARY(ID, ...) {PG_TERNARY_##ID, pg_ternary_launch<pg_ternary_##ID, T>},
#include "pg_subops.def"
    };
    for (const auto &r : rows)
        if (r.code == op)
            return r.launch;
    return nullptr;
}

extern "C" cudaError_t pg_kernel_ternary(const pg_cuda_ctx *ctx, int op, int dtype, void *dst,
                                         const void *a, const void *b, const void *c,
                                         double value, const pg_cuda_iter *it)
{
    if (it->numel == 0)
        return cudaSuccess;
    pg_ternary_launcher launch = dtype == PG_FLOAT32   ? pg_ternary_for<float>(op)
                                 : dtype == PG_FLOAT64 ? pg_ternary_for<double>(op)
                                                       : nullptr;
    if (!launch)
        return cudaErrorInvalidValue; /* the core sends float32 and float64 TERNARY rows only */
    return launch(ctx, dst, a, b, c, value, it);
}
