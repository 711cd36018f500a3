/* pg_allocator.c - per-device caching allocator (see pg_allocator.h). */
#include "pg_allocator.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pg_stats.h"

#define SMALL_QUANTUM 512u
#define SMALL_LIMIT (1u << 20)
#define LARGE_QUANTUM (2u << 20)
#define NUM_SMALL_BINS (SMALL_LIMIT / SMALL_QUANTUM)

typedef struct block {
    void *ptr;
    struct block *next;
    pg_event pending[PG_STORAGE_EVENTS]; /* queued work still using it (stream-ordered reuse) */
} block;

typedef struct large_bin {
    size_t size;
    block *blocks;
    struct large_bin *next;
} large_bin;

typedef struct device_cache {
    pthread_mutex_t lock;
    const pg_backend *be;
    block *small[NUM_SMALL_BINS + 1]; /* index = rounded / SMALL_QUANTUM */
    large_bin *large;
    size_t cached;
} device_cache;

static device_cache g_cache[PG_NUM_SLOTS];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_locks(void)
{
    for (int i = 0; i < PG_NUM_SLOTS; i++)
        pthread_mutex_init(&g_cache[i].lock, NULL);
}

static size_t round_size(size_t n)
{
    if (n == 0)
        n = 1;
    if (n <= SMALL_LIMIT)
        return (n + SMALL_QUANTUM - 1) / SMALL_QUANTUM * SMALL_QUANTUM;
    return (n + LARGE_QUANTUM - 1) / LARGE_QUANTUM * LARGE_QUANTUM;
}

static block **bin_for(device_cache *c, size_t rounded, bool create)
{
    if (rounded <= SMALL_LIMIT)
        return &c->small[rounded / SMALL_QUANTUM];
    for (large_bin *b = c->large; b; b = b->next)
        if (b->size == rounded)
            return &b->blocks;
    if (!create)
        return NULL;
    large_bin *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->size = rounded;
    b->next = c->large;
    c->large = b;
    return &b->blocks;
}

/* Pop a cached block of exactly `rounded` bytes (and the events of the work still
 * using it), or NULL. Lock held. */
static void *pop_cached(device_cache *c, size_t rounded, pg_event pending[PG_STORAGE_EVENTS])
{
    block **bin = bin_for(c, rounded, false);
    if (!bin || !*bin)
        return NULL;
    block *b = *bin;
    *bin = b->next;
    void *p = b->ptr;
    memcpy(pending, b->pending, sizeof b->pending);
    free(b);
    c->cached -= rounded;
    return p;
}

/* Before a block goes back to the backend: wait for the work still using it. */
static void wait_pending(const block *b)
{
    for (int i = 0; i < PG_STORAGE_EVENTS; i++) {
        const pg_backend *owner = b->pending[i].backend;
        if (owner && owner->wait_event)
            (void)owner->wait_event(owner, b->pending[i]); /* a failure is its data's, not ours */
    }
}

typedef struct sized_block {
    block *b;
    size_t size;
} sized_block;

/* Take every cached block out of the cache (lock held) into a malloc'd array; the
 * caller gives them back with free_taken after unlocking: waiting for pending work
 * under the lock could deadlock with a worker that finishes that work and then
 * frees a block of its own. NULL and *n = 0 when there are none (or no memory:
 * the cache is then left as it was). */
static sized_block *take_all_locked(device_cache *c, size_t *n)
{
    size_t count = 0;
    for (size_t i = 0; i <= NUM_SMALL_BINS; i++)
        for (block *b = c->small[i]; b; b = b->next)
            count++;
    for (large_bin *lb = c->large; lb; lb = lb->next)
        for (block *b = lb->blocks; b; b = b->next)
            count++;
    *n = 0;
    sized_block *out = count ? malloc(count * sizeof *out) : NULL;
    if (!out)
        return NULL;
    for (size_t i = 0; i <= NUM_SMALL_BINS; i++) {
        while (c->small[i]) {
            block *b = c->small[i];
            c->small[i] = b->next;
            out[(*n)++] = (sized_block){b, i * SMALL_QUANTUM};
        }
    }
    while (c->large) {
        large_bin *lb = c->large;
        c->large = lb->next;
        while (lb->blocks) {
            block *b = lb->blocks;
            lb->blocks = b->next;
            out[(*n)++] = (sized_block){b, lb->size};
        }
        free(lb);
    }
    c->cached = 0;
    return out;
}

static void free_taken(const pg_backend *be, pg_device dev, sized_block *taken, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        wait_pending(taken[i].b);
        be->raw_free(be, dev.index, taken[i].b->ptr);
        pg_stats_reserved(dev, -(int64_t)taken[i].size);
        free(taken[i].b);
    }
    free(taken);
}

pg_status pg_allocator_alloc(const pg_backend *be, pg_device dev, size_t nbytes, void **ptr,
                             size_t *rounded_out, pg_event pending[PG_STORAGE_EVENTS])
{
    pg_event none[PG_STORAGE_EVENTS];
    if (!pending)
        pending = none;
    memset(pending, 0, sizeof none);
    pthread_once(&g_once, init_locks);
    device_cache *c = &g_cache[pg_device_slot(dev)];
    size_t rounded = round_size(nbytes);
    if (rounded < nbytes)
        return pg_error_set(PG_ERR_NOMEM, "cannot allocate %zu bytes on %s:%d: size overflows",
                            nbytes, be->name, dev.index);
    pthread_mutex_lock(&c->lock);
    c->be = be;
    void *p = pop_cached(c, rounded, pending);
    bool hit = p != NULL;
    pg_status st = PG_OK;
    if (!p) {
        /* a miss calls the device allocator (cudaMalloc, and cudaFree of the
         * whole cache on the retry): let other Python threads run meanwhile.
         * The GIL is given up only with the lock not held, so a thread that
         * holds the GIL and waits for this lock cannot deadlock with us. */
        pthread_mutex_unlock(&c->lock);
        void *gil = pg_blocking_begin();
        pthread_mutex_lock(&c->lock);
        st = be->raw_alloc(be, dev.index, rounded, &p);
        if (st != PG_OK) { /* give the cache back and try once more */
            size_t n;
            sized_block *taken = take_all_locked(c, &n);
            pthread_mutex_unlock(&c->lock);
            free_taken(be, dev, taken, n);
            pthread_mutex_lock(&c->lock);
            st = be->raw_alloc(be, dev.index, rounded, &p);
        }
        if (st == PG_OK)
            pg_stats_reserved(dev, (int64_t)rounded);
        pthread_mutex_unlock(&c->lock);
        pg_blocking_end(gil);
    } else {
        pthread_mutex_unlock(&c->lock);
    }
    if (st != PG_OK) {
        size_t total = be->total_memory ? be->total_memory(be, dev.index) : 0;
        return pg_error_set(PG_ERR_NOMEM,
                            "out of memory on %s:%d: cannot allocate %zu bytes (%.1f MiB); "
                            "%.1f MiB in use by tensors of %.1f MiB in total; free tensors you "
                            "no longer need or call empty_cache()",
                            be->name, dev.index, nbytes, (double)nbytes / 1048576.0,
                            (double)pg_stats_mem_current(dev) / 1048576.0,
                            (double)total / 1048576.0);
    }
    pg_stats_alloc(dev, rounded, hit);
    *ptr = p;
    *rounded_out = rounded;
    return PG_OK;
}

void pg_allocator_free_pending(pg_device dev, void *ptr, size_t rounded,
                               const pg_event pending[PG_STORAGE_EVENTS])
{
    device_cache *c = &g_cache[pg_device_slot(dev)];
    pg_stats_free(dev, rounded);
    block *b = malloc(sizeof *b);
    pthread_mutex_lock(&c->lock);
    block **bin = b ? bin_for(c, rounded, true) : NULL;
    if (!bin) { /* no memory for bookkeeping: give the block straight back */
        pthread_mutex_unlock(&c->lock);
        block tmp;
        memcpy(tmp.pending, pending, sizeof tmp.pending);
        wait_pending(&tmp);
        c->be->raw_free(c->be, dev.index, ptr);
        pg_stats_reserved(dev, -(int64_t)rounded);
        free(b);
        return;
    }
    b->ptr = ptr;
    memcpy(b->pending, pending, sizeof b->pending);
    b->next = *bin;
    *bin = b;
    c->cached += rounded;
    pthread_mutex_unlock(&c->lock);
}

void pg_allocator_free(pg_device dev, void *ptr, size_t rounded)
{
    static const pg_event none[PG_STORAGE_EVENTS];
    pg_allocator_free_pending(dev, ptr, rounded, none);
}

void pg_allocator_empty_cache(pg_device dev)
{
    pthread_once(&g_once, init_locks);
    device_cache *c = &g_cache[pg_device_slot(dev)];
    pthread_mutex_lock(&c->lock);
    const pg_backend *be = c->be;
    size_t n = 0;
    sized_block *taken = be ? take_all_locked(c, &n) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (taken)
        free_taken(be, dev, taken, n);
}

size_t pg_allocator_cached(pg_device dev)
{
    pthread_once(&g_once, init_locks);
    device_cache *c = &g_cache[pg_device_slot(dev)];
    pthread_mutex_lock(&c->lock);
    size_t n = c->cached;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void pg_allocator_release_all(void)
{
    for (int s = 1; s < PG_NUM_SLOTS; s++)
        pg_allocator_empty_cache(pg_device_from_slot(s));
}
