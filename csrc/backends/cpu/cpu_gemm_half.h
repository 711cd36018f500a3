/* cpu_gemm_half.h - the CPU's half GEMM kernels (cpu_gemm_half.c): float16 /
 * bfloat16 A and B, float32 accumulation, float32/float16/bfloat16 C, each a
 * pg_gemm_kernel_fn (csrc/core/pg_gemm.h) for the GEMM scheduler's table keyed
 * by (dtype_ab, dtype_c). */
#ifndef PG_CPU_GEMM_HALF_H
#define PG_CPU_GEMM_HALF_H

#include "../../core/pg_gemm.h"

/* any CPU: convert each K block to float32 while packing, then sgemm */
pg_status pg_cpu_gemm_half_convert(const pg_gemm *g);
/* bfloat16 only, CPUs with AVX512_BF16 (vdpbf16ps); refuses to run elsewhere */
pg_status pg_cpu_gemm_bf16_avx512(const pg_gemm *g);
/* The kernel for (dtype_ab, dtype_c) on this CPU (pg_cpu_isa(), capped by PYGPU_ISA);
 * *name (if not NULL): "avx512_bf16" or "convert_f32". */
pg_gemm_kernel_fn pg_cpu_gemm_half_kernel(int dtype_ab, int dtype_c, const char **name);
/* Put this CPU's half kernels into the GEMM kernel table (cpu_gemm.h) for every
 * (float16|bfloat16, float32|float16|bfloat16) pair, so the scheduler runs half
 * matmuls, batched matmuls and the fused linear layers in panels on the device's
 * pool like float32. Called once at module init. */
void pg_cpu_gemm_half_register(void);

#endif
