/* pg_storage.h - reference-counted memory owned by one device.
 *
 * A storage is where bytes live and who frees them; it knows nothing of
 * shapes. Tensors (pg_tensor.h) are views onto a storage: base + offset +
 * strides, each holding one reference, so a view keeps its base alive.
 *
 * Asynchronous backends (sim, cuda) queue work that reads or writes a
 * storage. The storage records the last queued write and reads as events
 * (stream, sequence number) owned by the backend that queued them; anyone
 * who needs the bytes calls pg_storage_wait(), which asks that backend. An op
 * that fails asynchronously leaves its message in `error`, so the failure
 * surfaces at the next wait on the data it touched. */
#ifndef PG_STORAGE_H
#define PG_STORAGE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_device.h"
#include "pg_status.h"

struct pg_backend;

/* A point in a backend's queue: "work up to `seq` on `stream` is done". */
typedef struct pg_event {
    void *stream; /* backend-defined; NULL means "nothing pending" */
    uint64_t seq;
} pg_event;

enum {
    PG_STORAGE_PINNED = 1u << 0,   /* page-locked host memory (fast async copies) */
    PG_STORAGE_EXTERNAL = 1u << 1, /* memory borrowed from another owner (NumPy, DLPack) */
    PG_STORAGE_READONLY = 1u << 2, /* the owner forbids writes */
};

typedef struct pg_storage pg_storage;
typedef void (*pg_storage_release_fn)(pg_storage *s);

struct pg_storage {
    atomic_long refcount;
    pg_device device;
    void *data;
    size_t nbytes;   /* what the user asked for */
    size_t capacity; /* what the allocator handed out (>= nbytes) */
    unsigned flags;
    pg_storage_release_fn release; /* frees `data` (allocator or external owner) */
    void *owner;                   /* what `release` needs: a PyObject, a DLPack capsule... */

    /* Pending asynchronous work, maintained by the backend that queued it. */
    const struct pg_backend *writer; /* backend whose queue holds the last write */
    pg_event last_write;
    pg_event last_read[2]; /* per stream role of that device: compute, copy */
    _Atomic(char *) error; /* malloc'd message of the failed op that produced the data */
};

/* Allocate `nbytes` on `dev` through its backend (and caching allocator). */
pg_status pg_storage_new(pg_device dev, size_t nbytes, unsigned flags, pg_storage **out);
/* Wrap memory owned elsewhere; `release(s)` is called when the last reference goes. */
pg_status pg_storage_wrap(pg_device dev, void *data, size_t nbytes, unsigned flags,
                          pg_storage_release_fn release, void *owner, pg_storage **out);
void pg_storage_retain(pg_storage *s);
void pg_storage_release(pg_storage *s);

/* Block until every queued write to `s` is done; report a deferred failure. */
pg_status pg_storage_wait(pg_storage *s);
/* Block until queued writes *and reads* are done (before the host overwrites
 * it). Does not report a recorded failure: that belongs to the old bytes. */
pg_status pg_storage_wait_idle(pg_storage *s);
/* Record a failure in `s` (first one wins); `msg` is copied. */
void pg_storage_set_error(pg_storage *s, const char *msg);
/* Copy the recorded failure into buf; false if there is none. */
bool pg_storage_error_copy(pg_storage *s, char *buf, size_t len);
/* A successful write that replaced every byte of `s` happened: its old
 * failure no longer describes the data (backends call this after such a
 * write ran; see pg_tensor_covers_storage). A partial write keeps it. */
void pg_storage_clear_error(pg_storage *s);
/* madvise(MADV_HUGEPAGE) on large host buffers (no-op below 4 MiB). */
void pg_host_advise_hugepages(void *p, size_t n);

#endif
