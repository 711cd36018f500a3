/* sim_timeline.h - what each sim device's queues ran, and when (pygpu.sim.timeline).
 *
 * A span per task that went through a sim queue (ops on the compute stream,
 * non_blocking copies on the copy stream): when it was queued, when it began
 * (its dependencies met), when it ended, which thread ran it (the queue's worker
 * or a thread that waited for it), the CPU time that thread spent in it, and which
 * other queues' work it was ordered after. Recording is off by default (one relaxed load per task when off); it is
 * how a test sees that a prefetched copy ran beside compute instead of behind it,
 * without timing anything. */
#ifndef PG_SIM_TIMELINE_H
#define PG_SIM_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PG_SIM_SPAN_AFTER 8 /* dependencies kept per span (a task has few on other queues) */

typedef struct pg_sim_span {
    int role;               /* PG_ROLE_COMPUTE or PG_ROLE_COPY */
    char name[32];          /* the node's name, or "copy h2d" / "copy d2h" / "copy d2d" */
    char thread[16];        /* the thread that ran it (pygpu-sim0-op, python, ...) */
    uint64_t queued_ns;     /* all relative to the start of the recording */
    uint64_t start_ns;      /* its dependencies met, it began */
    uint64_t end_ns;
    uint64_t cpu_ns;        /* CPU time of the thread that ran it, start to end: the task's own
                             * work, without a preemption or a late wake-up on a loaded host */
    uint64_t seq;           /* its number on its queue (1, 2, ...) */
    uint64_t bytes;         /* a copy's size; 0 for an op */
    /* the other queues' work it was ordered after (pending when it was queued): each a
     * queue (bit 2 * device + role, one bit set) and the task number there */
    int nafter;
    uint32_t after_queue[PG_SIM_SPAN_AFTER];
    uint64_t after_seq[PG_SIM_SPAN_AFTER];
} pg_sim_span;

/* Start recording on sim:`index` (dropping what an earlier recording kept). */
void pg_sim_timeline_start(int index);
/* Stop recording on sim:`index`; *out gets the spans in the order they ended
 * (malloc'd, the caller frees it), *n their number. False: no memory. */
bool pg_sim_timeline_stop(int index, pg_sim_span **out, size_t *n);
/* Whether sim:`index` is recording, and the clock (pg_now_ns) its spans count from. */
bool pg_sim_timeline_on(int index);
/* Record one span (the sim worker side calls this; no-op when not recording). */
void pg_sim_timeline_add(int index, const pg_sim_span *span);
/* The recording's origin on sim:`index` (subtract from pg_now_ns values). */
uint64_t pg_sim_timeline_origin(int index);

#endif
