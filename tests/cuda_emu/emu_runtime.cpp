/* emu_runtime.cpp - a stand-in for the CUDA runtime (the cuda* calls the plugin
 * and the csrc/backends/cuda/kernels/ .cu files make), for running the plugin on a CPU in tests.
 *
 * Devices: PYGPU_CUDA_EMU_DEVICES of them (default 2), each reporting an H100
 * SXM's figures (compute capability 9.0, 132 SMs, 80 GB, 50 MB L2).
 *
 * Streams are real queues: each stream has a worker thread that runs its
 * work in order (kernels, copies, memsets, event records, waits on events),
 * so work on two streams runs concurrently and a missing cross-stream wait
 * can read stale or freed memory, as on a GPU. PYGPU_CUDA_EMU_DELAY_US
 * makes every stream item sleep first, which widens such windows (tests of
 * stream ordering use it), and PYGPU_CUDA_EMU_SYNC=1 runs every item before
 * its call returns (if a failure goes away with it, it is an ordering bug).
 * pg_emu_set_call_delay_us (tests, through ctypes) makes every enqueueing call
 * itself sleep on the host first, as a driver call can take long: a window
 * between what the plugin does before a launch and after it, where another
 * thread's calls land (a race in the plugin's own bookkeeping shows there).
 * The legacy default stream is one more such queue;
 * its implicit synchronization with blocking streams is not modelled (the
 * plugin creates only non-blocking streams).
 *
 * Copies to or from pageable host memory are synchronous, as in CUDA; from
 * pinned memory (cudaHostAlloc) they are queued. Device and pinned
 * allocations are host allocations registered in a table, so a copy that
 * names a pointer of the wrong kind fails as CUDA's does
 * (cudaErrorInvalidValue), and cudaFree of an unknown pointer is refused.
 * Freed device memory is filled with 0xFF bytes (NaN for every float type),
 * so a kernel still reading a freed block computes NaN instead of the old
 * values.
 *
 * Graph capture: on a capturing stream, launches, copies, memsets and event
 * records are appended to the graph instead of run; cudaGraphLaunch queues
 * them as one item. Memory cudaMallocAsync'd during a capture is owned by
 * the graph (freed with it), as a graph's allocation node is. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "emu_internal.h"

/* ---- devices, the last-error slot ------------------------------------------------ */

static thread_local int t_device = 0;
static thread_local cudaError_t t_last_error = cudaSuccess;

int pg_emu_device_count()
{
    static int n = [] {
        const char *s = getenv("PYGPU_CUDA_EMU_DEVICES");
        int v = s ? atoi(s) : 2;
        return v < 0 ? 0 : (v > 16 ? 16 : v);
    }();
    return n;
}

static cudaError_t fail(cudaError_t e)
{
    if (e != cudaSuccess)
        t_last_error = e;
    return e;
}

static unsigned delay_us()
{
    static unsigned v = [] {
        const char *s = getenv("PYGPU_CUDA_EMU_DELAY_US");
        return s ? (unsigned)atoi(s) : 0u;
    }();
    return v;
}

/* PYGPU_CUDA_EMU_SYNC=1: every stream item finishes before its call returns
 * (a diagnostic: a failure that goes away with it is an ordering bug) */
static bool sync_mode()
{
    static bool v = [] {
        const char *s = getenv("PYGPU_CUDA_EMU_SYNC");
        return s && *s == '1';
    }();
    return v;
}

static double now_ms()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- memory table -------------------------------------------------------------------- */

struct Alloc {
    size_t size;
    int device; /* -1: pinned host */
};
static std::mutex g_mem_lock;
static std::map<uintptr_t, Alloc> g_mem;
static size_t g_used[16];

/* the allocation holding [p, p+n), or NULL */
static bool find_alloc(const void *p, size_t n, Alloc *out)
{
    std::lock_guard<std::mutex> lk(g_mem_lock);
    auto it = g_mem.upper_bound((uintptr_t)p);
    if (it == g_mem.begin())
        return false;
    --it;
    if ((uintptr_t)p + n > it->first + it->second.size || (uintptr_t)p < it->first)
        return false;
    if (out)
        *out = it->second;
    return true;
}

static void *mem_alloc(size_t n, int device)
{
    void *p = aligned_alloc(256, ((n ? n : 1) + 255) / 256 * 256);
    if (!p)
        return nullptr;
    std::lock_guard<std::mutex> lk(g_mem_lock);
    g_mem[(uintptr_t)p] = Alloc{n ? n : 1, device};
    if (device >= 0)
        g_used[device] += n;
    return p;
}

static bool mem_free(void *p, int want_device_kind)
{
    Alloc a;
    {
        std::lock_guard<std::mutex> lk(g_mem_lock);
        auto it = g_mem.find((uintptr_t)p);
        if (it == g_mem.end() || (want_device_kind ? it->second.device < 0 : it->second.device >= 0))
            return false;
        a = it->second;
        g_mem.erase(it);
        if (a.device >= 0)
            g_used[a.device] -= a.size;
    }
    memset(p, 0xff, a.size); /* a late reader sees NaN, not the old values */
    free(p);
    return true;
}

/* ---- streams ------------------------------------------------------------------------- */

/* An event's state outlives its handle: CUDA lets an event be destroyed while
 * a record or a wait on it is still queued, so queued work holds the state. */
struct EvState {
    std::mutex m;
    std::condition_variable cv;
    uint64_t recorded = 0, completed = 0; /* record generations */
    double time_ms = 0;
    bool timing = true;
    int device = 0;
};
struct CUevent_st {
    std::shared_ptr<EvState> s = std::make_shared<EvState>();
};

struct CUgraph_st {
    std::vector<std::function<void()>> nodes;
    std::vector<void *> owned; /* cudaMallocAsync'd during capture */
    int device = 0;
};
struct CUgraphExec_st {
    std::shared_ptr<CUgraph_st> g;
};

struct CUstream_st {
    int device = 0;
    int priority = 0;
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::function<void()>> q;
    uint64_t enq = 0, done = 0;
    bool stop = false;
    CUgraph_st *capture = nullptr;
    std::thread worker;

    CUstream_st(int dev) : device(dev)
    {
        worker = std::thread([this] { run(); });
    }
    void run()
    {
        t_device = device;
        std::unique_lock<std::mutex> lk(m);
        for (;;) {
            cv.wait(lk, [this] { return stop || !q.empty(); });
            if (q.empty())
                return;
            std::function<void()> f = std::move(q.front());
            q.pop_front();
            lk.unlock();
            if (delay_us())
                usleep(delay_us());
            f();
            lk.lock();
            done++;
            cv.notify_all();
        }
    }
    void push(std::function<void()> f)
    {
        std::lock_guard<std::mutex> lk(m);
        q.push_back(std::move(f));
        enq++;
        cv.notify_all();
    }
    void sync()
    {
        std::unique_lock<std::mutex> lk(m);
        uint64_t target = enq;
        cv.wait(lk, [&] { return done >= target; });
    }
    bool idle()
    {
        std::lock_guard<std::mutex> lk(m);
        return done == enq;
    }
    ~CUstream_st()
    {
        {
            std::lock_guard<std::mutex> lk(m);
            stop = true;
            cv.notify_all();
        }
        worker.join();
    }
};

static std::mutex g_streams_lock;
static std::vector<CUstream_st *> g_streams; /* every live stream, for device syncs */
static CUstream_st *g_legacy[16];

static CUstream_st *legacy_stream(int device)
{
    std::lock_guard<std::mutex> lk(g_streams_lock);
    if (!g_legacy[device]) {
        g_legacy[device] = new CUstream_st(device);
        g_streams.push_back(g_legacy[device]);
    }
    return g_legacy[device];
}

static CUstream_st *resolve(cudaStream_t s)
{
    if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread)
        return legacy_stream(t_device);
    return s;
}

/* pg_emu_set_call_delay_us: how long each enqueueing call sleeps on the host */
static std::atomic<unsigned> g_call_delay_us{0};

/* Runs f on stream s in order (or appends it to the graph s is capturing). */
void pg_emu_enqueue(cudaStream_t s, std::function<void()> f)
{
    if (unsigned us = g_call_delay_us.load())
        usleep(us);
    CUstream_st *st = resolve(s);
    if (st->capture) {
        st->capture->nodes.push_back(std::move(f));
        return;
    }
    st->push(std::move(f));
    if (sync_mode())
        st->sync();
}

static bool capturing(cudaStream_t s) { return resolve(s)->capture != nullptr; }

static void sync_device(int device)
{
    std::vector<CUstream_st *> all;
    {
        std::lock_guard<std::mutex> lk(g_streams_lock);
        all = g_streams;
    }
    for (CUstream_st *s : all)
        if (s->device == device)
            s->sync();
}

/* ---- kernel launches (emu_kernel.h) --------------------------------------------------- */

void pg_emu_run_block(const std::function<void()> &body, dim3 grid, dim3 block, uint3 blk);

cudaError_t pg_emu_launch_grid(const pg_emu_cfg &cfg, std::function<void()> body)
{
    dim3 g = cfg.grid, b = cfg.block;
    uint64_t threads = (uint64_t)b.x * b.y * b.z;
    if (threads == 0 || threads > 1024 || b.z > 64 || g.x == 0 || g.y == 0 || g.z == 0 ||
        g.y > 65535 || g.z > 65535 || g.x > 2147483647u || cfg.shmem > 227 * 1024)
        return fail(cudaErrorInvalidConfiguration);
    auto shared_body = std::make_shared<std::function<void()>>(std::move(body));
    pg_emu_enqueue(cfg.stream, [g, b, shared_body] {
        for (unsigned z = 0; z < g.z; z++)
            for (unsigned y = 0; y < g.y; y++)
                for (unsigned x = 0; x < g.x; x++)
                    pg_emu_run_block(*shared_body, g, b, uint3{x, y, z});
    });
    return cudaSuccess;
}

/* ---- the C API -------------------------------------------------------------------------- */

extern "C" {

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return t_last_error; }

const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    default: return "cudaErrorUnknown";
    }
}
const char *cudaGetErrorString(cudaError_t e) { return cudaGetErrorName(e); }

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = pg_emu_device_count();
    return *n ? cudaSuccess : fail(cudaErrorNoDevice);
}
cudaError_t cudaSetDevice(int d)
{
    if (d < 0 || d >= pg_emu_device_count())
        return fail(cudaErrorInvalidDevice);
    t_device = d;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d)
{
    *d = t_device;
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v)
{
    *v = 13000;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = 13000;
    return cudaSuccess;
}

static const size_t kTotalMem = (size_t)81559 << 20; /* an H100 80GB HBM3's total_memory */

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    if (d < 0 || d >= pg_emu_device_count())
        return fail(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "NVIDIA H100 80GB HBM3 (emulated)");
    for (int i = 0; i < 16; i++)
        p->uuid.bytes[i] = (char)(0x10 * d + i);
    p->totalGlobalMem = kTotalMem;
    p->sharedMemPerBlock = 48 * 1024;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = 1024;
    p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = 65535;
    p->maxGridSize[2] = 65535;
    p->totalConstMem = 65536;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 132;
    p->l2CacheSize = 50 * 1024 * 1024;
    p->maxThreadsPerMultiProcessor = 2048;
    p->pciBusID = 0x18 + d;
    p->pciDomainID = 0;
    p->pciDeviceID = 0;
    p->memoryBusWidth = 5120;
    p->concurrentKernels = 1;
    p->unifiedAddressing = 1;
    p->canMapHostMemory = 1;
    p->sharedMemPerMultiprocessor = 228 * 1024;
    p->sharedMemPerBlockOptin = 227 * 1024;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int d)
{
    if (d < 0 || d >= pg_emu_device_count())
        return fail(cudaErrorInvalidDevice);
    switch (a) {
    case cudaDevAttrMultiProcessorCount: *v = 132; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int d)
{
    if (d < 0 || d >= pg_emu_device_count())
        return fail(cudaErrorInvalidDevice);
    snprintf(buf, (size_t)len, "0000:%02X:00.0", 0x18 + d);
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int d, int peer)
{
    if (d < 0 || d >= pg_emu_device_count() || peer < 0 || peer >= pg_emu_device_count())
        return fail(cudaErrorInvalidDevice);
    *can = d != peer;
    return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags)
{
    (void)flags;
    if (peer < 0 || peer >= pg_emu_device_count() || peer == t_device)
        return fail(cudaErrorInvalidDevice);
    return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    *least = 0;
    *greatest = -5;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void)
{
    sync_device(t_device);
    return cudaSuccess;
}

static int g_pool_tag[16];
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int d)
{
    if (d < 0 || d >= pg_emu_device_count())
        return fail(cudaErrorInvalidDevice);
    *pool = (cudaMemPool_t)&g_pool_tag[d];
    return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr a, void *v)
{
    (void)pool;
    (void)a;
    (void)v;
    return cudaSuccess;
}

/* ---- memory -------------------------------------------------------------------------- */

cudaError_t cudaMalloc(void **p, size_t n)
{
    if (g_used[t_device] + n > kTotalMem)
        return fail(cudaErrorMemoryAllocation);
    *p = mem_alloc(n, t_device);
    return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
cudaError_t cudaFree(void *p)
{
    if (p == nullptr)
        return cudaSuccess;
    Alloc a;
    if (!find_alloc(p, 1, &a) || a.device < 0)
        return fail(cudaErrorInvalidValue);
    sync_device(a.device); /* cudaFree waits for the device */
    return mem_free(p, 1) ? cudaSuccess : fail(cudaErrorInvalidValue);
}
cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s)
{
    CUstream_st *st = resolve(s);
    void *q = mem_alloc(n, st->device);
    if (!q)
        return fail(cudaErrorMemoryAllocation);
    if (st->capture)
        st->capture->owned.push_back(q);
    *p = q;
    return cudaSuccess;
}
cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    if (p == nullptr)
        return cudaSuccess;
    Alloc a;
    if (!find_alloc(p, 1, &a) || a.device < 0)
        return fail(cudaErrorInvalidValue);
    CUstream_st *st = resolve(s);
    if (st->capture)
        return cudaSuccess; /* the graph owns it until it is destroyed */
    st->push([p] { mem_free(p, 1); });
    return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags)
{
    (void)flags;
    *p = mem_alloc(n, -1);
    return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
cudaError_t cudaMallocHost(void **p, size_t n) { return cudaHostAlloc(p, n, 0); }
cudaError_t cudaFreeHost(void *p)
{
    if (p == nullptr)
        return cudaSuccess;
    return mem_free(p, 0) ? cudaSuccess : fail(cudaErrorInvalidValue);
}
cudaError_t cudaHostGetDevicePointer(void **dp, void *h, unsigned flags)
{
    (void)flags;
    Alloc a;
    if (!find_alloc(h, 1, &a) || a.device >= 0)
        return fail(cudaErrorInvalidValue);
    *dp = h;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
    *total = kTotalMem;
    *free_b = kTotalMem - g_used[t_device];
    return cudaSuccess;
}

/* Checks each side of a copy against the table: what a kind names as device
 * memory must be device memory. pinned: whether the host side is pinned. */
static cudaError_t check_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                              bool *pinned)
{
    Alloc ad, as;
    bool dd = find_alloc(dst, n, &ad) && ad.device >= 0;
    bool sd = find_alloc(src, n, &as) && as.device >= 0;
    bool dp = find_alloc(dst, n, &ad) && ad.device < 0;
    bool sp = find_alloc(src, n, &as) && as.device < 0;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        if (!dd || sd)
            return cudaErrorInvalidValue;
        *pinned = sp;
        return cudaSuccess;
    case cudaMemcpyDeviceToHost:
        if (!sd || dd)
            return cudaErrorInvalidValue;
        *pinned = dp;
        return cudaSuccess;
    case cudaMemcpyDeviceToDevice:
        *pinned = true;
        return dd && sd ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDefault:
        *pinned = (dd || dp) && (sd || sp);
        return cudaSuccess;
    default:
        *pinned = true;
        return (dd || dp) && (sd || sp) ? cudaSuccess : cudaErrorInvalidValue;
    }
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    bool pinned;
    cudaError_t e = check_copy(dst, src, n, kind, &pinned);
    if (e != cudaSuccess)
        return fail(e);
    if (capturing(s) && !pinned)
        return fail(cudaErrorStreamCaptureUnsupported);
    pg_emu_enqueue(s, [dst, src, n] { memcpy(dst, src, n); });
    if (!pinned) /* pageable host memory: CUDA copies it before returning */
        resolve(s)->sync();
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    cudaError_t e = cudaMemcpyAsync(dst, src, n, kind, nullptr);
    if (e == cudaSuccess)
        legacy_stream(t_device)->sync();
    return e;
}
cudaError_t cudaMemcpyPeerAsync(void *dst, int dd, const void *src, int sd, size_t n,
                                cudaStream_t s)
{
    Alloc a, b;
    if (!find_alloc(dst, n, &a) || a.device != dd || !find_alloc(src, n, &b) || b.device != sd)
        return fail(cudaErrorInvalidValue);
    pg_emu_enqueue(s, [dst, src, n] { memcpy(dst, src, n); });
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    Alloc a;
    if (!find_alloc(p, n, &a))
        return fail(cudaErrorInvalidValue);
    pg_emu_enqueue(s, [p, v, n] { memset(p, v, n); });
    return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int v, size_t n)
{
    cudaError_t e = cudaMemsetAsync(p, v, n, nullptr);
    if (e == cudaSuccess)
        legacy_stream(t_device)->sync();
    return e;
}

/* ---- streams ------------------------------------------------------------------------- */

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned flags, int priority)
{
    (void)flags;
    CUstream_st *st = new CUstream_st(t_device);
    st->priority = priority;
    std::lock_guard<std::mutex> lk(g_streams_lock);
    g_streams.push_back(st);
    *s = st;
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    return cudaStreamCreateWithPriority(s, flags, 0);
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithPriority(s, 0, 0); }
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread)
        return fail(cudaErrorInvalidResourceHandle);
    {
        std::lock_guard<std::mutex> lk(g_streams_lock);
        bool found = false;
        for (size_t i = 0; i < g_streams.size(); i++)
            if (g_streams[i] == s) {
                g_streams.erase(g_streams.begin() + (long)i);
                found = true;
                break;
            }
        if (!found)
            return fail(cudaErrorInvalidResourceHandle);
    }
    s->sync();
    delete s;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    CUstream_st *st = resolve(s);
    if (st->capture)
        return fail(cudaErrorStreamCaptureUnsupported);
    st->sync();
    return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s)
{
    CUstream_st *st = resolve(s);
    if (st->capture)
        return fail(cudaErrorStreamCaptureUnsupported);
    return st->idle() ? cudaSuccess : cudaErrorNotReady;
}

/* ---- events -------------------------------------------------------------------------- */

static std::atomic<long> g_events_created{0};

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    g_events_created++;
    CUevent_st *ev = new CUevent_st();
    ev->s->timing = !(flags & cudaEventDisableTiming);
    ev->s->device = t_device;
    *e = ev;
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    if (!e)
        return fail(cudaErrorInvalidResourceHandle);
    delete e; /* queued records and waits keep the state */
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (!e)
        return fail(cudaErrorInvalidResourceHandle);
    std::shared_ptr<EvState> ev = e->s;
    CUstream_st *st = resolve(s);
    if (st->capture) {
        /* a record inside a graph marks the point of the replay (it orders
         * nothing here: a graph's nodes run in order on one queue) */
        st->capture->nodes.push_back([ev] {
            std::lock_guard<std::mutex> lk(ev->m);
            ev->time_ms = now_ms();
        });
        return cudaSuccess;
    }
    uint64_t gen;
    {
        std::lock_guard<std::mutex> lk(ev->m);
        gen = ++ev->recorded;
    }
    st->push([ev, gen] {
        std::lock_guard<std::mutex> lk(ev->m);
        ev->time_ms = now_ms();
        if (ev->completed < gen)
            ev->completed = gen;
        ev->cv.notify_all();
    });
    return cudaSuccess;
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned flags)
{
    (void)flags;
    return cudaEventRecord(e, s);
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    (void)flags;
    if (!e)
        return fail(cudaErrorInvalidResourceHandle);
    std::shared_ptr<EvState> ev = e->s;
    uint64_t gen;
    {
        std::lock_guard<std::mutex> lk(ev->m);
        gen = ev->recorded; /* the latest record at the time of the call */
    }
    auto wait = [ev, gen] {
        std::unique_lock<std::mutex> lk(ev->m);
        ev->cv.wait(lk, [&] { return ev->completed >= gen; });
    };
    CUstream_st *st = resolve(s);
    if (st->capture) {
        wait(); /* an outside dependency of the capture: met now, on the host */
        return cudaSuccess;
    }
    st->push(wait);
    return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e)
{
    if (!e)
        return fail(cudaErrorInvalidResourceHandle);
    std::lock_guard<std::mutex> lk(e->s->m);
    return e->s->completed >= e->s->recorded ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    if (!e)
        return fail(cudaErrorInvalidResourceHandle);
    EvState *ev = e->s.get();
    std::unique_lock<std::mutex> lk(ev->m);
    uint64_t gen = ev->recorded;
    ev->cv.wait(lk, [&] { return ev->completed >= gen; });
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    if (!a || !b || !a->s->timing || !b->s->timing)
        return fail(cudaErrorInvalidResourceHandle);
    double t[2];
    EvState *evs[2] = {a->s.get(), b->s.get()};
    for (int i = 0; i < 2; i++) {
        std::lock_guard<std::mutex> lk(evs[i]->m);
        if (evs[i]->recorded == 0)
            return fail(cudaErrorInvalidResourceHandle);
        if (evs[i]->completed < evs[i]->recorded)
            return fail(cudaErrorNotReady);
        t[i] = evs[i]->time_ms;
    }
    *ms = (float)(t[1] - t[0]);
    return cudaSuccess;
}

/* ---- graphs -------------------------------------------------------------------------- */

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    (void)mode;
    CUstream_st *st = resolve(s);
    if (s == nullptr || s == cudaStreamLegacy || st->capture)
        return fail(cudaErrorIllegalState);
    st->capture = new CUgraph_st();
    st->capture->device = st->device;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    CUstream_st *st = resolve(s);
    if (!st->capture)
        return fail(cudaErrorIllegalState);
    *g = st->capture;
    st->capture = nullptr;
    return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    *status = resolve(s)->capture ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    if (!g)
        return fail(cudaErrorInvalidResourceHandle);
    for (void *p : g->owned)
        mem_free(p, 1);
    g->owned.clear();
    g->nodes.clear();
    delete g;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags)
{
    (void)flags;
    if (!g)
        return fail(cudaErrorInvalidResourceHandle);
    /* the exec keeps its own copy of the nodes; the graph's memory lives as
     * long as the exec or the graph, whichever goes last */
    auto copy = std::make_shared<CUgraph_st>();
    copy->nodes = g->nodes;
    copy->owned = g->owned;
    g->owned.clear();
    CUgraphExec_st *x = new CUgraphExec_st();
    x->g = copy;
    *exec = x;
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
    if (!exec)
        return fail(cudaErrorInvalidResourceHandle);
    auto g = exec->g;
    pg_emu_enqueue(s, [g] {
        for (auto &f : g->nodes)
            f();
    });
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    if (!exec)
        return fail(cudaErrorInvalidResourceHandle);
    auto g = exec->g;
    delete exec;
    if (g.use_count() == 1) {
        for (void *p : g->owned)
            mem_free(p, 1);
        g->owned.clear();
    }
    return cudaSuccess;
}

} // extern "C"

/* For tests only: the calling thread's current device in the stand-in
 * runtime, which the plugin must leave as the caller set it. */
extern "C" __attribute__((visibility("default"))) int pg_emu_current_device(void) { return t_device; }

/* For tests only: how many events the stand-in runtime has created so far. */
extern "C" __attribute__((visibility("default"))) long pg_emu_events_created(void)
{
    return g_events_created.load();
}

/* For tests only: from now on every call that queues stream work (a launch, a
 * copy, a memset, a cuBLAS call, an NCCL collective) first sleeps `us` on the
 * calling thread; 0 turns it off. */
extern "C" __attribute__((visibility("default"))) void pg_emu_set_call_delay_us(unsigned us)
{
    g_call_delay_us.store(us);
}

/* For tests only: `n` bytes of device memory on `device`, as another library's
 * cudaMalloc would give (a DLPack producer in a test); freed with cudaFree. */
extern "C" __attribute__((visibility("default"))) void *pg_emu_device_malloc(size_t n, int device)
{
    if (device < 0 || device >= pg_emu_device_count())
        return nullptr;
    return mem_alloc(n, device);
}
