/* pg_backend.h - THE BACKEND INTERFACE: one table of functions per device type.
 *
 * cpu (csrc/backends/cpu), sim (csrc/backends/sim) and cuda (csrc/backends/cuda,
 * built as a separate plugin) are three instances of this table. Op code never
 * asks "which device am I on": it validates its input, builds a pg_node and
 * calls backend->launch. Adding a device type means writing one of these
 * tables and registering it in pg_backend.c; no op changes.
 *
 * Memory: raw_alloc/raw_free are the backend's own allocator (malloc,
 * cudaMalloc); the generic caching allocator (pg_allocator.h) sits above them
 * for device backends. Every function receives the table itself, so a backend
 * keeps its state behind `ctx`. Optional slots may be NULL; the generic layer
 * then does the obvious thing (see pg_backend.c). */
#ifndef PG_BACKEND_H
#define PG_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pg_node.h"
#include "pg_profile.h"
#include "pg_status.h"
#include "pg_storage.h"

/* Bump whenever pg_backend, pg_core_api, pg_storage, pg_tensor or pg_node
 * change layout: a plugin built for another version is refused by name. */
/* 2: backend-neutral pending-work events (wait_event), pg_node's extra outputs and
 * optional (NULL-storage) sources for the fused training ops */
/* 3: pg_storage's holds/detached (stream-ordered reuse of device memory); pg_core_api's
 * async_error_record, storage_clear_error, tensor_covers_storage */
/* 4: the optional supports_op slot (which ops a backend runs on which dtypes); the
 * defects and amp branches both took 3 in parallel, so the merged layout is 4 */
/* 5: pg_storage's references and holds in one word (refs), read at one instant */
/* 6: pg_node's fifth source (PG_NODE_MAX_SRC 5: a pruned linear layer's weight mask) */
/* 7: pg_core_api's profile_current and profile_device (pygpu.profiler, issue 38) */
/* 8: pg_node.p's members named per kind (issue 34), and the adaptive optimizers one
 * node kind each (RMSPROP, ADAGRAD, ADADELTA after ADAM): pg_op's values moved;
 * PG_NODE_MAX_SRC 7 (the attention backward's sources) */
/* 9: the sub-op rows (pg_subops.def: one numbering of every kind's sub-ops), the LINALG
 * node kind and pg_node.p.linalg, the optional supports_node slot (issue 44) */
/* 10: an asynchronous failure keeps its root status (pg_storage.error_status; pg_core_api's
 * storage_set_error and async_error_record take it): an index out of range found on the
 * device raises IndexError at the next wait */
/* 11: pg_node.list (a MULTI node's operand list, pg_node.h) */
#define PG_BACKEND_ABI_VERSION 11

typedef enum pg_copy_kind { PG_COPY_H2D, PG_COPY_D2H, PG_COPY_D2D } pg_copy_kind;

/* A byte copy between a host storage and a device storage, or between two
 * storages of the same backend. Offsets and sizes are in bytes; both ranges
 * are contiguous and checked. */
typedef struct pg_copy {
    int kind; /* pg_copy_kind */
    pg_storage *src;
    size_t src_offset;
    pg_storage *dst;
    size_t dst_offset;
    size_t nbytes;
    bool async; /* non_blocking: may return before the bytes have moved */
} pg_copy;

typedef struct pg_backend pg_backend;
struct pg_backend {
    const char *name; /* "cpu", "sim", "cuda" */
    int type;         /* pg_device_type */
    void *ctx;        /* the backend's own state */

    int (*device_count)(const pg_backend *be);
    pg_status (*device_name)(const pg_backend *be, int index, char *buf, size_t len);
    /* optional: bytes the device has in all; 0 if unknown */
    size_t (*total_memory)(const pg_backend *be, int index);

    pg_status (*raw_alloc)(const pg_backend *be, int index, size_t nbytes, void **ptr);
    void (*raw_free)(const pg_backend *be, int index, void *ptr);
    /* optional: page-locked host memory for async copies */
    pg_status (*host_alloc_pinned)(const pg_backend *be, size_t nbytes, void **ptr);
    void (*host_free_pinned)(const pg_backend *be, void *ptr);

    /* Run or queue one node; every tensor in it lives on device `index`. */
    pg_status (*launch)(const pg_backend *be, int index, const pg_node *node);
    /* Run or queue a copy that involves this backend's device (h2d, d2h, d2d). */
    pg_status (*copy)(const pg_backend *be, int index, const pg_copy *c);
    /* Wait until the work an event of this backend names is done (the event
     * was recorded by this backend on one of its queues). A failure is the
     * queue's own (a device fault); data errors live in the storage. */
    pg_status (*wait_event)(const pg_backend *be, pg_event ev);
    /* Wait for everything queued on device `index`; report (and clear) the
     * first asynchronous failure since the last synchronize. */
    pg_status (*synchronize)(const pg_backend *be, int index);
    /* optional: one-line reason why the backend has no devices */
    const char *(*unavailable_reason)(const pg_backend *be);
    /* optional: bytes free and in all on device `index`, as the device sees them
     * (cudaMemGetInfo counts other processes too); NULL: total minus reserved */
    pg_status (*mem_get_info)(const pg_backend *be, int index, size_t *free_bytes,
                              size_t *total_bytes);
    /* optional: whether the backend runs op (PG_OP_*) on tensors of `dtype`
     * (pg_dtype; for a cast, either side); NULL: every op on every dtype. The
     * generic layer asks before it launches (pg_backend_check_op), so a refusal
     * is an exception naming the op, the dtype and the device. */
    bool (*supports_op)(const pg_backend *be, int op, int dtype);
    /* optional: whether the backend runs `node` on device `index` as it stands, its
     * parameters included (the kind, its sub-op, its operands' dtypes and shapes, its
     * pg_node.p): the rules of a kernel that covers only part of what the core accepts
     * (cuDNN's padding, a kernel's largest head dimension) live here, in the backend.
     * NULL: every node whose kind and dtype supports_op takes. Asked by pg_launch before
     * it hands the node over, and by pg_backend_has_node for a node described before any
     * output exists (its tensors carry dtype and shape; a storage may be NULL), which is
     * how the composite ops choose the node or their composition (_C._has_node). */
    bool (*supports_node)(const pg_backend *be, int index, const pg_node *node);
};

/* The registry. pg_backend_get returns NULL if the type has no backend
 * loaded; pg_backend_for checks the device index too and sets a message. */
const pg_backend *pg_backend_get(int type);
pg_status pg_backend_for(pg_device dev, const pg_backend **out);
/* A fork()ed child (pg_fork.h): mark a device type whose runtime cannot follow (cuda,
 * once loaded); pg_fork_check then gives PyTorch's "Cannot re-initialize ... in forked
 * subprocess" for it (checked by pg_backend_for and pg_launch), PG_OK otherwise. */
void pg_backend_mark_forked(int type);
pg_status pg_fork_check(int type);
void pg_backend_register(int type, const pg_backend *be);
/* PG_OK if the backend of `dev` runs op (PG_OP_*) on `dtype`; else a PG_ERR_DTYPE
 * naming `what` (the user-facing op name), the dtype and the device. */
pg_status pg_backend_check_op(pg_device dev, int op, int dtype, const char *what);
/* Whether the backend of `dev` runs op on dtype (a fused op's caller picks its path). */
bool pg_backend_has_op(pg_device dev, int op, int dtype);
/* Whether the backend of `dev` runs `node` (its kind on its first operand's dtype, then
 * supports_node): the one question a composite op asks before it chooses the node. */
bool pg_backend_has_node(pg_device dev, const pg_node *node);
/* PG_OK if the backend of `dev` runs `node` as it stands (supports_node), else a
 * PG_ERR_RUNTIME naming the node's op and the backend. */
pg_status pg_backend_check_node(pg_device dev, const pg_node *node);

/* Services the core lends to a backend built as a separate shared object
 * (the CUDA plugin cannot link against symbols of the Python extension). */
typedef struct pg_core_api {
    int abi_version;
    pg_status (*error_set)(pg_status st, const char *fmt, ...);
    void (*storage_retain)(pg_storage *s);
    void (*storage_release)(pg_storage *s);
    void (*storage_set_error)(pg_storage *s, pg_status st, const char *msg);
    /* add the measured duration of a transfer that finished asynchronously */
    void (*stats_transfer_time)(pg_device src, pg_device dst, uint64_t ns);
    /* count one device operation as finished on `dev`: kernel ns */
    void (*stats_op_done)(pg_device dev, uint64_t ns);
    /* the storage event record (pg_storage.h); a plugin never touches it directly */
    void (*storage_mark)(pg_storage *s, pg_event ev, int role, bool write);
    pg_status (*storage_wait_others)(pg_storage *s, bool idle, const pg_backend *be, void *queue);
    /* a queued op failed on `dev`: its message, delivered once by the core to the first
     * wait that observes it (pg_async_error.h), e.g. a device error flag read back */
    void (*async_error_record)(pg_device dev, pg_status st, const char *msg);
    /* a good write replaced every byte of `s` (see pg_storage_clear_error) */
    void (*storage_clear_error)(pg_storage *s);
    bool (*tensor_covers_storage)(const pg_tensor *t);
    /* pygpu.profiler (pg_profile.h): the op being launched on this thread (0: not
     * recording), and its device time and kernels once they have finished */
    uint64_t (*profile_current)(void);
    void (*profile_device)(uint64_t id, int64_t start_ns, int64_t dur_ns,
                           const pg_profile_kernel *k, int n, int kernels_seen);
} pg_core_api;

/* Around a backend call that may block (raw_alloc, host_alloc_pinned,
 * host_free_pinned: cudaMalloc, cudaHostAlloc, cudaFreeHost), the core gives
 * up the GIL if the calling thread holds it; begin's token goes to end. The
 * bindings install the hooks at module init (pg_set_blocking_hooks); until
 * then they do nothing. Never call begin with a lock held that a thread
 * holding the GIL may wait for. */
void *pg_blocking_begin(void);
void pg_blocking_end(void *token);
void pg_set_blocking_hooks(void *(*begin)(void), void (*end)(void *));

const pg_core_api *pg_core_api_get(void);

/* Entry point a plugin exports: fills *out with its table. */
typedef pg_status (*pg_plugin_init_fn)(const pg_core_api *core, const pg_backend **out);
#define PG_PLUGIN_INIT_SYMBOL "pg_plugin_init"
/* A plugin also exports `const int pg_plugin_abi_version` (its
 * PG_BACKEND_ABI_VERSION), read before anything is called. */
#define PG_PLUGIN_ABI_SYMBOL "pg_plugin_abi_version"

/* Load a plugin shared object and register the backend it returns. On
 * failure writes a one-line reason to `why`. Serialised: a second caller
 * waits for the first load to finish. */
pg_status pg_backend_load_plugin(int type, const char *path, char *why, size_t whylen);

/* The plugin's second table (cuda: pg_cuda_extras.h), fetched and checked once
 * when it was loaded; PG_ERR_UNAVAILABLE saying why when the backend is not
 * loaded or its table is missing or of another version. */
pg_status pg_plugin_extras(int type, const void **out);
/* Ask the loaded plugin again for `version` (tests: a mismatch is refused by name). */
pg_status pg_plugin_extras_probe(int type, int version, const void **out);

#endif
