/* cuda_copy.c - byte copies host<->device and device<->device, and the
 * timing of transfers for the core's statistics.
 *
 * Every copy is a cudaMemcpyAsync between two cudaEvents, so its duration
 * is measured on the device. Which stream it goes to (cuda_queue.c):
 *   - non-blocking, with the host side pinned: the device's copy stream, so
 *     it overlaps kernels (DataLoader prefetch);
 *   - non-blocking between two GPUs: the destination's compute stream, peer
 *     to peer (access enabled on first use);
 *   - everything else (blocking, pageable host memory, same-device copies):
 *     the compute stream.
 * Before any copy, pending work on either side is ordered first: another
 * cuda stream's on the device (cudaStreamWaitEvent), another backend's on
 * the host. Then:
 *   - queued (non-blocking and allowed): return at once; the destination's
 *     last_write and the source's last_read name the copy, the pinned host
 *     storage (and the device storage, when not on the compute stream) is
 *     retained until the DMA is done, and the events go into the device's
 *     ring of copies in flight (cuda_queue.c), polled later to report the
 *     time and let go of what the copy held;
 *   - otherwise: wait for the end event, so the bytes have moved when the
 *     call returns, and report the time.
 * A blocking copy of at most PG_CUDA_BOUNCE_BYTES into pageable host memory (loss.item(),
 * a printed scalar) lands in the device's pinned staging buffer first and is copied from
 * there once done, as PyTorch's item() does: the driver's own path for pageable memory cost
 * 14 us for 4 bytes on the H200 of 2026-11-28, against 1.5 us into pinned memory. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* One copy on queue q; `host` is the host-side storage or NULL (d2d); `staging`, when not
 * NULL, receives a blocking copy's bytes in place of the destination. */
static pg_status pg_cuda_copy_on(pg_cuda_queue *q, const pg_copy *c, enum cudaMemcpyKind kind,
                                 pg_storage *host, bool queue, const char *op, void *staging)
{
    pg_cuda_device *d = q->dev;
    void *dst = staging != NULL ? staging : (char *)c->dst->data + c->dst_offset;
    const void *src = (const char *)c->src->data + c->src_offset;
    cudaEvent_t start, end;
    PG_TRY(pg_cuda_event_get(d, op, &start));
    pg_status st = pg_cuda_event_get(d, op, &end);
    if (st != PG_OK) {
        pg_cuda_event_put(d, start);
        return st;
    }
    pthread_mutex_lock(&d->lock);
    uint64_t before = q->queued_seq; /* all of these are ahead of the copy on the stream, */
    uint64_t user = q->user_seq;     /* but those run on user streams (cuda_stream.c) */
    pthread_mutex_unlock(&d->lock);

    st = PG_CUDA_RT(cudaEventRecord(start, q->stream), d->index, op);
    if (st == PG_OK) {
        if (c->src->device.type == PG_DEV_CUDA && c->dst->device.type == PG_DEV_CUDA &&
            c->src->device.index != c->dst->device.index)
            st = PG_CUDA_RT(cudaMemcpyPeerAsync(dst, c->dst->device.index, src,
                                                c->src->device.index, c->nbytes, q->stream),
                            d->index, op);
        else
            st = PG_CUDA_RT(cudaMemcpyAsync(dst, src, c->nbytes, kind, q->stream), d->index, op);
    }
    if (st == PG_OK)
        st = PG_CUDA_RT(cudaEventRecord(end, q->stream), d->index, op);
    if (st != PG_OK) {
        pg_cuda_event_put(d, start);
        pg_cuda_event_put(d, end);
        return st;
    }

    if (c->dst_offset == 0 && c->nbytes == c->dst->nbytes) /* every byte rewritten (see launch) */
        pg_cuda.core->storage_clear_error(c->dst);
    if (queue) {
        uint64_t seq = pg_cuda_note_queued(q, op);
        pg_cuda_mark(c->src, q, seq, false);
        pg_cuda_mark(c->dst, q, seq, true);
        pg_cuda_xfer x = {start, end, c->src->device, c->dst->device, {NULL, NULL}};
        if (host != NULL) {
            pg_cuda.core->storage_retain(host);
            x.held[0] = host;
        }
        /* off the compute stream, or reading another device's memory: keep
         * the device storage whose block the allocator could otherwise hand
         * out while the DMA still uses it (see cuda_queue.c) */
        pg_storage *dev_side = kind == cudaMemcpyHostToDevice   ? c->dst
                               : kind == cudaMemcpyDeviceToHost ? c->src
                               : c->src->device.index != d->index ? c->src
                                                                  : NULL;
        if (dev_side != NULL && (q != &d->compute || dev_side->device.index != d->index)) {
            pg_cuda.core->storage_retain(dev_side);
            x.held[1] = dev_side;
        }
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
        return pg_cuda_queue_sync(q, "cudaEventSynchronize");
    /* another thread's user stream may still run compute work counted before
     * the copy (this thread's was joined by pg_cuda_stream_before_copy): only
     * once those are known done does the copy's end say the rest is done too */
    if (user <= atomic_load(&q->done_seq))
        pg_cuda_note_done(q, before);
    pg_cuda.core->stats_transfer_time(c->src->device, c->dst->device, (uint64_t)((double)ms * 1e6));
    /* the kernels ahead of a blocking copy on the compute stream are done: a
     * bad label among them raises here (loss.item() is such a copy) */
    return q == &d->compute ? pg_cuda_check_eflags(d) : PG_OK;
}

static bool pg_cuda_pinned(const pg_storage *s) { return (s->flags & PG_STORAGE_PINNED) != 0; }

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
        PG_TRY(pg_cuda_enable_peer(d, c->src->device.index, op));
        break;
    default:
        return pg_cuda_error(PG_ERR_VALUE, "cuda: copy: unknown copy kind %d", c->kind);
    }
    /* a user stream current on this thread (cuda_stream.c): the compute
     * stream waits for it first, so whichever queue the copy goes to orders
     * after its work through compute; refused while capturing a graph */
    PG_TRY(pg_cuda_stream_before_copy(d, op));
    bool h2d = c->kind == PG_COPY_H2D, d2h = c->kind == PG_COPY_D2H;
    /* a pageable host buffer may change once the call returns: never queued */
    bool queue = c->async && (h2d   ? pg_cuda_pinned(c->src)
                              : d2h ? pg_cuda_pinned(c->dst)
                                    : true);
    pg_cuda_queue *q = queue && (h2d || d2h) ? &d->copy : &d->compute;
    if (q == &d->copy && h2d) {
        /* the destination block may have been freed by a tensor whose
         * kernels, queued on compute or on any thread's user stream, still
         * use it: after them */
        PG_TRY(pg_cuda_queue_wait_queue(q, &d->compute, op));
        PG_TRY(pg_cuda_stream_join_active(d, q->stream, op));
    }
    PG_TRY(pg_cuda_order_after(c->src, q));
    PG_TRY(pg_cuda_order_after(c->dst, q));
    enum cudaMemcpyKind kind = h2d   ? cudaMemcpyHostToDevice
                               : d2h ? cudaMemcpyDeviceToHost
                                     : cudaMemcpyDeviceToDevice;
    if (d2h && !queue && d->bounce != NULL && c->nbytes <= PG_CUDA_BOUNCE_BYTES) {
        /* held until the bytes are out of the buffer: one small copy at a time a device */
        pthread_mutex_lock(&d->bounce_lock);
        pg_status st = pg_cuda_copy_on(q, c, kind, c->dst, false, op, d->bounce);
        if (st == PG_OK)
            memcpy((char *)c->dst->data + c->dst_offset, d->bounce, c->nbytes);
        pthread_mutex_unlock(&d->bounce_lock);
        return st;
    }
    return pg_cuda_copy_on(q, c, kind, h2d ? c->src : d2h ? c->dst : NULL, queue, op, NULL);
}
