/* pg_stream.h - an in-order work queue served by one worker thread.
 *
 * The host-side model of a CUDA stream, used by the sim backend: enqueue
 * returns at once with a sequence number; the worker runs tasks in order and
 * publishes how many it has completed. "Task N is done" is the event
 * (stream, N). A thread waiting on it runs, itself, each task before N that
 * the worker has not started, and waits only for one in flight: spinning
 * briefly (a spinning hand-off costs ~0.1 us, waking a sleeper ~50 us on
 * these VMs), without yielding the core, then sleeping. The idle worker spins
 * for a bounded time (yielding after the first microseconds, since the machines
 * may have only 2 cores) and then sleeps on a condition variable.
 *
 * Only a host thread helps, and only where the stream allows it (waiters_run):
 * a copy engine's transfers are run by its worker alone, and a worker waiting
 * for another stream waits (see pg_stream.c).
 *
 * A task may depend on events of other streams (a copy waiting for the
 * compute that produces its source): the worker waits for them before
 * running it. */
#ifndef PG_STREAM_H
#define PG_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "pg_backend.h"

/* a task waits for at most one event per sim queue (sim's add_dep keeps the newest of each):
 * a fused node's storages, or a MULTI node's many, each with its pending write and reads */
#define PG_TASK_MAX_DEPS (2 * PG_MAX_DEVICES_PER_TYPE)
#define PG_TASK_MAX_HOLD (PG_NODE_MAX_SRC + 1 + PG_NODE_MAX_EXTRA) /* a node's storages */

typedef struct pg_stream pg_stream;

typedef struct pg_task {
    int kind; /* 0: node, 1: copy */
    union {
        pg_node node;
        pg_copy copy;
    } u;
    int ndeps;
    pg_event deps[PG_TASK_MAX_DEPS];
    int nhold;
    pg_storage *hold[PG_TASK_MAX_HOLD]; /* pg_storage_hold'd until the task is done */
    uint64_t seq;
    uint64_t prof_id; /* the pygpu.profiler event of a node task, 0 when not recording */
    uint64_t queued_ns; /* when it was queued, for a recording timeline (0: none) */
} pg_task;

/* Runs one task: on the worker thread, or on a thread waiting for it. */
typedef void (*pg_stream_exec_fn)(void *ctx, pg_task *task);

/* waiters_run: a host thread waiting for a task nobody has started may run it itself. */
pg_status pg_stream_create(pg_stream_exec_fn exec, void *ctx, const char *name, bool waiters_run,
                           pg_stream **out);
/* Finish pending work and stop the worker (at interpreter exit). The stream
 * object stays valid for good: storages still hold events that point at it,
 * and a later enqueue (an atexit handler, a __del__ during finalisation, a
 * daemon thread) runs its task at once on the caller's thread, in order. */
void pg_stream_close(pg_stream *s);

/* Copy `task` into the queue (blocks while the queue is full); returns its seq. */
uint64_t pg_stream_enqueue(pg_stream *s, const pg_task *task);
/* Sequence number the next enqueue will get minus one: the last queued task. */
uint64_t pg_stream_last(pg_stream *s);
bool pg_stream_done(pg_stream *s, uint64_t seq);
/* Until task `seq` has completed: runs the tasks up to it that no thread has started. */
void pg_stream_wait(pg_stream *s, uint64_t seq);
void pg_stream_wait_event(pg_event e);

#endif
