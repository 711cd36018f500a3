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

/* Around a call into a library with threads of its own (oneDNN's OpenMP team), inside a
 * node: the CPU the process's other threads spend meanwhile (process CPU less the calling
 * thread's) counts to the node, as its pool tasks' would. begin returns false, and end does
 * nothing, while the instrument is off. */
typedef struct pg_cpu_busy_mark {
    uint64_t process_ns, thread_ns;
    bool on;
} pg_cpu_busy_mark;
bool pg_cpu_busy_foreign_begin(pg_cpu_busy_mark *m);
void pg_cpu_busy_foreign_end(const pg_cpu_busy_mark *m);

#endif
