/* pg_storage.h - reference-counted memory owned by one device.
 *
 * A storage is where bytes live and who frees them; it knows nothing of
 * shapes. Tensors (pg_tensor.h) are views onto a storage: base + offset +
 * strides, each holding one reference, so a view keeps its base alive.
 *
 * Asynchronous backends (sim, cuda) queue work that reads or writes a
 * storage. The storage records the last queued write, and the last read of
 * each queue that reads it (one slot per queue: a peer copy on cuda:1's
 * compute stream and a kernel on cuda:0's are two slots, so a later write
 * waits for both), as events
 * that name their backend, that backend's queue and a sequence number, so a
 * host buffer touched by two backends (a pinned buffer copied by sim and by
 * cuda) keeps each backend's meaning apart: waiting on an event always asks
 * the backend that made it (its wait_event). The record is read and written
 * under one core lock (pg_storage_events_lock), by every backend. Anyone who
 * needs the bytes calls pg_storage_wait(). An op that fails asynchronously
 * leaves its message in `error`, so the failure surfaces at the next wait on
 * the data it touched. */
#ifndef PG_STORAGE_H
#define PG_STORAGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_device.h"
#include "pg_status.h"

struct pg_backend;

/* A point in one backend's queue: "work up to `seq` on `queue` is done". */
typedef struct pg_event {
    const struct pg_backend *backend; /* whose queue (and wait_event); NULL: nothing pending */
    void *queue;                      /* that backend's: a sim pg_stream, a cuda device */
    uint64_t seq;
} pg_event;

/* A queue's role (backends name their queues' roles with these). */
enum { PG_ROLE_COMPUTE = 0, PG_ROLE_COPY = 1, PG_NUM_ROLES = 2 };

/* How many queues' reads one storage records at once: the device's own compute and
 * copy streams, and the compute streams of the devices that read it peer to peer
 * (DataParallel over 8 GPUs). A read of a ninth queue drops the oldest slot. That is
 * safe where the new reader first waited for every read recorded (cuda orders each
 * access after all of them), so a read is lost only when more than 8 queues record
 * reads of one storage at the same moment; sim chains a read after the newest read
 * of its role, which covers the dropped one unless reads of more than 8 sim streams
 * interleave on one storage. */
enum { PG_READ_SLOTS = 8 };
/* A storage's pending events: the last write, then the read slots. */
#define PG_STORAGE_EVENTS (1 + PG_READ_SLOTS)

enum {
    PG_STORAGE_PINNED = 1u << 0,   /* page-locked host memory (fast async copies) */
    PG_STORAGE_EXTERNAL = 1u << 1, /* memory borrowed from another owner (NumPy, DLPack) */
    PG_STORAGE_READONLY = 1u << 2, /* the owner forbids writes */
    PG_STORAGE_SHARED = 1u << 3,   /* in a shared-memory file other processes map (cpu) */
    PG_STORAGE_INFERENCE = 1u << 4, /* first held by a tensor made under inference_mode:
                                     * PyTorch's inference tensor, and so are its views (set
                                     * and read by the bindings: tensor_object.c, autograd.c) */
};

typedef struct pg_storage pg_storage;
typedef void (*pg_storage_release_fn)(pg_storage *s);

struct pg_storage {
    /* The references (tensors, views, queued tasks) in the low 32 bits, and in the high
     * 32 bits how many of them queued tasks hold (pg_storage_hold): one word, so that a
     * release reads both at one instant. Read apart, a task finishing between the two
     * reads (one hold and one reference fewer) made a tensor's reference look like a
     * task's, and its block went back to the cache while the tensor still used it. */
    _Atomic uint64_t refs;
    pg_device device;
    void *data;
    size_t nbytes;   /* what the user asked for */
    size_t capacity; /* what the allocator handed out (>= nbytes) */
    unsigned flags;
    pg_storage_release_fn release; /* frees `data` (allocator or external owner) */
    void *owner;                   /* what `release` needs: a PyObject, a DLPack capsule... */

    /* Pending asynchronous work: guarded by pg_storage_events_lock; set
     * through pg_storage_mark, read through pg_storage_pending. */
    pg_event last_write;
    pg_event last_read[PG_READ_SLOTS]; /* one per queue, oldest first; unused (backend NULL) last */
    atomic_bool queued;               /* any event was ever recorded (a lock-free hint) */
    _Atomic(char *) error; /* malloc'd message of the failed op that produced the data */
    int error_status;      /* its root pg_status (PG_ERR_INDEX: an index out of range);
                              written with `error`, under the error lock */

    /* When only queued tasks' holds remain in `refs`, a device storage's block goes back
     * to its allocator at once, with the tasks' events (stream-ordered reuse, see
     * pg_allocator.h); `detached` says it did, so the last release frees only the header. */
    atomic_bool detached;

    /* A stamp that changes whenever the memory is written through pygpu: every op
     * launched with this storage as an output and every copy into it takes a new
     * value from one process-wide counter (pg_storage_note_write), and so does a new
     * storage. Equal stamps therefore mean the same storage, unwritten since (how
     * DataParallel skips refreshing a replica tensor that did not change). Writes
     * that bypass pg_launch and the transfer path (NumPy through a shared view,
     * DLPack importers, CUDA graph replay, NCCL collectives) do not change it. */
    atomic_uint_fast64_t version;

    /* How many times pg_storage_note_write has run on this storage, and (plus one; 0 =
     * not yet) that count when the first Python tensor over it was made: their
     * difference is PyTorch's version counter (0 for a fresh result, +1 per write in
     * place since), which autograd's error for a modified saved tensor reports. */
    atomic_uint_fast64_t writes;
    atomic_uint_fast64_t writes_base;
};

/* Allocate `nbytes` on `dev` through its backend (and caching allocator). */
pg_status pg_storage_new(pg_device dev, size_t nbytes, unsigned flags, pg_storage **out);
/* Wrap memory owned elsewhere; `release(s)` is called when the last reference goes. */
pg_status pg_storage_wrap(pg_device dev, void *data, size_t nbytes, unsigned flags,
                          pg_storage_release_fn release, void *owner, pg_storage **out);
/* Give `s` a new write stamp (see `version`); called where writes are launched. */
void pg_storage_note_write(pg_storage *s);
void pg_storage_retain(pg_storage *s);
void pg_storage_release(pg_storage *s);
/* A reference held by queued work, taken when it is queued (by a thread that has a
 * reference of its own until the task's events are recorded, so no release gives the
 * block back before they are) and dropped when it has run: see `refs` and `detached`. */
void pg_storage_hold(pg_storage *s);
void pg_storage_unhold(pg_storage *s);
/* The references that are not queued tasks' holds (tensors and views), from one reading. */
long pg_storage_users(pg_storage *s);
/* The holds of queued tasks that have not run yet (see pg_storage_hold). */
long pg_storage_holds(pg_storage *s);

/* Shared memory (pg_shared_memory.c), PyTorch's share_memory_ and its "file_descriptor"
 * strategy. Move a cpu storage's bytes into a shared-memory file, in place (every view
 * follows; already shared: nothing to do); its descriptor (-1: not shared); and a new
 * storage mapping a received descriptor of at least `nbytes`, which then owns (closes) it. */
pg_status pg_storage_share(pg_storage *s);
bool pg_storage_is_shared(const pg_storage *s);
int pg_storage_shared_fd(const pg_storage *s);
pg_status pg_storage_from_fd(int fd, size_t nbytes, pg_storage **out);

/* A test's probe (bindings/testing.c, _test_release_race): when set, a release of a
 * device storage calls it right after reading the counts it decides on, so that a test
 * can put another thread's step (a queued task finishing) exactly there. */
typedef void (*pg_storage_probe_fn)(pg_storage *s);
void pg_storage_set_release_probe(pg_storage_probe_fn fn);

/* The one lock over every storage's event record. A backend holds it while
 * it gathers a new task's dependencies and stamps the storages, so the two
 * are seen together; never while waiting. */
void pg_storage_events_lock(void);
void pg_storage_events_unlock(void);
/* Under the lock: record `ev` as the last write, or as the last read of its queue
 * (ev.backend, ev.queue). `role` is unused since reads are kept per queue (the
 * plugin table's signature keeps it). */
void pg_storage_mark_locked(pg_storage *s, pg_event ev, int role, bool write);
/* Takes the lock: pg_storage_mark_locked. */
void pg_storage_mark(pg_storage *s, pg_event ev, int role, bool write);
/* Takes the lock: out[0] = last write, out[1..] = the read slots. */
void pg_storage_pending(pg_storage *s, pg_event out[PG_STORAGE_EVENTS]);
/* Whether `s` may have queued work (false: it never had any). */
static inline bool pg_storage_has_pending(pg_storage *s)
{
    return atomic_load_explicit(&s->queued, memory_order_acquire);
}
/* Block until the pending write (and, if `idle`, reads) of `s` that are NOT
 * on (`be`, `queue`) are done, each through its own backend's wait_event.
 * queue == NULL skips every queue of `be` (the caller orders those itself);
 * be == NULL waits for all. A failed wait on the write records the failure
 * in `s`. Call before queuing work on `s` that its own queue cannot order. */
pg_status pg_storage_wait_others(pg_storage *s, bool idle, const struct pg_backend *be,
                                 void *queue);
/* Block until every queued write to `s` is done; report a deferred failure. */
pg_status pg_storage_wait(pg_storage *s);
/* Block until queued writes *and reads* are done (before the host overwrites
 * it). Does not report a recorded failure: that belongs to the old bytes. */
pg_status pg_storage_wait_idle(pg_storage *s);
/* Record a failure in `s` (first one wins): its root status `st` (which exception a later
 * read raises: pg_async_status) and its message, copied. */
void pg_storage_set_error(pg_storage *s, pg_status st, const char *msg);
/* Copy the recorded failure's message into buf and return its root status; PG_OK (and buf
 * untouched) if there is none. */
pg_status pg_storage_error_copy(pg_storage *s, char *buf, size_t len);
/* A successful write that replaced every byte of `s` happened: its old
 * failure no longer describes the data (backends call this after such a
 * write ran; see pg_tensor_covers_storage). A partial write keeps it. */
void pg_storage_clear_error(pg_storage *s);
/* madvise(MADV_HUGEPAGE) on large host buffers (no-op below 4 MiB). */
void pg_host_advise_hugepages(void *p, size_t n);

#endif
