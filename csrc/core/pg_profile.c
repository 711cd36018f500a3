/* pg_profile.c - the recorder behind pygpu.profiler (pg_profile.h says what it keeps).
 *
 * One growing array of events under one mutex, found by id (id - base), capped at
 * PG_PROFILE_CAP events (about 70 MB) past which events are counted as dropped. The
 * calling thread's current op is a thread-local, so a backend that queues the work
 * (sim, the CUDA plugin) can tag it with the id without a field in pg_node. */
#include "pg_profile.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pg_stats.h"

#define PG_PROFILE_CAP 65536

static atomic_bool g_on;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pg_profile_event *g_ev;
static int64_t g_n, g_cap;
static uint64_t g_base = 1, g_next_base = 1, g_dropped;
static _Thread_local uint64_t t_current;

bool pg_profile_on(void) { return atomic_load_explicit(&g_on, memory_order_relaxed); }

void pg_profile_start(void)
{
    pthread_mutex_lock(&g_lock);
    g_base = g_next_base; /* ids of the last recording never match this one's */
    g_n = 0;
    g_dropped = 0;
    atomic_store(&g_on, true);
    pthread_mutex_unlock(&g_lock);
}

void pg_profile_stop(void)
{
    pthread_mutex_lock(&g_lock);
    atomic_store(&g_on, false);
    g_next_base = g_base + (uint64_t)g_n + g_dropped + 1;
    pthread_mutex_unlock(&g_lock);
}

/* Under g_lock: a new zeroed event with its id, or NULL past the cap. */
static pg_profile_event *new_event(void)
{
    if (g_n == g_cap) {
        if (g_cap >= PG_PROFILE_CAP) {
            g_dropped++;
            return NULL;
        }
        int64_t cap = g_cap ? 2 * g_cap : 256;
        pg_profile_event *p = realloc(g_ev, (size_t)cap * sizeof *p);
        if (p == NULL) {
            g_dropped++;
            return NULL;
        }
        g_ev = p;
        g_cap = cap;
    }
    pg_profile_event *e = &g_ev[g_n];
    memset(e, 0, sizeof *e);
    e->id = g_base + (uint64_t)g_n++;
    e->device_start_ns = e->device_ns = -1;
    e->thread = (uint64_t)syscall(SYS_gettid);
    return e;
}

/* Under g_lock: the event with this id, or NULL. */
static pg_profile_event *find(uint64_t id)
{
    if (id < g_base || id >= g_base + (uint64_t)g_n)
        return NULL;
    return &g_ev[id - g_base];
}

static void operand(pg_profile_operand *o, const pg_tensor *t)
{
    if (t == NULL || t->storage == NULL) {
        o->ndim = -1;
        return;
    }
    o->dtype = (int8_t)t->dtype;
    o->ndim = (int8_t)t->ndim;
    for (int d = 0; d < t->ndim && d < PG_MAX_DIMS; d++)
        o->shape[d] = t->shape[d];
}

static void set_name(pg_profile_event *e, const char *name)
{
    size_t k = strlen(name);
    if (k >= sizeof e->name)
        k = sizeof e->name - 1;
    memcpy(e->name, name, k);
    e->name[k] = 0;
}

uint64_t pg_profile_op_begin(const pg_node *n)
{
    if (!pg_profile_on())
        return 0;
    uint64_t t0 = pg_now_ns();
    pthread_mutex_lock(&g_lock);
    pg_profile_event *e = atomic_load(&g_on) ? new_event() : NULL;
    uint64_t id = 0;
    if (e != NULL) {
        id = e->id;
        e->kind = PG_PROFILE_OP;
        set_name(e, n->name != NULL ? n->name : "op");
        e->dev = pg_tensor_device(&n->dst);
        int k = 0;
        for (int i = 0; i < n->nsrc && k < PG_PROFILE_MAX_OPERANDS - 1; i++)
            operand(&e->ops[k++], &n->src[i]);
        operand(&e->ops[k++], &n->dst);
        e->nops = k;
        e->host_start_ns = t0;
    }
    pthread_mutex_unlock(&g_lock);
    t_current = id;
    return id;
}

void pg_profile_op_end(uint64_t id, bool cpu_inline)
{
    t_current = 0;
    if (id == 0)
        return;
    uint64_t t1 = pg_now_ns();
    pthread_mutex_lock(&g_lock);
    pg_profile_event *e = find(id);
    if (e != NULL) {
        e->host_end_ns = t1;
        if (cpu_inline) {
            e->device_start_ns = (int64_t)e->host_start_ns;
            e->device_ns = (int64_t)(t1 - e->host_start_ns);
        }
    }
    pthread_mutex_unlock(&g_lock);
}

uint64_t pg_profile_current(void) { return t_current; }

void pg_profile_copy(pg_device src, pg_device dst, const pg_tensor *t, uint64_t bytes,
                     uint64_t t0, uint64_t t1, uint64_t link_ns)
{
    if (!pg_profile_on())
        return;
    bool h2d = src.type == PG_DEV_CPU && dst.type != PG_DEV_CPU;
    bool d2h = src.type != PG_DEV_CPU && dst.type == PG_DEV_CPU;
    pthread_mutex_lock(&g_lock);
    pg_profile_event *e = atomic_load(&g_on) ? new_event() : NULL;
    if (e != NULL) {
        e->kind = PG_PROFILE_COPY;
        set_name(e, h2d ? "Memcpy HtoD" : d2h ? "Memcpy DtoH" : "Memcpy DtoD");
        e->dev = h2d ? dst : src;
        operand(&e->ops[0], t);
        e->nops = 1;
        e->host_start_ns = t0;
        e->host_end_ns = t1;
        e->h2d_bytes = h2d ? bytes : 0;
        e->d2h_bytes = d2h ? bytes : 0;
        if (link_ns > 0) { /* a blocking copy: the link's busy time, ending with the call */
            e->device_start_ns = (int64_t)(t1 - (link_ns < t1 - t0 ? link_ns : t1 - t0));
            e->device_ns = (int64_t)link_ns;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

void pg_profile_device(uint64_t id, int64_t start_ns, int64_t dur_ns,
                       const pg_profile_kernel *k, int n, int kernels_seen)
{
    if (id == 0)
        return;
    pthread_mutex_lock(&g_lock);
    pg_profile_event *e = find(id);
    if (e != NULL) {
        e->device_start_ns = start_ns;
        e->device_ns = dur_ns;
        if (n > PG_PROFILE_MAX_KERNELS)
            n = PG_PROFILE_MAX_KERNELS;
        if (n > 0)
            memcpy(e->kernels, k, (size_t)n * sizeof *k);
        e->nkernels = n;
        e->kernels_seen = kernels_seen;
    }
    pthread_mutex_unlock(&g_lock);
}

int pg_profile_events(pg_profile_event **out, int64_t *n, uint64_t *dropped)
{
    pthread_mutex_lock(&g_lock);
    *n = g_n;
    *dropped = g_dropped;
    *out = malloc((size_t)(g_n > 0 ? g_n : 1) * sizeof **out);
    if (*out != NULL && g_n > 0)
        memcpy(*out, g_ev, (size_t)g_n * sizeof **out);
    pthread_mutex_unlock(&g_lock);
    return *out != NULL ? 0 : -1;
}
