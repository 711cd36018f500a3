/* pg_cuda_extras.h - THE SECOND PLUGIN TABLE: what the CUDA plugin offers beyond
 * the device-neutral pg_backend table (streams, events, graphs, device
 * properties, NVTX, options, interop stream hand-offs, NCCL).
 *
 * One way into the plugin: pygpu._C dlopens it, checks pg_plugin_abi_version,
 * calls pg_plugin_init for the pg_backend table, then asks the one exported
 * symbol pg_plugin_get_extras (PG_PLUGIN_EXTRAS_SYMBOL) for this table, once,
 * with the version the core was built for (as ggml's get_proc_address hands out
 * a backend's optional functions). The plugin refuses another version by name;
 * the core checks the table's own version and size too. Python reaches these
 * functions only as pygpu._C methods (csrc/bindings/cuda_extras.c), whose
 * statuses become exceptions in csrc/bindings/errors.c like every other status.
 *
 * Every function returns a pg_status with its message set through the core's
 * error_set, except the few marked otherwise. Handles (streams, events, graphs,
 * NCCL communicators) are opaque pointers owned by the plugin.
 *
 * Bump PG_CUDA_EXTRAS_VERSION whenever a member is added, removed, reordered or
 * changes signature, or pg_cuda_properties changes layout. */
#ifndef PG_CUDA_EXTRAS_H
#define PG_CUDA_EXTRAS_H

#include <stddef.h>
#include <stdint.h>

#include "pg_status.h"

#define PG_CUDA_EXTRAS_VERSION 5 /* 2: cudnn_load, cudnn_version; 3: cudnn_offer; 4: nccl_run;
                                  * 5: cufft_load, cufft_version, cufft_offer, cusolver_load,
                                  *    cusolver_version, cusolver_offer */
#define PG_PLUGIN_EXTRAS_SYMBOL "pg_plugin_get_extras"
#define PG_CUDA_NCCL_ID_BYTES 128 /* sizeof(ncclUniqueId) */

/* cudaGetDeviceProperties, the fields pygpu.cuda.get_device_properties reports */
typedef struct pg_cuda_properties {
    char name[256];
    int major, minor;
    unsigned long long total_memory;
    int multi_processor_count;
    int max_threads_per_multi_processor;
    int warp_size;
    int l2_cache_size;
    unsigned long long shared_memory_per_block_optin;
    int pci_bus_id, pci_device_id, pci_domain_id;
    char uuid[16];
} pg_cuda_properties;

/* One NCCL call of nccl_run: its kind (the NCCL function), buffers, element count and
 * ncclDataType_t. arg: the ncclRedOp_t (all_reduce, reduce, reduce_scatter) or the root
 * (broadcast); peer: the root of a reduce, the peer of a send or recv. count is the
 * element count NCCL takes: per rank for all_gather (sendcount) and reduce_scatter
 * (recvcount). */
typedef enum pg_nccl_kind {
    PG_NCCL_ALL_REDUCE = 0,
    PG_NCCL_BROADCAST = 1,
    PG_NCCL_REDUCE = 2,
    PG_NCCL_ALL_GATHER = 3,
    PG_NCCL_REDUCE_SCATTER = 4,
    PG_NCCL_SEND = 5,
    PG_NCCL_RECV = 6,
    PG_NCCL_KINDS
} pg_nccl_kind;

typedef struct pg_nccl_call {
    int kind; /* pg_nccl_kind */
    const void *send;
    void *recv;
    size_t count;
    int dtype;
    int arg;
    int peer;
} pg_nccl_call;

typedef struct pg_cuda_extras {
    size_t size; /* sizeof(pg_cuda_extras) in the plugin's build */
    int version; /* PG_CUDA_EXTRAS_VERSION of the plugin's build */

    /* options: allow_tf32, sync_each_op, nvtx, kernel_timing, current_device,
     * nccl_timeout_s (cuda_plugin.c lists them) */
    pg_status (*set_option)(const char *name, int value);
    pg_status (*get_option)(const char *name, int *value);
    /* "0000:3b:00.0" into buf (PG_ERR_UNAVAILABLE: unknown, and why); a device
     * query that creates no context */
    pg_status (*pci_bus_id)(int index, char *buf, size_t len);
    pg_status (*device_properties)(int index, pg_cuda_properties *out);
    void (*nvtx_push)(const char *name);
    void (*nvtx_pop)(void);

    /* pygpu.cuda.Stream; a NULL stream handle names the device's own stream */
    pg_status (*stream_create)(int device, int priority, void **out);
    pg_status (*stream_destroy)(void *stream);
    pg_status (*stream_handle)(int device, void *stream, uintptr_t *out);
    pg_status (*stream_enter)(int device, void *stream, void **prev);
    pg_status (*stream_exit)(int device, void *stream, void *prev);
    pg_status (*stream_synchronize)(int device, void *stream);
    pg_status (*stream_query)(int device, void *stream, int *done);
    pg_status (*stream_wait_event)(int device, void *stream, void *event);
    /* the cudaStream_t this thread's work on `device` goes to now */
    pg_status (*stream_current_handle)(int device, uintptr_t *out);

    /* pygpu.cuda.Event */
    pg_status (*event_create)(int device, int timing, void **out);
    pg_status (*event_destroy)(void *event);
    pg_status (*event_record)(void *event, int device, void *stream);
    pg_status (*event_query)(void *event, int *done);
    pg_status (*event_synchronize)(void *event);
    pg_status (*event_elapsed_time)(void *start, void *end, float *ms);

    /* pygpu.cuda.CUDAGraph */
    pg_status (*graph_create)(void **out);
    pg_status (*graph_destroy)(void *graph);
    pg_status (*graph_capture_begin)(void *graph, int device, void *stream);
    pg_status (*graph_capture_end)(void *graph, int keep);
    pg_status (*graph_replay)(void *graph);
    pg_status (*graph_reset)(void *graph);
    int (*graph_ops)(void *graph); /* a count, no status */

    /* interop: __cuda_array_interface__, DLPack export and import */
    pg_status (*stream_gather)(int device);
    pg_status (*stream_wait_for_current)(int device, uintptr_t consumer);
    pg_status (*storage_imported)(int device, void *storage);

    /* NCCL (pygpu.distributed): failures are PG_ERR_COMM (NcclError) unless said */
    pg_status (*nccl_load)(const char *path); /* PG_ERR_UNAVAILABLE: why not */
    int (*nccl_version)(void);                /* 0 before nccl_load succeeded */
    pg_status (*nccl_unique_id)(char *out, size_t len);
    pg_status (*nccl_comm_init)(int nranks, const char *id, size_t id_len, int rank, int device,
                                void **comm);
    pg_status (*nccl_comm_destroy)(void *comm);
    pg_status (*nccl_comm_abort)(void *comm);
    /* ncalls NCCL calls on the device's comm stream (one ncclGroupStart/End group when
     * there are several), after the work queued on the buffers, waited for */
    pg_status (*nccl_run)(void *comm, int device, const pg_nccl_call *calls, int ncalls);

    /* cuDNN (the convolutions, csrc/backends/cuda/cuda_cudnn.c), loaded on first use */
    pg_status (*cudnn_load)(const char *path); /* PG_ERR_UNAVAILABLE: why not */
    size_t (*cudnn_version)(void);             /* 0 before cudnn_load succeeded */
    /* the libraries to try (newline-separated), loaded by the plugin when the first
     * convolution asks whether cuDNN runs it (supports_node) */
    pg_status (*cudnn_offer)(const char *paths);

    /* cuFFT (the FFT node, csrc/backends/cuda/cuda_cufft.c), loaded on first use like cuDNN */
    pg_status (*cufft_load)(const char *path); /* PG_ERR_UNAVAILABLE: why not */
    pg_status (*cufft_version)(int *out);      /* 0 before cufft_load succeeded */
    /* the libraries to try (newline-separated) when the first FFT node asks */
    pg_status (*cufft_offer)(const char *paths);
    /* cuSOLVER (the factorizations, csrc/backends/cuda/cuda_cusolver.c), loaded on first use
     * the same way: the libraries to try, loaded when the first LINALG node asks */
    pg_status (*cusolver_load)(const char *path); /* PG_ERR_UNAVAILABLE: why not */
    int (*cusolver_version)(void);                /* 0 before cusolver_load succeeded */
    pg_status (*cusolver_offer)(const char *paths);
} pg_cuda_extras;

/* What the plugin exports: *out = its table if it was built for `version`, else
 * PG_ERR_UNAVAILABLE with a message naming both versions. */
typedef pg_status (*pg_plugin_get_extras_fn)(int version, const void **out);

#endif
