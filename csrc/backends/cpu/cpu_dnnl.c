/* cpu_dnnl.c - loading oneDNN (libdnnl.so.3) once for the CPU backend's users of it
 * (cpu_dnnl.h): the paths Python offers are tried in order on the first use; the C API's
 * functions are looked up by name (oneDNN v3 is needed), its ISA capped by PYGPU_ISA
 * (dnnl_set_max_cpu_isa, before its first primitive), its CPU engine made. Where no path
 * loads, pg_cpu_dnnl_why() says why and the users run pygpu's own kernels.
 *
 * Threads: this wheel runs on GNU OpenMP. Its idle threads sleep instead of spinning after
 * a call (OMP_WAIT_POLICY=passive, GOMP_SPINCOUNT=0, set before the library loads unless the
 * user set them), so they do not hold a core pygpu's pool wants. */
#include "cpu_dnnl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_isa.h"

pg_dnnl_api pg_dnnl;

/* ---- loading: the offered paths, tried once, on the first use */
static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_paths[4096];
static char g_why[512] = "no libdnnl path was offered (import pygpu offers them)";
static int g_state; /* 0 untried, 1 loaded, -1 failed */

void pg_cpu_dnnl_offer(const char *paths)
{
    pthread_mutex_lock(&g_load_lock);
    if (g_state != 1) {
        snprintf(g_paths, sizeof g_paths, "%s", paths ? paths : "");
        __atomic_store_n(&g_state, 0, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_load_lock);
}

static int isa_cap(void)
{
    static const int cap[PG_NUM_ISA] = {
        [PG_ISA_BASELINE] = DNNL_ISA_SSE41, [PG_ISA_AVX2] = DNNL_ISA_AVX2,
        [PG_ISA_AVX512] = DNNL_ISA_AVX512_CORE, [PG_ISA_AVX512_BF16] = DNNL_ISA_AVX512_CORE_BF16};
    return cap[pg_cpu_isa()];
}

static bool load_one(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(g_why, sizeof g_why, "%s", dlerror());
        return false;
    }
#define DNNL_SYM(name, ret, params)                                                               \
    if (!(*(void **)&pg_dnnl.name = dlsym(h, "dnnl_" #name))) {                                    \
        snprintf(g_why, sizeof g_why, "%s has no dnnl_" #name " (oneDNN v3 is needed)", path);   \
        dlclose(h);                                                                              \
        return false;                                                                            \
    }
    DNNL_API_FUNCS(DNNL_SYM)
#undef DNNL_SYM
    /* the OpenMP runtime libdnnl was built on (found through its dependencies) */
    *(void **)&pg_dnnl.omp_set_num_threads = dlsym(h, "omp_set_num_threads");
    *(void **)&pg_dnnl.omp_get_max_threads = dlsym(h, "omp_get_max_threads");
    const dnnl_version_t *v = pg_dnnl.version();
    if (!v || v->major < 3) {
        snprintf(g_why, sizeof g_why, "%s is oneDNN %d; pygpu needs v3", path, v ? v->major : 0);
        dlclose(h);
        return false;
    }
    if (pg_dnnl.set_max_cpu_isa(isa_cap()) != DNNL_SUCCESS ||
        pg_dnnl.engine_create(&pg_dnnl.engine, DNNL_ENGINE_CPU, 0) != DNNL_SUCCESS) {
        snprintf(g_why, sizeof g_why, "%s: oneDNN's CPU engine could not be made", path);
        dlclose(h);
        return false;
    }
    g_why[0] = 0;
    return true; /* kept loaded for the process's life */
}

/* A forked child of a process that loaded oneDNN keeps pygpu's own kernels: oneDNN's
 * OpenMP threads do not survive a fork, and a convolution run on oneDNN after one hung the
 * forked process (targets45's profile child in CI, 2026-11-29; a Hogwild CNN forks so). The
 * child's locks start unlocked (a parent thread may have held one at the fork). */
static int g_forked; /* 1 in a child forked after oneDNN was loaded */

static void dnnl_after_fork_child(void)
{
    pthread_mutex_init(&g_load_lock, NULL);
    if (g_state == 1)
        g_forked = 1;
}

bool pg_cpu_dnnl_loaded(void)
{
    int state = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE); /* each GEMM panel asks: no lock */
    if (state != 0)
        return state == 1;
    pthread_mutex_lock(&g_load_lock);
    if (g_state == 0) {
        pthread_atfork(NULL, NULL, dnnl_after_fork_child); /* once: g_state leaves 0 here */
        /* OpenMP reads these once, when it loads with libdnnl: idle threads sleep after a call */
        setenv("OMP_WAIT_POLICY", "passive", 0);
        setenv("GOMP_SPINCOUNT", "0", 0);
        char paths[sizeof g_paths], *save = NULL;
        memcpy(paths, g_paths, sizeof paths);
        int loaded = -1;
        for (char *p = strtok_r(paths, "\n", &save); p; p = strtok_r(NULL, "\n", &save))
            if (load_one(p)) {
                loaded = 1;
                break;
            }
        __atomic_store_n(&g_state, loaded, __ATOMIC_RELEASE);
    }
    bool ok = g_state == 1;
    pthread_mutex_unlock(&g_load_lock);
    return ok;
}

const char *pg_cpu_dnnl_why(void) { return pg_cpu_dnnl_loaded() ? NULL : g_why; }

const char *pg_cpu_dnnl_version(char *buf, size_t len)
{
    if (!pg_cpu_dnnl_loaded())
        return NULL;
    const dnnl_version_t *v = pg_dnnl.version();
    snprintf(buf, len, "%d.%d.%d", v->major, v->minor, v->patch);
    return buf;
}

bool pg_cpu_dnnl_forked(void) { return __atomic_load_n(&g_forked, __ATOMIC_RELAXED) != 0; }

