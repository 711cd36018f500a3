/* cpu_gemm_bf16.h - the bfloat16 GEMM for CPUs with AVX512_BF16 (cpu_gemm_bf16.c).
 *
 * Row-major, the GEMM contract's single-entry form (as cpu_sgemm.h): C (M,N) float32 =
 * alpha * op(A) @ op(B) + beta * C, op(X) = X or X^T, bfloat16 inputs, float32
 * accumulation, run on the calling thread (the scheduler gives it a panel). C is not
 * read when beta = 0. */
#ifndef PG_CPU_GEMM_BF16_H
#define PG_CPU_GEMM_BF16_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An operand: a row-major matrix of bfloat16 bits, or (f32) of float32 values that are
 * rounded to bfloat16 (nearest even, NaN kept quiet) as they are packed: autocast's
 * float32 weights, with no cast pass and no bfloat16 copy. B may come pre-packed too
 * (packed, NULL otherwise): the whole op(B) (K, Nall) in the kernel's own layout, written
 * by pg_cpu_gemm_bf16_prepack_rows, with packed_np = pg_cpu_gemm_bf16_packed_np(Nall) and
 * this product's first column at packed_col (a multiple of 16; else p is packed as usual).
 * The kernel then packs only A; p must still be valid (the fallback). */
typedef struct pg_bf16_operand {
    const void *p;
    int64_t ld;
    bool trans;
    bool f32;
    const uint32_t *packed;
    int64_t packed_np, packed_col;
    const float *mask; /* B with f32 only: its mask (pg_gemm.h b_mask, laid out as p), each
                        * value multiplied by it as it is packed; packed is then not used */
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

/* ---- pre-packed weights (cpu_bf16_panels.c keeps them per weight) ----------------------
 * The layout of op(B) (K, N): K cut into the kernel's slices (equal, even, at most 256
 * deep), slice by slice; in each, ceil(N/48) panels of 48 columns, each (slice's pairs)
 * rows of 48 pair words (bfloat16 at k = 2 k2 low, 2 k2 + 1 high). */
/* words per pair row of every panel of an N-column op(B): N rounded up to 48 */
int64_t pg_cpu_gemm_bf16_packed_np(int64_t N);
/* 32-bit words of a pre-packed op(B) (K, N) */
size_t pg_cpu_gemm_bf16_packed_words(int64_t K, int64_t N);
/* Rows [r0, r1) of the float32 weight W (O, In) (r0 a multiple of 16), each value rounded
 * as the kernel's own packing rounds it, into fwd (op(B) = W^T: a linear layer's forward
 * x @ W^T) and dx (op(B) = W: the backward's dz @ W), either NULL to skip it. Rows in
 * different tasks write disjoint words. False (nothing written) where the kernel does not
 * run here or the rows are not a valid range. */
bool pg_cpu_gemm_bf16_prepack_rows(const float *W, int64_t O, int64_t In, int64_t r0, int64_t r1,
                                   uint32_t *fwd, uint32_t *dx);

#endif
