/* pg_stats.h - always-on, exact counters of what crosses host<->device.
 *
 * pygpu's own contribution: every transfer is counted per device pair
 * (count, bytes, time, pinned/pageable, blocking/async), implicit transfers
 * (print, item(), np.asarray on a device tensor...) per trigger, and per device
 * the ops launched, synchronizations and time waited, allocations and
 * current/peak memory. Counters are relaxed atomics: exact under threads,
 * a few nanoseconds each. Counting happens in one place per event kind: the
 * generic transfer function, the generic launch, the allocator. */
#ifndef PG_STATS_H
#define PG_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "pg_device.h"

/* What made a transfer happen that the user did not write as .to(). */
typedef enum pg_implicit {
    PG_IMPLICIT_NONE = 0, /* explicit: .to(), .cpu(), tensor(..., device=) */
    PG_IMPLICIT_REPR,     /* repr() / str() / print() */
    PG_IMPLICIT_ITEM,     /* .item(), float(t), int(t), bool(t) */
    PG_IMPLICIT_TOLIST,   /* .tolist() */
    PG_IMPLICIT_ARRAY,    /* np.asarray(t) / __array__ / .numpy() on a device tensor */
    PG_IMPLICIT_DLPACK,   /* __dlpack__ export that had to stage through the host */
    PG_IMPLICIT_OTHER,
    PG_NUM_IMPLICIT
} pg_implicit;

typedef struct pg_xfer_stats {
    uint64_t count, bytes, ns;
    uint64_t pinned_count, async_count;
} pg_xfer_stats;

typedef struct pg_device_stats {
    uint64_t ops, syncs, sync_ns;
    uint64_t kernel_ops, kernel_ns; /* ops whose GPU time was measured, and that time */
    uint64_t allocs, frees, cache_hits;
    uint64_t mem_current, mem_peak, mem_reserved;
} pg_device_stats;

typedef struct pg_stats_snapshot {
    pg_xfer_stats pair[PG_NUM_SLOTS][PG_NUM_SLOTS]; /* [src slot][dst slot] */
    uint64_t implicit_count[PG_NUM_IMPLICIT];
    uint64_t implicit_bytes[PG_NUM_IMPLICIT];
    /* per trigger (index 0: explicit), host time a blocking transfer spent waiting for
     * the device (its source still being produced, its destination still in use) and
     * for the copy to be seen finished: the call's wall time minus the link's */
    uint64_t wait_ns[PG_NUM_IMPLICIT];
    pg_device_stats dev[PG_NUM_SLOTS];
} pg_stats_snapshot;

void pg_stats_transfer(pg_device src, pg_device dst, uint64_t bytes, bool pinned, bool async,
                       int implicit);
/* The link-busy time of one copy: from when it starts moving bytes to when the
 * link is done with them, never the time it waited in a queue (see pg_ops_transfer.c). */
void pg_stats_transfer_time(pg_device src, pg_device dst, uint64_t ns);
/* Link time this thread has recorded so far (a blocking copy runs on its caller's
 * thread, so the caller can split its wall time into link and waiting). */
uint64_t pg_stats_thread_link_ns(void);
void pg_stats_transfer_wait(int implicit, uint64_t ns);
void pg_stats_op(pg_device dev);
void pg_stats_sync(pg_device dev, uint64_t ns);
/* One op's device-side (kernel) time, measured by the backend (cuda's kernel_timing). */
void pg_stats_kernel_time(pg_device dev, uint64_t ns);
void pg_stats_alloc(pg_device dev, uint64_t bytes, bool cache_hit);
void pg_stats_free(pg_device dev, uint64_t bytes);
void pg_stats_reserved(pg_device dev, int64_t delta);
void pg_stats_reset_peak(pg_device dev);
/* Bytes of tensors alive on `dev` now (for out-of-memory messages). */
uint64_t pg_stats_mem_current(pg_device dev);

void pg_stats_snapshot_take(pg_stats_snapshot *out);
/* Zero the event counters (transfers, ops, syncs, allocs); memory in use and
 * reserved are states, not events, and are kept (peak restarts at current). */
void pg_stats_reset(void);

uint64_t pg_now_ns(void);

/* One transfer, as seen by the optional transfer hook (pygpu.track(call_sites=True)).
 * host is the host-side bytes once they are valid (h2d: the source; a blocking d2h:
 * the destination after the copy), NULL otherwise (async d2h, d2d). */
typedef struct pg_transfer_event {
    pg_device src, dst;
    uint64_t bytes, ns; /* ns: wall time of the copy call (enqueue only when async) */
    uint64_t link_ns;   /* the copy's own time as the backend counted it (0 when async) */
    uint64_t wait_ns;   /* ns - link_ns: waiting for the device (0 when async) */
    bool pinned, async;
    int implicit;
    const void *host;
} pg_transfer_event;

typedef void (*pg_transfer_hook)(const pg_transfer_event *ev);

/* Install (or, with NULL, remove) the hook called after every successful transfer.
 * Off by default; the transfer path then pays one relaxed atomic load. */
void pg_stats_set_transfer_hook(pg_transfer_hook hook);
pg_transfer_hook pg_stats_get_transfer_hook(void);
uint64_t pg_stats_pair_ns(pg_device src, pg_device dst); /* transfer time counted so far */
uint64_t pg_stats_accel_ops(void); /* ops launched on every accelerator (not the cpu) so far */

#endif
