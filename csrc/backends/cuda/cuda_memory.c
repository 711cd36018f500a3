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

pg_status pg_cuda_host_alloc_pinned(const pg_backend *be, size_t nbytes, void **ptr)
{
    (void)be;
    *ptr = NULL;
    char call[64];
    snprintf(call, sizeof call, "cudaHostAlloc of %zu bytes", nbytes);
    /* portable: usable for async copies to every device, not just the current one */
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, cudaHostAlloc(ptr, nbytes, cudaHostAllocPortable), -1,
                         "allocate pinned host memory", call, false);
}

void pg_cuda_host_free_pinned(const pg_backend *be, void *ptr)
{
    (void)be;
    if (ptr != NULL && cudaFreeHost(ptr) != cudaSuccess)
        (void)cudaGetLastError();
}
