/* cuda_stream.c - the per-thread current user stream that `with
 * pygpu.cuda.stream(s):` sets, and the joins that keep work on a user stream
 * ordered with the device's own stream. The Stream and Event objects and
 * their entry points are cuda_stream_api.c's, which sits above the queue
 * layer; this file sits below it (cuda_queue.c calls the joins before a wait
 * for compute work) and calls only cuda_device.c and cuda_check.c.
 *
 * The ordering model (conservative, so pygpu's automatic dependency tracking
 * stays right without the user calling wait_stream):
 *   - Each thread has at most one current user stream per device. While it is
 *     set, that thread's ops (kernels, cuBLAS, graph replays) go to it.
 *   - Entering: the user stream waits (cudaStreamWaitEvent, no host sync) for
 *     everything already queued on the device's stream or the stream that was
 *     current before.
 *   - Before each op on a user stream: if anything was queued on the device
 *     since the user stream last looked (a copy, another thread's op), it waits
 *     for the device's stream again (one event record and one stream wait).
 *   - Copies (.to(), .cpu()) run on the device's compute or copy stream
 *     (cuda_copy.c); a copy issued while a user stream is current first makes
 *     the compute stream wait for the user stream (and one on the copy stream
 *     orders after compute), so .cpu() inside the block sees its results.
 *   - Leaving: the stream that becomes current again waits for the user stream.
 *   - A host wait on the device (synchronize, a storage's event) also makes
 *     the device's stream wait for every user stream still current somewhere,
 *     so the one cudaStreamSynchronize covers their work too.
 * Work on a user stream therefore overlaps with work other threads queue on
 * the device's stream (or on their own user streams) while it is current.
 * Two threads' user streams are not ordered with each other: as in PyTorch,
 * a tensor produced on one and consumed on another needs Event/wait_stream.
 *
 * "The device's stream" above is its compute queue (cuda_queue.c); the copy
 * and comm queues are ordered per storage. An op on a user stream is counted
 * and marked as compute work, so its results carry (compute, seq) events; its
 * waits for the copy or comm queue (a prefetched batch) are device-side waits
 * on the user stream itself (pg_cuda_order_after_on), and whoever waits for
 * compute work first makes compute wait for this thread's user stream
 * (pg_cuda_stream_join_current) or for all current ones (before_sync).
 * Known gap (cuda_queue.c says more): a user stream does not hold the
 * storages its queued work uses, as the copy stream does, so a block freed
 * while such work is pending can be reused early by work another thread
 * queues on the compute stream (an upload on the copy stream waits for every
 * active user stream first: pg_cuda_stream_join_active).
 *
 * A stream also carries the graph it is capturing into (cuda_graph.c): while
 * capturing, every host wait and every copy on that device from the capturing
 * thread is refused with a message instead of breaking the capture. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

static pthread_mutex_t g_streams_lock = PTHREAD_MUTEX_INITIALIZER;
static pg_cuda_ustream *g_active[PG_MAX_DEVICES_PER_TYPE]; /* current on some thread */
static _Thread_local pg_cuda_ustream *tl_current[PG_MAX_DEVICES_PER_TYPE];

pg_cuda_ustream *pg_cuda_current_ustream(int index)
{
    return index >= 0 && index < PG_MAX_DEVICES_PER_TYPE ? tl_current[index] : NULL;
}

cudaStream_t pg_cuda_work_stream(pg_cuda_device *d)
{
    pg_cuda_ustream *u = tl_current[d->index];
    return u != NULL ? u->stream : d->compute.stream;
}

/* `waiter` waits (on the device) for everything queued on `on` so far; both
 * are streams of device `dev`, which need not be the current one. */
pg_status pg_cuda_stream_join(int dev, cudaStream_t waiter, cudaStream_t on, const char *op)
{
    if (waiter == on)
        return PG_OK;
    pg_cuda_guard g; /* the event must belong to the streams' device */
    PG_TRY(pg_cuda_guard_enter(&g, dev, op));
    cudaEvent_t ev;
    pg_status st = PG_CUDA_RT(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), dev, op);
    if (st == PG_OK) {
        st = PG_CUDA_RT(cudaEventRecord(ev, on), dev, op);
        if (st == PG_OK)
            st = PG_CUDA_RT(cudaStreamWaitEvent(waiter, ev, 0), dev, op);
        if (cudaEventDestroy(ev) != cudaSuccess) /* released once the wait is satisfied */
            (void)cudaGetLastError();
    }
    pg_cuda_guard_exit(&g);
    return st;
}

pg_status pg_cuda_stream_join_current(pg_cuda_device *d, const char *op)
{
    pg_cuda_ustream *u = tl_current[d->index];
    if (u == NULL || u->capture != NULL) /* a capture's work never reaches compute */
        return PG_OK;
    return pg_cuda_stream_join(d->index, d->compute.stream, u->stream, op);
}

uint64_t pg_cuda_compute_queued(pg_cuda_device *d)
{
    pthread_mutex_lock(&d->lock);
    uint64_t q = d->compute.queued_seq;
    pthread_mutex_unlock(&d->lock);
    return q;
}

pg_status pg_cuda_stream_before_op(pg_cuda_device *d, const char *op)
{
    pg_cuda_ustream *u = tl_current[d->index];
    if (u == NULL || u->capture != NULL) /* a capture may not wait on outside events */
        return PG_OK;
    uint64_t q = pg_cuda_compute_queued(d);
    if (q == u->seen_seq)
        return PG_OK;
    PG_TRY(pg_cuda_stream_join(d->index, u->stream, d->compute.stream, op));
    u->seen_seq = q;
    return PG_OK;
}

void pg_cuda_stream_after_op(pg_cuda_device *d, uint64_t seq)
{
    pg_cuda_ustream *u = tl_current[d->index];
    if (u != NULL && seq == u->seen_seq + 1)
        u->seen_seq = seq; /* only our own op came in between */
}

pg_status pg_cuda_stream_before_copy(pg_cuda_device *d, const char *op)
{
    pg_cuda_ustream *u = tl_current[d->index];
    if (u == NULL)
        return PG_OK;
    if (u->capture != NULL)
        return pg_cuda_error(PG_ERR_RUNTIME,
                             "cuda:%d: %s during CUDA graph capture: copies between the host and "
                             "the device (and between devices) are not captured by pygpu; fill "
                             "the graph's static input tensors before replay() instead "
                             "(static_x.copy_(x) outside the capture)",
                             d->index, op);
    return pg_cuda_stream_join(d->index, d->compute.stream, u->stream, op);
}

pg_status pg_cuda_stream_before_sync(pg_cuda_device *d, const char *why)
{
    pg_cuda_ustream *mine = tl_current[d->index];
    if (mine != NULL && mine->capture != NULL)
        return pg_cuda_error(PG_ERR_RUNTIME,
                             "cuda:%d: a host synchronization (%s) was requested during CUDA "
                             "graph capture: it would wait for work that has not run. Inside "
                             "`with pygpu.cuda.graph(g):` avoid .cpu(), .item(), .numpy(), print(), "
                             "synchronize() and the sync_each_op option; read results after "
                             "g.replay()",
                             d->index, why);
    pg_status st = PG_OK;
    pthread_mutex_lock(&g_streams_lock);
    for (pg_cuda_ustream *u = g_active[d->index]; u != NULL && st == PG_OK; u = u->next_active)
        if (u->capture == NULL)
            st = pg_cuda_stream_join(d->index, d->compute.stream, u->stream, why);
    pthread_mutex_unlock(&g_streams_lock);
    return st;
}

/* `waiter` (a stream of d) waits on the device for the work queued so far on
 * every user stream current on some thread, as before_sync does on the host:
 * an H2D copy on the copy stream may write into a block that another thread's
 * tensor freed while a kernel on that thread's user stream still reads it.
 * Streams that are capturing are left alone (their work runs at replay). */
pg_status pg_cuda_stream_join_active(pg_cuda_device *d, cudaStream_t waiter, const char *op)
{
    pg_status st = PG_OK;
    pthread_mutex_lock(&g_streams_lock);
    for (pg_cuda_ustream *u = g_active[d->index]; u != NULL && st == PG_OK; u = u->next_active)
        if (u->capture == NULL)
            st = pg_cuda_stream_join(d->index, waiter, u->stream, op);
    pthread_mutex_unlock(&g_streams_lock);
    return st;
}

/* ---- which streams are current (the entry points in cuda_stream_api.c set them) ---------- */

void pg_cuda_ustream_activate(pg_cuda_ustream *u)
{
    pthread_mutex_lock(&g_streams_lock);
    if (u->nactive++ == 0) {
        u->next_active = g_active[u->device];
        g_active[u->device] = u;
    }
    pthread_mutex_unlock(&g_streams_lock);
}

void pg_cuda_ustream_deactivate(pg_cuda_ustream *u)
{
    pthread_mutex_lock(&g_streams_lock);
    if (--u->nactive == 0) {
        for (pg_cuda_ustream **p = &g_active[u->device]; *p != NULL; p = &(*p)->next_active)
            if (*p == u) {
                *p = u->next_active;
                break;
            }
        u->next_active = NULL;
    }
    pthread_mutex_unlock(&g_streams_lock);
}

void pg_cuda_set_current_ustream(int index, pg_cuda_ustream *u) { tl_current[index] = u; }
