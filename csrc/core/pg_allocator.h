/* pg_allocator.h - a caching allocator per device, above a backend's raw_alloc.
 *
 * A training loop frees and reallocates the same sizes every step; going to
 * cudaMalloc (which synchronizes) or malloc each time would dominate small
 * steps. Freed blocks are kept in per-size free lists (sizes rounded up to
 * 512 B, or to 2 MiB above 1 MiB) and handed out again. empty_cache() gives
 * them back. On a failed raw allocation the cache is emptied and the
 * allocation retried once; the final error names the size, the device and
 * the memory in use. Thread-safe (a mutex per device): sim workers free
 * blocks when queued work finishes. */
#ifndef PG_ALLOCATOR_H
#define PG_ALLOCATOR_H

#include <stddef.h>

#include "pg_backend.h"

pg_status pg_allocator_alloc(const pg_backend *be, pg_device dev, size_t nbytes, void **ptr,
                             size_t *rounded);
void pg_allocator_free(pg_device dev, void *ptr, size_t rounded);
/* Return every cached (free) block of `dev` to its backend. */
void pg_allocator_empty_cache(pg_device dev);
/* Bytes held in free lists of `dev`. */
size_t pg_allocator_cached(pg_device dev);
/* Empty every device's cache (at exit). */
void pg_allocator_release_all(void);

#endif
