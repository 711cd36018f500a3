/* cpu_half_convert.h - contiguous float32 <-> float16/bfloat16 conversion
 * (cpu_half_convert.c), shared by the cast kernel, the half GEMM and the half
 * elementwise kernels; and the block runner that gives a float32 inner loop
 * half operands. */
#ifndef PG_CPU_HALF_CONVERT_H
#define PG_CPU_HALF_CONVERT_H

#include <stdbool.h>
#include <stdint.h>

#include "../../core/pg_dtype.h"

void pg_cpu_bf16_to_f32(int64_t n, const uint16_t *src, float *dst);
void pg_cpu_f32_to_bf16(int64_t n, const float *src, uint16_t *dst);
void pg_cpu_f16_to_f32(int64_t n, const uint16_t *src, float *dst);
void pg_cpu_f32_to_f16(int64_t n, const float *src, uint16_t *dst);
/* dtype: PG_FLOAT16 or PG_BFLOAT16 */
void pg_cpu_half_to_f32(int dtype, int64_t n, const uint16_t *src, float *dst);
void pg_cpu_f32_to_half(int dtype, int64_t n, const float *src, uint16_t *dst);

/* One element of a half dtype as a float32, and back (round to nearest even). */
float pg_cpu_half_load(int dtype, const void *p);
void pg_cpu_half_store(int dtype, void *p, float x);

/* Elements per block of pg_cpu_half_loop_run (stack buffers: 3 x 2 KiB of float32). */
#define PG_CPU_HALF_BLOCK 512

/* A pg_cpu_loop_fn's `arg` for pg_cpu_half_loop_run. */
typedef struct pg_cpu_half_loop {
    void (*f32)(int64_t n, char **p, const int64_t *s, const void *arg); /* float32 loop */
    int dtype;         /* PG_FLOAT16 or PG_BFLOAT16: the operands' storage */
    int nops;          /* operands, the output first (2 or 3) */
    bool out_direct;   /* the float32 loop writes operand 0 itself (bool: comparisons) */
    unsigned f32_in;   /* bit k: input k is float32 already (a scalar on the stack) */
} pg_cpu_half_loop;

/* A pg_cpu_loop_fn: run h->f32 over a run of n half elements, a block at a time:
 * each input block is widened into a float32 buffer on the stack (a stride-0
 * input: its one value), the float32 loop computes the block, and the output
 * block is rounded once to h->dtype and stored. No tensor-sized temporary. */
void pg_cpu_half_loop_run(int64_t n, char **p, const int64_t *s, const void *h);

#endif
