/* cpu_parallel.h - run one pg_node on a device's thread pool.
 *
 * The kernels in cpu_*.c are serial and reentrant. pg_cpu_run splits a large
 * node into sub-nodes over slices of its tensors (views: a shape and an
 * offset changed, nothing copied) and runs the serial kernel on each slice on
 * the pool's threads; small nodes run whole on the calling thread. Results
 * never depend on timing, and only matmul's on the thread count:
 *   - elementwise, cast, fill: each element is computed by the same kernel;
 *   - random: Philox is counter-based, each slice starts at its own counter;
 *   - matmul and the linear layers: panels cut by the GEMM scheduler
 *     (cpu_gemm_schedule.c), each one BLAS call; OpenBLAS blocks a call's K
 *     loop by its panel's size, so a different thread count may change the
 *     last bits (the same count never does);
 *   - sgd, adam: flat slices, each element updated by the same kernel;
 *   - reduction along an axis with several rows before it: split over them;
 *   - reduction of the first axis (and of everything): blocks of rows fixed
 *     by the shape alone, partial results combined in block order.
 * cpu_parallel_reduce.c holds the reduction half. */
#ifndef PG_CPU_PARALLEL_H
#define PG_CPU_PARALLEL_H

#include "../../core/pg_pool.h"
#include "cpu_kernels.h"
#include "cpu_part.h"

/* Run `node` on `pool` (NULL: serially on the caller). */
pg_status pg_cpu_run(pg_pool *pool, const pg_node *node);

/* The cpu device's pool (created on first use with one thread per core). It is never
 * destroyed: a Python thread may still be using it at exit. */
pg_pool *pg_cpu_pool(void);
pg_status pg_cpu_set_threads(int n);
/* In a fork()ed child (csrc/core/pg_fork.h): a new pool on first use. */
void pg_cpu_after_fork(void);
int pg_cpu_get_threads(void);

/* ---- shared by cpu_parallel.c and cpu_parallel_reduce.c -------------------------------- */

/* Work (in elements) below which splitting a reduction costs more than it saves. */
#define PG_RED_BLOCK 32768

pg_status pg_cpu_run_reduce(pg_pool *pool, const pg_node *node);

#endif
