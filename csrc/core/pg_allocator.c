/* pg_allocator.c - per-device caching allocator (see pg_allocator.h).
 *
 * A cached block sits in two places: where an allocation finds it (a small block:
 * its size's bin, doubly linked; a large one: an array sorted by (size, address),
 * binary searched for the best fit) and the device's list of cached blocks in the
 * order they were freed (where the cap finds the least recently freed one to give
 * back). A large block also knows its segment's neighbours by address (to merge),
 * and a handed-out large block sits in a hash table by address (a free passes the
 * pointer and size a storage kept, not a block). */
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

/* A large block is split only when the rest would be a large block too (PyTorch's rule
 * for its large pool): a rest of SMALL_LIMIT or less stays with the block, so no
 * allocation wastes more than that and the segments do not crumble into slivers. */
#define SPLIT_REST_MIN SMALL_LIMIT

typedef struct block {
    void *ptr;
    size_t size;
    bool large;                       /* size > SMALL_LIMIT: part of a segment that splits */
    bool allocated;                   /* large: handed out (in the live table) */
    struct block *seg_prev, *seg_next; /* large: its segment's neighbours, by address */
    struct block **home;              /* small: the head of its bin */
    struct block *next, *prev;        /* small: in its bin */
    struct block *newer, *older;      /* cached: in the device's freed order */
    pg_event pending[PG_STORAGE_EVENTS]; /* queued work still using it (stream-ordered reuse) */
} block;

typedef struct device_cache {
    pthread_mutex_t lock;
    const pg_backend *be;
    block *small[NUM_SMALL_BINS + 1]; /* index = rounded / SMALL_QUANTUM */
    block **large;          /* cached large blocks, sorted by (size, address): best fit */
    size_t n_large, cap_large;
    block **live;           /* handed-out large blocks by address (open addressing) */
    size_t n_live, cap_live; /* cap_live: 0 or a power of two */
    block *newest, *oldest; /* cached blocks, in the order they were freed */
    size_t cached;
    size_t limit;            /* most bytes kept cached (SIZE_MAX: no cap) */
    size_t segments;         /* bytes of raw allocations held (cached or handed out) */
    size_t segments_peak;    /* their most since the process started */
    bool release_on_miss;    /* host: idle blocks go back before the segments' peak grows */
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
    device_cache *host = &g_cache[pg_device_slot((pg_device){PG_DEV_CPU, 0})];
    host->limit = host_default_limit();
    host->release_on_miss = true;
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

/* A broken invariant of the allocator itself (never the user's input). */
static void pg_abort_internal(const char *what)
{
    fprintf(stderr, "%s\n", what);
    abort();
}

/* ---- the small bins: one exact size each, a block is its own raw allocation ---- */

static block **small_bin(device_cache *c, size_t rounded)
{
    return &c->small[rounded / SMALL_QUANTUM];
}

/* ---- the large free blocks, sorted by (size, address) ---- */

static bool before(const block *a, size_t size, const void *ptr)
{
    return a->size < size || (a->size == size && (uintptr_t)a->ptr < (uintptr_t)ptr);
}

/* The index of the first cached large block not before (size, ptr). Lock held. */
static size_t large_lower_bound(const device_cache *c, size_t size, const void *ptr)
{
    size_t lo = 0, hi = c->n_large;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (before(c->large[mid], size, ptr))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Room for one more cached large block (false: no memory for the bookkeeping). */
static bool large_reserve(device_cache *c)
{
    if (c->n_large < c->cap_large)
        return true;
    size_t cap = c->cap_large ? 2 * c->cap_large : 64;
    block **grown = realloc(c->large, cap * sizeof *grown);
    if (!grown)
        return false;
    c->large = grown;
    c->cap_large = cap;
    return true;
}

static void large_insert(device_cache *c, block *b) /* room reserved */
{
    size_t i = large_lower_bound(c, b->size, b->ptr);
    memmove(&c->large[i + 1], &c->large[i], (c->n_large - i) * sizeof *c->large);
    c->large[i] = b;
    c->n_large++;
}

static void large_remove(device_cache *c, const block *b)
{
    size_t i = large_lower_bound(c, b->size, b->ptr);
    if (i >= c->n_large || c->large[i] != b)
        pg_abort_internal("pg_allocator: a cached block is missing from its size order");
    memmove(&c->large[i], &c->large[i + 1], (c->n_large - i - 1) * sizeof *c->large);
    c->n_large--;
}

/* ---- the live table: handed-out large blocks by address (free finds its block) ---- */

static size_t live_slot(const device_cache *c, const void *ptr)
{
    uint64_t h = (uint64_t)(uintptr_t)ptr * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (c->cap_live - 1);
}

static void live_put(device_cache *c, block *b) /* room reserved */
{
    size_t i = live_slot(c, b->ptr);
    while (c->live[i])
        i = (i + 1) & (c->cap_live - 1);
    c->live[i] = b;
    c->n_live++;
}

/* Room for one more live block, the table at most half full. */
static bool live_reserve(device_cache *c)
{
    if (2 * (c->n_live + 1) <= c->cap_live)
        return true;
    size_t cap = c->cap_live ? 2 * c->cap_live : 256;
    block **old = c->live;
    size_t old_cap = c->cap_live;
    block **grown = calloc(cap, sizeof *grown);
    if (!grown)
        return false;
    c->live = grown;
    c->cap_live = cap;
    c->n_live = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i])
            live_put(c, old[i]);
    free(old);
    return true;
}

/* Take the live block at `ptr` out of the table (linear probing: the entries after it
 * in its run move back so that no lookup stops early). NULL: not ours. */
static block *live_take(device_cache *c, const void *ptr)
{
    if (c->cap_live == 0)
        return NULL;
    size_t mask = c->cap_live - 1, i = live_slot(c, ptr);
    while (c->live[i] && c->live[i]->ptr != ptr)
        i = (i + 1) & mask;
    block *b = c->live[i];
    if (!b)
        return NULL;
    c->live[i] = NULL;
    c->n_live--;
    for (size_t j = (i + 1) & mask; c->live[j]; j = (j + 1) & mask) {
        size_t home = live_slot(c, c->live[j]->ptr);
        /* the entry at j may fill the hole at i when its home is not in (i, j] */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            c->live[i] = c->live[j];
            c->live[j] = NULL;
            i = j;
        }
    }
    return b;
}

/* ---- pending work of merged blocks ---- */

/* Add `from`'s pending events to `into`'s: one per queue (the later point of a queue
 * covers the earlier), in a free slot (the reads' slots first, kept packed). False,
 * `into` unchanged: more queues than slots (the blocks then stay apart). */
static bool events_union(pg_event into[PG_STORAGE_EVENTS], const pg_event from[PG_STORAGE_EVENTS])
{
    pg_event u[PG_STORAGE_EVENTS];
    memcpy(u, into, sizeof u);
    for (int k = 0; k < PG_STORAGE_EVENTS; k++) {
        const pg_event *e = &from[k];
        if (!e->backend)
            continue;
        int slot = -1;
        for (int i = 0; i < PG_STORAGE_EVENTS && slot < 0; i++)
            if (u[i].backend == e->backend && u[i].queue == e->queue)
                slot = i;
        if (slot >= 0) {
            if (e->seq > u[slot].seq)
                u[slot].seq = e->seq;
            continue;
        }
        for (int i = 1; i < PG_STORAGE_EVENTS && slot < 0; i++)
            if (!u[i].backend)
                slot = i;
        if (slot < 0 && !u[0].backend)
            slot = 0;
        if (slot < 0)
            return false;
        u[slot] = *e;
    }
    memcpy(into, u, sizeof u);
    return true;
}

/* ---- the cache: both lists of a cached block ---- */

/* Put a free block in the cache (its bin or the size order, and the freed order, as
 * the newest). Lock held; a large block's room reserved. */
static void cache_block(device_cache *c, block *b)
{
    if (b->large) {
        large_insert(c, b);
    } else {
        block **bin = small_bin(c, b->size);
        b->home = bin;
        b->prev = NULL;
        b->next = *bin;
        if (*bin)
            (*bin)->prev = b;
        *bin = b;
    }
    b->newer = NULL;
    b->older = c->newest;
    if (c->newest)
        c->newest->newer = b;
    else
        c->oldest = b;
    c->newest = b;
    c->cached += b->size;
}

/* Take a cached block out of both lists. Lock held. */
static void unlink_block(device_cache *c, block *b)
{
    if (b->large) {
        large_remove(c, b);
    } else {
        if (b->prev)
            b->prev->next = b->next;
        else
            *b->home = b->next;
        if (b->next)
            b->next->prev = b->prev;
    }
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

/* A cached block that is a whole raw allocation, which the backend can take back. */
static bool whole_segment(const block *b) { return !b->seg_prev && !b->seg_next; }

/* Before a block goes back to the backend: wait for the work still using it. */
static void wait_pending(const block *b)
{
    for (int i = 0; i < PG_STORAGE_EVENTS; i++) {
        const pg_backend *owner = b->pending[i].backend;
        if (owner && owner->wait_event)
            (void)owner->wait_event(owner, b->pending[i]); /* a failure is its data's */
    }
}

/* Take cached whole segments out of the cache (lock held), least recently freed
 * first, until at most `keep` bytes stay cached or `want` bytes are taken, chained
 * through `older`. A free part of a segment still partly handed out stays (its
 * segment goes back when the rest comes home and merges with it). The caller gives
 * them back with release_taken after unlocking: waiting for pending work under the
 * lock could deadlock with a worker that finishes that work and then frees a block
 * of its own. */
static block *take_locked(device_cache *c, size_t keep, size_t want)
{
    block *taken = NULL;
    size_t got = 0;
    for (block *b = c->oldest, *newer; b && c->cached > keep && got < want; b = newer) {
        newer = b->newer;
        if (!whole_segment(b))
            continue;
        unlink_block(c, b);
        c->segments -= b->size;
        got += b->size;
        b->older = taken;
        taken = b;
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

/* Pop a cached block for `rounded` bytes (and the events of the work still using it),
 * or NULL. Lock held. Small: the one of exactly that size freed last (its pages are
 * the likeliest to be in cache, on sim its pending work the likeliest to be ours).
 * Large: the smallest block that fits (lowest address among equals), split when the
 * rest is large enough to serve another request; `spare` is the rest's bookkeeping,
 * taken if used. The block's size is what the caller gets (and gives back). */
static block *pop_cached(device_cache *c, size_t rounded, block **spare)
{
    if (rounded <= SMALL_LIMIT) {
        block *b = *small_bin(c, rounded);
        if (b)
            unlink_block(c, b);
        return b;
    }
    size_t i = large_lower_bound(c, rounded, NULL);
    if (i == c->n_large)
        return NULL;
    block *b = c->large[i];
    unlink_block(c, b);
    if (b->size - rounded > SPLIT_REST_MIN && *spare) {
        block *rest = *spare;
        *spare = NULL;
        *rest = *b;
        rest->ptr = (char *)b->ptr + rounded;
        rest->size = b->size - rounded;
        rest->seg_prev = b;
        rest->seg_next = b->seg_next;
        if (b->seg_next)
            b->seg_next->seg_prev = rest;
        b->seg_next = rest;
        b->size = rounded;
        cache_block(c, rest); /* room: b's slot in the size order was just freed */
    }
    b->allocated = true;
    live_put(c, b);
    return b;
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
    bool large = rounded > SMALL_LIMIT;
    /* bookkeeping first, outside the lock: the block of a miss, the rest of a split */
    block *fresh = malloc(sizeof *fresh), *spare = large ? malloc(sizeof *spare) : NULL;
    pthread_mutex_lock(&c->lock);
    c->be = be;
    if (!fresh || (large && !live_reserve(c))) {
        pthread_mutex_unlock(&c->lock);
        free(fresh);
        free(spare);
        return pg_error_set(PG_ERR_NOMEM, "out of host memory (the allocator's bookkeeping)");
    }
    block *b = pop_cached(c, rounded, &spare);
    bool hit = b != NULL;
    pg_status st = PG_OK;
    void *p = NULL;
    size_t size = rounded;
    if (hit) {
        p = b->ptr;
        size = b->size;
        memcpy(pending, b->pending, sizeof b->pending);
        if (!large)
            free(b);
        pthread_mutex_unlock(&c->lock);
    } else {
        /* a miss grows the segments past their peak: idle whole segments go back first
         * (host), so a step's process peak is what it needs, not what it once cached */
        block *taken = NULL;
        if (c->release_on_miss && c->segments + rounded > c->segments_peak)
            taken = take_locked(c, 0, c->segments + rounded - c->segments_peak);
        c->segments += rounded; /* counted now: a second miss meanwhile sees it */
        if (c->segments > c->segments_peak)
            c->segments_peak = c->segments;
        /* a miss calls the device allocator (cudaMalloc, and cudaFree of the
         * whole cache on the retry): let other Python threads run meanwhile.
         * The GIL is given up only with the lock not held, so a thread that
         * holds the GIL and waits for this lock cannot deadlock with us. */
        pthread_mutex_unlock(&c->lock);
        void *gil = pg_blocking_begin();
        release_taken(be, dev, taken);
        st = be->raw_alloc(be, dev.index, rounded, &p);
        if (st != PG_OK) { /* give the cache back and try once more */
            pthread_mutex_lock(&c->lock);
            taken = take_locked(c, 0, SIZE_MAX);
            pthread_mutex_unlock(&c->lock);
            release_taken(be, dev, taken);
            st = be->raw_alloc(be, dev.index, rounded, &p);
        }
        if (st == PG_OK)
            pg_stats_reserved(dev, (int64_t)rounded);
        pg_blocking_end(gil);
        pthread_mutex_lock(&c->lock);
        if (st == PG_OK && large && !live_reserve(c)) { /* other misses filled the table */
            pthread_mutex_unlock(&c->lock);
            be->raw_free(be, dev.index, p);
            pg_stats_reserved(dev, -(int64_t)rounded);
            st = pg_error_set(PG_ERR_NOMEM, "out of host memory (the allocator's bookkeeping)");
            pthread_mutex_lock(&c->lock);
        }
        if (st != PG_OK) {
            c->segments -= rounded;
        } else if (large) {
            b = fresh;
            fresh = NULL;
            memset(b, 0, sizeof *b);
            b->ptr = p;
            b->size = rounded;
            b->large = true;
            b->allocated = true;
            live_put(c, b);
        }
        pthread_mutex_unlock(&c->lock);
    }
    free(fresh);
    free(spare);
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
    pg_stats_alloc(dev, size, hit);
    *ptr = p;
    *rounded_out = size;
    return PG_OK;
}

/* Merge the free block `b` with its free neighbours in its segment (their pending
 * work joins its own). Lock held; returns the merged block. */
static block *merge_neighbours(device_cache *c, block *b)
{
    block *prev = b->seg_prev;
    if (prev && !prev->allocated && events_union(prev->pending, b->pending)) {
        unlink_block(c, prev);
        prev->size += b->size;
        prev->seg_next = b->seg_next;
        if (b->seg_next)
            b->seg_next->seg_prev = prev;
        free(b);
        b = prev;
    }
    block *next = b->seg_next;
    if (next && !next->allocated && events_union(b->pending, next->pending)) {
        unlink_block(c, next);
        b->size += next->size;
        b->seg_next = next->seg_next;
        if (next->seg_next)
            next->seg_next->seg_prev = b;
        free(next);
    }
    return b;
}

void pg_allocator_free_pending(pg_device dev, void *ptr, size_t rounded,
                               const pg_event pending[PG_STORAGE_EVENTS])
{
    device_cache *c = cache_of(dev);
    pg_stats_free(dev, rounded);
    bool large = rounded > SMALL_LIMIT;
    block *b = large ? NULL : malloc(sizeof *b);
    pthread_mutex_lock(&c->lock);
    const pg_backend *be = c->be;
    if (large) {
        b = live_take(c, ptr);
        if (!b || b->size != rounded)
            pg_abort_internal("pg_allocator: a block freed that was not handed out as such");
        b->allocated = false;
    } else if (b) {
        memset(b, 0, sizeof *b);
        b->ptr = ptr;
        b->size = rounded;
    }
    if (!b || (large && !large_reserve(c))) {
        /* no memory for bookkeeping: a whole segment goes straight back; a part of
         * one is kept handed out (lost until exit) rather than corrupt the cache */
        bool whole = !b || whole_segment(b);
        if (whole && b) {
            c->segments -= b->size;
            free(b);
        } else if (!b) {
            c->segments -= rounded;
        }
        pthread_mutex_unlock(&c->lock);
        if (whole) {
            block tmp = {.ptr = ptr, .size = rounded};
            memcpy(tmp.pending, pending, sizeof tmp.pending);
            wait_pending(&tmp);
            be->raw_free(be, dev.index, ptr);
            pg_stats_reserved(dev, -(int64_t)rounded);
        }
        return;
    }
    memcpy(b->pending, pending, sizeof b->pending);
    if (host_block(dev))
        POISON(ptr, rounded);
    if (large)
        b = merge_neighbours(c, b);
    block *taken;
    if (whole_segment(b) && b->size > c->limit) { /* over the cap by itself: straight back */
        c->segments -= b->size;
        b->older = NULL;
        taken = b;
    } else {
        cache_block(c, b);
        /* over the cap: the least recently freed whole segments make room */
        taken = c->cached > c->limit ? take_locked(c, c->limit, SIZE_MAX) : NULL;
    }
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
    block *taken = be ? take_locked(c, 0, SIZE_MAX) : NULL;
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
    block *taken = be ? take_locked(c, limit, SIZE_MAX) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (taken)
        release_taken(be, dev, taken);
}

void pg_allocator_release_all(void)
{
    for (int s = 0; s < PG_NUM_SLOTS; s++)
        pg_allocator_empty_cache(pg_device_from_slot(s));
}
