/* cuda_device.c - per-device state of the CUDA plugin: the entry helper
 * that makes a device current and creates its streams on first use, the
 * lazily created cuBLAS handle, and peer access between devices.
 *
 * Nothing here runs at dlopen or plugin-init time except mutex setup: the
 * first op, copy or allocation on a device creates its streams, so importing
 * pygpu on a machine without a driver makes no CUDA call. Which stream runs
 * what, and how they wait for each other, is cuda_queue.c's. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

pg_cuda_state pg_cuda;

static pthread_once_t pg_cuda_once = PTHREAD_ONCE_INIT;

static void pg_cuda_state_init_once(void)
{
    for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++) {
        pg_cuda.dev[i].index = i;
        pthread_mutex_init(&pg_cuda.dev[i].lock, NULL);
        pthread_mutex_init(&pg_cuda.dev[i].blas_lock, NULL);
    }
}

void pg_cuda_state_init(void) { pthread_once(&pg_cuda_once, pg_cuda_state_init_once); }

pg_status pg_cuda_device_get(int index, const char *op, pg_cuda_device **out)
{
    if (index < 0 || index >= PG_MAX_DEVICES_PER_TYPE)
        return pg_cuda_error(PG_ERR_INDEX, "cuda:%d: %s: no such device", index, op);
    pg_cuda_device *d = &pg_cuda.dev[index];
    PG_TRY(PG_CUDA_RT(cudaSetDevice(index), index, op));
    if (!atomic_load_explicit(&d->ready, memory_order_acquire)) {
        pg_status st = PG_OK;
        pthread_mutex_lock(&d->lock);
        if (!atomic_load_explicit(&d->ready, memory_order_relaxed)) {
            st = pg_cuda_queues_create(d, op);
            if (st == PG_OK)
                st = PG_CUDA_RT(cudaDeviceGetAttribute(&d->sm_count, cudaDevAttrMultiProcessorCount,
                                                       index),
                                index, op);
            if (st == PG_OK) {
                /* split reductions take stream-ordered scratch (cudaMallocAsync):
                 * keep up to 64 MiB of it in the pool across syncs instead of
                 * giving it back to the driver at every one. Optional. */
                cudaMemPool_t pool;
                uint64_t keep = (uint64_t)64 << 20;
                if (cudaDeviceGetDefaultMemPool(&pool, index) != cudaSuccess ||
                    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) !=
                        cudaSuccess)
                    (void)cudaGetLastError();
                atomic_store_explicit(&d->ready, 1, memory_order_release);
            }
        }
        pthread_mutex_unlock(&d->lock);
        if (st != PG_OK)
            return st;
    }
    *out = d;
    return PG_OK;
}

pg_status pg_cuda_device_blas(pg_cuda_device *d, const char *op, cublasHandle_t *out)
{
    pg_status st = PG_OK;
    pthread_mutex_lock(&d->lock);
    if (d->blas == NULL) {
        cublasHandle_t h = NULL;
        st = pg_cuda_check(PG_CUDA_LIB_CUBLAS, cublasCreate(&h), d->index, op, "cublasCreate",
                           false);
        if (st == PG_OK) {
            st = pg_cuda_check(PG_CUDA_LIB_CUBLAS, cublasSetStream(h, d->compute.stream), d->index, op,
                               "cublasSetStream", false);
            if (st == PG_OK)
                d->blas = h;
            else
                cublasDestroy(h);
        }
    }
    *out = d->blas;
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* Let device d read and write device `peer`'s memory directly (and the other
 * way round), so a cudaMemcpyPeerAsync between them goes over NVLink/PCIe
 * peer-to-peer instead of staging through the host. Asked once per pair;
 * where the hardware cannot, copies still work (staged), just slower. */
pg_status pg_cuda_enable_peer(pg_cuda_device *d, int peer, const char *op)
{
    if (peer == d->index || peer < 0 || peer >= PG_MAX_DEVICES_PER_TYPE)
        return PG_OK;
    pthread_mutex_lock(&d->lock);
    int known = d->peer[peer];
    pthread_mutex_unlock(&d->lock);
    if (known != 0)
        return PG_OK;
    int can_there = 0, can_back = 0;
    PG_TRY(PG_CUDA_RT(cudaDeviceCanAccessPeer(&can_there, d->index, peer), d->index, op));
    PG_TRY(PG_CUDA_RT(cudaDeviceCanAccessPeer(&can_back, peer, d->index), d->index, op));
    int result = can_there && can_back ? 1 : -1;
    for (int dir = 0; dir < 2 && result == 1; dir++) {
        int from = dir == 0 ? d->index : peer, to = dir == 0 ? peer : d->index;
        pg_cuda_guard g; /* peer access is enabled from the current device */
        PG_TRY(pg_cuda_guard_enter(&g, from, op));
        cudaError_t err = cudaDeviceEnablePeerAccess(to, 0);
        pg_cuda_guard_exit(&g);
        if (err == cudaErrorPeerAccessAlreadyEnabled)
            (void)cudaGetLastError(); /* someone else (CuPy, PyTorch) did it: fine */
        else if (err != cudaSuccess) {
            (void)cudaGetLastError();
            result = -1; /* e.g. too many peers: copies stage through the host */
        }
    }
    pthread_mutex_lock(&d->lock);
    d->peer[peer] = (signed char)result;
    pthread_mutex_unlock(&d->lock);
    return PG_OK;
}
