/* cpu_matmul.c - batched matrix multiply on the CPU.
 *
 * float32/float64/float16/bfloat16 become one GEMM descriptor (pg_gemm.h) run
 * by the CPU's GEMM kernels and scheduler (cpu_gemm.c, cpu_gemm_schedule.c:
 * OpenBLAS per panel, panels cut by work; the half kernels of cpu_gemm_half.c
 * accumulate in float32); int64 (no BLAS has it) is a plain i-k-j loop. Each operand arrives either
 * row-major (unit stride on its last axis) or as a transposed view (unit
 * stride on its middle axis); the latter becomes a BLAS transpose flag, so
 * `a @ b.T` copies nothing. dst may be a panel of a larger matrix (int64 row or
 * column panels, cut by cpu_parallel.c), so its row stride is read, not assumed.
 * OpenBLAS itself runs one thread per call: the device's pool does the
 * threading (see cpu_parallel.c for why). */
#include <cblas.h>

#include "cpu_gemm.h"
#include "cpu_kernels.h"

static void matmul_i64(const pg_tensor *a, const pg_tensor *b, const pg_tensor *c)
{
    int64_t B = c->shape[0], M = c->shape[1], N = c->shape[2], K = a->shape[2];
    for (int64_t z = 0; z < B; z++) {
        const int64_t *A = (const int64_t *)pg_tensor_data(a) + z * a->strides[0];
        const int64_t *Bm = (const int64_t *)pg_tensor_data(b) + z * b->strides[0];
        int64_t *C = (int64_t *)pg_tensor_data(c) + z * c->strides[0];
        for (int64_t m = 0; m < M; m++) {
            int64_t *crow = C + m * c->strides[1];
            for (int64_t n = 0; n < N; n++)
                crow[n] = 0;
            for (int64_t k = 0; k < K; k++) {
                /* unsigned arithmetic wraps on overflow as NumPy does, without UB */
                uint64_t av = (uint64_t)A[m * a->strides[1] + k * a->strides[2]];
                const int64_t *brow = Bm + k * b->strides[1];
                for (int64_t n = 0; n < N; n++)
                    crow[n] = (int64_t)((uint64_t)crow[n] + av * (uint64_t)brow[n * b->strides[2]]);
            }
        }
    }
}

pg_status pg_cpu_matmul_on(pg_pool *pool, const pg_node *node)
{
    if (node->dst.dtype == PG_INT64) {
        matmul_i64(&node->src[0], &node->src[1], &node->dst);
        return PG_OK;
    }
    pg_gemm g;
    const pg_tensor *a = &node->src[0], *b = &node->src[1], *c = &node->dst;
    pg_gemm_of_matmul(a, b, c, pg_tensor_data(a), pg_tensor_data(b), pg_tensor_data(c), &g);
    return pg_cpu_gemm_run(pool, &g);
}

pg_status pg_cpu_matmul(const pg_node *node) { return pg_cpu_matmul_on(NULL, node); }
