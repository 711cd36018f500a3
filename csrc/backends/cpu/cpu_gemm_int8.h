/* cpu_gemm_int8.h - the CPU's int8 GEMM (pg_gemm.h's int8 extension) and the quantized
 * linear node that runs it.
 *
 * One driver (cpu_gemm_int8_drive.c) prepares A (u8 rows, K padded to groups of 4, each row's
 * scale and zero point), walks the packed weight's 64-column panels and applies the
 * epilogue; an ISA's kernel is the micro-tile it calls, which sums u8 x s8 products of up
 * to `mr` rows and one panel into int32:
 *   portable       plain C, any CPU, exact for any u8 A;
 *   avx2           vpmaddubsw + vpmaddwd (8 columns per ymm), 7-bit A only (pg_gemm.h);
 *   avx_vnni       vpdpbusd on ymm (VEX: CPUs with AVX-VNNI and no AVX-512),
 *                  cpu_gemm_int8_avxvnni.c, exact for any u8 A;
 *   avx512_vnni    vpdpbusd on zmm (16 columns x 4 k per instruction), cpu_gemm_int8_vnni.c;
 *                  with PYGPU_INT8_SIMDE=1 (setup.py) that file is built on SIMDe's portable
 *                  intrinsics instead, so CI runs the kernel on CPUs without the instruction.
 * pg_cpu_qgemm_kernel picks the widest one the CPU has (PYGPU_ISA caps it). */
#ifndef PG_CPU_GEMM_INT8_H
#define PG_CPU_GEMM_INT8_H

#include <stdbool.h>
#include <stdint.h>

#include "../../core/pg_gemm.h"
#include "../../core/pg_node.h"
#include "../../core/pg_pool.h"

/* Rows of A a micro-tile takes at most, and the int32 tile it fills: tile[r * 64 + j] =
 * sum over k of arow[r][k] * W[n0 + j, k] for r < mr, j < w (w = the panel's width). */
enum { PG_QTILE_MAX_MR = 8 };
typedef void (*pg_qtile_fn)(int mr, int64_t k4, const uint8_t *const *arow, const int8_t *panel,
                            int w, int32_t *tile);

/* The driver around a micro-tile of at most `mr_max` rows (cpu_gemm_int8_drive.c). */
pg_status pg_cpu_qgemm_drive(const pg_qgemm *g, pg_qtile_fn tile, int mr_max);

/* The kernels, each one whole descriptor on the calling thread. */
pg_status pg_cpu_qgemm_portable(const pg_qgemm *g);
pg_status pg_cpu_qgemm_avx2(const pg_qgemm *g);
pg_status pg_cpu_qgemm_vnni(const pg_qgemm *g); /* cpu_gemm_int8_vnni.c */
/* cpu_gemm_int8_avxvnni.c: the ymm vpdpbusd tile, VEX (AVX-VNNI) and, for the tests on
 * AVX-512 machines, EVEX (AVX512_VNNI + VL); built: whether this compiler built them */
pg_status pg_cpu_qgemm_avx_vnni(const pg_qgemm *g);
pg_status pg_cpu_qgemm_avx_vnni_evex(const pg_qgemm *g);
bool pg_cpu_qgemm_avx_vnni_built(void);
/* Whether the VNNI kernel runs here: AVX512_VNNI present and allowed by PYGPU_ISA, or the
 * SIMDe build (then pg_cpu_qgemm_vnni_emulated is true). */
bool pg_cpu_qgemm_vnni_runs(void);
bool pg_cpu_qgemm_vnni_emulated(void);

/* The kernel this CPU runs for activations up to a_max (127 or 255), and its name
 * ("avx512_vnni", "avx512_vnni (SIMDe emulation)", "avx_vnni", "avx2", "portable"). By name
 * (those, or "avx_vnni_evex"): NULL if that kernel cannot run here (or takes no such a_max). */
pg_qgemm_kernel_fn pg_cpu_qgemm_kernel(int a_max, const char **name);
pg_qgemm_kernel_fn pg_cpu_qgemm_kernel_named(const char *name, int a_max);

/* Run `g` on `pool` (NULL: the caller) with kernel `fn` (NULL: pg_cpu_qgemm_kernel's):
 * row panels when there are rows enough, else 64-column panels of the weight; small
 * products run whole. */
pg_status pg_cpu_qgemm_run(pg_pool *pool, const pg_qgemm *g, pg_qgemm_kernel_fn fn);

/* PG_OP_QLINEAR (pg_ops_quantized.c says what the node holds) */
pg_status pg_cpu_qlinear(const pg_node *n);
pg_status pg_cpu_qlinear_on(pg_pool *pool, const pg_node *n);

#endif
