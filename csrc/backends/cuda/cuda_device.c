/* cuda_device.c - per-device state of the CUDA plugin: the lazily created
 * stream and cuBLAS handle, the queue bookkeeping behind storage events,
 * and the two waits of the backend table (synchronize, wait_event).
 *
 * Nothing here runs at dlopen or plugin-init time except mutex setup: the
 * first op, copy or allocation on a device creates its stream, so importing
 * pygpu on a machine without a driver makes no CUDA call. All work for a
 * device goes to its one stream, in order; that order is what makes it safe
 * for the core's caching allocator to hand a freed block to the next op
 * without waiting (as in PyTorch's single-stream case). */
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
            /* non-blocking: no implicit sync with the legacy default stream */
            st = PG_CUDA_RT(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking), index,
                            op);
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
            st = pg_cuda_check(PG_CUDA_LIB_CUBLAS, cublasSetStream(h, d->stream), d->index, op,
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

static void pg_cuda_copy_name(char *dst, const char *src)
{
    snprintf(dst, PG_CUDA_OPNAME_LEN, "%s", src != NULL ? src : "?");
}

uint64_t pg_cuda_note_queued(pg_cuda_device *d, const char *op)
{
    pthread_mutex_lock(&d->lock);
    uint64_t seq = ++d->queued_seq;
    if (d->unsynced_ops++ == 0)
        pg_cuda_copy_name(d->first_op, op);
    pg_cuda_copy_name(d->last_op, op);
    pthread_mutex_unlock(&d->lock);
    return seq;
}

void pg_cuda_note_done(pg_cuda_device *d, uint64_t seq)
{
    uint64_t cur = atomic_load(&d->done_seq);
    while (cur < seq && !atomic_compare_exchange_weak(&d->done_seq, &cur, seq)) {
    }
}

/* Record that queued work (d, seq) reads or writes `s`, in the core's
 * backend-neutral record (under its lock). */
void pg_cuda_mark(pg_storage *s, pg_cuda_device *d, uint64_t seq, int role, bool write)
{
    pg_event ev = {&pg_cuda_backend, d, seq};
    pg_cuda.core->storage_mark(s, ev, role, write);
}

/* Before queuing work on stream `d` that touches `s`: wait on the host for
 * pending work on `s` that this stream does not order by itself: another
 * cuda device's stream or another backend (sim) writing or reading a shared
 * host buffer. Reads too, since marking replaces their events. */
pg_status pg_cuda_order_after(pg_storage *s, pg_cuda_device *d)
{
    if (s->device.type == PG_DEV_CUDA && s->device.index == d->index)
        return PG_OK; /* d's own memory: only d's stream queues work on it (a copy to
                       * another device is blocking, so leaves no event behind) */
    return pg_cuda.core->storage_wait_others(s, true, &pg_cuda_backend, d);
}

pg_status pg_cuda_stream_sync(pg_cuda_device *d, const char *why)
{
    pthread_mutex_lock(&d->lock);
    uint64_t target = d->queued_seq, nops = d->unsynced_ops;
    char first[PG_CUDA_OPNAME_LEN], last[PG_CUDA_OPNAME_LEN];
    memcpy(first, d->first_op, sizeof first);
    memcpy(last, d->last_op, sizeof last);
    pthread_mutex_unlock(&d->lock);

    cudaError_t err = cudaSetDevice(d->index);
    /* refuses during a graph capture; else the device's stream also waits for
     * the user streams current somewhere (cuda_stream.c) */
    if (err == cudaSuccess)
        PG_TRY(pg_cuda_stream_before_sync(d, why));
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(d->stream);
    if (err == cudaSuccess) {
        /* only on success: after a sticky error every later wait must fail too */
        pg_cuda_note_done(d, target);
        pthread_mutex_lock(&d->lock);
        d->unsynced_ops -= nops;
        pthread_mutex_unlock(&d->lock);
        pg_cuda_xfer_poll(d, false);
        pg_cuda_profile_poll(d, false);
        return PG_OK;
    }
    char op[160];
    if (nops == 1)
        snprintf(op, sizeof op, "%s", last);
    else if (nops > 1)
        snprintf(op, sizeof op,
                 "an op queued since the last synchronize (%llu ops, first %s, last %s)",
                 (unsigned long long)nops, first, last);
    else
        snprintf(op, sizeof op, "an earlier op");
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, d->index, op, why, true);
}

pg_status pg_cuda_synchronize(const pg_backend *be, int index)
{
    (void)be;
    if (index < 0 || index >= PG_MAX_DEVICES_PER_TYPE)
        return pg_cuda_error(PG_ERR_INDEX, "cuda:%d: synchronize: no such device", index);
    pg_cuda_device *d = &pg_cuda.dev[index];
    if (!atomic_load_explicit(&d->ready, memory_order_acquire))
        return PG_OK; /* nothing was ever queued: no CUDA call (no driver needed) */
    return pg_cuda_stream_sync(d, "cudaStreamSynchronize");
}

/* The device an event names, or NULL if the pointer is not one of ours. */
static pg_cuda_device *pg_cuda_event_device(pg_event ev)
{
    pg_cuda_device *d = ev.queue;
    if (d < &pg_cuda.dev[0] || d >= &pg_cuda.dev[PG_MAX_DEVICES_PER_TYPE])
        return NULL;
    return d;
}

pg_status pg_cuda_wait_event(const pg_backend *be, pg_event ev)
{
    pg_cuda_device *d = ev.backend == be ? pg_cuda_event_device(ev) : NULL;
    if (d == NULL || ev.seq <= atomic_load(&d->done_seq))
        return PG_OK;
    return pg_cuda_stream_sync(d, "cudaStreamSynchronize");
}
