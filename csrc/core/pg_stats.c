/* pg_stats.c - the counters behind pygpu.stats(): relaxed atomics, no locks. */
#include "pg_stats.h"

#include "pg_stats_roles.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

typedef struct {
    _Atomic uint64_t count, bytes, ns, pinned_count, async_count;
} xfer_atomic;

typedef struct {
    _Atomic uint64_t ops, syncs, sync_ns, allocs, frees, cache_hits, kernel_ops, kernel_ns;
    _Atomic uint64_t mem_current, mem_peak, mem_reserved;
} device_atomic;

static xfer_atomic g_pair[PG_NUM_SLOTS][PG_NUM_SLOTS];
static _Atomic uint64_t g_implicit_count[PG_NUM_IMPLICIT], g_implicit_bytes[PG_NUM_IMPLICIT];
static _Atomic uint64_t g_wait_ns[PG_NUM_IMPLICIT];
static _Thread_local uint64_t tl_link_ns;
static device_atomic g_dev[PG_NUM_SLOTS];

#define ADD(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)
#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define STORE(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

static _Atomic(pg_transfer_hook) g_transfer_hook;

void pg_stats_set_transfer_hook(pg_transfer_hook hook) { atomic_store(&g_transfer_hook, hook); }

pg_transfer_hook pg_stats_get_transfer_hook(void)
{
    return atomic_load_explicit(&g_transfer_hook, memory_order_relaxed);
}

uint64_t pg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void pg_stats_transfer(pg_device src, pg_device dst, uint64_t bytes, bool pinned, bool async,
                       int implicit)
{
    xfer_atomic *x = &g_pair[pg_device_slot(src)][pg_device_slot(dst)];
    ADD(x->count, 1);
    ADD(x->bytes, bytes);
    if (pinned)
        ADD(x->pinned_count, 1);
    if (async)
        ADD(x->async_count, 1);
    if (implicit > 0 && implicit < PG_NUM_IMPLICIT) {
        ADD(g_implicit_count[implicit], 1);
        ADD(g_implicit_bytes[implicit], bytes);
    }
    pg_stats_role_transfer(src, dst, bytes);
}

void pg_stats_transfer_time(pg_device src, pg_device dst, uint64_t ns)
{
    ADD(g_pair[pg_device_slot(src)][pg_device_slot(dst)].ns, ns);
    tl_link_ns += ns;
}

uint64_t pg_stats_thread_link_ns(void) { return tl_link_ns; }

void pg_stats_transfer_wait(int implicit, uint64_t ns)
{
    if (implicit >= 0 && implicit < PG_NUM_IMPLICIT)
        ADD(g_wait_ns[implicit], ns);
}

uint64_t pg_stats_pair_ns(pg_device src, pg_device dst)
{
    return LOAD(g_pair[pg_device_slot(src)][pg_device_slot(dst)].ns);
}

uint64_t pg_stats_accel_ops(void)
{
    uint64_t n = 0;
    for (int i = 1; i < PG_NUM_SLOTS; i++) /* slot 0 is the cpu */
        n += LOAD(g_dev[i].ops);
    return n;
}

void pg_stats_op(pg_device dev) { ADD(g_dev[pg_device_slot(dev)].ops, 1); }

void pg_stats_kernel_time(pg_device dev, uint64_t ns)
{
    device_atomic *d = &g_dev[pg_device_slot(dev)];
    ADD(d->kernel_ops, 1);
    ADD(d->kernel_ns, ns);
}

void pg_stats_sync(pg_device dev, uint64_t ns)
{
    device_atomic *d = &g_dev[pg_device_slot(dev)];
    ADD(d->syncs, 1);
    ADD(d->sync_ns, ns);
}

void pg_stats_alloc(pg_device dev, uint64_t bytes, bool cache_hit)
{
    device_atomic *d = &g_dev[pg_device_slot(dev)];
    ADD(d->allocs, 1);
    if (cache_hit)
        ADD(d->cache_hits, 1);
    uint64_t now = ADD(d->mem_current, bytes) + bytes;
    uint64_t peak = LOAD(d->mem_peak);
    while (now > peak && !atomic_compare_exchange_weak(&d->mem_peak, &peak, now)) {
    }
}

void pg_stats_free(pg_device dev, uint64_t bytes)
{
    device_atomic *d = &g_dev[pg_device_slot(dev)];
    ADD(d->frees, 1);
    atomic_fetch_sub_explicit(&d->mem_current, bytes, memory_order_relaxed);
}

void pg_stats_reserved(pg_device dev, int64_t delta)
{
    ADD(g_dev[pg_device_slot(dev)].mem_reserved, (uint64_t)delta);
}

void pg_stats_reset_peak(pg_device dev)
{
    device_atomic *d = &g_dev[pg_device_slot(dev)];
    STORE(d->mem_peak, LOAD(d->mem_current));
}

void pg_stats_snapshot_take(pg_stats_snapshot *out)
{
    memset(out, 0, sizeof *out);
    for (int s = 0; s < PG_NUM_SLOTS; s++) {
        for (int d = 0; d < PG_NUM_SLOTS; d++) {
            xfer_atomic *x = &g_pair[s][d];
            pg_xfer_stats *o = &out->pair[s][d];
            o->count = LOAD(x->count);
            o->bytes = LOAD(x->bytes);
            o->ns = LOAD(x->ns);
            o->pinned_count = LOAD(x->pinned_count);
            o->async_count = LOAD(x->async_count);
        }
        device_atomic *d = &g_dev[s];
        pg_device_stats *o = &out->dev[s];
        o->ops = LOAD(d->ops);
        o->syncs = LOAD(d->syncs);
        o->sync_ns = LOAD(d->sync_ns);
        o->kernel_ops = LOAD(d->kernel_ops);
        o->kernel_ns = LOAD(d->kernel_ns);
        o->allocs = LOAD(d->allocs);
        o->frees = LOAD(d->frees);
        o->cache_hits = LOAD(d->cache_hits);
        o->mem_current = LOAD(d->mem_current);
        o->mem_peak = LOAD(d->mem_peak);
        o->mem_reserved = LOAD(d->mem_reserved);
    }
    for (int i = 0; i < PG_NUM_IMPLICIT; i++) {
        out->implicit_count[i] = LOAD(g_implicit_count[i]);
        out->implicit_bytes[i] = LOAD(g_implicit_bytes[i]);
        out->wait_ns[i] = LOAD(g_wait_ns[i]);
    }
}

void pg_stats_reset(void)
{
    for (int s = 0; s < PG_NUM_SLOTS; s++) {
        for (int d = 0; d < PG_NUM_SLOTS; d++) {
            xfer_atomic *x = &g_pair[s][d];
            STORE(x->count, 0);
            STORE(x->bytes, 0);
            STORE(x->ns, 0);
            STORE(x->pinned_count, 0);
            STORE(x->async_count, 0);
        }
        device_atomic *d = &g_dev[s];
        STORE(d->ops, 0);
        STORE(d->syncs, 0);
        STORE(d->sync_ns, 0);
        STORE(d->kernel_ops, 0);
        STORE(d->kernel_ns, 0);
        STORE(d->allocs, 0);
        STORE(d->frees, 0);
        STORE(d->cache_hits, 0);
        STORE(d->mem_peak, LOAD(d->mem_current));
    }
    for (int i = 0; i < PG_NUM_IMPLICIT; i++) {
        STORE(g_implicit_count[i], 0);
        STORE(g_implicit_bytes[i], 0);
        STORE(g_wait_ns[i], 0);
    }
    pg_stats_role_reset();
}

uint64_t pg_stats_mem_current(pg_device dev) { return LOAD(g_dev[pg_device_slot(dev)].mem_current); }
