/* cuda_lazy_library.c - the libraries the plugin loads on first use (cuDNN for the
 * convolutions, cuFFT for the transforms, cuSOLVER for the factorizations), written once:
 * Python offers the paths to try when the plugin is loaded (pygpu/backends/cudnn.py,
 * pygpu/backends/_cufft.py, pygpu/backends/_cusolver.py), nothing
 * is loaded then, and the first node that needs the library tries them once, in order.
 *
 * A library's file keeps one pg_cuda_lazy_library (its offered paths and whether they were
 * tried) and its own loader; this file only holds the offer and the one attempt, so `import
 * pygpu` and the plugin never need the library and its absence costs one failed dlopen per
 * path, once. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

void pg_cuda_lazy_offer(pg_cuda_lazy_library *lib, const char *paths)
{
    pthread_mutex_lock(&lib->lock);
    snprintf(lib->paths, sizeof lib->paths, "%s", paths ? paths : "");
    lib->tried = false;
    pthread_mutex_unlock(&lib->lock);
}

bool pg_cuda_lazy_load(pg_cuda_lazy_library *lib, bool (*loaded)(void),
                       int (*load)(const char *path, char *why, size_t len))
{
    if (loaded())
        return true;
    pthread_mutex_lock(&lib->lock);
    if (!lib->tried) {
        lib->tried = true;
        char paths[sizeof lib->paths], why[512];
        memcpy(paths, lib->paths, sizeof paths);
        char *save = NULL;
        for (char *p = strtok_r(paths, "\n", &save); p && !loaded(); p = strtok_r(NULL, "\n", &save))
            (void)load(p, why, sizeof why); /* the library's Python module says why */
    }
    pthread_mutex_unlock(&lib->lock);
    return loaded();
}
