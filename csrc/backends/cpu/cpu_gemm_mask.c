/* cpu_gemm_mask.c - the GEMM contract's mask of B (pg_gemm.h b_mask) where no kernel
 * fuses it, and the counts that tell which way each product went (a leaf: the kernels and
 * the scheduler, cpu_gemm_schedule.c's pg_cpu_gemm_run_unmasked, call it).
 *
 * The kernels that pack B themselves multiply each value by its mask as they pack it
 * (cpu_sgemm.c's AVX2 kernel, cpu_gemm_bf16.c): no masked copy of B is ever written. The
 * others (OpenBLAS, which packs B itself; the half convert kernel) get B * mask written
 * here first, for the descriptor (or panel) they run, and freed after: the same bits,
 * since each value is the same float32 product either way. Each kernel call that fused
 * the mask and each that needed the copy is counted (tests/test_prune_pack.py asks). */
#include "cpu_gemm.h"

#include <stdlib.h>


static int64_t g_fused, g_copied;

void pg_cpu_gemm_mask_note(bool fused)
{
    __atomic_add_fetch(fused ? &g_fused : &g_copied, 1, __ATOMIC_RELAXED);
}

void pg_cpu_gemm_mask_counts(int64_t *fused, int64_t *copied)
{
    *fused = __atomic_load_n(&g_fused, __ATOMIC_RELAXED);
    *copied = __atomic_load_n(&g_copied, __ATOMIC_RELAXED);
}

float *pg_cpu_gemm_masked_copy(const float *B, const float *mask, int64_t rows, int64_t cols,
                               int64_t ld)
{
    float *t = malloc((size_t)(rows * cols > 0 ? rows * cols : 1) * sizeof(float));
    if (!t)
        return NULL;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            t[r * cols + c] = B[r * ld + c] * mask[r * ld + c];
    return t;
}
