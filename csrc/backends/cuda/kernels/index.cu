/* index.cu - the index family on CUDA (PG_OP_INDEX; node layouts in
 * csrc/core/pg_ops_index.h): moves along one axis by an index (gather, index_select,
 * scatter_, scatter_add_, index_copy_, index_add_), masked fill, cumulative sums and
 * products, a stable argsort and nonzero. CPU twin: csrc/backends/cpu/cpu_index.c.
 *
 * Moves: one thread per element of the iteration space (grid-stride), as the CPU walk:
 * operand P follows the coordinates, M follows them except on `axis`, where it takes the
 * index value; the adds use atomicAdd (float32, float64, int64; the generic layer widens
 * half dtypes), so duplicate indices add correctly, while duplicate plain writes keep
 * one of the values (PyTorch's scatter_ leaves that unspecified too). A bad index raises
 * the device's error flag (PG_CUDA_EFLAG_INDEX) and its element is skipped.
 * Cumulative ops, argsort and topk: one thread per line, sequential along it (argsort is a
 * stable insertion sort, topk a bounded one: right for every length, fast only for short
 * lines or small k). nonzero:
 * one thread, in order. These three are correct rather than fast. */
#include "pg_cuda_half.cuh"

__device__ __forceinline__ void pg_flag_bad_index(pg_cuda_eflags *e, int64_t index, int64_t axis,
                                                  int64_t size)
{
    if (e == NULL)
        return;
    if (atomicCAS(&e->claimed, 0u, 1u) == 0u) {
        e->a = index;
        e->b = axis;
        e->c = size;
        __threadfence_system();
    }
    atomicOr(&e->bits, (unsigned)PG_CUDA_EFLAG_INDEX);
}

template <typename T> __device__ __forceinline__ void pg_atomic_add(T *dst, T v)
{
    if constexpr (std::is_same<T, int64_t>::value)
        atomicAdd((unsigned long long *)dst, (unsigned long long)v);
    else
        atomicAdd(dst, v);
}

// P: the iteration space's operand; M: the one indexed on `axis` (see the file comment)
template <typename T>
__global__ void pg_index_move_kernel(pg_cuda_index_args a, pg_cuda_eflags *eflags)
{
    const bool read = (a.flags & PG_SUBF_READ) != 0, full = (a.flags & PG_SUBF_FULL) != 0;
    const bool add = (a.flags & PG_SUBF_ADD) != 0;
    T *P = (T *)a.p, *M = (T *)a.m;
    for (int64_t i = pg_thread_index(); i < a.numel; i += pg_thread_count()) {
        int64_t rest = i, offp = 0, offm = 0, along = 0;
        for (int d = a.ndim - 1; d >= 0; d--) {
            int64_t c = rest % a.shape[d];
            rest /= a.shape[d];
            offp += c * a.p_strides[d];
            if (d == a.axis)
                along = c;
            else
                offm += c * a.m_strides[d];
        }
        int64_t k = full ? a.idx[i] : a.idx[along];
        if (k < 0 || k >= a.bound) {
            pg_flag_bad_index(eflags, k, a.axis, a.bound);
            continue;
        }
        offm += k * a.m_strides[a.axis];
        if (read)
            P[offp] = M[offm];
        else if (add) {
            if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value ||
                          std::is_same<T, int64_t>::value)
                pg_atomic_add<T>(&M[offm], P[offp]);
        } else
            M[offm] = P[offp];
    }
}

// dst (P, strided) [mask (M, broadcast strides)] = *value
template <typename T> __global__ void pg_masked_fill_kernel(pg_cuda_index_args a)
{
    T *D = (T *)a.p;
    const uint8_t *mask = (const uint8_t *)a.m;
    const T v = *(const T *)a.value;
    for (int64_t i = pg_thread_index(); i < a.numel; i += pg_thread_count()) {
        int64_t rest = i, offd = 0, offm = 0;
        for (int d = a.ndim - 1; d >= 0; d--) {
            int64_t c = rest % a.shape[d];
            rest /= a.shape[d];
            offd += c * a.p_strides[d];
            offm += c * a.m_strides[d];
        }
        if (mask[offm])
            D[offd] = v;
    }
}

// src, dst (outer, len, inner) contiguous; one thread per (outer, inner) line
template <typename T, typename ACC> __global__ void pg_cumulate_kernel(pg_cuda_index_args a)
{
    const T *s = (const T *)a.src;
    T *o = (T *)a.dst;
    const bool prod = (a.flags & PG_SUBF_PROD) != 0;
    for (int64_t line = pg_thread_index(); line < a.outer * a.inner; line += pg_thread_count()) {
        int64_t base = (line / a.inner) * a.len * a.inner + line % a.inner;
        ACC acc = prod ? (ACC)1 : (ACC)0;
        for (int64_t i = 0; i < a.len; i++) {
            ACC v = (ACC)s[base + i * a.inner];
            acc = prod ? acc * v : acc + v;
            o[base + i * a.inner] = (T)acc;
        }
    }
}

// x before y in the sort (NaN largest; ties keep their order: the caller compares indices)
template <typename T> __device__ __forceinline__ int pg_sort_cmp(T x, T y)
{
    if constexpr (std::is_floating_point<T>::value) {
        bool nx = x != x, ny = y != y;
        if (nx || ny)
            return (int)nx - (int)ny;
    }
    return (x > y) - (x < y);
}

// stable insertion sort of each line's indices (dst int64) by the values of src
template <typename T> __global__ void pg_argsort_kernel(pg_cuda_index_args a)
{
    const T *s = (const T *)a.src;
    int64_t *o = (int64_t *)a.dst;
    for (int64_t line = pg_thread_index(); line < a.outer * a.inner; line += pg_thread_count()) {
        int64_t base = (line / a.inner) * a.len * a.inner + line % a.inner;
        for (int64_t i = 0; i < a.len; i++) {
            int64_t j = i;
            T v = s[base + i * a.inner];
            while (j > 0) {
                int64_t prev = o[base + (j - 1) * a.inner];
                int c = pg_sort_cmp<T>(s[base + prev * a.inner], v);
                if (a.flag ? c >= 0 : c <= 0)
                    break; /* equal keys stay in input order */
                o[base + j * a.inner] = prev;
                j--;
            }
            o[base + j * a.inner] = i;
        }
    }
}

// topk: per line the k = bound best positions, kept sorted in dst as they arrive; an
// element enters only when it sorts strictly before the worst kept (ties: input order)
template <typename T> __global__ void pg_topk_kernel(pg_cuda_index_args a)
{
    const T *s = (const T *)a.src;
    int64_t *o = (int64_t *)a.dst;
    const int64_t k = a.bound;
    for (int64_t line = pg_thread_index(); line < a.outer * a.inner; line += pg_thread_count()) {
        int64_t base = (line / a.inner) * a.len * a.inner + line % a.inner;
        int64_t obase = (line / a.inner) * k * a.inner + line % a.inner;
        int64_t m = 0;
        for (int64_t i = 0; i < a.len; i++) {
            T v = s[base + i * a.inner];
            if (m == k) {
                int c = pg_sort_cmp<T>(v, s[base + o[obase + (k - 1) * a.inner] * a.inner]);
                if (a.flag ? c <= 0 : c >= 0)
                    continue;
            }
            int64_t pos = m < k ? m : k - 1;
            while (pos > 0) {
                int64_t prev = o[obase + (pos - 1) * a.inner];
                int c = pg_sort_cmp<T>(v, s[base + prev * a.inner]);
                if (a.flag ? c <= 0 : c >= 0)
                    break;
                o[obase + pos * a.inner] = prev;
                pos--;
            }
            o[obase + pos * a.inner] = i;
            if (m < k)
                m++;
        }
    }
}

// one thread: the flat positions of the true elements; a count other than `bound` flags
__global__ void pg_nonzero_kernel(pg_cuda_index_args a, pg_cuda_eflags *eflags)
{
    if (pg_thread_index() != 0)
        return;
    const uint8_t *m = (const uint8_t *)a.src;
    int64_t *o = (int64_t *)a.dst, k = 0;
    for (int64_t i = 0; i < a.len; i++)
        if (m[i]) {
            if (k < a.bound)
                o[k] = i;
            k++;
        }
    if (k != a.bound)
        pg_flag_bad_index(eflags, k, 0, a.bound);
}

/* one launcher per family column of the INDEX rows (csrc/core/pg_subops.def) */
extern "C" cudaError_t pg_kernel_index_MOVE(const pg_cuda_ctx *ctx, const pg_cuda_index_args *a)
{
    if (a->numel == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(a->numel, PG_CUDA_BLOCK, ctx);
    return pg_dispatch_dtype_all(a->dtype, [&](auto tag) {
        using T = decltype(tag);
        pg_index_move_kernel<T>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_index_move_kernel")>>>(*a,
                                                                                   ctx->eflags);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t pg_kernel_index_MASKED_FILL(const pg_cuda_ctx *ctx,
                                                   const pg_cuda_index_args *a)
{
    if (a->numel == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(a->numel, PG_CUDA_BLOCK, ctx);
    return pg_dispatch_dtype_all(a->dtype, [&](auto tag) {
        using T = decltype(tag);
        pg_masked_fill_kernel<T>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_masked_fill_kernel")>>>(*a);
        return cudaGetLastError();
    });
}

/* the line kernels (one thread per line): float32, float64 and int64 (the generic layer
 * widens the other dtypes) */
template <typename F> static cudaError_t pg_index_lines(const pg_cuda_ctx *ctx,
                                                        const pg_cuda_index_args *a, F launch)
{
    int64_t lines = a->outer * a->inner;
    if (lines == 0 || a->len == 0)
        return cudaSuccess;
    unsigned grid = pg_cuda_grid(lines, PG_CUDA_BLOCK, ctx);
    if (a->dtype == PG_FLOAT32)
        launch(grid, float(), double());
    else if (a->dtype == PG_FLOAT64)
        launch(grid, double(), double());
    else if (a->dtype == PG_INT64)
        launch(grid, int64_t(), int64_t());
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}

extern "C" cudaError_t pg_kernel_index_CUMULATE(const pg_cuda_ctx *ctx,
                                                const pg_cuda_index_args *a)
{
    return pg_index_lines(ctx, a, [&](unsigned grid, auto t, auto acc) {
        pg_cumulate_kernel<decltype(t), decltype(acc)>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_cumulate_kernel")>>>(*a);
    });
}

extern "C" cudaError_t pg_kernel_index_ARGSORT(const pg_cuda_ctx *ctx, const pg_cuda_index_args *a)
{
    return pg_index_lines(ctx, a, [&](unsigned grid, auto t, auto) {
        pg_argsort_kernel<decltype(t)>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_argsort_kernel")>>>(*a);
    });
}

extern "C" cudaError_t pg_kernel_index_TOPK(const pg_cuda_ctx *ctx, const pg_cuda_index_args *a)
{
    if (a->bound == 0)
        return cudaSuccess;
    return pg_index_lines(ctx, a, [&](unsigned grid, auto t, auto) {
        pg_topk_kernel<decltype(t)>
            <<<grid, PG_CUDA_BLOCK, 0, pg_cuda_noted(ctx, "pg_topk_kernel")>>>(*a);
    });
}

extern "C" cudaError_t pg_kernel_index_NONZERO(const pg_cuda_ctx *ctx, const pg_cuda_index_args *a)
{
    pg_nonzero_kernel<<<1, 1, 0, pg_cuda_noted(ctx, "pg_nonzero_kernel")>>>(*a, ctx->eflags);
    return cudaGetLastError();
}
