/* cuda_nccl.c - NCCL, the collective engine for cuda tensors, loaded on first use.
 *
 * pygpu.distributed runs cpu and sim tensors over MPI and cuda tensors over NCCL.
 * NCCL is not linked: like cuBLAS in CuPy and PyTorch's wheels, libnccl.so.2 is
 * dlopen'ed from the path Python hands us (the nvidia-nccl-cu13 wheel's lib
 * directory or the toolkit's), so the plugin builds and loads where NCCL is absent
 * and says so in one line when a collective is asked for.
 *
 * The few entry points used are declared here from nccl.h's stable C ABI (the
 * unique id is 128 opaque bytes; dtypes and reduction ops are fixed enum values),
 * so building needs no NCCL headers. Reached from pygpu/distributed/_nccl.py through
 * the extras table (cuda_extras.c) as pg_plugin_nccl_*; each returns 0 or writes a message.
 *
 * pygpu.distributed's collectives on cuda tensors come here as a list of calls
 * (pg_nccl_call: all-reduce, broadcast, reduce, all-gather, reduce-scatter, send,
 * recv); several calls run as one ncclGroupStart/ncclGroupEnd group, which is how
 * all_to_all, gather and scatter are made of sends and receives (as PyTorch's
 * ProcessGroupNCCL makes them). The entry points beyond all-reduce and broadcast
 * are looked up at load and refused by name if this NCCL lacks them.
 *
 * The calls are queued on the device's comm stream after (on the device,
 * through events: no host wait) everything queued on the device so far: the
 * compute stream, every user stream current on some thread and the copy stream,
 * which hold every pending write to the tensor (a DDP bucket's gradients, a
 * non-blocking upload). The comm stream alone is then synchronized before
 * returning, so no storage is left with pending work the core does not know of.
 *
 * A dead or missing peer must not hang the job: communicators are made
 * non-blocking (ncclCommInitRankConfig with blocking = 0, NCCL >= 2.14), and
 * every wait (joining, a collective finishing, finalizing) polls
 * ncclCommGetAsyncError and the stream, with a deadline (plugin option
 * "nccl_timeout_s", default 600 s as PyTorch's). On an error or at the deadline
 * the communicator is aborted (ncclCommAbort, which also lets the stream drain)
 * and the call fails naming what happened; later calls on it fail at once.
 * destroy_process_group finalizes and destroys it (pg_plugin_nccl_comm_destroy).
 * pygpu.distributed calls these from each group's NCCL thread, in call order, which is
 * where DDP's overlap with backward comes from. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_internal.h"

#define PG_NCCL_ID_BYTES 128
typedef struct pg_nccl_comm_s *pg_nccl_comm; /* ncclComm_t */
typedef int pg_nccl_result;                 /* ncclResult_t; 0 = ncclSuccess */
#define PG_NCCL_IN_PROGRESS 7              /* ncclInProgress */

/* ncclConfig_t is versioned and append-only: NCCL reads `size` bytes of it, so
 * the 2.14 prefix (the first with `blocking`) is all we need to declare. */
typedef struct pg_nccl_config {
    size_t size;
    unsigned int magic;   /* NCCL_API_MAGIC */
    unsigned int version; /* NCCL_VERSION(2, 14, 0) */
    int blocking, cga_cluster_size, min_ctas, max_ctas;
    const char *net_name;
} pg_nccl_config;

/* What pygpu.distributed holds: the communicator, its device, and whether it
 * was aborted (every later call then fails at once). `lock` serializes the
 * collectives on one communicator: NCCL's are not thread-safe, and DDP's comm
 * thread and a main-thread all_reduce may share it. */
typedef struct pg_nccl_handle {
    pg_nccl_comm comm;
    pthread_mutex_t lock;
    int device;
    bool aborted;
    char why[256]; /* why it was aborted */
} pg_nccl_handle;

static struct {
    pthread_mutex_t lock;
    void *lib;
    int version;
    pg_nccl_result (*get_version)(int *);
    pg_nccl_result (*get_unique_id)(void *);
    void *comm_init_rank; /* ncclCommInitRank takes the id by value: see pg_nccl_init_fn */
    pg_nccl_result (*comm_destroy)(pg_nccl_comm);
    void *comm_init_rank_config; /* optional (NCCL >= 2.14): non-blocking init */
    pg_nccl_result (*comm_get_async_error)(pg_nccl_comm, pg_nccl_result *);
    pg_nccl_result (*comm_abort)(pg_nccl_comm);
    pg_nccl_result (*comm_finalize)(pg_nccl_comm); /* optional (NCCL >= 2.14) */
    pg_nccl_result (*all_reduce)(const void *, void *, size_t, int, int, pg_nccl_comm, cudaStream_t);
    pg_nccl_result (*broadcast)(const void *, void *, size_t, int, int, pg_nccl_comm, cudaStream_t);
    /* optional: refused by name when missing */
    pg_nccl_result (*reduce)(const void *, void *, size_t, int, int, int, pg_nccl_comm, cudaStream_t);
    pg_nccl_result (*all_gather)(const void *, void *, size_t, int, pg_nccl_comm, cudaStream_t);
    pg_nccl_result (*reduce_scatter)(const void *, void *, size_t, int, int, pg_nccl_comm,
                                     cudaStream_t);
    pg_nccl_result (*send)(const void *, size_t, int, int, pg_nccl_comm, cudaStream_t);
    pg_nccl_result (*recv)(void *, size_t, int, int, pg_nccl_comm, cudaStream_t);
    pg_nccl_result (*group_start)(void);
    pg_nccl_result (*group_end)(void);
    const char *(*error_string)(pg_nccl_result);
} g_nccl = {.lock = PTHREAD_MUTEX_INITIALIZER};

int pg_plugin_nccl_load(const char *path, char *why, size_t whylen);
int pg_plugin_nccl_version(void);
int pg_plugin_nccl_unique_id(char *out, char *why, size_t whylen);
int pg_plugin_nccl_comm_init(int nranks, const char *id, int rank, int device,
                                            void **comm, char *why, size_t whylen);
int pg_plugin_nccl_comm_destroy(void *comm);
int pg_plugin_nccl_comm_abort(void *comm);

/* ncclUniqueId is passed BY VALUE to ncclCommInitRank: a 128-byte struct. */
typedef struct { char internal[PG_NCCL_ID_BYTES]; } pg_nccl_id;
typedef pg_nccl_result (*pg_nccl_init_fn)(pg_nccl_comm *, int, pg_nccl_id, int);
typedef pg_nccl_result (*pg_nccl_init_config_fn)(pg_nccl_comm *, int, pg_nccl_id, int,
                                                 pg_nccl_config *);

static int fail(char *why, size_t whylen, const char *fmt, const char *a, const char *b)
{
    if (why && whylen)
        snprintf(why, whylen, fmt, a, b);
    return -1;
}

int pg_plugin_nccl_load(const char *path, char *why, size_t whylen)
{
    pthread_mutex_lock(&g_nccl.lock);
    int rc = 0;
    if (!g_nccl.lib) {
        void *h = dlopen(path && *path ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            rc = fail(why, whylen, "NCCL could not be loaded (%s): %s; pip install nvidia-nccl-cu13",
                      path && *path ? path : "libnccl.so.2", dlerror());
        } else {
            g_nccl.get_version = (pg_nccl_result(*)(int *))dlsym(h, "ncclGetVersion");
            g_nccl.get_unique_id = (pg_nccl_result(*)(void *))dlsym(h, "ncclGetUniqueId");
            g_nccl.comm_init_rank = dlsym(h, "ncclCommInitRank");
            *(void **)&g_nccl.comm_destroy = dlsym(h, "ncclCommDestroy");
            *(void **)&g_nccl.all_reduce = dlsym(h, "ncclAllReduce");
            *(void **)&g_nccl.broadcast = dlsym(h, "ncclBroadcast");
            *(void **)&g_nccl.error_string = dlsym(h, "ncclGetErrorString");
            g_nccl.comm_init_rank_config = dlsym(h, "ncclCommInitRankConfig");
            *(void **)&g_nccl.comm_get_async_error = dlsym(h, "ncclCommGetAsyncError");
            *(void **)&g_nccl.comm_abort = dlsym(h, "ncclCommAbort");
            *(void **)&g_nccl.comm_finalize = dlsym(h, "ncclCommFinalize");
            *(void **)&g_nccl.reduce = dlsym(h, "ncclReduce");
            *(void **)&g_nccl.all_gather = dlsym(h, "ncclAllGather");
            *(void **)&g_nccl.reduce_scatter = dlsym(h, "ncclReduceScatter");
            *(void **)&g_nccl.send = dlsym(h, "ncclSend");
            *(void **)&g_nccl.recv = dlsym(h, "ncclRecv");
            *(void **)&g_nccl.group_start = dlsym(h, "ncclGroupStart");
            *(void **)&g_nccl.group_end = dlsym(h, "ncclGroupEnd");
            if (!g_nccl.get_version || !g_nccl.get_unique_id || !g_nccl.comm_init_rank ||
                !g_nccl.comm_destroy || !g_nccl.all_reduce || !g_nccl.broadcast ||
                !g_nccl.error_string || !g_nccl.comm_get_async_error || !g_nccl.comm_abort) {
                rc = fail(why, whylen, "%s lacks an NCCL entry point%s", path ? path : "libnccl.so.2",
                          " (ncclGetVersion/ncclAllReduce/...): not an NCCL 2 library");
                dlclose(h);
            } else if (g_nccl.get_version(&g_nccl.version) != 0) {
                rc = fail(why, whylen, "%s: ncclGetVersion failed%s", path ? path : "libnccl.so.2", "");
                dlclose(h);
            } else {
                g_nccl.lib = h;
            }
        }
    }
    pthread_mutex_unlock(&g_nccl.lock);
    return rc;
}

int pg_plugin_nccl_version(void) { return g_nccl.lib ? g_nccl.version : 0; }

static int nccl_fail(pg_nccl_result r, const char *call, char *why, size_t whylen)
{
    return fail(why, whylen, "%s failed: %s", call, g_nccl.error_string(r));
}

int pg_plugin_nccl_unique_id(char *out, char *why, size_t whylen)
{
    if (!g_nccl.lib)
        return fail(why, whylen, "NCCL is not loaded%s%s", "", "");
    pg_nccl_result r = g_nccl.get_unique_id(out);
    return r ? nccl_fail(r, "ncclGetUniqueId", why, whylen) : 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap(void)
{
    struct timespec ts = {0, 200 * 1000}; /* 0.2 ms: polling costs nothing next to a hang */
    nanosleep(&ts, NULL);
}

static double timeout_s(void)
{
    int t = atomic_load(&pg_cuda.nccl_timeout_s);
    return t > 0 ? (double)t : 600.0;
}

static void abort_handle(pg_nccl_handle *h, const char *why)
{
    if (h->aborted)
        return;
    if (h->comm)
        g_nccl.comm_abort(h->comm); /* frees it; its kernels still running exit */
    h->comm = NULL;
    h->aborted = true;
    snprintf(h->why, sizeof h->why, "%s", why);
}

/* Wait until a non-blocking communicator leaves ncclInProgress (after init,
 * an enqueue or finalize): 0, or -1 (aborted) with a message. */
static int wait_comm_ready(pg_nccl_handle *h, const char *call, char *why, size_t whylen)
{
    double deadline = now_s() + timeout_s();
    for (;;) {
        pg_nccl_result state = 0;
        pg_nccl_result r = g_nccl.comm_get_async_error(h->comm, &state);
        if (r == 0 && state == 0)
            return 0;
        char msg[256];
        if (r != 0 || state != PG_NCCL_IN_PROGRESS) {
            snprintf(msg, sizeof msg, "%s failed: %s", call, g_nccl.error_string(r ? r : state));
            abort_handle(h, msg);
            return fail(why, whylen, "%s%s", msg, "; the communicator was aborted");
        }
        if (now_s() > deadline) {
            snprintf(msg, sizeof msg,
                     "%s timed out after %.0f s: a peer did not take part (did every rank reach "
                     "this call? NCCL_DEBUG=INFO says more)",
                     call, timeout_s());
            abort_handle(h, msg);
            return fail(why, whylen, "%s%s", msg, "; the communicator was aborted");
        }
        nap();
    }
}

int pg_plugin_nccl_comm_init(int nranks, const char *id, int rank, int device, void **comm,
                             char *why, size_t whylen)
{
    if (!g_nccl.lib)
        return fail(why, whylen, "NCCL is not loaded%s%s", "", "");
    pg_cuda_device *d;
    if (pg_cuda_device_get(device, "nccl_comm_init", &d) != PG_OK)
        return fail(why, whylen, "%s%s", pg_cuda_last_message(), "");
    pg_nccl_handle *h = calloc(1, sizeof *h);
    if (h == NULL)
        return fail(why, whylen, "out of host memory%s%s", "", "");
    pthread_mutex_init(&h->lock, NULL);
    h->device = device;
    pg_nccl_id uid;
    memcpy(uid.internal, id, PG_NCCL_ID_BYTES);
    pg_nccl_result r;
    if (g_nccl.comm_init_rank_config != NULL) {
        pg_nccl_config cfg = {sizeof cfg, 0xcafebeefu, 21400u, 0, INT_MIN, INT_MIN, INT_MIN, NULL};
        r = ((pg_nccl_init_config_fn)g_nccl.comm_init_rank_config)(&h->comm, nranks, uid, rank,
                                                                   &cfg);
        if ((r == 0 || r == PG_NCCL_IN_PROGRESS) && h->comm != NULL) {
            if (wait_comm_ready(h, "ncclCommInitRank", why, whylen) != 0) {
                pthread_mutex_destroy(&h->lock);
                free(h);
                return -1;
            }
            *comm = h;
            return 0;
        }
    } else { /* NCCL < 2.14: blocking init (a missing peer hangs here) */
        r = ((pg_nccl_init_fn)g_nccl.comm_init_rank)(&h->comm, nranks, uid, rank);
    }
    if (r || h->comm == NULL) {
        /* a communicator NCCL made before failing is freed, not leaked */
        if (h->comm != NULL)
            (void)g_nccl.comm_abort(h->comm);
        pthread_mutex_destroy(&h->lock);
        free(h);
        return nccl_fail(r ? r : 3 /* ncclInternalError */, "ncclCommInitRank", why, whylen);
    }
    *comm = h;
    return 0;
}

int pg_plugin_nccl_comm_abort(void *comm)
{
    pg_nccl_handle *h = comm;
    if (!g_nccl.lib || h == NULL)
        return 0;
    abort_handle(h, "the communicator was aborted");
    return 0;
}

/* Flush and free a communicator; the handle is gone afterwards. */
int pg_plugin_nccl_comm_destroy(void *comm)
{
    pg_nccl_handle *h = comm;
    if (!g_nccl.lib || h == NULL)
        return 0;
    int rc = 0;
    pthread_mutex_lock(&h->lock); /* after any collective in flight on another thread */
    if (!h->aborted && h->comm) {
        char why[256];
        if (g_nccl.comm_finalize != NULL) {
            pg_nccl_result r = g_nccl.comm_finalize(h->comm);
            if ((r != 0 && r != PG_NCCL_IN_PROGRESS) ||
                wait_comm_ready(h, "ncclCommFinalize", why, sizeof why) != 0)
                rc = -1;
        }
        if (!h->aborted && h->comm)
            rc = g_nccl.comm_destroy(h->comm) != 0 ? -1 : rc;
    }
    pthread_mutex_unlock(&h->lock);
    pthread_mutex_destroy(&h->lock);
    free(h);
    return rc;
}

/* Wait for the collective just queued on the comm stream: poll the stream
 * and the communicator's async error until done, failed or past the deadline. */
static int wait_collective(pg_nccl_handle *h, pg_cuda_device *d, const char *call, char *why,
                           size_t whylen)
{
    double deadline = now_s() + timeout_s();
    for (;;) {
        cudaError_t e = cudaStreamQuery(d->comm.stream);
        if (e != cudaErrorNotReady)
            break; /* done, or a CUDA error the sync below reports */
        (void)cudaGetLastError(); /* NotReady stays in the last-error slot */
        pg_nccl_result state = 0;
        if (g_nccl.comm_get_async_error(h->comm, &state) != 0 ||
            (state != 0 && state != PG_NCCL_IN_PROGRESS)) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s failed on the device: %s", call,
                     g_nccl.error_string(state));
            abort_handle(h, msg); /* lets the stream drain */
            (void)pg_cuda_queue_sync(&d->comm, call);
            return fail(why, whylen, "%s%s", msg, "; the communicator was aborted");
        }
        if (now_s() > deadline) {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "%s did not finish within %.0f s: a peer is gone or never called it "
                     "(every rank must make the same collectives in the same order)",
                     call, timeout_s());
            abort_handle(h, msg);
            (void)pg_cuda_queue_sync(&d->comm, call);
            return fail(why, whylen, "%s%s", msg, "; the communicator was aborted");
        }
        nap();
    }
    if (pg_cuda_queue_sync(&d->comm, call) != PG_OK)
        return fail(why, whylen, "%s%s", pg_cuda_last_message(), "");
    return 0;
}

/* The NCCL function of each call kind: its name, and whether this NCCL has it. */
static const char *const pg_nccl_names[PG_NCCL_KINDS] = {
    [PG_NCCL_ALL_REDUCE] = "ncclAllReduce", [PG_NCCL_BROADCAST] = "ncclBroadcast",
    [PG_NCCL_REDUCE] = "ncclReduce", [PG_NCCL_ALL_GATHER] = "ncclAllGather",
    [PG_NCCL_REDUCE_SCATTER] = "ncclReduceScatter", [PG_NCCL_SEND] = "ncclSend",
    [PG_NCCL_RECV] = "ncclRecv",
};

static bool have_kind(int kind)
{
    const void *fn[PG_NCCL_KINDS] = {
        [PG_NCCL_ALL_REDUCE] = (const void *)g_nccl.all_reduce,
        [PG_NCCL_BROADCAST] = (const void *)g_nccl.broadcast,
        [PG_NCCL_REDUCE] = (const void *)g_nccl.reduce,
        [PG_NCCL_ALL_GATHER] = (const void *)g_nccl.all_gather,
        [PG_NCCL_REDUCE_SCATTER] = (const void *)g_nccl.reduce_scatter,
        [PG_NCCL_SEND] = (const void *)g_nccl.send,
        [PG_NCCL_RECV] = (const void *)g_nccl.recv,
    };
    return kind >= 0 && kind < PG_NCCL_KINDS && fn[kind] != NULL;
}

/* Enqueue one call on `stream` (the one switch over call kinds). */
static pg_nccl_result enqueue(const pg_nccl_call *c, pg_nccl_comm comm, cudaStream_t stream)
{
    switch (c->kind) {
    case PG_NCCL_ALL_REDUCE:
        return g_nccl.all_reduce(c->send, c->recv, c->count, c->dtype, c->arg, comm, stream);
    case PG_NCCL_BROADCAST:
        return g_nccl.broadcast(c->send, c->recv, c->count, c->dtype, c->arg, comm, stream);
    case PG_NCCL_REDUCE:
        return g_nccl.reduce(c->send, c->recv, c->count, c->dtype, c->arg, c->peer, comm, stream);
    case PG_NCCL_ALL_GATHER:
        return g_nccl.all_gather(c->send, c->recv, c->count, c->dtype, comm, stream);
    case PG_NCCL_REDUCE_SCATTER:
        return g_nccl.reduce_scatter(c->send, c->recv, c->count, c->dtype, c->arg, comm, stream);
    case PG_NCCL_SEND:
        return g_nccl.send(c->send, c->count, c->dtype, c->peer, comm, stream);
    case PG_NCCL_RECV:
        return g_nccl.recv(c->recv, c->count, c->dtype, c->peer, comm, stream);
    default:
        return 4; /* ncclInvalidArgument */
    }
}

/* pg_plugin_nccl_run's body, under the communicator's lock. */
static int run_locked(pg_nccl_handle *h, pg_cuda_device *d, const pg_nccl_call *calls, int n,
                      const char *call, char *why, size_t whylen)
{
    if (h->aborted)
        return fail(why, whylen, "%s: %s", call, h->why);
    /* the comm stream first waits (on the device) for the work queued so far
     * that may still write or read the buffers: kernels on compute (and this
     * thread's user stream), other threads' user streams (a DDP comm thread
     * reduces what the main thread's backward wrote), non-blocking uploads on
     * the copy stream. Work queued after this call runs beside the collective */
    if (pg_cuda_queue_wait_queue(&d->comm, &d->compute, "nccl") != PG_OK ||
        pg_cuda_stream_join_active(d, d->comm.stream, "nccl") != PG_OK ||
        pg_cuda_queue_wait_queue(&d->comm, &d->copy, "nccl") != PG_OK)
        return fail(why, whylen, "%s%s", pg_cuda_last_message(), "");
    bool group = n > 1;
    pg_nccl_result r = group ? g_nccl.group_start() : 0;
    for (int i = 0; r == 0 && i < n; i++) {
        r = enqueue(&calls[i], h->comm, d->comm.stream);
        if (r == PG_NCCL_IN_PROGRESS && !group) { /* non-blocking communicator */
            if (wait_comm_ready(h, call, why, whylen) != 0)
                return -1;
            r = 0;
        }
    }
    if (group) {
        pg_nccl_result end = g_nccl.group_end(); /* always closed, even after a failure */
        r = r ? r : end;
        if (r == PG_NCCL_IN_PROGRESS) {
            if (wait_comm_ready(h, call, why, whylen) != 0)
                return -1;
            r = 0;
        }
    }
    if (r)
        return nccl_fail(r, call, why, whylen);
    pg_cuda_note_queued(&d->comm, "nccl");
    return wait_collective(h, d, call, why, whylen);
}

/* Queue NCCL calls on the device's comm stream (several: one group) and wait for
 * them, one list at a time per communicator. */
int pg_plugin_nccl_run(void *comm, int device, const pg_nccl_call *calls, int ncalls, char *why,
                       size_t whylen)
{
    pg_nccl_handle *h = comm;
    if (!g_nccl.lib)
        return fail(why, whylen, "NCCL is not loaded%s%s", "", "");
    if (h == NULL)
        return fail(why, whylen, "NCCL: no communicator%s%s", "", "");
    if (ncalls < 1)
        return 0;
    for (int i = 0; i < ncalls; i++) {
        if (calls[i].kind < 0 || calls[i].kind >= PG_NCCL_KINDS)
            return fail(why, whylen, "NCCL: unknown call kind%s%s", "", "");
        if (!have_kind(calls[i].kind))
            return fail(why, whylen, "%s: this NCCL (%s) does not have it", pg_nccl_names[calls[i].kind],
                        "upgrade to NCCL >= 2.7");
    }
    if (ncalls > 1 && (!g_nccl.group_start || !g_nccl.group_end))
        return fail(why, whylen, "ncclGroupStart/ncclGroupEnd: this NCCL (%s) does not have %s",
                    "upgrade to NCCL >= 2.7", "them");
    const char *call = ncalls > 1 ? "ncclGroupEnd" : pg_nccl_names[calls[0].kind];
    pg_cuda_device *d;
    if (pg_cuda_device_get(device, "nccl", &d) != PG_OK)
        return fail(why, whylen, "%s%s", pg_cuda_last_message(), "");
    pthread_mutex_lock(&h->lock);
    int rc = run_locked(h, d, calls, ncalls, call, why, whylen);
    pthread_mutex_unlock(&h->lock);
    return rc;
}
