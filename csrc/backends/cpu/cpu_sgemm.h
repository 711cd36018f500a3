/* cpu_sgemm.h - pygpu's own float32 GEMM (cpu_sgemm.c), or OpenBLAS, one entry.
 *
 * Row-major, the GEMM contract's single-entry form: C (M,N) = alpha * op(A) @ op(B)
 * + beta * C, op(X) = X or X^T, runs on the calling thread (the scheduler in
 * cpu_gemm_schedule.c gives it a panel). C is not read when beta = 0. */
#ifndef PG_CPU_SGEMM_H
#define PG_CPU_SGEMM_H

#include <stdbool.h>
#include <stdint.h>

/* pygpu's AVX2 kernel where the CPU level is AVX2 and N >= 16, oneDNN's sgemm at the shape
 * classes its table names (cpu_sgemm_dnnl.c), else OpenBLAS (all single-threaded); never
 * fails. */
void pg_cpu_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                  int64_t ldc);

/* An operand of pg_cpu_sgemm_ex: a row-major matrix (op() = X or X^T) of float32, or of
 * another type that `fetch` converts to float32 as the kernel packs it: n stored elements
 * from element `at` of `p` into dst (the half GEMM's float16/bfloat16 inputs, and float32
 * weights rounded to bfloat16), so no converted copy of the operand is written first. */
typedef void (*pg_sgemm_fetch_fn)(const void *ctx, const void *p, int64_t at, int64_t n,
                                  float *dst);
typedef struct pg_sgemm_operand {
    const void *p;
    int64_t ld;
    bool trans;
    pg_sgemm_fetch_fn fetch; /* NULL: p holds float32 */
    const void *ctx;
    bool round_bf16; /* B only, without fetch: float32 values rounded to bfloat16 as they are
                      * packed, in registers (autocast's weights: the hot case of fetch) */
    const float *mask; /* B only, without fetch: B's mask (pg_gemm.h b_mask, laid out as p),
                        * each value multiplied by it as it is packed, before rounding */
} pg_sgemm_operand;

/* M <= 32 rows, op(A) = A, on an AVX-512 CPU: B (either layout) read in place, without
 * packing (cpu_sgemm_small.c); false (nothing done) where it does not apply. */
bool pg_cpu_sgemm_small(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                        float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                        float beta, float *C, int64_t ldc);

/* The product on oneDNN's dnnl_sgemm, one thread, where the table in cpu_sgemm_dnnl.c (by
 * ISA and shape class; PYGPU_SGEMM forces it) sends it and the library loads; false (nothing
 * done) elsewhere. */
bool pg_cpu_sgemm_dnnl_wants(int64_t M, int64_t N, int64_t K);
bool pg_cpu_sgemm_dnnl(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                       const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                       float *C, int64_t ldc);

/* Whether pg_cpu_sgemm_ex takes an (M, N, K) product on this CPU (memory aside). */
bool pg_cpu_sgemm_own(int64_t M, int64_t N, int64_t K);

/* C (M,N) = alpha * op(A) @ op(B) + beta * C with pygpu's AVX2 kernel; false (nothing
 * done) where that kernel does not run: a CPU level other than AVX2, N < 16, an empty
 * product, or no packing memory. */
bool pg_cpu_sgemm_ex(int64_t M, int64_t N, int64_t K, float alpha, const pg_sgemm_operand *a,
                     const pg_sgemm_operand *b, float beta, float *C, int64_t ldc);

#endif
