/* sim_timeline.c - the span record behind pygpu.sim.timeline (see sim_timeline.h).
 *
 * One growable array per device, appended under a mutex by whichever thread
 * finished a task; capped (SPAN_CAP) so a recording left on cannot eat the host. */
#include "sim_timeline.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_device.h"
#include "../../core/pg_stats.h"

#define SPAN_CAP (1u << 20)

static struct {
    _Atomic bool on;
    uint64_t origin;
    pthread_mutex_t lock;
    pg_sim_span *spans;
    size_t n, cap;
} g_tl[PG_MAX_DEVICES_PER_TYPE];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_locks(void)
{
    for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++)
        pthread_mutex_init(&g_tl[i].lock, NULL);
}

void pg_sim_timeline_start(int index)
{
    pthread_once(&g_once, init_locks);
    pthread_mutex_lock(&g_tl[index].lock);
    free(g_tl[index].spans);
    g_tl[index].spans = NULL;
    g_tl[index].n = g_tl[index].cap = 0;
    g_tl[index].origin = pg_now_ns();
    atomic_store(&g_tl[index].on, true);
    pthread_mutex_unlock(&g_tl[index].lock);
}

bool pg_sim_timeline_stop(int index, pg_sim_span **out, size_t *n)
{
    pthread_once(&g_once, init_locks);
    pthread_mutex_lock(&g_tl[index].lock);
    atomic_store(&g_tl[index].on, false);
    *n = g_tl[index].n;
    *out = g_tl[index].spans;
    g_tl[index].spans = NULL;
    g_tl[index].n = g_tl[index].cap = 0;
    pthread_mutex_unlock(&g_tl[index].lock);
    if (!*out && *n == 0)
        *out = malloc(sizeof **out); /* an empty recording: still a buffer to free */
    return *out != NULL;
}

bool pg_sim_timeline_on(int index)
{
    return atomic_load_explicit(&g_tl[index].on, memory_order_relaxed);
}

uint64_t pg_sim_timeline_origin(int index) { return g_tl[index].origin; }

void pg_sim_timeline_add(int index, const pg_sim_span *span)
{
    pthread_mutex_lock(&g_tl[index].lock);
    if (atomic_load(&g_tl[index].on) && g_tl[index].n < SPAN_CAP) {
        if (g_tl[index].n == g_tl[index].cap) {
            size_t cap = g_tl[index].cap ? 2 * g_tl[index].cap : 1024;
            pg_sim_span *p = realloc(g_tl[index].spans, cap * sizeof *p);
            if (p) {
                g_tl[index].spans = p;
                g_tl[index].cap = cap;
            }
        }
        if (g_tl[index].n < g_tl[index].cap)
            g_tl[index].spans[g_tl[index].n++] = *span;
    }
    pthread_mutex_unlock(&g_tl[index].lock);
}
