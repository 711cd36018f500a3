/* pg_stats_roles.c - per-role transfer counters (see pg_stats_roles.h). */
#include "pg_stats_roles.h"

#include <stdatomic.h>
#include <string.h>

static _Thread_local int t_role = PG_XFER_NONE;
static _Atomic uint64_t g_count[PG_NUM_XFER_ROLES][PG_NUM_SLOTS][PG_NUM_SLOTS];
static _Atomic uint64_t g_bytes[PG_NUM_XFER_ROLES][PG_NUM_SLOTS][PG_NUM_SLOTS];

static const char *const k_names[PG_NUM_XFER_ROLES] = {
    "none", "scatter", "replicate", "gather", "grad_reduce", "broadcast", "collective",
};

int pg_stats_role_set(int role)
{
    int prev = t_role;
    t_role = (role >= 0 && role < PG_NUM_XFER_ROLES) ? role : PG_XFER_NONE;
    return prev;
}

int pg_stats_role_get(void) { return t_role; }

const char *pg_role_name(int role)
{
    return (role >= 0 && role < PG_NUM_XFER_ROLES) ? k_names[role] : NULL;
}

void pg_stats_role_transfer(pg_device src, pg_device dst, uint64_t bytes)
{
    int r = t_role;
    if (r == PG_XFER_NONE)
        return; /* the common case: one thread-local read */
    int s = pg_device_slot(src), d = pg_device_slot(dst);
    atomic_fetch_add_explicit(&g_count[r][s][d], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_bytes[r][s][d], bytes, memory_order_relaxed);
}

void pg_stats_role_snapshot(pg_xfer_role_stats *out)
{
    for (int r = 0; r < PG_NUM_XFER_ROLES; r++)
        for (int s = 0; s < PG_NUM_SLOTS; s++)
            for (int d = 0; d < PG_NUM_SLOTS; d++) {
                out->count[r][s][d] = atomic_load_explicit(&g_count[r][s][d], memory_order_relaxed);
                out->bytes[r][s][d] = atomic_load_explicit(&g_bytes[r][s][d], memory_order_relaxed);
            }
}

void pg_stats_role_reset(void)
{
    for (int r = 0; r < PG_NUM_XFER_ROLES; r++)
        for (int s = 0; s < PG_NUM_SLOTS; s++)
            for (int d = 0; d < PG_NUM_SLOTS; d++) {
                atomic_store_explicit(&g_count[r][s][d], 0, memory_order_relaxed);
                atomic_store_explicit(&g_bytes[r][s][d], 0, memory_order_relaxed);
            }
}
