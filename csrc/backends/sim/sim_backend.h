/* sim_backend.h - controls of the simulated accelerator that pygpu.sim exposes.
 *
 * sim is an accelerator that computes on the host: its memory is its own
 * (never handed to NumPy without a counted transfer), each device runs its
 * ops in order on a worker thread of its own (a compute stream) and its
 * asynchronous copies on a second one (a copy engine), so the cost model of a
 * real GPU can be seen and tested on any laptop or CI machine. */
#ifndef PG_SIM_BACKEND_H
#define PG_SIM_BACKEND_H

#include "../../core/pg_backend.h"

extern const pg_backend pg_sim_backend;

/* The link model: every transfer takes at least latency + bytes / bandwidth.
 * A bandwidth of 0 means "no limit". Off (all zero) by default. */
void pg_sim_configure_link(double latency_us, double h2d_gbps, double d2h_gbps);
void pg_sim_link(double *latency_us, double *h2d_gbps, double *d2h_gbps);
/* Make the next op named `op` on sim:`index` fail on the worker (a test aid). */
pg_status pg_sim_inject_fault(int index, const char *op);
/* Simulated memory of each device, in bytes (PYGPU_SIM_MEMORY_MB, default 8192). */
size_t pg_sim_memory_limit(void);
/* Compute threads each sim device owns (PYGPU_SIM_THREADS; default cores / devices). */
int pg_sim_threads(void);
/* Stop the workers (at interpreter exit), after finishing queued work. */
void pg_sim_shutdown(void);
/* In a fork()ed child (csrc/core/pg_fork.h): the devices' locks; their streams and pools
 * run their work on the calling thread from then on (pg_stream.c, pg_pool.c). */
void pg_sim_after_fork(void);

#endif
