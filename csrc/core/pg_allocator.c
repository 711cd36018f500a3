/* pg_allocator.c - per-device caching allocator (see pg_allocator.h).
 *
 * A cached block sits in two lists: its size's bin (where an allocation of that
 * size finds it) and the device's list of cached blocks in the order they were
 * freed (where the cap finds the least recently freed one to give back). Both are
 * doubly linked, so taking a block out of either is O(1). */
#include "pg_allocator.h"
#include "pg_fork.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg_stats.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define SMALL_QUANTUM ((size_t)512)
#define SMALL_LIMIT ((size_t)1 << 20)
#define LARGE_QUANTUM ((size_t)2 << 20)      /* devices: cudaMalloc-friendly, as PyTorch */
#define HOST_LARGE_QUANTUM ((size_t)64 << 10) /* cpu: pages are cheap to leave untouched,
                                               * but memory_allocated counts the block */
#define NUM_SMALL_BINS (SMALL_LIMIT / SMALL_QUANTUM)

typedef struct block {
    void *ptr;
    size_t size;
    struct block **home;              /* the head of its bin */
    struct block *next, *prev;        /* in its bin */
    struct block *newer, *older;      /* in the device's freed order */
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
    block *newest, *oldest; /* cached blocks, in the order they were freed */
    size_t cached;
    size_t limit; /* most bytes kept cached (SIZE_MAX: no cap) */
} device_cache;

static device_cache g_cache[PG_NUM_SLOTS];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The host cache's default cap: PYGPU_HOST_CACHE_MB, else a quarter of the
 * machine's memory (host memory is shared with everything else the process and the
 * machine do; a device's memory is pygpu's alone, so devices keep no cap). */
static size_t host_default_limit(void)
{
    const char *env = getenv("PYGPU_HOST_CACHE_MB");
    if (env && *env) {
        char *end;
        unsigned long long mb = strtoull(env, &end, 10);
        if (*end == '\0' && mb < ((unsigned long long)SIZE_MAX >> 20))
            return (size_t)mb << 20;
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return (size_t)1 << 30;
    return (size_t)pages / 4 * (size_t)page;
}

static void init_locks(void)
{
    for (int i = 0; i < PG_NUM_SLOTS; i++) {
        pthread_mutex_init(&g_cache[i].lock, NULL);
        g_cache[i].limit = SIZE_MAX;
    }
    g_cache[pg_device_slot((pg_device){PG_DEV_CPU, 0})].limit = host_default_limit();
}

void pg_allocator_after_fork(void)
{
    for (int i = 0; i < PG_NUM_SLOTS; i++)
        pthread_mutex_init(&g_cache[i].lock, NULL);
}

static device_cache *cache_of(pg_device dev)
{
    pthread_once(&g_once, init_locks);
    return &g_cache[pg_device_slot(dev)];
}

/* Host blocks are ours to poison while cached (ASan then reports a use after
 * free of a tensor's memory, or a write past its end); a device's may not be
 * host memory at all, and sim's are still used by queued work when they come back. */
static bool host_block(pg_device dev) { return dev.type == PG_DEV_CPU; }

size_t pg_allocator_round(pg_device dev, size_t n)
{
    if (n == 0)
        n = 1;
    size_t q = n <= SMALL_LIMIT ? SMALL_QUANTUM
                                : dev.type == PG_DEV_CPU ? HOST_LARGE_QUANTUM : LARGE_QUANTUM;
    return n > SIZE_MAX - q ? 0 : (n + q - 1) / q * q;
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

/* Take `b` out of both lists. Lock held. */
static void unlink_block(device_cache *c, block *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        *b->home = b->next;
    if (b->next)
        b->next->prev = b->prev;
    if (b->newer)
        b->newer->older = b->older;
    else
        c->newest = b->older;
    if (b->older)
        b->older->newer = b->newer;
    else
        c->oldest = b->newer;
    c->cached -= b->size;
}

/* Pop a cached block of exactly `rounded` bytes (and the events of the work still
 * using it), or NULL. Lock held. The block is the one freed last: its pages are the
 * likeliest to be in cache, and on sim its pending work the likeliest to be ours. */
static void *pop_cached(device_cache *c, size_t rounded, pg_event pending[PG_STORAGE_EVENTS])
{
    block **bin = bin_for(c, rounded, false);
    if (!bin || !*bin)
        return NULL;
    block *b = *bin;
    unlink_block(c, b);
    void *p = b->ptr;
    memcpy(pending, b->pending, sizeof b->pending);
    free(b);
    return p;
}

/* Before a block goes back to the backend: wait for the work still using it. */
static void wait_pending(const block *b)
{
    for (int i = 0; i < PG_STORAGE_EVENTS; i++) {
        const pg_backend *owner = b->pending[i].backend;
        if (owner && owner->wait_event)
            (void)owner->wait_event(owner, b->pending[i]); /* a failure is its data's */
    }
}

/* Take cached blocks out of the cache (lock held), least recently freed first,
 * until at most `keep` bytes stay cached, chained through `older`. The caller gives
 * them back with release_taken after unlocking: waiting for pending work under the
 * lock could deadlock with a worker that finishes that work and then frees a block
 * of its own. */
static block *take_locked(device_cache *c, size_t keep)
{
    block *taken = NULL;
    while (c->cached > keep && c->oldest) {
        block *b = c->oldest;
        unlink_block(c, b);
        b->older = taken;
        taken = b;
    }
    if (c->cached == 0) { /* every bin is empty: the large bins' headers go too */
        while (c->large) {
            large_bin *lb = c->large;
            c->large = lb->next;
            free(lb);
        }
    }
    return taken;
}

static void release_taken(const pg_backend *be, pg_device dev, block *taken)
{
    while (taken) {
        block *b = taken;
        taken = b->older;
        wait_pending(b);
        if (host_block(dev))
            UNPOISON(b->ptr, b->size);
        be->raw_free(be, dev.index, b->ptr);
        pg_stats_reserved(dev, -(int64_t)b->size);
        free(b);
    }
}

pg_status pg_allocator_alloc(const pg_backend *be, pg_device dev, size_t nbytes, void **ptr,
                             size_t *rounded_out, pg_event pending[PG_STORAGE_EVENTS])
{
    pg_event none[PG_STORAGE_EVENTS];
    if (!pending)
        pending = none;
    memset(pending, 0, sizeof none);
    device_cache *c = cache_of(dev);
    size_t rounded = pg_allocator_round(dev, nbytes);
    if (rounded == 0)
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
        st = be->raw_alloc(be, dev.index, rounded, &p);
        if (st != PG_OK) { /* give the cache back and try once more */
            pthread_mutex_lock(&c->lock);
            block *taken = take_locked(c, 0);
            pthread_mutex_unlock(&c->lock);
            release_taken(be, dev, taken);
            st = be->raw_alloc(be, dev.index, rounded, &p);
        }
        if (st == PG_OK)
            pg_stats_reserved(dev, (int64_t)rounded);
        pg_blocking_end(gil);
    } else {
        pthread_mutex_unlock(&c->lock);
    }
    if (st != PG_OK) {
        size_t total = be->total_memory ? be->total_memory(be, dev.index) : 0;
        char whole[64] = "";
        if (total)
            snprintf(whole, sizeof whole, " of %.1f MiB in total", (double)total / 1048576.0);
        return pg_error_set(PG_ERR_NOMEM,
                            "out of memory on %s:%d: cannot allocate %zu bytes (%.1f MiB); "
                            "%.1f MiB in use by tensors%s; free tensors you no longer need "
                            "or call empty_cache()",
                            be->name, dev.index, nbytes, (double)nbytes / 1048576.0,
                            (double)pg_stats_mem_current(dev) / 1048576.0, whole);
    }
    if (host_block(dev)) /* the bytes past the request stay poisoned: a write there is caught */
        UNPOISON(p, nbytes);
    pg_stats_alloc(dev, rounded, hit);
    *ptr = p;
    *rounded_out = rounded;
    return PG_OK;
}

void pg_allocator_free_pending(pg_device dev, void *ptr, size_t rounded,
                               const pg_event pending[PG_STORAGE_EVENTS])
{
    device_cache *c = cache_of(dev);
    pg_stats_free(dev, rounded);
    block *b = malloc(sizeof *b);
    pthread_mutex_lock(&c->lock);
    const pg_backend *be = c->be;
    block **bin = b && rounded <= c->limit ? bin_for(c, rounded, true) : NULL;
    if (!bin) { /* over the cap by itself, or no memory for bookkeeping: straight back */
        pthread_mutex_unlock(&c->lock);
        block tmp = {.ptr = ptr, .size = rounded};
        memcpy(tmp.pending, pending, sizeof tmp.pending);
        wait_pending(&tmp);
        be->raw_free(be, dev.index, ptr);
        pg_stats_reserved(dev, -(int64_t)rounded);
        free(b);
        return;
    }
    /* the least recently freed blocks make room under the cap */
    block *taken = c->cached + rounded > c->limit ? take_locked(c, c->limit - rounded) : NULL;
    if (taken) /* take_locked may have emptied the large bins: find ours again */
        bin = bin_for(c, rounded, true);
    if (!bin) {
        pthread_mutex_unlock(&c->lock);
        release_taken(be, dev, taken);
        block tmp = {.ptr = ptr, .size = rounded};
        memcpy(tmp.pending, pending, sizeof tmp.pending);
        wait_pending(&tmp);
        be->raw_free(be, dev.index, ptr);
        pg_stats_reserved(dev, -(int64_t)rounded);
        free(b);
        return;
    }
    b->ptr = ptr;
    b->size = rounded;
    memcpy(b->pending, pending, sizeof b->pending);
    b->home = bin;
    b->prev = NULL;
    b->next = *bin;
    if (*bin)
        (*bin)->prev = b;
    *bin = b;
    b->newer = NULL;
    b->older = c->newest;
    if (c->newest)
        c->newest->newer = b;
    else
        c->oldest = b;
    c->newest = b;
    c->cached += rounded;
    if (host_block(dev))
        POISON(ptr, rounded);
    pthread_mutex_unlock(&c->lock);
    release_taken(be, dev, taken);
}

void pg_allocator_free(pg_device dev, void *ptr, size_t rounded)
{
    static const pg_event none[PG_STORAGE_EVENTS];
    pg_allocator_free_pending(dev, ptr, rounded, none);
}

void pg_allocator_empty_cache(pg_device dev)
{
    device_cache *c = cache_of(dev);
    pthread_mutex_lock(&c->lock);
    const pg_backend *be = c->be;
    block *taken = be ? take_locked(c, 0) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (taken)
        release_taken(be, dev, taken);
}

size_t pg_allocator_cached(pg_device dev)
{
    device_cache *c = cache_of(dev);
    pthread_mutex_lock(&c->lock);
    size_t n = c->cached;
    pthread_mutex_unlock(&c->lock);
    return n;
}

size_t pg_allocator_limit(pg_device dev)
{
    device_cache *c = cache_of(dev);
    pthread_mutex_lock(&c->lock);
    size_t n = c->limit;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void pg_allocator_set_limit(pg_device dev, size_t limit)
{
    device_cache *c = cache_of(dev);
    pthread_mutex_lock(&c->lock);
    c->limit = limit;
    const pg_backend *be = c->be;
    block *taken = be ? take_locked(c, limit) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (taken)
        release_taken(be, dev, taken);
}

void pg_allocator_release_all(void)
{
    for (int s = 0; s < PG_NUM_SLOTS; s++)
        pg_allocator_empty_cache(pg_device_from_slot(s));
}
