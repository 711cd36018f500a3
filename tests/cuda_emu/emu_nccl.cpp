/* emu_nccl.cpp - a stand-in for NCCL (the calls csrc/backends/cuda/cuda_nccl.c
 * makes), compiled into the emulated plugin itself and exported from it, so
 * pointing PYGPU_NCCL_LIBRARY at the plugin makes pygpu's dlopen find it.
 *
 * Ranks are processes (or threads) on this machine. A communicator is a POSIX
 * shared-memory segment named by the unique id: a barrier and one slot per
 * rank. A collective is queued on the given stream like a kernel; when the
 * stream reaches it, each rank copies its part into its slot, waits for every
 * rank, and reduces the slots in rank order (so every rank gets the same
 * bits), in chunks of 4 MiB. float16/bfloat16 are reduced in float32 and
 * rounded at each step, as NCCL's ring does. ncclReduce, ncclAllGather and
 * ncclReduceScatter go through the same slots. ncclSend/ncclRecv go through a
 * channel per ordered pair of ranks (a 256 KiB buffer, handed over one fill at a
 * time); between ncclGroupStart and ncclGroupEnd they are collected and run
 * together, each advancing whenever its channel allows, so any order of sends and
 * receives between ranks completes, as NCCL's grouped calls do (all_to_all,
 * gather, scatter). ncclCommAbort (pygpu's timeout) releases a rank stuck at the
 * barrier or a channel with an error state.
 * NCCL's calls on one communicator are not thread-safe: two threads inside a
 * collective call on the same communicator at once (a caller's missing lock)
 * make the later call fail with ncclInvalidUsage and put the communicator in
 * that error state, instead of corrupting it silently as NCCL may.
 * What it cannot show: NCCL's own algorithms, speed, or a crash of a peer
 * mid-collective (a vanished peer shows as a timeout, as with NCCL). */
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "emu_internal.h"

#define PG_NCCL_API extern "C" __attribute__((visibility("default")))

namespace {

enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
       ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7 };
constexpr size_t kChunk = 4u << 20;
constexpr size_t kP2P = 256u << 10; /* one channel's buffer */
constexpr int kMaxRanks = 64;

/* One direction between two ranks: `fills` and `drains` count the buffer's hand-overs;
 * `sends` and `recvs` the operations started on each side. A send moves nothing before
 * its receive has started, as NCCL's do: two ranks that each send to the other outside a
 * group wait for each other forever, as on a GPU (pygpu's timeout ends it). */
struct Channel {
    std::atomic<uint64_t> fills;
    std::atomic<uint64_t> drains;
    std::atomic<uint64_t> sends;
    std::atomic<uint64_t> recvs;
    size_t len;
    char pad[24];
};

struct NcclId {
    char b[128]; /* ncclUniqueId, passed by value */
};

struct Shm {
    std::atomic<int> joined;
    std::atomic<int> count;
    std::atomic<unsigned> gen;
};

struct Comm {
    char name[129];
    int nranks, rank, device;
    Shm *shm;
    char *slots;
    Channel *channels; /* [src * nranks + dst] */
    char *p2p;         /* their buffers, kP2P each, in the same order */
    size_t map_bytes;
    std::atomic<int> state; /* ncclSuccess, or the error that aborted it */
    std::atomic<bool> aborted;
    std::atomic<int> callers; /* threads inside a collective call on it now */
};

std::atomic<int> g_live{0}; /* communicators made and not yet destroyed or aborted */

double now_s()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* false when the communicator was aborted while waiting */
bool barrier(Comm *c)
{
    unsigned g = c->shm->gen.load();
    if (c->shm->count.fetch_add(1) == c->nranks - 1) {
        c->shm->count.store(0);
        c->shm->gen.fetch_add(1);
        return true;
    }
    for (long spins = 0; c->shm->gen.load() == g; spins++) {
        if (c->aborted.load())
            return false;
        if (spins > 1000)
            usleep(50);
        else
            sched_yield();
    }
    return true;
}

size_t dtype_size(int dt)
{
    switch (dt) {
    case 0: case 1: return 1;
    case 2: case 3: case 7: return 4;
    case 4: case 5: case 8: return 8;
    case 6: case 9: return 2;
    default: return 0;
    }
}

template <typename T> T apply(int op, T a, T b)
{
    switch (op) {
    case 0: case 4: return a + b;
    case 1: return a * b;
    case 2: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

template <typename T> void reduce_into(T *out, const T *in, size_t n, int op)
{
    for (size_t i = 0; i < n; i++)
        out[i] = apply<T>(op, out[i], in[i]);
}
template <typename H, typename F, typename B>
void reduce_half(H *out, const H *in, size_t n, int op, F to_f, B from_f)
{
    for (size_t i = 0; i < n; i++)
        out[i] = from_f(apply<float>(op, to_f(out[i]), to_f(in[i])));
}

void reduce(int dt, void *out, const void *in, size_t n, int op)
{
    switch (dt) {
    case 0: reduce_into((int8_t *)out, (const int8_t *)in, n, op); break;
    case 1: reduce_into((uint8_t *)out, (const uint8_t *)in, n, op); break;
    case 2: reduce_into((int32_t *)out, (const int32_t *)in, n, op); break;
    case 3: reduce_into((uint32_t *)out, (const uint32_t *)in, n, op); break;
    case 4: reduce_into((int64_t *)out, (const int64_t *)in, n, op); break;
    case 5: reduce_into((uint64_t *)out, (const uint64_t *)in, n, op); break;
    case 7: reduce_into((float *)out, (const float *)in, n, op); break;
    case 8: reduce_into((double *)out, (const double *)in, n, op); break;
    case 6:
        reduce_half((__half *)out, (const __half *)in, n, op,
                    [](__half h) { return __half2float(h); },
                    [](float f) { return __float2half_rn(f); });
        break;
    case 9:
        reduce_half((__nv_bfloat16 *)out, (const __nv_bfloat16 *)in, n, op,
                    [](__nv_bfloat16 h) { return __bfloat162float(h); },
                    [](float f) { return __float2bfloat16_rn(f); });
        break;
    }
}

template <typename T> void divide(T *p, size_t n, int by)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (T)(p[i] / (T)by);
}

void run_all_reduce(Comm *c, const void *send, void *recv, size_t count, int dt, int op)
{
    const size_t item = dtype_size(dt), per = kChunk / item;
    for (size_t done = 0; done < count; done += per) {
        size_t n = count - done < per ? count - done : per;
        memcpy(c->slots + (size_t)c->rank * kChunk, (const char *)send + done * item, n * item);
        if (!barrier(c))
            return;
        char *out = (char *)recv + done * item;
        memcpy(out, c->slots, n * item);
        for (int r = 1; r < c->nranks; r++)
            reduce(dt, out, c->slots + (size_t)r * kChunk, n, op);
        if (op == 4) { /* ncclAvg */
            if (dt == 7)
                divide((float *)out, n, c->nranks);
            else if (dt == 8)
                divide((double *)out, n, c->nranks);
        }
        if (!barrier(c))
            return;
    }
}

void run_broadcast(Comm *c, const void *send, void *recv, size_t count, int dt, int root)
{
    const size_t item = dtype_size(dt), per = kChunk / item;
    for (size_t done = 0; done < count; done += per) {
        size_t n = count - done < per ? count - done : per;
        if (c->rank == root)
            memcpy(c->slots, (const char *)send + done * item, n * item);
        if (!barrier(c))
            return;
        if (c->rank != root)
            memcpy((char *)recv + done * item, c->slots, n * item);
        if (!barrier(c))
            return;
    }
}

void avg_divide(int dt, void *out, size_t n, int nranks)
{
    if (dt == 7)
        divide((float *)out, n, nranks);
    else if (dt == 8)
        divide((double *)out, n, nranks);
}

void run_reduce(Comm *c, const void *send, void *recv, size_t count, int dt, int op, int root)
{
    const size_t item = dtype_size(dt), per = kChunk / item;
    for (size_t done = 0; done < count; done += per) {
        size_t n = count - done < per ? count - done : per;
        memcpy(c->slots + (size_t)c->rank * kChunk, (const char *)send + done * item, n * item);
        if (!barrier(c))
            return;
        if (c->rank == root) {
            char *out = (char *)recv + done * item;
            memcpy(out, c->slots, n * item);
            for (int r = 1; r < c->nranks; r++)
                reduce(dt, out, c->slots + (size_t)r * kChunk, n, op);
            if (op == 4)
                avg_divide(dt, out, n, c->nranks);
        }
        if (!barrier(c))
            return;
    }
}

void run_all_gather(Comm *c, const void *send, void *recv, size_t count, int dt)
{
    const size_t item = dtype_size(dt), per = kChunk / item;
    for (size_t done = 0; done < count; done += per) {
        size_t n = count - done < per ? count - done : per;
        memcpy(c->slots + (size_t)c->rank * kChunk, (const char *)send + done * item, n * item);
        if (!barrier(c))
            return;
        for (int r = 0; r < c->nranks; r++)
            memcpy((char *)recv + ((size_t)r * count + done) * item, c->slots + (size_t)r * kChunk,
                   n * item);
        if (!barrier(c))
            return;
    }
}

/* rank r's recv = the reduction over ranks of send[r * count, (r + 1) * count) */
void run_reduce_scatter(Comm *c, const void *send, void *recv, size_t count, int dt, int op)
{
    const size_t item = dtype_size(dt), per = kChunk / item / (size_t)c->nranks;
    char *mine = c->slots + (size_t)c->rank * kChunk;
    for (size_t done = 0; done < count; done += per) {
        size_t n = count - done < per ? count - done : per;
        for (int t = 0; t < c->nranks; t++)  /* the piece for rank t, at t * n in my slot */
            memcpy(mine + (size_t)t * n * item, (const char *)send + ((size_t)t * count + done) * item,
                   n * item);
        if (!barrier(c))
            return;
        char *out = (char *)recv + done * item;
        const size_t at = (size_t)c->rank * n * item;
        memcpy(out, c->slots + at, n * item);
        for (int r = 1; r < c->nranks; r++)
            reduce(dt, out, c->slots + (size_t)r * kChunk + at, n, op);
        if (op == 4)
            avg_divide(dt, out, n, c->nranks);
        if (!barrier(c))
            return;
    }
}

/* One send or receive of a group, and how far it has got. */
struct P2POp {
    bool send;
    char *buf;
    size_t bytes, done;
    int peer;
    uint64_t ticket; /* a send: which receive on the channel it is for */
};

/* Advance every operation as its channel allows until all are done (false: aborted). */
Channel &channel_of(Comm *c, const P2POp &o)
{
    int src = o.send ? c->rank : o.peer, dst = o.send ? o.peer : c->rank;
    return c->channels[(size_t)src * (size_t)c->nranks + (size_t)dst];
}

bool run_p2p(Comm *c, std::vector<P2POp> ops)
{
    size_t left = ops.size();
    for (P2POp &o : ops) { /* every operation of the group starts at once */
        Channel &ch = channel_of(c, o);
        if (o.send)
            o.ticket = ch.sends.fetch_add(1);
        else
            ch.recvs.fetch_add(1);
    }
    for (long idle = 0; left;) {
        bool moved = false;
        for (P2POp &o : ops) {
            if (o.done == o.bytes)
                continue;
            int src = o.send ? c->rank : o.peer, dst = o.send ? o.peer : c->rank;
            size_t k = (size_t)src * (size_t)c->nranks + (size_t)dst;
            Channel &ch = c->channels[k];
            char *buf = c->p2p + k * kP2P;
            if (o.send && ch.recvs.load() > o.ticket && ch.fills.load() == ch.drains.load()) {
                /* its receive has started and the buffer is empty: fill it */
                size_t n = o.bytes - o.done < kP2P ? o.bytes - o.done : kP2P;
                memcpy(buf, o.buf + o.done, n);
                ch.len = n;
                ch.fills.fetch_add(1);
                o.done += n;
                moved = true;
            } else if (!o.send && ch.fills.load() > ch.drains.load()) { /* full: drain it */
                size_t n = ch.len;
                memcpy(o.buf + o.done, buf, n);
                ch.drains.fetch_add(1);
                o.done += n;
                moved = true;
            }
            if (o.done == o.bytes)
                left--;
        }
        if (moved) {
            idle = 0;
            continue;
        }
        if (c->aborted.load())
            return false;
        if (++idle > 1000)
            usleep(50);
        else
            sched_yield();
    }
    return true;
}

/* The calls between ncclGroupStart and ncclGroupEnd on this thread. */
struct Group {
    int depth = 0;
    Comm *comm = nullptr;
    cudaStream_t stream = nullptr;
    bool mixed = false;
    std::vector<P2POp> ops;
};
thread_local Group g_group;

} // namespace

PG_NCCL_API int ncclGetVersion(int *v)
{
    *v = 22703;
    return ncclSuccess;
}
PG_NCCL_API const char *ncclGetErrorString(int r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclSystemError: return "unhandled system error (emulated NCCL: shared memory)";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "internal error";
    }
}
PG_NCCL_API int ncclGetUniqueId(void *id)
{
    memset(id, 0, 128);
    unsigned r = (unsigned)(now_s() * 1e6) ^ (unsigned)getpid() * 2654435761u;
    snprintf((char *)id, 128, "/pgemu_nccl_%d_%08x", (int)getpid(), r);
    return ncclSuccess;
}

/* Maps the segment and counts this rank in; the communicator is ready once
 * every rank has (ready()). */
static int comm_open(Comm **out, int nranks, NcclId id, int rank)
{
    *out = nullptr;
    if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks)
        return ncclInvalidArgument;
    char name[129];
    memcpy(name, id.b, 128);
    name[128] = 0;
    if (strncmp(name, "/pgemu_nccl_", 12) != 0)
        return ncclInvalidArgument;
    size_t nch = (size_t)nranks * (size_t)nranks;
    size_t bytes = 4096 + (size_t)nranks * kChunk + nch * (sizeof(Channel) + kP2P);
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    if (fd < 0)
        return ncclSystemError;
    if (ftruncate(fd, (off_t)bytes) != 0) {
        close(fd);
        return ncclSystemError;
    }
    void *m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return ncclSystemError;
    Comm *c = new Comm();
    c->nranks = nranks;
    c->rank = rank;
    cudaGetDevice(&c->device);
    c->shm = (Shm *)m;
    c->slots = (char *)m + 4096;
    c->channels = (Channel *)(c->slots + (size_t)nranks * kChunk);
    c->p2p = (char *)(c->channels + nch);
    c->map_bytes = bytes;
    c->state = ncclSuccess;
    c->aborted = false;
    c->callers = 0;
    memcpy(c->name, name, sizeof c->name);
    c->state = ncclInProgress;
    c->shm->joined.fetch_add(1);
    g_live++;
    *out = c;
    return ncclSuccess;
}

/* Whether every rank has joined; then the name goes (the mappings stay, and
 * nothing is left in /dev/shm). */
static bool ready(Comm *c)
{
    if (c->state.load() != ncclInProgress)
        return true;
    if (c->shm->joined.load() < c->nranks)
        return false;
    shm_unlink(c->name);
    int expected = ncclInProgress;
    c->state.compare_exchange_strong(expected, ncclSuccess);
    return true;
}

/* Blocking init: waits for every rank (as NCCL does, with no timeout of its own). */
PG_NCCL_API int ncclCommInitRank(Comm **out, int nranks, NcclId id, int rank)
{
    int r = comm_open(out, nranks, id, rank);
    if (r != ncclSuccess)
        return r;
    while (!ready(*out)) {
        if ((*out)->aborted.load())
            return ncclRemoteError;
        usleep(200);
    }
    return ncclSuccess;
}
PG_NCCL_API int ncclCommInitRankConfig(Comm **out, int nranks, NcclId id,
                                       int rank, void *config)
{
    (void)config;
    /* non-blocking (the config pygpu passes asks for it): ncclInProgress until every
     * rank has joined, which ncclCommGetAsyncError reports, so the caller's timeout applies */
    int r = comm_open(out, nranks, id, rank);
    /* PYGPU_CUDA_EMU_NCCL_INIT_FAIL=1: fail after making the communicator, as NCCL can
     * (a later init step failing), so the caller must free what it got */
    const char *f = getenv("PYGPU_CUDA_EMU_NCCL_INIT_FAIL");
    if (r == ncclSuccess && f && *f == '1')
        return ncclSystemError;
    if (r == ncclSuccess && !ready(*out))
        return ncclInProgress;
    return r;
}

/* For tests only: communicators alive (made, neither destroyed nor aborted). */
PG_NCCL_API int pg_emu_nccl_live(void) { return g_live.load(); }
PG_NCCL_API int ncclCommGetAsyncError(Comm *c, int *state)
{
    if (!c)
        return ncclInvalidArgument;
    ready(c);
    *state = c->state.load();
    return ncclSuccess;
}
PG_NCCL_API int ncclCommAbort(Comm *c)
{
    if (!c)
        return ncclSuccess;
    if (!c->aborted.exchange(true))
        g_live--;
    c->state = ncclRemoteError;
    /* a stream may still be inside a collective on it: the mapping stays (a
     * leak of one segment per aborted communicator, in tests only) */
    return ncclSuccess;
}
PG_NCCL_API int ncclCommFinalize(Comm *c) { return c ? ncclSuccess : ncclInvalidArgument; }
PG_NCCL_API int ncclCommDestroy(Comm *c)
{
    if (!c)
        return ncclInvalidArgument;
    if (!c->aborted)
        g_live--;
    munmap(c->shm, c->map_bytes);
    delete c;
    return ncclSuccess;
}
/* A collective call starts on c; false (c now in the ncclInvalidUsage state) when
 * another thread is inside one on c at the same time. */
static bool enter_call(Comm *c)
{
    if (c->callers.fetch_add(1) == 0)
        return true;
    c->callers--;
    c->state = ncclInvalidUsage;
    fprintf(stderr, "emulated NCCL: two threads called collectives on one communicator at "
                    "once (NCCL's calls are not thread-safe)\n");
    return false;
}

PG_NCCL_API int ncclAllReduce(const void *send, void *recv, size_t count, int dt, int op, Comm *c,
                              cudaStream_t s)
{
    if (!c || dtype_size(dt) == 0 || op < 0 || op > 4)
        return ncclInvalidArgument;
    if (c->aborted)
        return ncclInvalidUsage;
    if (!enter_call(c))
        return ncclInvalidUsage;
    pg_emu_enqueue(s, [=] { run_all_reduce(c, send, recv, count, dt, op); });
    c->callers--;
    return ncclSuccess;
}
PG_NCCL_API int ncclBroadcast(const void *send, void *recv, size_t count, int dt, int root,
                              Comm *c, cudaStream_t s)
{
    if (!c || dtype_size(dt) == 0 || root < 0 || root >= c->nranks)
        return ncclInvalidArgument;
    if (c->aborted)
        return ncclInvalidUsage;
    if (!enter_call(c))
        return ncclInvalidUsage;
    pg_emu_enqueue(s, [=] { run_broadcast(c, send, recv, count, dt, root); });
    c->callers--;
    return ncclSuccess;
}

static int check_call(Comm *c, int dt)
{
    if (!c || dtype_size(dt) == 0)
        return ncclInvalidArgument;
    if (c->aborted)
        return ncclInvalidUsage;
    if (g_group.depth > 0) /* only sends and receives are grouped here (what pygpu groups) */
        return ncclInvalidUsage;
    return ncclSuccess;
}

PG_NCCL_API int ncclReduce(const void *send, void *recv, size_t count, int dt, int op, int root,
                           Comm *c, cudaStream_t s)
{
    int r = check_call(c, dt);
    if (r != ncclSuccess)
        return r;
    if (op < 0 || op > 4 || root < 0 || root >= c->nranks)
        return ncclInvalidArgument;
    if (!enter_call(c))
        return ncclInvalidUsage;
    pg_emu_enqueue(s, [=] { run_reduce(c, send, recv, count, dt, op, root); });
    c->callers--;
    return ncclSuccess;
}
PG_NCCL_API int ncclAllGather(const void *send, void *recv, size_t count, int dt, Comm *c,
                              cudaStream_t s)
{
    int r = check_call(c, dt);
    if (r != ncclSuccess)
        return r;
    if (!enter_call(c))
        return ncclInvalidUsage;
    pg_emu_enqueue(s, [=] { run_all_gather(c, send, recv, count, dt); });
    c->callers--;
    return ncclSuccess;
}
PG_NCCL_API int ncclReduceScatter(const void *send, void *recv, size_t count, int dt, int op,
                                  Comm *c, cudaStream_t s)
{
    int r = check_call(c, dt);
    if (r != ncclSuccess)
        return r;
    if (op < 0 || op > 4)
        return ncclInvalidArgument;
    if (!enter_call(c))
        return ncclInvalidUsage;
    pg_emu_enqueue(s, [=] { run_reduce_scatter(c, send, recv, count, dt, op); });
    c->callers--;
    return ncclSuccess;
}

static int p2p(bool send, const void *buf, size_t count, int dt, int peer, Comm *c, cudaStream_t s)
{
    if (!c || dtype_size(dt) == 0 || peer < 0 || peer >= c->nranks || peer == c->rank)
        return ncclInvalidArgument;
    if (c->aborted)
        return ncclInvalidUsage;
    P2POp op{send, (char *)buf, count * dtype_size(dt), 0, peer, 0};
    if (count == 0)
        return ncclSuccess; /* nothing crosses (the peer skips its side too) */
    if (g_group.depth > 0) {
        if (g_group.comm && (g_group.comm != c || g_group.stream != s))
            g_group.mixed = true;
        g_group.comm = c;
        g_group.stream = s;
        g_group.ops.push_back(op);
        return ncclSuccess;
    }
    if (!enter_call(c))
        return ncclInvalidUsage;
    std::vector<P2POp> ops{op};
    pg_emu_enqueue(s, [=] { run_p2p(c, ops); });
    c->callers--;
    return ncclSuccess;
}
PG_NCCL_API int ncclSend(const void *send, size_t count, int dt, int peer, Comm *c, cudaStream_t s)
{
    return p2p(true, send, count, dt, peer, c, s);
}
PG_NCCL_API int ncclRecv(void *recv, size_t count, int dt, int peer, Comm *c, cudaStream_t s)
{
    return p2p(false, recv, count, dt, peer, c, s);
}
PG_NCCL_API int ncclGroupStart(void)
{
    g_group.depth++;
    return ncclSuccess;
}
PG_NCCL_API int ncclGroupEnd(void)
{
    if (g_group.depth <= 0)
        return ncclInvalidUsage;
    if (--g_group.depth > 0)
        return ncclSuccess;
    Group g = g_group;
    g_group = Group();
    if (g.ops.empty())
        return ncclSuccess;
    if (g.mixed) { /* NCCL allows it; this stand-in runs one communicator's calls on one stream */
        fprintf(stderr, "emulated NCCL: a group spans communicators or streams\n");
        return ncclInvalidUsage;
    }
    Comm *c = g.comm;
    if (!enter_call(c))
        return ncclInvalidUsage;
    std::vector<P2POp> ops = g.ops;
    pg_emu_enqueue(g.stream, [=] { run_p2p(c, ops); });
    c->callers--;
    return ncclSuccess;
}
