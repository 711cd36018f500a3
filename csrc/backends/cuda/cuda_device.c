/* cuda_device.c - per-device state of the CUDA plugin, the layer every other
 * file of it stands on (above it only cuda_state.c and cuda_check.c):
 *   - the entry helper (pg_cuda_device_get) that makes a device current and,
 *     on first use, creates its three streams and its error-flag record;
 *   - the device guard, the one helper for "touch another GPU, then put the
 *     caller's back" (a wait on another GPU used to leave that GPU current, so
 *     the next events were created on the wrong device);
 *   - the recycled cudaEvents of each device;
 *   - the cuBLAS handle, created on the first product and lent to one caller
 *     at a time, bound to the stream that caller's work goes to, and the
 *     cuBLASLt handle (the int8 GEMM), lent under the same lock;
 *   - peer access between devices.
 *
 * Nothing here runs at dlopen or plugin-init time: the first op, copy or
 * allocation on a device creates its streams, so importing pygpu on a machine
 * without a driver makes no CUDA call. What the streams are for, and how they
 * wait for each other, is cuda_queue.c's; this file only creates them. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* ---- the device guard ------------------------------------------------------------ */

pg_status pg_cuda_guard_enter(pg_cuda_guard *g, int index, const char *op)
{
    g->index = index;
    g->prev = -1;
    if (cudaGetDevice(&g->prev) != cudaSuccess) {
        (void)cudaGetLastError();
        g->prev = -1;
    }
    if (g->prev == index)
        return PG_OK;
    return PG_CUDA_RT(cudaSetDevice(index), index, op);
}

void pg_cuda_guard_exit(const pg_cuda_guard *g)
{
    if (g->prev >= 0 && g->prev != g->index && cudaSetDevice(g->prev) != cudaSuccess)
        (void)cudaGetLastError();
}

/* ---- the streams, created with the device state (under d->lock, device current) -------- */

static pg_status queue_create(pg_cuda_device *d, pg_cuda_queue *q, int role, const char *name,
                              const char *op)
{
    q->dev = d;
    q->role = role;
    q->name = name;
    /* non-blocking: no implicit sync with the legacy default stream */
    return PG_CUDA_RT(cudaStreamCreateWithFlags(&q->stream, cudaStreamNonBlocking), d->index, op);
}

pg_status pg_cuda_queues_create(pg_cuda_device *d, const char *op)
{
    PG_TRY(queue_create(d, &d->compute, PG_CUDA_ROLE_COMPUTE, "compute", op));
    PG_TRY(queue_create(d, &d->copy, PG_CUDA_ROLE_COPY, "copy", op));
    PG_TRY(queue_create(d, &d->comm, PG_CUDA_ROLE_COMPUTE, "comm", op));
    /* the error-flag record: mapped pinned memory the kernels write and the
     * host reads after a wait. Optional: without it bad labels give NaN. */
    void *h = NULL, *dp = NULL;
    if (cudaHostAlloc(&h, sizeof(pg_cuda_eflags), cudaHostAllocMapped) == cudaSuccess &&
        cudaHostGetDevicePointer(&dp, h, 0) == cudaSuccess) {
        memset(h, 0, sizeof(pg_cuda_eflags));
        d->eflags_host = h;
        d->eflags_dev = dp;
    } else {
        (void)cudaGetLastError();
        if (h != NULL && cudaFreeHost(h) != cudaSuccess)
            (void)cudaGetLastError();
    }
    /* the small-copy staging buffer (cuda_copy.c). Optional too: without it such copies
     * go to pageable memory directly, through the driver's own staging */
    if (cudaHostAlloc(&d->bounce, PG_CUDA_BOUNCE_BYTES, cudaHostAllocDefault) != cudaSuccess) {
        (void)cudaGetLastError();
        d->bounce = NULL;
    }
    return PG_OK;
}

/* ---- recycled events ---------------------------------------------------------------- */

pg_status pg_cuda_event_get(pg_cuda_device *d, const char *op, cudaEvent_t *ev)
{
    pthread_mutex_lock(&d->lock);
    if (d->nspare > 0) {
        *ev = d->spare[--d->nspare];
        pthread_mutex_unlock(&d->lock);
        return PG_OK;
    }
    pthread_mutex_unlock(&d->lock);
    /* an event belongs to the device current when it is created: make it d */
    pg_cuda_guard g;
    PG_TRY(pg_cuda_guard_enter(&g, d->index, op));
    pg_status st = PG_CUDA_RT(cudaEventCreate(ev), d->index, op);
    pg_cuda_guard_exit(&g);
    return st;
}

void pg_cuda_event_put_locked(pg_cuda_device *d, cudaEvent_t ev)
{
    if (d->nspare < PG_CUDA_SPARE_EVENTS)
        d->spare[d->nspare++] = ev;
    else if (cudaEventDestroy(ev) != cudaSuccess)
        (void)cudaGetLastError();
}

void pg_cuda_event_put(pg_cuda_device *d, cudaEvent_t ev)
{
    pthread_mutex_lock(&d->lock);
    pg_cuda_event_put_locked(d, ev);
    pthread_mutex_unlock(&d->lock);
}

/* ---- the entry helper ------------------------------------------------------------------ */

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

/* ---- cuBLAS: one handle per device, one caller at a time ------------------------------- */

pg_status pg_cuda_blas_acquire(pg_cuda_device *d, cudaStream_t stream, const char *op,
                               cublasHandle_t *out)
{
    *out = NULL;
    pthread_mutex_lock(&d->blas_lock);
    pg_status st = PG_OK;
    if (d->blas == NULL) {
        cublasHandle_t h = NULL;
        st = pg_cuda_check(PG_CUDA_LIB_CUBLAS, cublasCreate(&h), d->index, op, "cublasCreate",
                           false);
        if (st == PG_OK)
            d->blas = h;
        d->blas_stream = NULL;
    }
    if (st == PG_OK && d->blas_stream != stream) {
        st = pg_cuda_check(PG_CUDA_LIB_CUBLAS, cublasSetStream(d->blas, stream), d->index, op,
                           "cublasSetStream", false);
        if (st == PG_OK)
            d->blas_stream = stream;
    }
    /* TF32 is about float32 only; half products use the tensor cores anyway. A half C
     * must not let split-K reduce its partial sums in half (cuBLAS may, unless told
     * not to): the contract rounds a product once, from float32. */
    if (st == PG_OK)
        st = pg_cuda_check(
            PG_CUDA_LIB_CUBLAS,
            cublasSetMathMode(d->blas,
                              (cublasMath_t)((atomic_load(&pg_cuda.allow_tf32)
                                                  ? CUBLAS_TF32_TENSOR_OP_MATH
                                                  : CUBLAS_DEFAULT_MATH) |
                                             CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
            d->index, op, "cublasSetMathMode", false);
    if (st != PG_OK) {
        pthread_mutex_unlock(&d->blas_lock);
        return st;
    }
    *out = d->blas;
    return PG_OK;
}

void pg_cuda_blas_release(pg_cuda_device *d) { pthread_mutex_unlock(&d->blas_lock); }

pg_status pg_cuda_lt_acquire(pg_cuda_device *d, const char *op, cublasLtHandle_t *out)
{
    *out = NULL;
    pthread_mutex_lock(&d->blas_lock);
    if (d->lt == NULL) {
        cublasLtHandle_t h = NULL;
        pg_status st = pg_cuda_check(PG_CUDA_LIB_CUBLAS, cublasLtCreate(&h), d->index, op,
                                     "cublasLtCreate", false);
        if (st != PG_OK) {
            pthread_mutex_unlock(&d->blas_lock);
            return st;
        }
        d->lt = h;
    }
    *out = d->lt;
    return PG_OK;
}

/* ---- peer access ----------------------------------------------------------------------- */

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
