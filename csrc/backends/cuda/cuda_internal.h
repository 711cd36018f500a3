/* cuda_internal.h - state and helpers shared by the files of the CUDA plugin.
 *
 * The plugin is one pg_backend table (cuda_plugin.c) over per-device state:
 * three streams ("queues") created on first use, a cuBLAS handle created on
 * the first product, and the bookkeeping that lets wait_event know whether a
 * storage's pending work is done. The stream and event model (which work goes
 * to which queue, how queues wait for each other) is described at the top of
 * cuda_queue.c. Every CUDA/cuBLAS status goes through pg_cuda_check
 * (cuda_check.c). The plugin never calls a core symbol: it reaches the core
 * only through pg_cuda.core (pg_core_api).
 *
 * The files are layers; each calls only the layers below it (the import-cycle
 * check, build_support/check_import_cycles.py, holds them to that), and this
 * header declares them bottom to top:
 *   1. cuda_state.c    the one global, pg_cuda (options, per-device state)
 *   2. cuda_check.c    CUDA/cuBLAS status -> pg_status with a message
 *      cuda_lazy_library.c  the paths offered for a library loaded on first use
 *                      (cuDNN, cuFFT), tried once
 *   3. cuda_device.c   device entry helper, guard, streams' creation, events,
 *                      the cuBLAS handle, peer access
 *   4. cuda_memory.c   device and pinned allocations
 *      cuda_stream.c   the thread's current user stream and its joins
 *   5. cuda_profile.c  NVTX ranges and kernel timing around an op (skipped
 *                      while the current stream captures a graph)
 *   6. cuda_queue.c    per-queue bookkeeping, cross-queue ordering, host
 *                      waits (which join the user streams and read the
 *                      kernel times), copies in flight
 *   7. cuda_copy.c, cuda_gemm.c, cuda_quant.c, cuda_train.c, cuda_graph.c, cuda_nccl.c, cuda_cudnn.c,
 *      cuda_cufft.c, cuda_cusolver.c, cuda_stream_api.c   copies, products, fused training
 *                      ops, graphs, collectives, cuDNN's convolutions, cuFFT's transforms,
 *                      cuSOLVER's factorizations, the
 *                      Stream/Event entry points
 *   8. cuda_launch.c   the op dispatcher
 *   9. cuda_plugin.c   the backend table, pg_plugin_init, options, device queries
 *  10. cuda_extras.c   the second table (pg_cuda_extras.h: streams, events,
 *                      graphs, NCCL, ...) and pg_plugin_get_extras, the only
 *                      other symbol the plugin exports
 * Where a lower layer needs something of a higher one it gets it through
 * pg_cuda, filled in from above: pg_cuda.backend (the table's address, set at
 * pg_plugin_init) is what cuda_queue.c puts in the events it records.
 *
 * Device rule: every entry point of the table calls pg_cuda_device_get,
 * which makes its device current; anything that must touch another device
 * on the way (waiting for its queue, recording an event there, enabling
 * peer access) goes through a pg_cuda_guard, which puts the entry point's
 * device back. */
#ifndef PG_CUDA_INTERNAL_H
#define PG_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "pg_backend.h"
#include "pg_cuda_extras.h"
#include "pg_cuda_kernels.h"

#define PG_CUDA_EXPORT __attribute__((visibility("default")))

#define PG_CUDA_MAX_XFERS 64   /* timed async copies in flight per device */
/* recycled cudaEvent_t per device: a full kernel-timing ring (128 ops, two events
 * each, cuda_profile.c) plus the copies and joins in flight */
#define PG_CUDA_SPARE_EVENTS 288
#define PG_CUDA_BOUNCE_BYTES 65536 /* the small-copy staging buffer (cuda_copy.c) */
#define PG_CUDA_OPNAME_LEN 32

enum { PG_CUDA_ROLE_COMPUTE = PG_ROLE_COMPUTE, PG_CUDA_ROLE_COPY = PG_ROLE_COPY };

/* An asynchronous copy whose duration is read once its end event fires. */
typedef struct pg_cuda_xfer {
    cudaEvent_t start, end;
    pg_device src, dst;
    /* storages kept alive until the DMA is done (or NULL): the pinned host
     * side, and the device side of a copy on a queue other than the compute
     * queue (so the caching allocator cannot hand its block to a kernel
     * while the copy still reads or writes it) */
    pg_storage *held[2];
} pg_cuda_xfer;

typedef struct pg_cuda_device pg_cuda_device;

/* One CUDA stream and what was queued on it. A storage's pg_event is
 * (cuda, queue, seq): seq is the queue's counter after the work was queued.
 * `done_seq` only moves after a host wait on the stream succeeded (to the
 * number read before it) or a blocking copy, so "seq <= done_seq" always
 * means finished. */
typedef struct pg_cuda_queue {
    pg_cuda_device *dev;
    int role;            /* PG_CUDA_ROLE_*: passed with its marks (read slots are per queue) */
    const char *name;    /* "compute", "copy", "comm": for messages */
    cudaStream_t stream; /* created with the device's state (ready) */
    uint64_t queued_seq; /* under dev->lock, as are the three below */
    uint64_t unsynced_ops; /* ops queued since the last synchronize, for messages */
    uint64_t user_seq;   /* the last seq counted here for work run on a user stream */
    char first_op[PG_CUDA_OPNAME_LEN], last_op[PG_CUDA_OPNAME_LEN];
    _Atomic uint64_t done_seq;
} pg_cuda_queue;

struct pg_cuda_device {
    int index;
    pthread_mutex_t lock;      /* guards the fields below except ready/done_seq */
    pthread_mutex_t blas_lock; /* a cuBLAS handle is not safe to share between threads */
    atomic_int ready;          /* streams created */
    pg_cuda_queue compute;     /* kernels, blocking copies, same-device copies */
    pg_cuda_queue copy;        /* non-blocking copies between pinned host memory and here */
    pg_cuda_queue comm;        /* NCCL collectives */
    int sm_count;
    cublasHandle_t blas;     /* NULL until the first product; under blas_lock */
    cudaStream_t blas_stream; /* the stream `blas` is bound to; under blas_lock */
    cublasLtHandle_t lt;      /* cuBLASLt (the int8 GEMM), NULL until first used; under blas_lock */
    pg_cuda_eflags *eflags_host, *eflags_dev; /* mapped pinned record, or NULL (no flags) */
    /* pinned staging for small blocking copies into pageable host memory (loss.item()), or
     * NULL; under bounce_lock for the whole copy (cuda_copy.c says why) */
    void *bounce;
    pthread_mutex_t bounce_lock;

    char name[256]; /* cudaGetDeviceProperties, cached once known */
    size_t total_memory;
    bool props_known;

    /* peer access from this device to device i: 0 unknown, 1 enabled, -1 impossible */
    signed char peer[PG_MAX_DEVICES_PER_TYPE];

    pg_cuda_xfer xfers[PG_CUDA_MAX_XFERS]; /* ring, oldest at xfer_head */
    int xfer_head, xfer_count;
    cudaEvent_t spare[PG_CUDA_SPARE_EVENTS];
    int nspare;
};

typedef struct pg_cuda_state {
    const pg_core_api *core;
    const pg_backend *backend; /* &pg_cuda_backend, set by pg_plugin_init */
    atomic_int allow_tf32;   /* option "allow_tf32": cuBLAS may use TF32 for float32 */
    atomic_int sync_each_op; /* option "sync_each_op": wait after every op (exact error op) */
    atomic_int current_device; /* option "current_device": pygpu.cuda.set_device, for pinning */
    atomic_int nccl_timeout_s; /* option "nccl_timeout_s": NCCL waits give up (0: 600 s) */
    pg_cuda_device dev[PG_MAX_DEVICES_PER_TYPE];
    atomic_int nvtx;          /* option "nvtx": an NVTX range around every op (cuda_profile.c) */
    atomic_int kernel_timing; /* option "kernel_timing": GPU time per op into the stats */
    atomic_int cudnn_benchmark;     /* option "cudnn_benchmark": timed algorithm search */
    atomic_int cudnn_deterministic; /* option "cudnn_deterministic": deterministic algorithms */
    atomic_int flash_sdp;           /* option "flash_sdp" (default on): attention on the fused
                                     * kernels (kernels/attention.cu); off, supports_node declines
                                     * SDPA and the public function composes it of batched GEMMs
                                     * and row softmax (torch.backends.cuda.enable_flash_sdp) */
    atomic_int cudnn_enabled;       /* option "cudnn_enabled" (default on): convolutions on cuDNN
                                     * (pygpu.backends.cudnn.enabled; off: composed) */
    atomic_int int8_requant_in_gemm; /* option "int8_requant_in_gemm" (default on): static int8
                                      * layers requantize in cuBLASLt's epilogue (cuda_quant.c) */
} pg_cuda_state;

/* 1. cuda_state.c */
extern pg_cuda_state pg_cuda;
void pg_cuda_state_init(void);

/* 2. cuda_check.c: the one place CUDA and cuBLAS statuses become pg_status.
 * `dev` is the device index (-1: none), `op` the user-facing op name,
 * `call` the failing API call. `deferred` marks an asynchronous failure
 * surfacing at a wait (PG_ERR_ASYNC). */
typedef enum { PG_CUDA_LIB_RUNTIME, PG_CUDA_LIB_CUBLAS } pg_cuda_lib;
pg_status pg_cuda_check(pg_cuda_lib lib, int code, int dev, const char *op, const char *call,
                        bool deferred);
#define PG_CUDA_RT(expr, dev, op) \
    pg_cuda_check(PG_CUDA_LIB_RUNTIME, (int)(expr), (dev), (op), #expr, false)
/* Format a message, hand it to the core (core->error_set) and keep a copy. */
pg_status pg_cuda_error(pg_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *pg_cuda_last_message(void);

/* 3. cuda_device.c */
pg_status pg_cuda_device_get(int index, const char *op, pg_cuda_device **out);
typedef struct pg_cuda_guard {
    int index, prev; /* prev: the device current before, or -1 */
} pg_cuda_guard;
pg_status pg_cuda_guard_enter(pg_cuda_guard *g, int index, const char *op);
void pg_cuda_guard_exit(const pg_cuda_guard *g);
pg_status pg_cuda_queues_create(pg_cuda_device *d, const char *op);
pg_status pg_cuda_event_get(pg_cuda_device *d, const char *op, cudaEvent_t *ev);
void pg_cuda_event_put(pg_cuda_device *d, cudaEvent_t ev);
void pg_cuda_event_put_locked(pg_cuda_device *d, cudaEvent_t ev);
/* Lock d's cuBLAS handle (created on first use) for one caller, bound to
 * `stream` (the work stream) with the math mode the allow_tf32 option asks.
 * On PG_OK the caller calls pg_cuda_blas_release(d) when done with it. */
pg_status pg_cuda_blas_acquire(pg_cuda_device *d, cudaStream_t stream, const char *op,
                               cublasHandle_t *out);
void pg_cuda_blas_release(pg_cuda_device *d);
/* The same for d's cuBLASLt handle (the stream goes with each cublasLtMatmul); released
 * with pg_cuda_blas_release. */
pg_status pg_cuda_lt_acquire(pg_cuda_device *d, const char *op, cublasLtHandle_t *out);
pg_status pg_cuda_enable_peer(pg_cuda_device *d, int peer, const char *op);

/* 4. cuda_memory.c */
pg_status pg_cuda_raw_alloc(const pg_backend *be, int index, size_t nbytes, void **ptr);
void pg_cuda_raw_free(const pg_backend *be, int index, void *ptr);
pg_status pg_cuda_host_alloc_pinned(const pg_backend *be, size_t nbytes, void **ptr);
void pg_cuda_host_free_pinned(const pg_backend *be, void *ptr);

/* 4. cuda_stream.c: user streams (pygpu.cuda.Stream): the thread's current one,
 * and the joins that order them with the device's compute queue (model at
 * the file's top and in cuda_queue.c). */
struct pg_cuda_graph;
typedef struct pg_cuda_ustream {
    int device;
    cudaStream_t stream;
    uint64_t seen_seq;                /* compute.queued_seq this stream last waited for */
    int nactive;                      /* threads it is current on (under the streams lock) */
    struct pg_cuda_ustream *next_active;
    struct pg_cuda_graph *capture;    /* capturing into this graph (cuda_graph.c), or NULL */
} pg_cuda_ustream;
pg_cuda_ustream *pg_cuda_current_ustream(int index);
void pg_cuda_set_current_ustream(int index, pg_cuda_ustream *u);
/* u is current on one more (one fewer) thread: the host waits of before_sync see it */
void pg_cuda_ustream_activate(pg_cuda_ustream *u);
void pg_cuda_ustream_deactivate(pg_cuda_ustream *u);
/* The stream the calling thread's next op on `d` goes to. */
cudaStream_t pg_cuda_work_stream(pg_cuda_device *d);
/* d's compute queue's count of queued work (under d->lock). */
uint64_t pg_cuda_compute_queued(pg_cuda_device *d);
/* `waiter` waits (on the device) for everything queued on `on` so far; both
 * streams of device `dev`, which need not be the current one. */
pg_status pg_cuda_stream_join(int dev, cudaStream_t waiter, cudaStream_t on, const char *op);
pg_status pg_cuda_stream_before_op(pg_cuda_device *d, const char *op);
void pg_cuda_stream_after_op(pg_cuda_device *d, uint64_t seq);
pg_status pg_cuda_stream_before_copy(pg_cuda_device *d, const char *op);
pg_status pg_cuda_stream_before_sync(pg_cuda_device *d, const char *why);
/* `waiter` waits (on the device) for every active, non-capturing user stream of d. */
pg_status pg_cuda_stream_join_active(pg_cuda_device *d, cudaStream_t waiter, const char *op);
/* d's compute stream waits for the calling thread's current user stream on d
 * (none, or capturing: nothing), so a (compute, seq) event covers its work. */
pg_status pg_cuda_stream_join_current(pg_cuda_device *d, const char *op);

/* 5. cuda_profile.c: NVTX range and kernel timing around one op */
#define PG_CUDA_PROF_KERNELS 8 /* kernels timed per op; more are counted */
typedef struct pg_cuda_prof_log {
    pg_cuda_kernel_log base; /* what ctx->log points at */
    pg_cuda_device *d;
    int n, seen;
    const char *name[PG_CUDA_PROF_KERNELS]; /* string literals of the launchers */
    int types[PG_CUDA_PROF_KERNELS][4]; /* in, out, compute, epilogue (pg_profile_kernel) */
    cudaEvent_t at[PG_CUDA_PROF_KERNELS]; /* recorded before each kernel */
} pg_cuda_prof_log;

typedef struct pg_cuda_prof {
    bool nvtx, timed, stats;
    cudaEvent_t start, end;
    uint64_t prof_id; /* pygpu.profiler's event of the op, 0 when not recording */
    pg_cuda_prof_log log;
} pg_cuda_prof;
pg_status pg_cuda_profile_begin(pg_cuda_device *d, cudaStream_t stream, const char *op,
                                pg_cuda_prof *p);
void pg_cuda_profile_end(pg_cuda_device *d, cudaStream_t stream, pg_cuda_prof *p, bool launched);
void pg_cuda_profile_poll(pg_cuda_device *d, bool wait_oldest);
bool pg_cuda_have_nvtx(void); /* built with the toolkit's NVTX3 headers */

/* 6. cuda_queue.c: queues, events, waits (the model is described there) */
uint64_t pg_cuda_note_queued(pg_cuda_queue *q, const char *op);
/* The same for compute work that ran on user stream u instead (NULL: on q). */
uint64_t pg_cuda_note_queued_on(pg_cuda_queue *q, const char *op, const pg_cuda_ustream *u);
void pg_cuda_note_done(pg_cuda_queue *q, uint64_t seq);
void pg_cuda_mark(pg_storage *s, pg_cuda_queue *q, uint64_t seq, bool write);
pg_status pg_cuda_order_after(pg_storage *s, pg_cuda_queue *q);
/* As pg_cuda_order_after(s, q), for an op that runs on user stream u (or
 * NULL: on q) standing in for q, the compute queue: device-side waits go to
 * u's stream. */
pg_status pg_cuda_order_after_on(pg_storage *s, pg_cuda_queue *q, pg_cuda_ustream *u);
pg_status pg_cuda_queue_wait_queue(pg_cuda_queue *waiter, pg_cuda_queue *q, const char *op);
/* The same for any stream `ws` of device `wdev` (a user stream, another library's). */
pg_status pg_cuda_stream_wait_queue(cudaStream_t ws, int wdev, pg_cuda_queue *q, const char *op);
pg_status pg_cuda_queue_sync(pg_cuda_queue *q, const char *why);
/* PG_ERR_ASYNC naming the bad data a kernel flagged (PG_CUDA_EFLAG_*), and
 * clears the flags; PG_OK when none. Call after the kernels are known done. */
pg_status pg_cuda_check_eflags(pg_cuda_device *d);
pg_status pg_cuda_synchronize(const pg_backend *be, int index);
pg_status pg_cuda_wait_event(const pg_backend *be, pg_event ev);
pg_cuda_queue *pg_cuda_event_queue(pg_event ev);
/* Copies in flight: add one (waits for the oldest when the ring is full);
 * report finished ones and drop what they held (after waiting for the oldest
 * one if wait_oldest).
 * Polling clears the cudaErrorNotReady that cudaEventQuery leaves in the
 * last-error slot. */
void pg_cuda_xfer_add(pg_cuda_device *d, const pg_cuda_xfer *x);
void pg_cuda_xfer_poll(pg_cuda_device *d, bool wait_oldest);

/* 7. cuda_copy.c */
pg_status pg_cuda_copy(const pg_backend *be, int index, const pg_copy *c);
/* 7. cuda_gemm.c: run one GEMM descriptor (pg_gemm.h) on ctx's stream with cuBLAS */
struct pg_gemm;
pg_status pg_cuda_gemm(pg_cuda_device *d, const pg_cuda_ctx *ctx, const struct pg_gemm *g,
                       const char *op);
/* cuda_lt_gemm.c: one descriptor with its bias and activation as one cublasLtMatmul (float32,
 * float16, bfloat16; batch 1). *refused: cuBLASLt has no kernel for it (or the file does not run
 * such descriptors) and nothing was queued; the caller runs its cuBLAS path. */
pg_status pg_cuda_lt_gemm(pg_cuda_device *d, const pg_cuda_ctx *ctx, const struct pg_gemm *g,
                          const char *op, bool *refused);
/* 2. cuda_lazy_library.c: a library loaded on first use: the paths Python offered
 * (newline-separated) and whether they were tried. loaded() says whether the library's
 * file holds it; load(path, why, len) is its loader (0, or a message in why). */
typedef struct pg_cuda_lazy_library {
    pthread_mutex_t lock;
    char paths[8192];
    bool tried;
} pg_cuda_lazy_library;
#define PG_CUDA_LAZY_LIBRARY_INIT {.lock = PTHREAD_MUTEX_INITIALIZER}
void pg_cuda_lazy_offer(pg_cuda_lazy_library *lib, const char *paths);
/* whether the library is loaded, after trying the offered paths once if it was not */
bool pg_cuda_lazy_load(pg_cuda_lazy_library *lib, bool (*loaded)(void),
                       int (*load)(const char *path, char *why, size_t len));

/* 7. The node kinds' launchers, named by their PG_NODE rows' cuda column (pg_ops.def):
 * each lays a node out as the plain arguments of its kernels/ launcher and launches it
 * on ctx->stream, returning the checked status. cuda_launch.c: fill, copy, binary, unary,
 * select, reduce, matmul, arange, random, amp_unscale; cuda_train.c: the fused training
 * ops; cuda_quant.c: the int8 linear layer (quantize, cuBLASLt's IMMA GEMM, epilogue);
 * cuda_index.c: the index family (gather, scatter, cumsum, argsort, ...); cuda_sequence.c:
 * the recurrent cells and scaled-dot-product attention; cuda_conv_layers.c: pooling and
 * batch norm (cuda_cudnn.c: the convolution; cuda_cufft.c: the FFT; cuda_cusolver.c: the
 * factorizations, LINALG). */
typedef pg_status (*pg_cuda_launcher)(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n);
#define CUDA(launcher) pg_status launcher(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n);
#define CUDA_HALF(launcher) CUDA(launcher)
#define CUDA_ALL(launcher) CUDA(launcher)
#define NO_CUDA
#define PG_NODE(ID, params, cpu, split, panels, cuda, ...) cuda
#include "pg_ops.def"
#undef CUDA
#undef CUDA_HALF
#undef CUDA_ALL
#undef NO_CUDA
/* a kernel launch's cudaError_t as the op's status, naming the kernels/ launcher `call` */
#define PG_CUDA_KERNEL_STATUS(d, n, call, err)                                                     \
    pg_cuda_check(PG_CUDA_LIB_RUNTIME, (err), (d)->index, (n)->name, (call), false)
/* cuda_multi.c: whether a MULTI node's entries are of a kind with a list kernel (every
 * other node: true); supports_node's rule for MULTI */
bool pg_cuda_multi_runs(const pg_node *n);
/* 7. cuda_graph.c: a captured op's storages are held by the graph */
pg_status pg_cuda_graph_note_op(pg_cuda_ustream *u, const pg_node *node);
/* PG_OK, or why `node` must not be captured (its scalars would be frozen). */
pg_status pg_cuda_graph_refuse_frozen(int device, const pg_node *node);

/* 8. cuda_launch.c */
pg_status pg_cuda_launch(const pg_backend *be, int index, const pg_node *node);
/* whether a node kind has a launcher for `dtype` (its row's cuda column): supports_op */
bool pg_cuda_runs_op(int op, int dtype);
void pg_cuda_iter_init(pg_cuda_iter *it, int ndim, const int64_t *shape, int nops,
                       const int64_t *const *strides);

/* 7. the entry points of the extras table (pg_cuda_extras.h), gathered by
 * cuda_extras.c; nothing else calls them and none is exported.
 * cuda_stream_api.c: */
pg_status pg_plugin_stream_create(int device, int priority, void **out);
pg_status pg_plugin_stream_destroy(void *h);
pg_status pg_plugin_stream_handle(int device, void *h, uintptr_t *out);
pg_status pg_plugin_stream_enter(int device, void *h, void **prev);
pg_status pg_plugin_stream_exit(int device, void *h, void *prev);
pg_status pg_plugin_stream_synchronize(int device, void *h);
pg_status pg_plugin_stream_query(int device, void *h, int *done);
pg_status pg_plugin_stream_wait_event(int device, void *h, void *ev);
pg_status pg_plugin_stream_current_handle(int device, uintptr_t *out);
pg_status pg_plugin_event_create(int device, int timing, void **out);
pg_status pg_plugin_event_destroy(void *ev);
pg_status pg_plugin_event_record(void *ev, int device, void *h);
pg_status pg_plugin_event_query(void *ev, int *done);
pg_status pg_plugin_event_synchronize(void *ev);
pg_status pg_plugin_event_elapsed_time(void *start, void *end, float *ms);
pg_status pg_plugin_stream_gather(int device);
pg_status pg_plugin_storage_imported(int device, void *storage);
pg_status pg_plugin_stream_wait_for_current(int device, uintptr_t consumer);
/* cuda_graph.c: */
pg_status pg_plugin_graph_create(void **out);
pg_status pg_plugin_graph_destroy(void *g);
pg_status pg_plugin_graph_capture_begin(void *g, int device, void *stream);
pg_status pg_plugin_graph_capture_end(void *g, int keep);
pg_status pg_plugin_graph_replay(void *g);
pg_status pg_plugin_graph_reset(void *g);
int pg_plugin_graph_ops(void *g);
/* cuda_profile.c: */
pg_status pg_plugin_device_properties(int index, pg_cuda_properties *out);
void pg_plugin_nvtx_push(const char *name);
void pg_plugin_nvtx_pop(void);
/* cuda_nccl.c (0, or non-zero with the reason in `why`): */
int pg_plugin_nccl_load(const char *path, char *why, size_t whylen);
/* cuda_cudnn.c: cuDNN loaded from `path` (0, or a message in why); its version (0 before);
 * whether it is loaded (for other users of cuDNN in the plugin) */
int pg_plugin_cudnn_load(const char *path, char *why, size_t len);
size_t pg_plugin_cudnn_version(void);
bool pg_cuda_cudnn_ready(void);
/* the libraries to try, newline-separated, when the first convolution asks (pygpu's
 * pygpu/backends/cudnn.py finds them; the plugin loads on first use) */
pg_status pg_plugin_cudnn_offer(const char *paths);
/* cuda_cusolver.c: cuSOLVER loaded from `path` (0, or a message in why); its version (0
 * before); the libraries to try, newline-separated, when the first LINALG node asks
 * (pygpu/backends/_cusolver.py finds them) */
int pg_plugin_cusolver_load(const char *path, char *why, size_t len);
int pg_plugin_cusolver_version(void);
pg_status pg_plugin_cusolver_offer(const char *paths);
/* supports_node's rules (cuda_plugin.c's table, by node kind): cuDNN runs this CONV node
 * (enabled, loaded, one padding per axis), the attention kernels this SDPA(_BWD) node
 * (head dimensions up to 128), cuSOLVER this LINALG node (its row has a cuda function,
 * cuSOLVER loaded, no empty matrix), the batch norm kernels this BATCH_NORM node (training
 * each way; the evaluation's EVAL_FWD runs as tensor ops there) */
bool pg_cuda_cudnn_runs(const pg_node *n);
bool pg_cuda_sdpa_runs(const pg_node *n);
bool pg_cuda_batch_norm_runs(const pg_node *n);
/* the clamp kernel this CLAMP node (the forward: hardtanh's gradient runs as tensor ops) */
bool pg_cuda_clamp_runs(const pg_node *n);
/* cuda_cufft.c: cuFFT loaded from `path` (0, or a message in why); its version (0 before);
 * the libraries to try when the first FFT node asks (pygpu/backends/_cufft.py finds them);
 * supports_node's rule for FFT (cuFFT loaded, the lines' sizes in cuFFT's int) */
int pg_plugin_cufft_load(const char *path, char *why, size_t len);
pg_status pg_plugin_cufft_version(int *out);
pg_status pg_plugin_cufft_offer(const char *paths);
bool pg_cuda_cufft_runs(const pg_node *n);
bool pg_cuda_linalg_runs(const pg_node *n);
int pg_plugin_nccl_version(void);
int pg_plugin_nccl_unique_id(char *out, char *why, size_t whylen);
int pg_plugin_nccl_comm_init(int nranks, const char *id, int rank, int device, void **comm,
                             char *why, size_t whylen);
int pg_plugin_nccl_comm_destroy(void *comm);
int pg_plugin_nccl_comm_abort(void *comm);
int pg_plugin_nccl_run(void *comm, int device, const pg_nccl_call *calls, int ncalls, char *why,
                       size_t whylen);

/* 9. cuda_plugin.c */
extern const pg_backend pg_cuda_backend;
pg_status pg_plugin_set_option(const char *name, int value);
pg_status pg_plugin_get_option(const char *name, int *value);
int pg_plugin_pci_bus_id(int index, char *buf, int len);

/* Element size of a dtype that reaches a backend (pg_dtype.h's inline table: the plugin
 * links no core symbol). */
static inline size_t pg_cuda_itemsize(int dtype) { return pg_dtype_size((pg_dtype)dtype); }
/* Elements of a tensor (pg_tensor_numel calls the core). */
static inline int64_t pg_cuda_numel(const pg_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}
/* Device address of a tensor's first element (pg_tensor_data calls the core). */
static inline char *pg_cuda_tensor_data(const pg_tensor *t)
{
    return (char *)t->storage->data + t->offset * (int64_t)pg_cuda_itemsize(t->dtype);
}

#endif
