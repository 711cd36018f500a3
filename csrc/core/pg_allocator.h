/* pg_allocator.h - a caching allocator per device, above a backend's raw_alloc.
 *
 * A training loop frees and reallocates the same sizes every step; going to
 * cudaMalloc (which synchronizes) or malloc each time would dominate small
 * steps. Sizes round up to 512 B, or to 2 MiB above 1 MiB. Small blocks (up to
 * 1 MiB) are kept in per-size free lists and handed out again. Large ones are
 * PyTorch's CUDACachingAllocator large pool: a raw allocation is a segment; a
 * request takes the smallest cached block that fits (best fit), split when the
 * rest is above 1 MiB; a freed block merges with its free neighbours in its
 * segment (their pending work joined). A storage's capacity is its block's
 * size. empty_cache() and the cap give back whole free segments only. On a
 * failed raw allocation the cache is emptied and the allocation retried once;
 * the final error names the size, the device and the memory in use. The host
 * also gives idle whole segments back, oldest first, before a miss would take
 * its segments past their earlier peak (RSS is the process's; a device keeps
 * them, as freeing there synchronizes). Thread-safe (a mutex per device): sim
 * workers free blocks when queued work finishes, cpu pool threads free
 * temporaries.
 *
 * The cpu device uses it too, for host blocks of PG_HOST_CACHE_MIN bytes and
 * more (smaller ones are one malloc with the storage header: glibc's own bins
 * already reuse those). Without it every large activation was a fresh mmap
 * and its page faults, each step of a training loop. Host blocks above 1 MiB
 * round to 64 KiB, not 2 MiB. The host cache has a cap (PYGPU_HOST_CACHE_MB,
 * default a quarter of the machine's memory): a free that would cache more
 * gives back the least recently freed blocks first. Devices have no cap (their
 * memory is pygpu's; a failed allocation empties the cache and retries).
 *
 * Stream-ordered reuse, as PyTorch's CUDA allocator does it: a block whose
 * tensors are all gone on the host may still be read or written by work that
 * is queued (sim tasks hold their storages until they run). It comes back to
 * the cache at once, with the events of that pending work (pg_allocator_free_
 * pending); whoever gets it next inherits the events as its storage's pending
 * work, so a later op on the same queue is ordered after it for free and any
 * other queue or the host waits for it. Emptying the cache waits for them
 * before the memory goes back to the backend. Without this, a training loop
 * that runs ahead of its device holds a second step's worth of memory. */
#ifndef PG_ALLOCATOR_H
#define PG_ALLOCATOR_H

#include <stddef.h>

/* host storages this large or larger come from the cpu cache (see above) */
#define PG_HOST_CACHE_MIN ((size_t)64 << 10)

#include "pg_backend.h"

/* pending (may be NULL): the events of queued work still using the block, which the
 * new storage must treat as its own pending work; entries with a NULL backend: none. */
pg_status pg_allocator_alloc(const pg_backend *be, pg_device dev, size_t nbytes, void **ptr,
                             size_t *rounded, pg_event pending[PG_STORAGE_EVENTS]);
void pg_allocator_free(pg_device dev, void *ptr, size_t rounded);
/* Free a block that queued work (named by `pending`) still uses: see above. */
void pg_allocator_free_pending(pg_device dev, void *ptr, size_t rounded,
                               const pg_event pending[PG_STORAGE_EVENTS]);
/* The block size an allocation of n bytes gets on `dev` (0: overflow). */
size_t pg_allocator_round(pg_device dev, size_t n);
/* Most bytes `dev` keeps cached (SIZE_MAX: no cap); setting it gives back the
 * least recently freed blocks above it. */
size_t pg_allocator_limit(pg_device dev);
void pg_allocator_set_limit(pg_device dev, size_t limit);
/* Return every cached (free) block of `dev` to its backend. */
void pg_allocator_empty_cache(pg_device dev);
/* Bytes held in free lists of `dev`. */
size_t pg_allocator_cached(pg_device dev);
/* Empty every device's cache (at exit). */
void pg_allocator_release_all(void);

#endif
