/* cuda_copy.c - byte copies host<->device and device<->device, and the
 * timing of transfers for the core's statistics.
 *
 * Every copy is a cudaMemcpyAsync on the device's stream between two
 * cudaEvents, so it is ordered after the ops that produced its source and
 * its duration is measured on the device. Then:
 *   - async and the host side pinned (or device to device on one device):
 *     return at once; the destination's last_write and the source's
 *     last_read name the copy, a pinned host storage is retained until the
 *     DMA is done, and the events go into a small ring polled later
 *     (pg_cuda_xfer_poll) to report the time;
 *   - otherwise (pageable host memory, or blocking): wait for the end event,
 *     so the bytes have moved when the call returns, and report the time.
 * Before any copy, pending work on either side that the copy's stream does
 * not order by itself (another device's stream, another backend on a
 * shared host buffer) is waited for on the host. Copies between two devices
 * are always blocking, so no stream ever reads memory another stream may
 * write. */
#include <stdio.h>

#include "cuda_internal.h"

static pg_status pg_cuda_event_get(pg_cuda_device *d, const char *op, cudaEvent_t *ev)
{
    pthread_mutex_lock(&d->lock);
    if (d->nspare > 0) {
        *ev = d->spare[--d->nspare];
        pthread_mutex_unlock(&d->lock);
        return PG_OK;
    }
    pthread_mutex_unlock(&d->lock);
    return PG_CUDA_RT(cudaEventCreate(ev), d->index, op);
}

static void pg_cuda_event_put_locked(pg_cuda_device *d, cudaEvent_t ev)
{
    if (d->nspare < PG_CUDA_SPARE_EVENTS)
        d->spare[d->nspare++] = ev;
    else if (cudaEventDestroy(ev) != cudaSuccess)
        (void)cudaGetLastError();
}

static void pg_cuda_event_put(pg_cuda_device *d, cudaEvent_t ev)
{
    pthread_mutex_lock(&d->lock);
    pg_cuda_event_put_locked(d, ev);
    pthread_mutex_unlock(&d->lock);
}

void pg_cuda_xfer_poll(pg_cuda_device *d, bool wait_all)
{
    struct {
        pg_device src, dst;
        uint64_t ns;
    } timed[PG_CUDA_MAX_XFERS];
    pg_storage *held[PG_CUDA_MAX_XFERS];
    int ntimed = 0, nheld = 0;

    pthread_mutex_lock(&d->lock);
    while (d->xfer_count > 0) {
        pg_cuda_xfer *x = &d->xfers[d->xfer_head];
        cudaError_t err = wait_all ? cudaEventSynchronize(x->end) : cudaEventQuery(x->end);
        if (err == cudaErrorNotReady)
            break;
        float ms = 0;
        if (err == cudaSuccess && cudaEventElapsedTime(&ms, x->start, x->end) == cudaSuccess) {
            timed[ntimed].src = x->src;
            timed[ntimed].dst = x->dst;
            timed[ntimed++].ns = (uint64_t)((double)ms * 1e6);
        } else {
            (void)cudaGetLastError(); /* a failed copy surfaces at the next synchronize */
        }
        if (x->held != NULL)
            held[nheld++] = x->held;
        pg_cuda_event_put_locked(d, x->start);
        pg_cuda_event_put_locked(d, x->end);
        d->xfer_head = (d->xfer_head + 1) % PG_CUDA_MAX_XFERS;
        d->xfer_count--;
    }
    pthread_mutex_unlock(&d->lock);

    /* outside the lock: releasing a storage may call back into this plugin */
    for (int i = 0; i < ntimed; i++)
        pg_cuda.core->stats_transfer_time(timed[i].src, timed[i].dst, timed[i].ns);
    for (int i = 0; i < nheld; i++)
        pg_cuda.core->storage_release(held[i]);
}

static void pg_cuda_xfer_add(pg_cuda_device *d, const pg_cuda_xfer *x)
{
    for (;;) {
        pthread_mutex_lock(&d->lock);
        if (d->xfer_count < PG_CUDA_MAX_XFERS) {
            d->xfers[(d->xfer_head + d->xfer_count) % PG_CUDA_MAX_XFERS] = *x;
            d->xfer_count++;
            pthread_mutex_unlock(&d->lock);
            return;
        }
        pthread_mutex_unlock(&d->lock);
        pg_cuda_xfer_poll(d, true); /* ring full: wait for the oldest ones */
    }
}

/* One copy on stream `d`; `host` is the host-side storage or NULL (d2d). */
static pg_status pg_cuda_copy_on(pg_cuda_device *d, const pg_copy *c, enum cudaMemcpyKind kind,
                                 pg_storage *host, bool may_queue, const char *op)
{
    void *dst = (char *)c->dst->data + c->dst_offset;
    const void *src = (const char *)c->src->data + c->src_offset;
    bool queue = may_queue && c->async && (host == NULL || (host->flags & PG_STORAGE_PINNED));
    cudaEvent_t start, end;
    PG_TRY(pg_cuda_event_get(d, op, &start));
    pg_status st = pg_cuda_event_get(d, op, &end);
    if (st != PG_OK) {
        pg_cuda_event_put(d, start);
        return st;
    }
    pthread_mutex_lock(&d->lock);
    uint64_t before = d->queued_seq; /* all of these are ahead of the copy on the stream */
    pthread_mutex_unlock(&d->lock);

    st = PG_CUDA_RT(cudaEventRecord(start, d->stream), d->index, op);
    if (st == PG_OK) {
        if (c->src->device.type == PG_DEV_CUDA && c->dst->device.type == PG_DEV_CUDA &&
            c->src->device.index != c->dst->device.index)
            st = PG_CUDA_RT(cudaMemcpyPeerAsync(dst, c->dst->device.index, src,
                                                c->src->device.index, c->nbytes, d->stream),
                            d->index, op);
        else
            st = PG_CUDA_RT(cudaMemcpyAsync(dst, src, c->nbytes, kind, d->stream), d->index, op);
    }
    if (st == PG_OK)
        st = PG_CUDA_RT(cudaEventRecord(end, d->stream), d->index, op);
    if (st != PG_OK) {
        pg_cuda_event_put(d, start);
        pg_cuda_event_put(d, end);
        return st;
    }

    if (queue) {
        uint64_t seq = pg_cuda_note_queued(d, op);
        pg_cuda_mark(c->src, d, seq, PG_CUDA_ROLE_COPY, false);
        pg_cuda_mark(c->dst, d, seq, PG_CUDA_ROLE_COPY, true);
        if (host != NULL)
            pg_cuda.core->storage_retain(host);
        pg_cuda_xfer x = {start, end, c->src->device, c->dst->device, host};
        pg_cuda_xfer_add(d, &x);
        pg_cuda_xfer_poll(d, false);
        return PG_OK;
    }

    float ms = 0;
    cudaError_t err = cudaEventSynchronize(end);
    if (err == cudaSuccess)
        err = cudaEventElapsedTime(&ms, start, end);
    pg_cuda_event_put(d, start);
    pg_cuda_event_put(d, end);
    if (err != cudaSuccess) /* maybe an earlier op's fault: name the queued ops */
        return pg_cuda_stream_sync(d, "cudaEventSynchronize");
    pg_cuda_note_done(d, before);
    pg_cuda.core->stats_transfer_time(c->src->device, c->dst->device, (uint64_t)((double)ms * 1e6));
    return PG_OK;
}

pg_status pg_cuda_copy(const pg_backend *be, int index, const pg_copy *c)
{
    (void)be;
    (void)index; /* the storages name their devices */
    pg_cuda_device *d;
    char op[48];
    if (c->nbytes == 0)
        return PG_OK;
    switch (c->kind) {
    case PG_COPY_H2D:
        snprintf(op, sizeof op, "copy host -> cuda:%d", c->dst->device.index);
        PG_TRY(pg_cuda_device_get(c->dst->device.index, op, &d));
        break;
    case PG_COPY_D2H:
        snprintf(op, sizeof op, "copy cuda:%d -> host", c->src->device.index);
        PG_TRY(pg_cuda_device_get(c->src->device.index, op, &d));
        break;
    case PG_COPY_D2D:
        snprintf(op, sizeof op, "copy cuda:%d -> cuda:%d", c->src->device.index,
                 c->dst->device.index);
        PG_TRY(pg_cuda_device_get(c->dst->device.index, op, &d));
        break;
    default:
        return pg_cuda_error(PG_ERR_VALUE, "cuda: copy: unknown copy kind %d", c->kind);
    }
    /* a user stream current on this thread (cuda_stream.c): the copy, on d's
     * stream, comes after its work; refused while capturing a graph */
    PG_TRY(pg_cuda_stream_before_copy(d, op));
    /* The copy runs on d's stream, which orders it after d's own work only:
     * wait for the rest first (a host buffer a d2h on another device or a
     * sim copy is still filling; the source of a peer copy). */
    PG_TRY(pg_cuda_order_after(c->src, d));
    PG_TRY(pg_cuda_order_after(c->dst, d));
    switch (c->kind) {
    case PG_COPY_H2D:
        return pg_cuda_copy_on(d, c, cudaMemcpyHostToDevice, c->src, true, op);
    case PG_COPY_D2H:
        return pg_cuda_copy_on(d, c, cudaMemcpyDeviceToHost, c->dst, true, op);
    case PG_COPY_D2D:
        return pg_cuda_copy_on(d, c, cudaMemcpyDeviceToDevice, NULL,
                               c->src->device.index == c->dst->device.index, op);
    default:
        return pg_cuda_error(PG_ERR_VALUE, "cuda: copy: unknown copy kind %d", c->kind);
    }
}
