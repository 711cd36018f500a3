/* cpu_gemm_bf16.h - the bfloat16 GEMM for CPUs with AVX512_BF16 (cpu_gemm_bf16.c).
 *
 * Row-major, the GEMM contract's single-entry form (as cpu_sgemm.h): C (M,N) float32 =
 * alpha * op(A) @ op(B) + beta * C, op(X) = X or X^T, bfloat16 inputs, float32
 * accumulation, run on the calling thread (the scheduler gives it a panel). C is not
 * read when beta = 0. */
#ifndef PG_CPU_GEMM_BF16_H
#define PG_CPU_GEMM_BF16_H

#include <stdbool.h>
#include <stdint.h>

/* An operand: a row-major matrix of bfloat16 bits, or (f32) of float32 values that are
 * rounded to bfloat16 (nearest even, NaN kept quiet) as they are packed: autocast's
 * float32 weights, with no cast pass and no bfloat16 copy. */
typedef struct pg_bf16_operand {
    const void *p;
    int64_t ld;
    bool trans;
    bool f32;
} pg_bf16_operand;

/* Whether the kernel runs here: a CPU with AVX512_BF16 (PYGPU_ISA permitting), or the
 * test build that emulates the instructions (pg_cpu_gemm_bf16_emulated). */
bool pg_cpu_gemm_bf16_runs(void);

/* True in the test build (setup.py, PYGPU_BF16_SIMDE=1) whose AVX-512 instructions are
 * SIMDe's portable C versions: the kernel's packing, blocking and tiles then run, slowly,
 * on any CPU; false in every build that ships. */
bool pg_cpu_gemm_bf16_emulated(void);

/* C = alpha * op(A) @ op(B) + beta * C (A bfloat16 bits; B bfloat16 or float32 rounded as
 * packed); false, with nothing done, where the kernel does not run here, for an empty
 * product (M, N or K = 0), or when its packing memory cannot be had. */
bool pg_cpu_gemm_bf16(int64_t M, int64_t N, int64_t K, float alpha, const pg_bf16_operand *a,
                      const pg_bf16_operand *b, float beta, float *C, int64_t ldc);

#endif
