/* cuda_memory.c - the CUDA backend's own allocators: device memory
 * (cudaMalloc/cudaFree) and page-locked host memory (cudaHostAlloc) for
 * asynchronous copies. The core's caching allocator sits above raw_alloc,
 * so these run rarely; cudaFree synchronizes the device, which is also what
 * makes freeing a block still used by queued work safe.
 *
 * The free functions return nothing: a failure there (only possible once the
 * context is broken) is cleared from CUDA's last-error slot so that it is
 * not blamed on the next kernel launch; the broken context itself surfaces
 * at the next synchronize. */
#include <stdio.h>

#include "cuda_internal.h"

pg_status pg_cuda_raw_alloc(const pg_backend *be, int index, size_t nbytes, void **ptr)
{
    (void)be;
    *ptr = NULL;
    if (index < 0 || index >= PG_MAX_DEVICES_PER_TYPE)
        return pg_cuda_error(PG_ERR_INDEX, "cuda:%d: allocate: no such device", index);
    PG_TRY(PG_CUDA_RT(cudaSetDevice(index), index, "allocate"));
    char call[64];
    snprintf(call, sizeof call, "cudaMalloc of %zu bytes", nbytes);
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, cudaMalloc(ptr, nbytes), index, "allocate", call,
                         false);
}

void pg_cuda_raw_free(const pg_backend *be, int index, void *ptr)
{
    (void)be;
    if (ptr == NULL || index < 0 || index >= PG_MAX_DEVICES_PER_TYPE)
        return;
    if (cudaSetDevice(index) != cudaSuccess || cudaFree(ptr) != cudaSuccess)
        (void)cudaGetLastError();
}

/* Pinned memory belongs to no device, but cudaHostAlloc runs in the current
 * device's context and creates it if needed. Without a device made current
 * first, that is GPU 0 in every process: each DDP rank that pins memory
 * before its first op would make a context (hundreds of MiB) on GPU 0. So
 * the allocation runs on the device pygpu.cuda.set_device chose (option
 * "current_device", default 0), and the caller's current device is put back. */
pg_status pg_cuda_host_alloc_pinned(const pg_backend *be, size_t nbytes, void **ptr)
{
    (void)be;
    *ptr = NULL;
    const char *op = "allocate pinned host memory";
    pg_cuda_guard g;
    PG_TRY(pg_cuda_guard_enter(&g, atomic_load(&pg_cuda.current_device), op));
    char call[64];
    snprintf(call, sizeof call, "cudaHostAlloc of %zu bytes", nbytes);
    /* portable: usable for async copies to every device, not just the current one */
    pg_status st = pg_cuda_check(PG_CUDA_LIB_RUNTIME,
                                 cudaHostAlloc(ptr, nbytes, cudaHostAllocPortable), g.index, op,
                                 call, false);
    pg_cuda_guard_exit(&g);
    return st;
}

void pg_cuda_host_free_pinned(const pg_backend *be, void *ptr)
{
    (void)be;
    if (ptr != NULL && cudaFreeHost(ptr) != cudaSuccess)
        (void)cudaGetLastError();
}
