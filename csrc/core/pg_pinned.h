/* pg_pinned.h - a caching allocator for pinned (page-locked) host memory.
 *
 * Pinning is slow (cudaHostAlloc maps and locks every page; cudaFreeHost
 * synchronizes the device), and every non-blocking device->host copy and
 * every pin_memory() asks for a pinned buffer, usually of the same few sizes
 * (one per batch). Freed buffers are kept in a free list per rounded size and
 * handed out again, as PyTorch's CachingHostAllocator does; empty_cache()
 * gives them back. A buffer is only freed once no queued copy uses it (the
 * backends retain a pinned storage until its DMA is done), so reuse needs no
 * event. Thread-safe; process-wide (pinned memory belongs to no device). */
#ifndef PG_PINNED_H
#define PG_PINNED_H

#include <stddef.h>
#include <stdint.h>

#include "pg_backend.h"

typedef struct pg_pinned_stats {
    uint64_t reserved;   /* bytes pinned through the backend, in use or cached */
    uint64_t cached;     /* bytes in the free lists */
    uint64_t allocs;     /* calls to the backend's host_alloc_pinned */
    uint64_t cache_hits; /* requests served from the free lists */
} pg_pinned_stats;

/* A pinned buffer of at least nbytes from `be`; *rounded is its size, to be
 * passed back to pg_pinned_free. */
pg_status pg_pinned_alloc(const pg_backend *be, size_t nbytes, void **ptr, size_t *rounded);
void pg_pinned_free(const pg_backend *be, void *ptr, size_t rounded);
/* Give every cached buffer back to its backend. */
void pg_pinned_empty_cache(void);
void pg_pinned_stats_get(pg_pinned_stats *out);

#endif
