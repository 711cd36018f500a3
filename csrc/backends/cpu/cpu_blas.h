/* cpu_blas.h - pygpu's OpenBLAS at one thread per call (cpu_blas.c). A leaf: the pool
 * (cpu_parallel.c), the GEMM scheduler and the sim backend include it, and it includes
 * nothing of theirs. */
#ifndef PG_CPU_BLAS_H
#define PG_CPU_BLAS_H

/* Set pygpu's OpenBLAS to one thread per call (idempotent). */
void pg_cpu_blas_init(void);
/* Undo an outside change of OpenBLAS's thread count (threadpoolctl); cheap when none. */
void pg_cpu_blas_keep_one_thread(void);

#endif
