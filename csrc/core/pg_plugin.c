/* pg_plugin.c - the loader of backend plugins and the core API handed to them.
 *
 * cuda is a separate shared object (pygpu/_cuda_backend.so) loaded with dlopen
 * on the first cuda use, so `import pygpu` never touches the CUDA runtime. The
 * plugin gets a table of core functions (pg_core_api: errors, storage events,
 * statistics) instead of linking against the core, and registers itself in the
 * backend registry (pg_backend.c). A plugin's second table (cuda's extras:
 * streams, events, graphs, NCCL; pg_cuda_extras.h) is fetched here once, at load,
 * and its version checked; the bindings get it from pg_plugin_extras. Its own
 * file: it sits above the registry and the storage code it hands out. */
#include "pg_backend.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "pg_async_error.h"
#include "pg_cuda_extras.h"
#include "pg_profile.h"
#include "pg_stats.h"

/* op counts are taken at launch; this adds an op's measured kernel time */
static void stats_op_done(pg_device dev, uint64_t ns) { pg_stats_kernel_time(dev, ns); }

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
    .async_error_record = pg_async_error_record,
    .storage_clear_error = pg_storage_clear_error,
    .tensor_covers_storage = pg_tensor_covers_storage,
    .profile_current = pg_profile_current,
    .profile_device = pg_profile_device,
};

const pg_core_api *pg_core_api_get(void) { return &g_core_api; }

/* One load at a time: a second thread waits for the first to finish and
 * then sees its backend registered (or its failure's reason). */
static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;

/* The second table of each plugin (pg_cuda_extras.h), fetched once at load; or
 * why there is none. Written under g_load_lock before the backend is
 * registered, read after pg_backend_get saw it: no lock needed to read. */
static struct {
    pg_plugin_get_extras_fn get;
    const void *table;
    char why[512];
} g_extras[PG_NUM_DEVICE_TYPES];

/* Ask the plugin for its extras table as this core knows it and check its
 * header: a plugin from another checkout is named, never called through. */
static void fetch_extras(int type, void *h, const char *path)
{
    g_extras[type].get = NULL;
    g_extras[type].table = NULL;
    snprintf(g_extras[type].why, sizeof g_extras[type].why, "%s",
             "the CUDA backend is not loaded");
    if (type != PG_DEV_CUDA)
        return;
    pg_plugin_get_extras_fn get = (pg_plugin_get_extras_fn)dlsym(h, PG_PLUGIN_EXTRAS_SYMBOL);
    if (!get) {
        snprintf(g_extras[type].why, sizeof g_extras[type].why,
                 "the CUDA backend %s has no %s (streams, events, graphs and NCCL need it): "
                 "rebuild pygpu and the plugin from one checkout (pip install .)",
                 path, PG_PLUGIN_EXTRAS_SYMBOL);
        return;
    }
    g_extras[type].get = get;
    const void *t = NULL;
    pg_error_set(PG_OK, "%s", "");
    if (get(PG_CUDA_EXTRAS_VERSION, &t) != PG_OK || t == NULL) {
        const char *msg = pg_error_message();
        snprintf(g_extras[type].why, sizeof g_extras[type].why, "%s",
                 msg && *msg ? msg : "the CUDA backend refused its extras table without a message");
        return;
    }
    const pg_cuda_extras *x = t;
    if (x->version != PG_CUDA_EXTRAS_VERSION || x->size != sizeof(pg_cuda_extras)) {
        snprintf(g_extras[type].why, sizeof g_extras[type].why,
                 "the CUDA backend %s hands out extras table version %d (%zu bytes), this pygpu "
                 "core needs version %d (%zu bytes): rebuild both from one checkout (pip install .)",
                 path, x->version, x->size, PG_CUDA_EXTRAS_VERSION, sizeof(pg_cuda_extras));
        return;
    }
    g_extras[type].table = t;
}

pg_status pg_plugin_extras(int type, const void **out)
{
    *out = NULL;
    if (type < 0 || type >= PG_NUM_DEVICE_TYPES || pg_backend_get(type) == NULL)
        return pg_error_set(PG_ERR_UNAVAILABLE, "%s", "the CUDA backend is not loaded");
    if (g_extras[type].table == NULL)
        return pg_error_set(PG_ERR_UNAVAILABLE, "%s", g_extras[type].why);
    *out = g_extras[type].table;
    return PG_OK;
}

pg_status pg_plugin_extras_probe(int type, int version, const void **out)
{
    *out = NULL;
    if (type < 0 || type >= PG_NUM_DEVICE_TYPES || pg_backend_get(type) == NULL)
        return pg_error_set(PG_ERR_UNAVAILABLE, "%s", "the CUDA backend is not loaded");
    if (g_extras[type].get == NULL)
        return pg_error_set(PG_ERR_UNAVAILABLE, "%s", g_extras[type].why);
    return g_extras[type].get(version, out);
}

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
    fetch_extras(type, h, path);
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
