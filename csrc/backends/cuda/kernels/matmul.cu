/* matmul.cu - MATMUL: c(B,M,N) = a(B,M,K) @ b(B,K,N), c contiguous.
 * CPU twin: csrc/backends/cpu/cpu_matmul.c (pg_cpu_matmul).
 *
 * float32/float64 go to cuBLAS (Sgemm/DgemmStridedBatched) whenever each
 * operand is, per matrix, row-major or column-major with a usable leading
 * dimension; batch strides may be 0 (broadcast). cuBLAS is column-major, so
 * the row-major product is computed as its transpose: C^T = B^T A^T, i.e.
 * cuBLAS's A is our b and its B is our a, with m = N, n = M. TF32 is used
 * only when the user opted in (allow_tf32), else CUBLAS_DEFAULT_MATH keeps
 * full fp32. int64 (wrapping, exact like the CPU) and any layout or size
 * cuBLAS cannot take go to a shared-memory tiled kernel. */
#include <limits.h>

#include "pg_cuda_common.cuh"

#define PG_MM_TILE 16

/* One 16x16 tile of c per block (threads (x: column, y: row)); blocks
 * grid-stride over column tiles (x), row tiles (y, <= 65535) and batch
 * (z, <= 65535). Each step stages a 16x16 tile of a and of b in shared
 * memory; strides are arbitrary. */
template <typename T>
__global__ void pg_matmul_tiled_kernel(pg_cuda_matmul_args p)
{
    using Acc = typename std::conditional<std::is_same<T, int64_t>::value, uint64_t, T>::type;
    __shared__ T ta[PG_MM_TILE][PG_MM_TILE];
    __shared__ T tb[PG_MM_TILE][PG_MM_TILE + 1];
    const T *a = (const T *)p.a, *b = (const T *)p.b;
    T *c = (T *)p.c;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t tiles_m = (p.m + PG_MM_TILE - 1) / PG_MM_TILE;
    const int64_t tiles_n = (p.n + PG_MM_TILE - 1) / PG_MM_TILE;
    for (int64_t bi = blockIdx.z; bi < p.batch; bi += gridDim.z)
        for (int64_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y)
            for (int64_t tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) {
                const int64_t row = tm * PG_MM_TILE + ty, col = tn * PG_MM_TILE + tx;
                const T *ab = a + bi * p.a_strides[0];
                const T *bb = b + bi * p.b_strides[0];
                Acc acc = 0;
                for (int64_t k0 = 0; k0 < p.k; k0 += PG_MM_TILE) {
                    ta[ty][tx] = (row < p.m && k0 + tx < p.k)
                                     ? ab[row * p.a_strides[1] + (k0 + tx) * p.a_strides[2]]
                                     : T(0);
                    tb[ty][tx] = (k0 + ty < p.k && col < p.n)
                                     ? bb[(k0 + ty) * p.b_strides[1] + col * p.b_strides[2]]
                                     : T(0);
                    __syncthreads();
#pragma unroll
                    for (int kk = 0; kk < PG_MM_TILE; kk++)
                        acc += (Acc)ta[ty][kk] * (Acc)tb[kk][tx];
                    __syncthreads();
                }
                if (row < p.m && col < p.n)
                    c[(bi * p.m + row) * p.n + col] = (T)acc;
            }
}

/* How cuBLAS can read a rows x cols matrix with strides (sr, sc): as
 * row-major (unit column stride) or column-major (unit row stride), with its
 * leading dimension. A length-1 axis has a meaningless stride, so it fits
 * either way. False if neither works (e.g. a stride-0 row). */
static bool pg_blas_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool *row_major,
                           int64_t *ld)
{
    int64_t need = cols > 1 ? cols : 1;
    if (cols == 1 || sc == 1) {
        int64_t l = rows == 1 ? need : sr;
        if (l >= need && l <= INT_MAX) {
            *row_major = true;
            *ld = l;
            return true;
        }
    }
    need = rows > 1 ? rows : 1;
    if (rows == 1 || sr == 1) {
        int64_t l = cols == 1 ? need : sc;
        if (l >= need && l <= INT_MAX) {
            *row_major = false;
            *ld = l;
            return true;
        }
    }
    return false;
}

/* The cuBLAS call, or false (nothing launched) if the layout does not fit. */
template <typename T>
static bool pg_matmul_blas(const pg_cuda_ctx *ctx, cublasHandle_t h, int allow_tf32,
                           const pg_cuda_matmul_args *p, cublasStatus_t *st)
{
    bool a_row, b_row;
    int64_t lda, ldb;
    if (p->m > INT_MAX || p->n > INT_MAX || p->k > INT_MAX || p->batch > INT_MAX)
        return false;
    if (!pg_blas_layout(p->m, p->k, p->a_strides[1], p->a_strides[2], &a_row, &lda) ||
        !pg_blas_layout(p->k, p->n, p->b_strides[1], p->b_strides[2], &b_row, &ldb))
        return false;
    /* cuBLAS sees C^T (N x M) = op(our b) (N x K) * op(our a) (K x M). */
    cublasOperation_t op_b = b_row ? CUBLAS_OP_N : CUBLAS_OP_T;
    cublasOperation_t op_a = a_row ? CUBLAS_OP_N : CUBLAS_OP_T;
    long long stride_a = p->batch > 1 ? p->a_strides[0] : 0;
    long long stride_b = p->batch > 1 ? p->b_strides[0] : 0;
    long long stride_c = p->m * p->n;
    const T one = 1, zero = 0;
    *st = cublasSetMathMode(h, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    if (*st != CUBLAS_STATUS_SUCCESS)
        return true;
    if constexpr (std::is_same<T, float>::value)
        pg_cuda_note_gemm(ctx, "cublasSgemmStridedBatched", CUDA_R_32F, CUDA_R_32F,
                          allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
    else
        pg_cuda_note_gemm(ctx, "cublasDgemmStridedBatched", CUDA_R_64F, CUDA_R_64F,
                          CUBLAS_COMPUTE_64F);
    if constexpr (std::is_same<T, float>::value)
        *st = cublasSgemmStridedBatched(h, op_b, op_a, (int)p->n, (int)p->m, (int)p->k, &one,
                                        (const T *)p->b, (int)ldb, stride_b, (const T *)p->a,
                                        (int)lda, stride_a, &zero, (T *)p->c, (int)p->n,
                                        stride_c, (int)p->batch);
    else
        *st = cublasDgemmStridedBatched(h, op_b, op_a, (int)p->n, (int)p->m, (int)p->k, &one,
                                        (const T *)p->b, (int)ldb, stride_b, (const T *)p->a,
                                        (int)lda, stride_a, &zero, (T *)p->c, (int)p->n,
                                        stride_c, (int)p->batch);
    return true;
}

extern "C" cudaError_t pg_kernel_matmul(const pg_cuda_ctx *ctx, cublasHandle_t blas, int allow_tf32,
                                      const pg_cuda_matmul_args *p, cublasStatus_t *blas_status)
{
    *blas_status = CUBLAS_STATUS_SUCCESS;
    if (p->batch == 0 || p->m == 0 || p->n == 0)
        return cudaSuccess;
    if (p->k == 0) { /* empty sum: c = 0 (all-zero bytes for every dtype) */
        size_t item = p->dtype == PG_FLOAT32 ? 4 : 8;
        return cudaMemsetAsync(p->c, 0, (size_t)(p->batch * p->m * p->n) * item, ctx->stream);
    }
    return pg_dispatch_dtype(p->dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same<T, bool>::value) {
            return cudaErrorInvalidValue; /* no bool matmul reaches a backend */
        } else {
            if constexpr (std::is_floating_point<T>::value) {
                if (blas != NULL && pg_matmul_blas<T>(ctx, blas, allow_tf32, p, blas_status))
                    return cudaGetLastError();
            }
            dim3 block(PG_MM_TILE, PG_MM_TILE);
            int64_t tiles_m = (p->m + PG_MM_TILE - 1) / PG_MM_TILE;
            int64_t tiles_n = (p->n + PG_MM_TILE - 1) / PG_MM_TILE;
            dim3 grid((unsigned)(tiles_n < INT_MAX ? tiles_n : INT_MAX),
                      (unsigned)(tiles_m < 65535 ? tiles_m : 65535),
                      (unsigned)(p->batch < 65535 ? p->batch : 65535));
            pg_matmul_tiled_kernel<T>
                <<<grid, block, 0, pg_cuda_noted(ctx, "pg_matmul_tiled_kernel")>>>(*p);
            return cudaGetLastError();
        }
    });
}
