/* pg_backend.c - the backend registry and the loader of backend plugins.
 *
 * cpu and sim are linked into the core and registered at module init; cuda is
 * a separate shared object (pygpu/_cuda_backend.so) loaded with dlopen on the
 * first cuda use, so `import pygpu` never touches the CUDA runtime. */
#include "pg_backend.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "pg_stats.h"

static _Atomic(const pg_backend *) g_backends[PG_NUM_DEVICE_TYPES];

const char *pg_device_type_name(int type)
{
    static const char *names[PG_NUM_DEVICE_TYPES] = {"cpu", "sim", "cuda"};
    return type >= 0 && type < PG_NUM_DEVICE_TYPES ? names[type] : "?";
}

const char *pg_device_str(pg_device d, char *buf, int len)
{
    if (d.type == PG_DEV_CPU)
        snprintf(buf, len, "cpu");
    else
        snprintf(buf, len, "%s:%d", pg_device_type_name(d.type), d.index);
    return buf;
}

/* Written once per type (cuda by the plugin loader, on any thread) and read on
 * every op: atomic, so a reader sees the table only once it is complete. */
void pg_backend_register(int type, const pg_backend *be)
{
    atomic_store_explicit(&g_backends[type], be, memory_order_release);
}

const pg_backend *pg_backend_get(int type)
{
    return type >= 0 && type < PG_NUM_DEVICE_TYPES
               ? atomic_load_explicit(&g_backends[type], memory_order_acquire)
               : NULL;
}

pg_status pg_backend_for(pg_device dev, const pg_backend **out)
{
    const pg_backend *be = pg_backend_get(dev.type);
    if (!be)
        return pg_error_set(PG_ERR_UNAVAILABLE, "device type '%s' is not available",
                            pg_device_type_name(dev.type));
    int n = be->device_count(be);
    if (dev.index < 0 || dev.index >= n) {
        const char *why = n == 0 && be->unavailable_reason ? be->unavailable_reason(be) : NULL;
        if (why)
            return pg_error_set(PG_ERR_UNAVAILABLE, "%s:%d is not available: %s", be->name,
                                dev.index, why);
        return pg_error_set(PG_ERR_UNAVAILABLE,
                            "%s:%d does not exist: %d %s device(s) present (indices 0..%d)",
                            be->name, dev.index, n, be->name, n - 1);
    }
    *out = be;
    return PG_OK;
}

/* op counts are taken at launch; this adds an op's measured kernel time */
static void stats_op_done(pg_device dev, uint64_t ns) { pg_stats_kernel_time(dev, ns); }

/* Blocking hooks (pg_backend.h): the bindings install a GIL release here. */
static void *(*g_blocking_begin)(void);
static void (*g_blocking_end)(void *);

void pg_set_blocking_hooks(void *(*begin)(void), void (*end)(void *))
{
    g_blocking_begin = begin;
    g_blocking_end = end;
}

void *pg_blocking_begin(void) { return g_blocking_begin ? g_blocking_begin() : NULL; }

void pg_blocking_end(void *token)
{
    if (g_blocking_end)
        g_blocking_end(token);
}

static const pg_core_api g_core_api = {
    .abi_version = PG_BACKEND_ABI_VERSION,
    .error_set = pg_error_set,
    .storage_retain = pg_storage_retain,
    .storage_release = pg_storage_release,
    .storage_set_error = pg_storage_set_error,
    .stats_transfer_time = pg_stats_transfer_time,
    .stats_op_done = stats_op_done,
    .storage_mark = pg_storage_mark,
    .storage_wait_others = pg_storage_wait_others,
};

const pg_core_api *pg_core_api_get(void) { return &g_core_api; }

/* One load at a time: a second thread waits for the first to finish and
 * then sees its backend registered (or its failure's reason). */
static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;

static pg_status load_plugin_locked(int type, const char *path, char *why, size_t whylen)
{
    if (pg_backend_get(type))
        return PG_OK;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        if (err && strstr(err, "libcublas"))
            snprintf(why, whylen,
                     "cuBLAS not found: pip install nvidia-cublas (loading the CUDA backend: %s)",
                     err);
        else
            snprintf(why, whylen, "the CUDA backend could not be loaded: %s", err ? err : "?");
        return PG_ERR_UNAVAILABLE;
    }
    const int *abi = (const int *)dlsym(h, PG_PLUGIN_ABI_SYMBOL);
    if (!abi || *abi != PG_BACKEND_ABI_VERSION) {
        if (abi)
            snprintf(why, whylen,
                     "the CUDA backend %s was built for backend ABI %d, this pygpu core has ABI %d: "
                     "rebuild both from one checkout (pip install .)",
                     path, *abi, PG_BACKEND_ABI_VERSION);
        else
            snprintf(why, whylen,
                     "the CUDA backend %s does not say its backend ABI (no %s; this pygpu core "
                     "has ABI %d): rebuild both from one checkout (pip install .)",
                     path, PG_PLUGIN_ABI_SYMBOL, PG_BACKEND_ABI_VERSION);
        dlclose(h);
        return PG_ERR_UNAVAILABLE;
    }
    pg_plugin_init_fn init = (pg_plugin_init_fn)dlsym(h, PG_PLUGIN_INIT_SYMBOL);
    if (!init) {
        snprintf(why, whylen, "%s has no %s entry point", path, PG_PLUGIN_INIT_SYMBOL);
        dlclose(h);
        return PG_ERR_UNAVAILABLE;
    }
    const pg_backend *be = NULL;
    pg_error_set(PG_OK, "%s", ""); /* so a silent refusal is not blamed on an older message */
    pg_status st = init(&g_core_api, &be);
    if (st != PG_OK || !be) {
        const char *msg = pg_error_message();
        snprintf(why, whylen, "the CUDA backend failed to initialise: %s",
                 msg && *msg ? msg : "pg_plugin_init refused without a message");
        dlclose(h);
        return PG_ERR_UNAVAILABLE;
    }
    pg_backend_register(type, be); /* the handle stays open for the process's life */
    return PG_OK;
}

pg_status pg_backend_load_plugin(int type, const char *path, char *why, size_t whylen)
{
    pthread_mutex_lock(&g_load_lock);
    pg_status st = load_plugin_locked(type, path, why, whylen);
    pthread_mutex_unlock(&g_load_lock);
    return st;
}
