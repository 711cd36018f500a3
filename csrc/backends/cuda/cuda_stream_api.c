/* cuda_stream_api.c - the stream entry points of the extras table
 * (pg_cuda_extras.h; pygpu._C's _cuda_* methods): pygpu.cuda.Stream and Event (create, enter/leave a `with
 * pygpu.cuda.stream(s):` block, synchronize, query, wait, record, timing),
 * and the stream hand-offs of interop (__cuda_array_interface__, DLPack).
 *
 * The ordering rules these follow are cuda_stream.c's (which stream is
 * current on a thread, the joins that keep it ordered with the device's
 * compute queue); this file sits above both it and cuda_queue.c, since a
 * synchronize of the device's own stream and the interop hand-offs are queue
 * work. Nothing below calls into this file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"


/* The cudaStream_t a (device, handle) pair names: NULL handle = the device's own. */
static pg_status pg_cuda_stream_of(int device, void *h, const char *op, pg_cuda_device **d,
                                   cudaStream_t *out)
{
    pg_cuda_ustream *u = h;
    if (u != NULL && u->device != device)
        return pg_cuda_error(PG_ERR_DEVICE, "cuda:%d: %s: the stream belongs to cuda:%d", device,
                             op, u->device);
    PG_TRY(pg_cuda_device_get(device, op, d));
    *out = u != NULL ? u->stream : (*d)->compute.stream;
    return PG_OK;
}

static pg_status pg_cuda_refuse_in_capture(int device, const char *what)
{
    pg_cuda_ustream *u = pg_cuda_current_ustream(device);
    if (u != NULL && u->capture != NULL)
        return pg_cuda_error(PG_ERR_RUNTIME,
                             "cuda:%d: %s waits on the host and is not allowed during CUDA graph "
                             "capture; call it after the `with pygpu.cuda.graph(g):` block",
                             device, what);
    return PG_OK;
}

pg_status pg_plugin_stream_create(int device, int priority, void **out)
{
    pg_cuda_device *d;
    PG_TRY(pg_cuda_device_get(device, "Stream()", &d));
    pg_cuda_ustream *u = calloc(1, sizeof *u);
    if (u == NULL)
        return pg_cuda_error(PG_ERR_NOMEM, "cuda:%d: Stream(): out of host memory", device);
    int lo = 0, hi = 0; /* numerically: hi <= lo (lower is more urgent) */
    if (cudaDeviceGetStreamPriorityRange(&lo, &hi) != cudaSuccess)
        (void)cudaGetLastError();
    int p = priority < 0 ? hi : lo; /* as PyTorch: -1 high priority, 0 default */
    pg_status st = PG_CUDA_RT(cudaStreamCreateWithPriority(&u->stream, cudaStreamNonBlocking, p),
                              device, "Stream()");
    if (st != PG_OK) {
        free(u);
        return st;
    }
    u->device = device;
    u->seen_seq = pg_cuda_compute_queued(d);
    *out = u;
    return PG_OK;
}

pg_status pg_plugin_stream_destroy(void *h)
{
    pg_cuda_ustream *u = h;
    if (u == NULL)
        return PG_OK;
    if (u->nactive > 0 || u->capture != NULL)
        return pg_cuda_error(PG_ERR_RUNTIME,
                             "cuda:%d: a stream that is current (or capturing) cannot be "
                             "destroyed; leave its `with` block first",
                             u->device);
    /* queued work finishes first: cudaStreamDestroy returns at once and the
     * driver frees the stream when its work is done */
    pg_cuda_guard g; /* the caller's current device is put back */
    if (pg_cuda_guard_enter(&g, u->device, "Stream destroy") == PG_OK) {
        if (cudaStreamDestroy(u->stream) != cudaSuccess)
            (void)cudaGetLastError();
        pg_cuda_guard_exit(&g);
    }
    free(u);
    return PG_OK;
}

pg_status pg_plugin_stream_handle(int device, void *h, uintptr_t *out)
{
    pg_cuda_device *d;
    cudaStream_t s = NULL;
    PG_TRY(pg_cuda_stream_of(device, h, "Stream.cuda_stream", &d, &s));
    *out = (uintptr_t)s;
    return PG_OK;
}

pg_status pg_plugin_stream_enter(int device, void *h, void **prev)
{
    pg_cuda_device *d;
    cudaStream_t s = NULL;
    PG_TRY(pg_cuda_stream_of(device, h, "stream()", &d, &s));
    pg_cuda_ustream *old = pg_cuda_current_ustream(device), *u = h;
    if (old != NULL && old->capture != NULL && old != u)
        return pg_cuda_error(PG_ERR_RUNTIME,
                             "cuda:%d: cannot switch streams during CUDA graph capture (the "
                             "captured work must stay on the capturing stream)",
                             device);
    if (u != NULL && u != old) {
        cudaStream_t before = old != NULL ? old->stream : d->compute.stream;
        PG_TRY(pg_cuda_stream_join(device, s, before, "stream()"));
        u->seen_seq = pg_cuda_compute_queued(d);
    } else if (u == NULL && old != NULL) {
        /* entering the device's own stream: it takes over from the user stream */
        PG_TRY(pg_cuda_stream_join(device, d->compute.stream, old->stream, "stream()"));
    }
    if (u != NULL)
        pg_cuda_ustream_activate(u);
    pg_cuda_set_current_ustream(device, u);
    *prev = old;
    return PG_OK;
}

pg_status pg_plugin_stream_exit(int device, void *h, void *prev)
{
    pg_cuda_device *d;
    cudaStream_t s = NULL;
    PG_TRY(pg_cuda_stream_of(device, h, "stream()", &d, &s));
    pg_cuda_ustream *u = h, *back = prev;
    if (pg_cuda_current_ustream(device) != u)
        return pg_cuda_error(PG_ERR_RUNTIME,
                             "cuda:%d: stream() blocks must be left in the order they were "
                             "entered (on the thread that entered them)",
                             device);
    pg_status st = PG_OK;
    if (u != back && (u == NULL || u->capture == NULL))
        st = pg_cuda_stream_join(device, back != NULL ? back->stream : d->compute.stream, s,
                                 "stream()");
    if (back != NULL && back != u)
        back->seen_seq = 0; /* look at the device's stream again before its next op */
    if (u != NULL)
        pg_cuda_ustream_deactivate(u);
    pg_cuda_set_current_ustream(device, back);
    return st;
}

pg_status pg_plugin_stream_synchronize(int device, void *h)
{
    PG_TRY(pg_cuda_refuse_in_capture(device, "Stream.synchronize()"));
    pg_cuda_device *d;
    cudaStream_t s = NULL;
    PG_TRY(pg_cuda_stream_of(device, h, "Stream.synchronize()", &d, &s));
    if (h == NULL) /* the device's own stream: its bookkeeping too */
        return pg_cuda_queue_sync(&d->compute, "Stream.synchronize");
    cudaError_t err = cudaStreamSynchronize(s);
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, device, "work queued on a user stream",
                         "cudaStreamSynchronize", true);
}

pg_status pg_plugin_stream_query(int device, void *h, int *done)
{
    PG_TRY(pg_cuda_refuse_in_capture(device, "Stream.query()"));
    pg_cuda_device *d;
    cudaStream_t s = NULL;
    PG_TRY(pg_cuda_stream_of(device, h, "Stream.query()", &d, &s));
    cudaError_t err = cudaStreamQuery(s);
    if (err == cudaErrorNotReady) {
        (void)cudaGetLastError(); /* not an error: the next launch check must not see it */
        *done = 0;
        return PG_OK;
    }
    *done = 1;
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, device, "work queued on a stream",
                         "cudaStreamQuery", true);
}

typedef struct pg_cuda_uevent {
    int device;
    bool timing;
    bool recorded;
    cudaEvent_t ev;
} pg_cuda_uevent;

pg_status pg_plugin_stream_wait_event(int device, void *h, void *evp)
{
    pg_cuda_uevent *e = evp;
    pg_cuda_device *d;
    cudaStream_t s = NULL;
    PG_TRY(pg_cuda_stream_of(device, h, "Stream.wait_event()", &d, &s));
    if (e == NULL || !e->recorded)
        return PG_OK; /* as CUDA: waiting for an event never recorded waits for nothing */
    return PG_CUDA_RT(cudaStreamWaitEvent(s, e->ev, 0), device, "Stream.wait_event()");
}

pg_status pg_plugin_event_create(int device, int timing, void **out)
{
    pg_cuda_device *d;
    PG_TRY(pg_cuda_device_get(device, "Event()", &d));
    pg_cuda_uevent *e = calloc(1, sizeof *e);
    if (e == NULL)
        return pg_cuda_error(PG_ERR_NOMEM, "cuda:%d: Event(): out of host memory", device);
    pg_status st = PG_CUDA_RT(
        cudaEventCreateWithFlags(&e->ev, timing ? cudaEventDefault : cudaEventDisableTiming),
        device, "Event()");
    if (st != PG_OK) {
        free(e);
        return st;
    }
    e->device = device;
    e->timing = timing != 0;
    *out = e;
    return PG_OK;
}

pg_status pg_plugin_event_destroy(void *evp)
{
    pg_cuda_uevent *e = evp;
    if (e == NULL)
        return PG_OK;
    pg_cuda_guard g;
    if (pg_cuda_guard_enter(&g, e->device, "Event destroy") == PG_OK) {
        if (cudaEventDestroy(e->ev) != cudaSuccess)
            (void)cudaGetLastError();
        pg_cuda_guard_exit(&g);
    }
    free(e);
    return PG_OK;
}

pg_status pg_plugin_event_record(void *evp, int device, void *h)
{
    pg_cuda_uevent *e = evp;
    if (e->device != device)
        return pg_cuda_error(PG_ERR_DEVICE,
                             "cuda:%d: Event.record(): the event was created on cuda:%d; record "
                             "it on a stream of that device",
                             device, e->device);
    pg_cuda_device *d;
    cudaStream_t s = NULL;
    PG_TRY(pg_cuda_stream_of(device, h, "Event.record()", &d, &s));
    PG_TRY(PG_CUDA_RT(cudaEventRecord(e->ev, s), device, "Event.record()"));
    e->recorded = true;
    return PG_OK;
}

pg_status pg_plugin_event_query(void *evp, int *done)
{
    pg_cuda_uevent *e = evp;
    PG_TRY(pg_cuda_refuse_in_capture(e->device, "Event.query()"));
    if (!e->recorded) {
        *done = 1;
        return PG_OK;
    }
    pg_cuda_guard g;
    PG_TRY(pg_cuda_guard_enter(&g, e->device, "Event.query()"));
    cudaError_t err = cudaEventQuery(e->ev);
    pg_cuda_guard_exit(&g);
    if (err == cudaErrorNotReady) {
        (void)cudaGetLastError();
        *done = 0;
        return PG_OK;
    }
    *done = 1;
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, e->device, "work before an event",
                         "cudaEventQuery", true);
}

pg_status pg_plugin_event_synchronize(void *evp)
{
    pg_cuda_uevent *e = evp;
    PG_TRY(pg_cuda_refuse_in_capture(e->device, "Event.synchronize()"));
    if (!e->recorded)
        return PG_OK;
    pg_cuda_guard g;
    PG_TRY(pg_cuda_guard_enter(&g, e->device, "Event.synchronize()"));
    cudaError_t err = cudaEventSynchronize(e->ev);
    pg_cuda_guard_exit(&g);
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, e->device, "work before an event",
                         "cudaEventSynchronize", true);
}

pg_status pg_plugin_event_elapsed_time(void *startp, void *endp, float *ms)
{
    pg_cuda_uevent *a = startp, *b = endp;
    if (!a->timing || !b->timing)
        return pg_cuda_error(PG_ERR_VALUE, "cuda: elapsed_time needs both events created with "
                                           "Event(enable_timing=True)");
    if (!a->recorded || !b->recorded)
        return pg_cuda_error(PG_ERR_VALUE,
                             "cuda: elapsed_time: both events must be recorded first");
    pg_cuda_guard g;
    PG_TRY(pg_cuda_guard_enter(&g, b->device, "Event.elapsed_time()"));
    cudaError_t err = cudaEventElapsedTime(ms, a->ev, b->ev);
    pg_cuda_guard_exit(&g);
    if (err == cudaErrorNotReady) {
        (void)cudaGetLastError();
        return pg_cuda_error(PG_ERR_RUNTIME, "cuda: elapsed_time: the work before the events "
                                             "has not finished; call end.synchronize() first");
    }
    return PG_CUDA_RT(err, b->device, "Event.elapsed_time()");
}

/* The calling thread's work stream on d waits (on the device) for what d's
 * copy and comm queues hold so far, so that it alone covers every pygpu write
 * to d's memory (a prefetch still filling a tensor included): what another
 * library is told to wait for. Nothing while capturing (the capture may not
 * wait for outside events; the refusals above apply). */
static pg_status pg_cuda_work_stream_gather(pg_cuda_device *d, const char *op)
{
    pg_cuda_ustream *u = pg_cuda_current_ustream(d->index);
    if (u != NULL && u->capture != NULL)
        return PG_OK;
    cudaStream_t ws = pg_cuda_work_stream(d);
    PG_TRY(pg_cuda_stream_wait_queue(ws, d->index, &d->copy, op));
    return pg_cuda_stream_wait_queue(ws, d->index, &d->comm, op);
}

/* __cuda_array_interface__ of a cuda tensor names the thread's work stream:
 * make it cover the other queues first. */

/* The cudaStream_t this thread's work on `device` goes to now: what a DLPack
 * producer is told to make wait (from_dlpack of CUDA memory). */
pg_status pg_plugin_stream_current_handle(int device, uintptr_t *out)
{
    pg_cuda_device *d;
    PG_TRY(pg_cuda_device_get(device, "from_dlpack", &d));
    *out = (uintptr_t)pg_cuda_work_stream(d);
    return PG_OK;
}

pg_status pg_plugin_stream_gather(int device)
{
    pg_cuda_device *d;
    PG_TRY(pg_cuda_device_get(device, "__cuda_array_interface__", &d));
    return pg_cuda_work_stream_gather(d, "__cuda_array_interface__");
}

/* from_dlpack of CUDA memory: the producer made this thread's work stream
 * wait for its work (interop.c handed that stream over). Mark the new storage
 * as written by compute work queued now, so that a copy on the copy stream
 * and a host wait order after the producer too (through compute, which waits
 * for this thread's user stream first: pg_cuda_stream_join_current). */

pg_status pg_plugin_storage_imported(int device, void *storage)
{
    pg_cuda_device *d;
    PG_TRY(pg_cuda_device_get(device, "from_dlpack", &d));
    uint64_t seq = pg_cuda_note_queued_on(&d->compute, "from_dlpack", pg_cuda_current_ustream(device));
    pg_cuda_mark(storage, &d->compute, seq, true);
    return PG_OK;
}

/* __dlpack__(stream=consumer) of a cuda tensor: the consumer's stream waits on
 * the device for what this thread queued so far (DLPack: 1 is the legacy
 * default stream, 2 the per-thread one), instead of a host sync. */

pg_status pg_plugin_stream_wait_for_current(int device, uintptr_t consumer)
{
    PG_TRY(pg_cuda_refuse_in_capture(device, "__dlpack__(stream=...)"));
    pg_cuda_device *d;
    PG_TRY(pg_cuda_device_get(device, "__dlpack__", &d));
    PG_TRY(pg_cuda_work_stream_gather(d, "__dlpack__(stream=...)"));
    cudaStream_t c = consumer == 1   ? cudaStreamLegacy
                     : consumer == 2 ? cudaStreamPerThread
                                     : (cudaStream_t)consumer;
    return pg_cuda_stream_join(device, c, pg_cuda_work_stream(d), "__dlpack__(stream=...)");
}
