/* cpu_gemm.h - the CPU side of the GEMM contract (csrc/core/pg_gemm.h).
 *
 * Two layers, as BLIS separates its kernels from its thread partitioning:
 *   - kernels (cpu_gemm.c): one per (dtype_ab, dtype_c), each runs a whole
 *     descriptor on the calling thread: one single-threaded BLAS call per
 *     batch entry, then the epilogue over the panel while it is in cache.
 *     float32 and float64 are built in; the half-precision kernels join the
 *     table with pg_cpu_gemm_register, so a dtype adds a kernel, not a path.
 *   - the scheduler (cpu_gemm_schedule.c): cuts a descriptor into panels by
 *     the work it carries (FLOPs), not by rows, and hands one panel per task
 *     to the kernel on a device's pool (cpu or a sim device).
 * Reproducible: the panels are fixed by the shape and the thread count alone
 * (never by timing), each a set of whole output elements summed over the whole
 * K by one BLAS call, and BGRAD's column sums are never cut across rows; so the
 * same inputs and thread count give the same bits, run after run. A different
 * thread count gives different panels, and OpenBLAS blocks a panel's K loop
 * by the panel's size, so results may differ in the last bits (within float
 * tolerance), as PyTorch's do. */
#ifndef PG_CPU_GEMM_H
#define PG_CPU_GEMM_H

#include "../../core/pg_gemm.h"
#include "../../core/pg_pool.h"

/* The kernel for (dtype_ab, dtype_c), or NULL when none is registered. */
pg_gemm_kernel_fn pg_cpu_gemm_kernel(int dtype_ab, int dtype_c);
/* Add (or replace) the kernel for a dtype pair; called once at load time. */
void pg_cpu_gemm_register(int dtype_ab, int dtype_c, pg_gemm_kernel_fn fn);

/* Run `g` on `pool` (NULL: on the caller), split by work into panels. */
pg_status pg_cpu_gemm_run(pg_pool *pool, const pg_gemm *g);

/* The mask of B (pg_gemm.h b_mask) where a kernel does not fuse it (cpu_gemm_mask.c):
 * run `g` with B * mask written first (whole, all batch entries) and no mask; B * mask of
 * one stored (rows, cols) matrix with leading dimension ld, packed (ld = cols), or NULL
 * when out of memory; and the counts of kernel calls that fused a mask into their packing
 * of B and of masked copies written (pg_cpu_gemm_mask_note adds one). */
pg_status pg_cpu_gemm_run_unmasked(pg_pool *pool, const pg_gemm *g);
float *pg_cpu_gemm_masked_copy(const float *B, const float *mask, int64_t rows, int64_t cols,
                               int64_t ld);
void pg_cpu_gemm_mask_note(bool fused);
void pg_cpu_gemm_mask_counts(int64_t *fused, int64_t *copied);
/* Whether a float32 (dtype_ab PG_FLOAT32) or autocast bfloat16 (PG_BFLOAT16 with a float32
 * B) product's kernel packs B itself here, so that a mask of B costs no copy: pygpu's AVX2
 * kernel (a CPU level of exactly AVX2: PYGPU_ISA=avx2) or the AVX512_BF16 kernel. */
bool pg_cpu_gemm_packs_b(int dtype_ab);

/* Multiply-adds below which a product runs whole on one thread: a panel must
 * outweigh a pool job's start (a few us awake, tens of us asleep). ~64^3:
 * 200x200x200 (8M) splits over 2 cores, 32x32x32 does not. */
#define PG_GEMM_GRAIN (1 << 18)

#endif
