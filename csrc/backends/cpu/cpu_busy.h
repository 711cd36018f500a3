/* cpu_busy.h - the busy-cores instrument: how much of each node kind's wall time the cpu
 * device's pool keeps its threads busy (cpu_busy.c). */
#ifndef PG_CPU_BUSY_H
#define PG_CPU_BUSY_H

#include "cpu_parallel.h"

/* pg_cpu_run, timed by node name when PYGPU_NODE_BUSY is set (read once); else just run. */
pg_status pg_cpu_run_timed(pg_pool *pool, const pg_node *node);

/* Drop the counts so far: the table printed at exit then covers what runs after the call (a
 * profile's measured steps without their warm-up). Nothing when the instrument is off. */
void pg_cpu_busy_reset(void);

#endif
