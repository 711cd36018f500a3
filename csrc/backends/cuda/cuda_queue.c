/* cuda_queue.c - the CUDA plugin's streams ("queues"), events and waits.
 *
 * THE STREAM/EVENT MODEL (user-visible streams build on this):
 *
 *   - Each device has three non-blocking streams, created together on the
 *     first use of the device (pg_cuda_queues_create, cuda_device.c):
 *       compute  every kernel, cuBLAS call, blocking copy and same-device copy;
 *       copy     non-blocking copies between pinned host memory and the device
 *                (DataLoader prefetch), so they overlap the compute stream;
 *       comm     NCCL collectives (cuda_nccl.c), so a DDP all-reduce does not
 *                queue behind the rest of backward.
 *   - A queue numbers what it runs (queued_seq). A storage's pending work is
 *     the core's backend-neutral record: the last write and the last read of
 *     each queue (so a peer read on another device's compute stream is kept
 *     beside this device's), each a pg_event (cuda, queue, seq). That pair is the per-storage
 *     event: a cudaEvent_t is recorded only when someone has to wait for it,
 *     on the queue named, at that moment (it then covers `seq` and whatever was
 *     queued after it, which only ever waits a little longer).
 *   - Before work is queued on queue W, every operand goes through
 *     pg_cuda_order_after(s, W): pending work of another backend (sim, a
 *     pinned buffer) is waited for on the host; pending work of another cuda
 *     queue, on this device or another, is ordered on the device with
 *     cudaEventRecord + cudaStreamWaitEvent (no host synchronize). Work of W
 *     itself is ordered by the stream.
 *   - A host wait (Tensor.wait(), .item(), synchronize) syncs the one stream
 *     that holds the event, then moves that queue's done_seq.
 *   - Memory safety with more than one stream: the caching allocator may hand
 *     a freed block to the next kernel on the compute stream at once. So a
 *     copy queued on any other stream keeps its device storage alive (held in
 *     the ring of copies in flight, below) until its end event has fired, and a copy
 *     into device memory on the copy stream first waits (on the device) for
 *     the compute work queued so far, which may still use the block.
 *   - User streams (pygpu.cuda.Stream, cuda_stream.c) stand in for the
 *     compute queue of the thread that made them current: an op launched
 *     under one is counted and marked as compute work (compute, seq) but runs
 *     on the user stream. Its device-side waits for other queues go to the
 *     user stream (pg_cuda_order_after_on); compute's own work reaches it
 *     through cuda_stream.c's joins (before each op, if compute moved). The
 *     other way round, whoever waits for compute work makes compute wait for
 *     the calling thread's user stream first (pg_cuda_queue_wait_queue, the
 *     copy path, and pg_cuda_queue_sync for every user stream current
 *     anywhere), so a (compute, seq) event covers work queued under a user
 *     stream too. Such work is not ahead of a blocking copy on the compute
 *     stream, so the copy's end moves done_seq only once it is known done
 *     (user_seq). During a graph capture a wait for another queue is a host
 *     wait (a capture may not wait for an event recorded outside it).
 *     Known gap: unlike the copy stream, a user stream does not hold the
 *     storages its work uses, so a tensor freed while its last kernel is still
 *     queued on a user stream gives its block back to the caching allocator
 *     early. Within the thread that owns the stream the order still holds (its
 *     next ops run on the same stream, its copies and leaving the block make
 *     compute wait for the stream first), but work another thread queues
 *     meanwhile on compute or copy may get the block before that kernel ran.
 *     The fix is the copy stream's: hold those storages until an event
 *     recorded on the user stream after them has fired (or make each user
 *     stream a pg_cuda_queue of its own, with its own events).
 *     A CUDA tensor imported through DLPack fits the same way: its producer
 *     orders its work before the thread's work stream, and the new storage is
 *     marked as written by compute work at that point
 *     (pg_plugin_storage_imported), so the copy stream waits for it too.
 *
 * Also here: the ring of copies in flight (the storages a queued copy holds)
 * and the device-side error flags (a bad label raises instead of a silent
 * NaN), both read after a host wait. The streams themselves, the device
 * guard and the recycled events are cuda_device.c's; which user stream is
 * current, cuda_stream.c's; both sit below this file, which calls down to
 * them and to cuda_profile.c (kernel times read after a wait), never up. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* ---- bookkeeping -------------------------------------------------------------------- */

static void copy_name(char *dst, const char *src)
{
    snprintf(dst, PG_CUDA_OPNAME_LEN, "%s", src != NULL ? src : "?");
}

uint64_t pg_cuda_note_queued(pg_cuda_queue *q, const char *op)
{
    return pg_cuda_note_queued_on(q, op, NULL);
}

uint64_t pg_cuda_note_queued_on(pg_cuda_queue *q, const char *op, const pg_cuda_ustream *u)
{
    pthread_mutex_lock(&q->dev->lock);
    uint64_t seq = ++q->queued_seq;
    if (u != NULL) /* not ahead of later work on q's own stream (pg_cuda_copy_on) */
        q->user_seq = seq;
    if (q->unsynced_ops++ == 0)
        copy_name(q->first_op, op);
    copy_name(q->last_op, op);
    pthread_mutex_unlock(&q->dev->lock);
    return seq;
}

void pg_cuda_note_done(pg_cuda_queue *q, uint64_t seq)
{
    uint64_t cur = atomic_load(&q->done_seq);
    while (cur < seq && !atomic_compare_exchange_weak(&q->done_seq, &cur, seq)) {
    }
}

/* Record that queued work (q, seq) reads or writes `s`, in the core's
 * backend-neutral record (under its lock). */
void pg_cuda_mark(pg_storage *s, pg_cuda_queue *q, uint64_t seq, bool write)
{
    pg_event ev = {pg_cuda.backend, q, seq};
    pg_cuda.core->storage_mark(s, ev, q->role, write);
}

/* The queue an event names, or NULL if the pointer is not one of ours. */
pg_cuda_queue *pg_cuda_event_queue(pg_event ev)
{
    for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++) {
        pg_cuda_device *d = &pg_cuda.dev[i];
        if (ev.queue == &d->compute || ev.queue == &d->copy || ev.queue == &d->comm)
            return ev.queue;
    }
    return NULL;
}

/* ---- copies in flight ------------------------------------------------------------------ *
 * A queued copy's start/end events and the storages it holds (cuda_copy.c
 * fills a pg_cuda_xfer). Polled at every later copy and at every host wait:
 * a finished one reports its time to the stats and lets go of its storages. */

void pg_cuda_xfer_poll(pg_cuda_device *d, bool wait_oldest)
{
    struct {
        pg_device src, dst;
        uint64_t ns;
    } timed[PG_CUDA_MAX_XFERS];
    pg_storage *held[2 * PG_CUDA_MAX_XFERS];
    int ntimed = 0, nheld = 0;

    pthread_mutex_lock(&d->lock);
    for (bool block = wait_oldest; d->xfer_count > 0; block = false) {
        pg_cuda_xfer *x = &d->xfers[d->xfer_head];
        /* a full ring waits for its oldest copy only; the rest are collected if done */
        cudaError_t err = block ? cudaEventSynchronize(x->end) : cudaEventQuery(x->end);
        if (err == cudaErrorNotReady) {
            /* not an error, but the runtime keeps it as the last error: the
             * next launch's cudaGetLastError() would report "device not
             * ready" for a kernel that is fine (PyTorch clears it too) */
            (void)cudaGetLastError();
            break;
        }
        float ms = 0;
        if (err == cudaSuccess && cudaEventElapsedTime(&ms, x->start, x->end) == cudaSuccess) {
            timed[ntimed].src = x->src;
            timed[ntimed].dst = x->dst;
            timed[ntimed++].ns = (uint64_t)((double)ms * 1e6);
        } else {
            (void)cudaGetLastError(); /* a failed copy surfaces at the next synchronize */
        }
        for (int h = 0; h < 2; h++)
            if (x->held[h] != NULL)
                held[nheld++] = x->held[h];
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

void pg_cuda_xfer_add(pg_cuda_device *d, const pg_cuda_xfer *x)
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
        pg_cuda_xfer_poll(d, true); /* ring full: wait for the oldest one */
    }
}

/* ---- waits ---------------------------------------------------------------------------- */

pg_status pg_cuda_stream_wait_queue(cudaStream_t ws, int wdev, pg_cuda_queue *q, const char *op)
{
    if (q == &q->dev->compute)
        /* compute work the calling thread queued under a user stream runs
         * there: compute waits for it first, so the event below covers it */
        PG_TRY(pg_cuda_stream_join_current(q->dev, op));
    pthread_mutex_lock(&q->dev->lock);
    uint64_t target = q->queued_seq;
    pthread_mutex_unlock(&q->dev->lock);
    if (target <= atomic_load(&q->done_seq))
        return PG_OK; /* nothing pending there */
    cudaEvent_t ev;
    PG_TRY(pg_cuda_event_get(q->dev, op, &ev));
    pg_cuda_guard g; /* the record belongs to q's device */
    pg_status st = pg_cuda_guard_enter(&g, q->dev->index, op);
    if (st == PG_OK) {
        st = PG_CUDA_RT(cudaEventRecord(ev, q->stream), q->dev->index, op);
        pg_cuda_guard_exit(&g);
    }
    /* a stream may wait for an event of another device; it waits for the
     * record made above even if the event is recorded again later */
    if (st == PG_OK)
        st = PG_CUDA_RT(cudaStreamWaitEvent(ws, ev, 0), wdev, op);
    pg_cuda_event_put(q->dev, ev);
    return st;
}

/* Make `waiter` wait on the device for everything queued on q so far. */
pg_status pg_cuda_queue_wait_queue(pg_cuda_queue *waiter, pg_cuda_queue *q, const char *op)
{
    if (waiter == q)
        return PG_OK;
    return pg_cuda_stream_wait_queue(waiter->stream, waiter->dev->index, q, op);
}

/* The queue a thread is ordering work for, while the core walks a storage's
 * record on its behalf (pg_cuda_order_after): wait_event then orders on the
 * device instead of waiting on the host. */
static _Thread_local pg_cuda_queue *pg_cuda_waiter;
/* the user stream the work really goes to, standing in for pg_cuda_waiter
 * (the device's compute queue), or NULL */
static _Thread_local pg_cuda_ustream *pg_cuda_waiter_user;

pg_status pg_cuda_order_after_on(pg_storage *s, pg_cuda_queue *q, pg_cuda_ustream *u)
{
    pg_cuda_queue *outer = pg_cuda_waiter;
    pg_cuda_ustream *outer_user = pg_cuda_waiter_user;
    pg_cuda_waiter = q;
    pg_cuda_waiter_user = u;
    /* idle: reads too, since marking replaces their events */
    pg_status st = pg_cuda.core->storage_wait_others(s, true, pg_cuda.backend, q);
    pg_cuda_waiter = outer;
    pg_cuda_waiter_user = outer_user;
    return st;
}

pg_status pg_cuda_order_after(pg_storage *s, pg_cuda_queue *q)
{
    return pg_cuda_order_after_on(s, q, NULL);
}

/* After a successful host wait: a kernel that found bad data raises now. */
pg_status pg_cuda_check_eflags(pg_cuda_device *d)
{
    volatile pg_cuda_eflags *e = d->eflags_host;
    if (e == NULL || e->bits == 0)
        return PG_OK;
    unsigned bits = e->bits;
    long long a = e->a, b = e->b, c = e->c;
    e->a = e->b = e->c = 0;
    e->claimed = 0;
    e->bits = 0;
    /* both are indices out of range: IndexError (AsyncIndexError), as on the cpu */
    if (bits & PG_CUDA_EFLAG_LABEL)
        return pg_cuda_error(PG_ERR_ASYNC_INDEX,
                             "cuda:%d: cross_entropy: label %lld (row %lld) is out of range for "
                             "%lld classes; labels must be in [0, %lld)",
                             d->index, a, b, c, c);
    if (bits & PG_CUDA_EFLAG_INDEX)
        return pg_cuda_error(PG_ERR_ASYNC_INDEX,
                             "index out of range in self: index %lld is out of bounds for "
                             "dimension %lld with size %lld (an index op on cuda:%d: gather, "
                             "scatter, index_select, embedding, ...)",
                             a, b, c, d->index);
    return pg_cuda_error(PG_ERR_ASYNC, "cuda:%d: a kernel reported bad data (flags 0x%x)",
                         d->index, bits);
}

pg_status pg_cuda_queue_sync(pg_cuda_queue *q, const char *why)
{
    pg_cuda_device *d = q->dev;
    pthread_mutex_lock(&d->lock);
    uint64_t target = q->queued_seq, nops = q->unsynced_ops;
    char first[PG_CUDA_OPNAME_LEN], last[PG_CUDA_OPNAME_LEN];
    memcpy(first, q->first_op, sizeof first);
    memcpy(last, q->last_op, sizeof last);
    pthread_mutex_unlock(&d->lock);

    /* the caller's device stays current (a wait on another GPU used to leave
     * that one current: the next event was then created on the wrong device) */
    pg_cuda_guard g;
    cudaError_t err = cudaSuccess;
    if (pg_cuda_guard_enter(&g, d->index, why) != PG_OK)
        err = cudaErrorInvalidDevice;
    else {
        if (q == &d->compute) {
            /* refuses during a graph capture; else compute also waits for the
             * user streams current somewhere, whose ops count as compute
             * work (cuda_stream.c) */
            pg_status st = pg_cuda_stream_before_sync(d, why);
            if (st != PG_OK) {
                pg_cuda_guard_exit(&g);
                return st;
            }
        }
        err = cudaStreamSynchronize(q->stream);
        pg_cuda_guard_exit(&g);
    }
    if (err == cudaSuccess) {
        /* only on success: after a sticky error every later wait must fail too */
        pg_cuda_note_done(q, target);
        pthread_mutex_lock(&d->lock);
        q->unsynced_ops -= nops;
        pthread_mutex_unlock(&d->lock);
        pg_cuda_xfer_poll(d, false);
        if (q == &d->compute)
            pg_cuda_profile_poll(d, false); /* kernel times: ops run on compute (or user streams) */
        /* only kernels set flags, and they run on the compute stream: a wait for
         * a copy does not take the blame for a bad label */
        return q == &d->compute ? pg_cuda_check_eflags(d) : PG_OK;
    }
    char op[200];
    if (nops == 1)
        snprintf(op, sizeof op, "%s", last);
    else if (nops > 1)
        snprintf(op, sizeof op,
                 "an op queued on the %s stream since the last synchronize (%llu ops, first %s, "
                 "last %s)",
                 q->name, (unsigned long long)nops, first, last);
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
    pg_status st = pg_cuda_queue_sync(&d->copy, "cudaStreamSynchronize");
    pg_status st2 = pg_cuda_queue_sync(&d->comm, "cudaStreamSynchronize");
    pg_status st3 = pg_cuda_queue_sync(&d->compute, "cudaStreamSynchronize");
    return st != PG_OK ? st : st2 != PG_OK ? st2 : st3;
}

pg_status pg_cuda_wait_event(const pg_backend *be, pg_event ev)
{
    pg_cuda_queue *q = ev.backend == be ? pg_cuda_event_queue(ev) : NULL;
    if (q == NULL || ev.seq <= atomic_load(&q->done_seq))
        return PG_OK;
    pg_cuda_ustream *u = pg_cuda_waiter_user;
    if (pg_cuda_waiter != NULL && u == NULL) /* ordering work for another queue: on the device */
        return pg_cuda_queue_wait_queue(pg_cuda_waiter, q, "wait for another stream");
    if (pg_cuda_waiter != NULL && u->capture == NULL) /* for an op on a user stream */
        return pg_cuda_stream_wait_queue(u->stream, u->device, q, "wait for another stream");
    /* a host wait; also for a capturing stream, which may not wait for an
     * event recorded outside the capture (cudaErrorStreamCaptureIsolation):
     * a prefetch on the copy stream finishes first, and compute's work is
     * refused by pg_cuda_stream_before_sync with a message */
    return pg_cuda_queue_sync(q, "cudaStreamSynchronize");
}
