/* cuda_profile.c - what a profiler or a curious user asks of the CUDA plugin:
 * device properties (pygpu.cuda.get_device_properties), NVTX ranges around
 * every op (option "nvtx"), and the GPU time of each kernel in the op stats
 * (option "kernel_timing").
 *
 * NVTX comes from the header-only nvtx3 of the toolkit: its calls cost a
 * load and a branch until a tool (Nsight Systems) injects itself, so with no
 * profiler attached nothing is loaded and nothing happens. The ranges are
 * host-side (as PyTorch's emit_nvtx): they mark where each op was queued,
 * and Nsight draws the kernels launched inside them under the range.
 *
 * Kernel timing records a pair of cudaEvents around each op on the stream
 * it runs on; a small ring per device is polled (cudaEventQuery, clearing
 * its cudaErrorNotReady) at each later op and at each synchronize, and the
 * finished ones go to the core through stats_op_done, so pygpu.stats()
 * reports GPU kernel time per device without adding a host wait. Off by
 * default: two event records per op cost a few microseconds. Not during a
 * graph capture (events recorded there are graph nodes, not timestamps).
 *
 * pygpu.profiler uses the same ring: while it records, each op is timed (whatever
 * "kernel_timing" says), its launchers note each kernel and library call on a log
 * (ctx->log, kernels/pg_cuda_kernels.h) that records one more event before each, and
 * the finished op's time and kernels go to the core's recorder (profile_device). */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* the toolkit's header-only NVTX3, when it has one; without it the ranges compile
 * out and the "nvtx" option is refused with a message (cuda_plugin.c) */
#if defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define PG_CUDA_NVTX 1
#endif
#endif
#ifdef PG_CUDA_NVTX
#define PG_NVTX_PUSH(name) ((void)nvtxRangePushA(name))
#define PG_NVTX_POP() ((void)nvtxRangePop())
#else
#define PG_NVTX_PUSH(name) ((void)(name))
#define PG_NVTX_POP() ((void)0)
#endif

bool pg_cuda_have_nvtx(void)
{
#ifdef PG_CUDA_NVTX
    return true;
#else
    return false;
#endif
}

#define PG_CUDA_TIMED_OPS 128 /* ops in flight with their events, per device */

typedef struct pg_cuda_timed {
    cudaEvent_t start, end;
    bool stats;        /* kernel_timing was on: the op's time goes to the stats */
    uint64_t prof_id;  /* pygpu.profiler's event, 0 when not recording */
    pg_cuda_prof_log log; /* its kernels (prof_id only) */
} pg_cuda_timed;

typedef struct pg_cuda_timer {
    pthread_mutex_t lock;
    pg_cuda_timed ring[PG_CUDA_TIMED_OPS];
    int head, count;
} pg_cuda_timer;

static pg_cuda_timer g_timer[PG_MAX_DEVICES_PER_TYPE];
static pthread_once_t g_timer_once = PTHREAD_ONCE_INIT;

static void pg_cuda_timer_init(void)
{
    for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++)
        pthread_mutex_init(&g_timer[i].lock, NULL);
}

static int64_t elapsed_ns(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return (int64_t)((double)ms * 1e6);
}

/* A finished op's kernels for pygpu.profiler: each from its note to the next (or the op's
 * end), from the op's start. */
static int profile_kernels(const pg_cuda_timed *x, pg_profile_kernel *k)
{
    for (int i = 0; i < x->log.n; i++) {
        memset(&k[i], 0, sizeof k[i]);
        snprintf(k[i].name, sizeof k[i].name, "%s", x->log.name[i]);
        k[i].in_type = x->log.types[i][0];
        k[i].out_type = x->log.types[i][1];
        k[i].compute_type = x->log.types[i][2];
        k[i].epilogue = x->log.types[i][3];
        k[i].start_ns = elapsed_ns(x->start, x->log.at[i]);
        k[i].dur_ns = elapsed_ns(x->log.at[i], i + 1 < x->log.n ? x->log.at[i + 1] : x->end);
    }
    return x->log.n;
}

/* Report the finished timed ops of device `d`, after waiting for the oldest one
 * if `wait_oldest` (a full ring). Their events go back to the device's spares
 * (cuda_device.c), so timing costs two event records per op, not two creations
 * and two destructions. */
void pg_cuda_profile_poll(pg_cuda_device *d, bool wait_oldest)
{
    pthread_once(&g_timer_once, pg_cuda_timer_init);
    pg_cuda_timer *t = &g_timer[d->index];
    enum { SPENT = (2 + PG_CUDA_PROF_KERNELS) * PG_CUDA_TIMED_OPS };
    static _Thread_local uint64_t ns[PG_CUDA_TIMED_OPS];
    static _Thread_local cudaEvent_t spent[SPENT];
    static _Thread_local pg_cuda_timed done[PG_CUDA_TIMED_OPS];
    int n = 0, nspent = 0, ndone = 0;
    pthread_mutex_lock(&t->lock);
    for (bool block = wait_oldest; t->count > 0; block = false) {
        pg_cuda_timed *x = &t->ring[t->head];
        cudaError_t err = block ? cudaEventSynchronize(x->end) : cudaEventQuery(x->end);
        if (err == cudaErrorNotReady) {
            (void)cudaGetLastError(); /* else the next launch check reports "not ready" */
            break;
        }
        if (err != cudaSuccess) {
            (void)cudaGetLastError(); /* the op's own failure surfaces at the next wait */
        } else {
            if (x->prof_id != 0)
                done[ndone++] = *x;
            int64_t e = x->stats ? elapsed_ns(x->start, x->end) : -1;
            if (e >= 0)
                ns[n++] = (uint64_t)e;
        }
        if (x->prof_id == 0 || err != cudaSuccess) { /* else after the profiler's reading */
            spent[nspent++] = x->start;
            spent[nspent++] = x->end;
            for (int i = 0; i < x->log.n; i++)
                spent[nspent++] = x->log.at[i];
        }
        t->head = (t->head + 1) % PG_CUDA_TIMED_OPS;
        t->count--;
    }
    pthread_mutex_unlock(&t->lock);
    pg_profile_kernel k[PG_CUDA_PROF_KERNELS];
    for (int j = 0; j < ndone; j++) {
        pg_cuda_timed *x = &done[j];
        int nk = profile_kernels(x, k);
        pg_cuda.core->profile_device(x->prof_id, -1, elapsed_ns(x->start, x->end), k, nk,
                                     x->log.seen);
        pg_cuda_event_put(d, x->start);
        pg_cuda_event_put(d, x->end);
        for (int i = 0; i < x->log.n; i++)
            pg_cuda_event_put(d, x->log.at[i]);
    }
    for (int i = 0; i < nspent; i++) /* outside t->lock: put takes d->lock */
        pg_cuda_event_put(d, spent[i]);
    pg_device dev = {PG_DEV_CUDA, d->index};
    for (int i = 0; i < n; i++)
        pg_cuda.core->stats_op_done(dev, ns[i]);
}

/* ctx->log's note: an event on the launch's stream before each kernel (the first
 * PG_CUDA_PROF_KERNELS of the op), and its name and types. */
static void log_note(pg_cuda_kernel_log *base, cudaStream_t stream, const char *name,
                     int in_type, int out_type, int compute_type, int epilogue)
{
    pg_cuda_prof_log *l = (pg_cuda_prof_log *)base;
    l->seen++;
    if (l->n >= PG_CUDA_PROF_KERNELS)
        return;
    cudaEvent_t ev;
    if (pg_cuda_event_get(l->d, name, &ev) != PG_OK)
        return; /* the profile goes without this kernel's time; the op is unaffected */
    if (cudaEventRecord(ev, stream) != cudaSuccess) {
        (void)cudaGetLastError();
        pg_cuda_event_put(l->d, ev);
        return;
    }
    l->name[l->n] = name;
    l->types[l->n][0] = in_type;
    l->types[l->n][1] = out_type;
    l->types[l->n][2] = compute_type;
    l->types[l->n][3] = epilogue;
    l->at[l->n++] = ev;
}

static void put_log_events(pg_cuda_device *d, pg_cuda_prof *p)
{
    for (int i = 0; i < p->log.n; i++)
        pg_cuda_event_put(d, p->log.at[i]);
    p->log.n = 0;
}

pg_status pg_cuda_profile_begin(pg_cuda_device *d, cudaStream_t stream, const char *op,
                                pg_cuda_prof *p)
{
    memset(p, 0, sizeof *p);
    if (atomic_load_explicit(&pg_cuda.nvtx, memory_order_relaxed)) {
        PG_NVTX_PUSH(op != NULL ? op : "op");
        p->nvtx = true;
    }
    pg_cuda_ustream *u = pg_cuda_current_ustream(d->index);
    bool stats = atomic_load_explicit(&pg_cuda.kernel_timing, memory_order_relaxed);
    uint64_t prof_id = pg_cuda.core->profile_current();
    if ((!stats && prof_id == 0) || (u != NULL && u->capture != NULL))
        return PG_OK;
    pthread_once(&g_timer_once, pg_cuda_timer_init);
    pg_cuda_profile_poll(d, false);
    pg_status st = pg_cuda_event_get(d, op, &p->start);
    if (st == PG_OK) {
        st = pg_cuda_event_get(d, op, &p->end);
        if (st != PG_OK)
            pg_cuda_event_put(d, p->start);
    }
    if (st == PG_OK) {
        st = PG_CUDA_RT(cudaEventRecord(p->start, stream), d->index, op);
        if (st != PG_OK) {
            pg_cuda_event_put(d, p->start);
            pg_cuda_event_put(d, p->end);
        }
    }
    if (st != PG_OK && p->nvtx) {
        PG_NVTX_POP();
        p->nvtx = false;
    }
    p->timed = st == PG_OK;
    p->stats = stats;
    if (p->timed && prof_id != 0) {
        p->prof_id = prof_id;
        p->log.base.note = log_note;
        p->log.d = d;
    }
    return st;
}

void pg_cuda_profile_end(pg_cuda_device *d, cudaStream_t stream, pg_cuda_prof *p, bool launched)
{
    if (p->nvtx)
        PG_NVTX_POP();
    if (!p->timed)
        return;
    if (!launched || cudaEventRecord(p->end, stream) != cudaSuccess) {
        (void)cudaGetLastError();
        pg_cuda_event_put(d, p->start);
        pg_cuda_event_put(d, p->end);
        put_log_events(d, p);
        return;
    }
    pg_cuda_timer *t = &g_timer[d->index];
    for (;;) {
        pthread_mutex_lock(&t->lock);
        if (t->count < PG_CUDA_TIMED_OPS) {
            pg_cuda_timed *x = &t->ring[(t->head + t->count) % PG_CUDA_TIMED_OPS];
            x->start = p->start;
            x->end = p->end;
            x->stats = p->stats;
            x->prof_id = p->prof_id;
            x->log = p->log;
            t->count++;
            pthread_mutex_unlock(&t->lock);
            return;
        }
        pthread_mutex_unlock(&t->lock);
        pg_cuda_profile_poll(d, true); /* ring full: wait for the oldest */
    }
}

/* ---- exported: device properties and user NVTX ranges ---------------------------------- */

/* pg_cuda_properties is declared in pg_cuda_extras.h (the extras table hands it out). */


pg_status pg_plugin_device_properties(int index, pg_cuda_properties *out)
{
    if (index < 0 || index >= PG_MAX_DEVICES_PER_TYPE)
        return pg_cuda_error(PG_ERR_INDEX, "cuda:%d: get_device_properties: no such device",
                             index);
    struct cudaDeviceProp prop;
    /* no context is created: cudaGetDeviceProperties only asks the driver */
    PG_TRY(PG_CUDA_RT(cudaGetDeviceProperties(&prop, index), index, "get_device_properties"));
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", prop.name);
    out->major = prop.major;
    out->minor = prop.minor;
    out->total_memory = prop.totalGlobalMem;
    out->multi_processor_count = prop.multiProcessorCount;
    out->max_threads_per_multi_processor = prop.maxThreadsPerMultiProcessor;
    out->warp_size = prop.warpSize;
    out->l2_cache_size = prop.l2CacheSize;
    out->shared_memory_per_block_optin = prop.sharedMemPerBlockOptin;
    out->pci_bus_id = prop.pciBusID;
    out->pci_device_id = prop.pciDeviceID;
    out->pci_domain_id = prop.pciDomainID;
    memcpy(out->uuid, prop.uuid.bytes, sizeof out->uuid);
    return PG_OK;
}

void pg_plugin_nvtx_push(const char *name) { PG_NVTX_PUSH(name != NULL ? name : "range"); }
void pg_plugin_nvtx_pop(void) { PG_NVTX_POP(); }
