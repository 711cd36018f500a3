/* cpu_part.h - cutting a length into near-equal parts, one per task: the arithmetic the
 * pool's splitter (cpu_parallel.c) and the kernels that split their own work (the GEMM
 * scheduler, the fused training kernels) share. A leaf header: a kernel that cuts its
 * work includes this, not the splitter's header, so the splitter, which calls the
 * kernels, is not also below them. */
#ifndef PG_CPU_PART_H
#define PG_CPU_PART_H

#include <stdint.h>

/* [lo, hi) of task t when `len` items are cut into `n` near-equal parts. */
static inline void pg_cpu_part(int64_t len, int64_t n, int64_t t, int64_t *lo, int64_t *hi)
{
    *lo = len * t / n;
    *hi = len * (t + 1) / n;
}

/* pg_cpu_part with both ends moved down to a multiple of `align` (the last task keeps
 * the end), so every part but the last covers whole vectors or blocks; empty when hi <= lo. */
static inline void pg_cpu_part_aligned(int64_t len, int64_t n, int64_t t, int64_t align,
                                       int64_t *lo, int64_t *hi)
{
    pg_cpu_part(len, n, t, lo, hi);
    if (align > 1) {
        *lo -= *lo % align;
        *hi = t == n - 1 ? len : *hi - *hi % align;
    }
}

#endif
