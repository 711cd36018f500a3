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
 * so building needs no NCCL headers. Exported to Python (pygpu/distributed/_nccl.py,
 * through ctypes) as pg_plugin_nccl_*; each returns 0 or writes a message.
 *
 * A collective waits for nothing itself: the caller first waits for the tensor's
 * pending writes (Tensor.wait()), the collective is queued on the device's stream,
 * and the stream is synchronized before returning, so no storage is left with
 * pending work the core does not know of. DDP calls these from its communication
 * thread, which is where the overlap with backward comes from. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

#define PG_NCCL_ID_BYTES 128
typedef struct pg_nccl_comm_s *pg_nccl_comm; /* ncclComm_t */
typedef int pg_nccl_result;                 /* ncclResult_t; 0 = ncclSuccess */

static struct {
    pthread_mutex_t lock;
    void *lib;
    int version;
    pg_nccl_result (*get_version)(int *);
    pg_nccl_result (*get_unique_id)(void *);
    void *comm_init_rank; /* ncclCommInitRank takes the id by value: see pg_nccl_init_fn */
    pg_nccl_result (*comm_destroy)(pg_nccl_comm);
    pg_nccl_result (*all_reduce)(const void *, void *, size_t, int, int, pg_nccl_comm, cudaStream_t);
    pg_nccl_result (*broadcast)(const void *, void *, size_t, int, int, pg_nccl_comm, cudaStream_t);
    const char *(*error_string)(pg_nccl_result);
} g_nccl = {.lock = PTHREAD_MUTEX_INITIALIZER};

PG_CUDA_EXPORT int pg_plugin_nccl_load(const char *path, char *why, size_t whylen);
PG_CUDA_EXPORT int pg_plugin_nccl_version(void);
PG_CUDA_EXPORT int pg_plugin_nccl_unique_id(char *out, char *why, size_t whylen);
PG_CUDA_EXPORT int pg_plugin_nccl_comm_init(int nranks, const char *id, int rank, int device,
                                            void **comm, char *why, size_t whylen);
PG_CUDA_EXPORT int pg_plugin_nccl_comm_destroy(void *comm);
PG_CUDA_EXPORT int pg_plugin_nccl_all_reduce(void *comm, int device, void *ptr, size_t count,
                                             int dtype, int op, char *why, size_t whylen);
PG_CUDA_EXPORT int pg_plugin_nccl_broadcast(void *comm, int device, void *ptr, size_t count,
                                            int dtype, int root, char *why, size_t whylen);

/* ncclUniqueId is passed BY VALUE to ncclCommInitRank: a 128-byte struct. */
typedef struct { char internal[PG_NCCL_ID_BYTES]; } pg_nccl_id;
typedef pg_nccl_result (*pg_nccl_init_fn)(pg_nccl_comm *, int, pg_nccl_id, int);

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
            if (!g_nccl.get_version || !g_nccl.get_unique_id || !g_nccl.comm_init_rank ||
                !g_nccl.comm_destroy || !g_nccl.all_reduce || !g_nccl.broadcast ||
                !g_nccl.error_string) {
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

int pg_plugin_nccl_comm_init(int nranks, const char *id, int rank, int device, void **comm,
                             char *why, size_t whylen)
{
    if (!g_nccl.lib)
        return fail(why, whylen, "NCCL is not loaded%s%s", "", "");
    pg_cuda_device *d;
    if (pg_cuda_device_get(device, "nccl_comm_init", &d) != PG_OK)
        return fail(why, whylen, "%s%s", pg_cuda_last_message(), "");
    pg_nccl_id uid;
    memcpy(uid.internal, id, PG_NCCL_ID_BYTES);
    pg_nccl_comm c = NULL;
    pg_nccl_result r = ((pg_nccl_init_fn)g_nccl.comm_init_rank)(&c, nranks, uid, rank);
    if (r)
        return nccl_fail(r, "ncclCommInitRank", why, whylen);
    *comm = c;
    return 0;
}

int pg_plugin_nccl_comm_destroy(void *comm)
{
    return g_nccl.lib && comm ? g_nccl.comm_destroy((pg_nccl_comm)comm) : 0;
}

/* Queue one collective on the device's stream and wait for it. */
static int run_collective(int is_bcast, void *comm, int device, void *ptr, size_t count, int dtype,
                          int arg, char *why, size_t whylen)
{
    if (!g_nccl.lib)
        return fail(why, whylen, "NCCL is not loaded%s%s", "", "");
    pg_cuda_device *d;
    if (pg_cuda_device_get(device, is_bcast ? "broadcast" : "all_reduce", &d) != PG_OK)
        return fail(why, whylen, "%s%s", pg_cuda_last_message(), "");
    pg_nccl_result r = is_bcast ? g_nccl.broadcast(ptr, ptr, count, dtype, arg, (pg_nccl_comm)comm, d->stream)
                                : g_nccl.all_reduce(ptr, ptr, count, dtype, arg, (pg_nccl_comm)comm,
                                                    d->stream);
    if (r)
        return nccl_fail(r, is_bcast ? "ncclBroadcast" : "ncclAllReduce", why, whylen);
    pg_cuda_note_queued(d, is_bcast ? "broadcast" : "all_reduce");
    if (pg_cuda_stream_sync(d, is_bcast ? "ncclBroadcast" : "ncclAllReduce") != PG_OK)
        return fail(why, whylen, "%s%s", pg_cuda_last_message(), "");
    return 0;
}

int pg_plugin_nccl_all_reduce(void *comm, int device, void *ptr, size_t count, int dtype, int op,
                              char *why, size_t whylen)
{
    return run_collective(0, comm, device, ptr, count, dtype, op, why, whylen);
}

int pg_plugin_nccl_broadcast(void *comm, int device, void *ptr, size_t count, int dtype, int root,
                             char *why, size_t whylen)
{
    return run_collective(1, comm, device, ptr, count, dtype, root, why, whylen);
}
