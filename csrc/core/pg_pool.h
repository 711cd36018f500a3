/* pg_pool.h - a device's own compute threads.
 *
 * Each device that computes on the host owns one pool: the cpu device a pool
 * of (core count) threads, each sim device a share of the cores
 * (PYGPU_SIM_THREADS). A pool of n threads is the thread that calls
 * pg_pool_run (the Python thread for cpu, the device's stream worker for sim)
 * plus n - 1 workers it starts, named "<prefix>-w1", "<prefix>-w2", ... so a
 * device's work never runs on another device's threads.
 *
 * pg_pool_run runs tasks 0..ntasks-1 of one job; the caller takes part and
 * returns when all are done. Tasks are claimed dynamically, so which thread
 * runs which task depends on timing: a task must write only its own output.
 * Idle workers spin briefly (yielding the core after a few microseconds; 50 us
 * in all, PYGPU_POOL_SPIN_US sets it, capped at 10 ms) and then sleep on a
 * condition variable, so a pool that is not in use costs nothing and never
 * fights another pool, NumPy's or the other devices', for a core. The caller
 * waits for a job's last tasks spinning for as long as its own share took
 * (20 us to 1 ms), then sleeping. */
#ifndef PG_POOL_H
#define PG_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "pg_status.h"

typedef struct pg_pool pg_pool;

/* One task of a job; a failure sets a message with pg_error_set and returns it. */
typedef pg_status (*pg_pool_task_fn)(void *ctx, int64_t task);

/* A pool of `nthreads` threads in all (>= 1; the caller counts as one). */
pg_status pg_pool_create(const char *prefix, int nthreads, pg_pool **out);
void pg_pool_destroy(pg_pool *p); /* NULL is fine */
int pg_pool_threads(const pg_pool *p);
/* Change the thread count; waits for a job in progress. */
pg_status pg_pool_resize(pg_pool *p, int nthreads);

/* Run the job. When several tasks fail, the lowest-numbered failure is
 * reported (its status, and its message on the calling thread), so the error
 * does not depend on timing. If another thread is already running a job on
 * this pool, the tasks run inline on the caller: never a deadlock, never a
 * second device's threads. */
pg_status pg_pool_run(pg_pool *p, int64_t ntasks, pg_pool_task_fn fn, void *ctx);

/* The busy-cores instrument (PYGPU_NODE_BUSY, csrc/backends/cpu/cpu_busy.c). While timing
 * is on, each pool sums, over the jobs it ran: its tasks' CPU time (each task's thread CPU
 * time, on whichever thread ran it); the job's critical path, the longest task or the
 * tasks' time over the threads that share them, whichever is more (what the job would take
 * on idle cores, whatever the machine's load); and its caller's CPU time inside the jobs
 * (its tasks and its wait for the others). Off (the default) it costs one relaxed load per
 * task. */
typedef struct pg_pool_times {
    uint64_t jobs, task_cpu_ns, crit_ns, caller_cpu_ns;
} pg_pool_times;
void pg_pool_timing(bool on);
void pg_pool_times_read(const pg_pool *p, pg_pool_times *out); /* NULL pool: zeros */
uint64_t pg_thread_cpu_ns(void); /* this thread's CPU time */

/* Cores this process may run on (sched_getaffinity), at least 1. */
int pg_host_cores(void);

/* torch.set_flush_denormal: flush denormal results to zero and read denormal inputs as zero
 * (x86's MXCSR FTZ and DAZ bits) on every thread that computes on the host: the caller's at
 * once, each pool worker's and stream worker's before its next job (pg_fpu_sync). Returns
 * false, changing nothing, where the CPU has no such mode (not x86 SSE). */
bool pg_set_flush_denormal(bool on);
/* This thread's mode made the process's: one relaxed load when it already is. */
void pg_fpu_sync(void);

#endif
