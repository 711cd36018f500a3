/* pg_allocator.c - per-device caching allocator (see pg_allocator.h). */
#include "pg_allocator.h"

#include <pthread.h>
#include <stdlib.h>

#include "pg_stats.h"

#define SMALL_QUANTUM 512u
#define SMALL_LIMIT (1u << 20)
#define LARGE_QUANTUM (2u << 20)
#define NUM_SMALL_BINS (SMALL_LIMIT / SMALL_QUANTUM)

typedef struct block {
    void *ptr;
    struct block *next;
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

/* Pop a cached block of exactly `rounded` bytes, or NULL. Lock held. */
static void *pop_cached(device_cache *c, size_t rounded)
{
    block **bin = bin_for(c, rounded, false);
    if (!bin || !*bin)
        return NULL;
    block *b = *bin;
    *bin = b->next;
    void *p = b->ptr;
    free(b);
    c->cached -= rounded;
    return p;
}

static void empty_locked(device_cache *c, pg_device dev)
{
    if (!c->be)
        return;
    for (size_t i = 0; i <= NUM_SMALL_BINS; i++) {
        while (c->small[i]) {
            block *b = c->small[i];
            c->small[i] = b->next;
            c->be->raw_free(c->be, dev.index, b->ptr);
            pg_stats_reserved(dev, -(int64_t)(i * SMALL_QUANTUM));
            free(b);
        }
    }
    while (c->large) {
        large_bin *lb = c->large;
        c->large = lb->next;
        while (lb->blocks) {
            block *b = lb->blocks;
            lb->blocks = b->next;
            c->be->raw_free(c->be, dev.index, b->ptr);
            pg_stats_reserved(dev, -(int64_t)lb->size);
            free(b);
        }
        free(lb);
    }
    c->cached = 0;
}

pg_status pg_allocator_alloc(const pg_backend *be, pg_device dev, size_t nbytes, void **ptr,
                             size_t *rounded_out)
{
    pthread_once(&g_once, init_locks);
    device_cache *c = &g_cache[pg_device_slot(dev)];
    size_t rounded = round_size(nbytes);
    if (rounded < nbytes)
        return pg_error_set(PG_ERR_NOMEM, "cannot allocate %zu bytes on %s:%d: size overflows",
                            nbytes, be->name, dev.index);
    pthread_mutex_lock(&c->lock);
    c->be = be;
    void *p = pop_cached(c, rounded);
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
            empty_locked(c, dev);
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

void pg_allocator_free(pg_device dev, void *ptr, size_t rounded)
{
    device_cache *c = &g_cache[pg_device_slot(dev)];
    pg_stats_free(dev, rounded);
    block *b = malloc(sizeof *b);
    pthread_mutex_lock(&c->lock);
    block **bin = b ? bin_for(c, rounded, true) : NULL;
    if (!bin) { /* no memory for bookkeeping: give the block straight back */
        c->be->raw_free(c->be, dev.index, ptr);
        pg_stats_reserved(dev, -(int64_t)rounded);
        free(b);
    } else {
        b->ptr = ptr;
        b->next = *bin;
        *bin = b;
        c->cached += rounded;
    }
    pthread_mutex_unlock(&c->lock);
}

void pg_allocator_empty_cache(pg_device dev)
{
    pthread_once(&g_once, init_locks);
    device_cache *c = &g_cache[pg_device_slot(dev)];
    pthread_mutex_lock(&c->lock);
    empty_locked(c, dev);
    pthread_mutex_unlock(&c->lock);
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
