/* pg_pinned.c - the caching allocator for pinned host memory (see pg_pinned.h). */
#include "pg_pinned.h"
#include "pg_fork.h"

#include <pthread.h>
#include <stdlib.h>

#define SMALL_QUANTUM ((size_t)512)
#define SMALL_LIMIT ((size_t)1 << 20)
#define LARGE_QUANTUM ((size_t)2 << 20)

typedef struct pinned_block {
    void *ptr;
    size_t size;
    const pg_backend *be;
    struct pinned_block *next;
} pinned_block;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pinned_block *g_free; /* few entries (a handful of batch sizes): a list will do */
static pg_pinned_stats g_stats;

void pg_pinned_after_fork(void) { pthread_mutex_init(&g_lock, NULL); }

static size_t round_size(size_t n)
{
    if (n == 0)
        n = 1;
    size_t q = n <= SMALL_LIMIT ? SMALL_QUANTUM : LARGE_QUANTUM;
    return n > SIZE_MAX - q ? n : (n + q - 1) / q * q;
}

static bool take_cached(const pg_backend *be, size_t size, void **ptr)
{
    pthread_mutex_lock(&g_lock);
    for (pinned_block **p = &g_free; *p; p = &(*p)->next) {
        pinned_block *b = *p;
        if (b->be == be && b->size == size) {
            *p = b->next;
            *ptr = b->ptr;
            g_stats.cached -= size;
            g_stats.cache_hits++;
            pthread_mutex_unlock(&g_lock);
            free(b);
            return true;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return false;
}

pg_status pg_pinned_alloc(const pg_backend *be, size_t nbytes, void **ptr, size_t *rounded)
{
    size_t size = round_size(nbytes);
    *rounded = size;
    if (take_cached(be, size, ptr))
        return PG_OK;
    void *gil = pg_blocking_begin(); /* cudaHostAlloc pins pages: slow for big buffers */
    pg_status st = be->host_alloc_pinned(be, size, ptr);
    pg_blocking_end(gil);
    if (st != PG_OK) {
        /* the cache may hold what the runtime is missing: give it back, retry once */
        pthread_mutex_lock(&g_lock);
        bool any = g_free != NULL;
        pthread_mutex_unlock(&g_lock);
        if (!any)
            return st;
        pg_pinned_empty_cache();
        gil = pg_blocking_begin();
        st = be->host_alloc_pinned(be, size, ptr);
        pg_blocking_end(gil);
        if (st != PG_OK)
            return st;
    }
    pthread_mutex_lock(&g_lock);
    g_stats.allocs++;
    g_stats.reserved += size;
    pthread_mutex_unlock(&g_lock);
    return PG_OK;
}

static void backend_free(const pg_backend *be, void *ptr)
{
    void *gil = pg_blocking_begin(); /* cudaFreeHost can wait for the device */
    be->host_free_pinned(be, ptr);
    pg_blocking_end(gil);
}

void pg_pinned_free(const pg_backend *be, void *ptr, size_t rounded)
{
    pinned_block *b = malloc(sizeof *b);
    if (b == NULL) { /* cannot cache it: give it back */
        backend_free(be, ptr);
        pthread_mutex_lock(&g_lock);
        g_stats.reserved -= rounded;
        pthread_mutex_unlock(&g_lock);
        return;
    }
    *b = (pinned_block){ptr, rounded, be, NULL};
    pthread_mutex_lock(&g_lock);
    b->next = g_free;
    g_free = b;
    g_stats.cached += rounded;
    pthread_mutex_unlock(&g_lock);
}

void pg_pinned_empty_cache(void)
{
    pthread_mutex_lock(&g_lock);
    pinned_block *list = g_free;
    g_free = NULL;
    for (pinned_block *b = list; b; b = b->next) {
        g_stats.cached -= b->size;
        g_stats.reserved -= b->size;
    }
    pthread_mutex_unlock(&g_lock);
    while (list) { /* outside the lock: cudaFreeHost may block */
        pinned_block *next = list->next;
        backend_free(list->be, list->ptr);
        free(list);
        list = next;
    }
}

void pg_pinned_stats_get(pg_pinned_stats *out)
{
    pthread_mutex_lock(&g_lock);
    *out = g_stats;
    pthread_mutex_unlock(&g_lock);
}
