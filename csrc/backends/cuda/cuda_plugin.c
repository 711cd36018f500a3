/* cuda_plugin.c - the CUDA backend table, the plugin's first two exported
 * symbols, and the options and device queries of the extras table. pygpu._C
 * sees, after dlopen(RTLD_LOCAL), pg_plugin_abi_version and pg_plugin_init here
 * and pg_plugin_get_extras (cuda_extras.c); nothing else is exported:
 *
 *   pg_plugin_abi_version              the PG_BACKEND_ABI_VERSION it was built for
 *   pg_plugin_init(core, &table)       fill the table; makes no CUDA call
 * and, through the extras table (pg_cuda_extras.h):
 *   pg_plugin_set_option(name, value)  "allow_tf32" (cuBLAS may use TF32 for
 *                                      float32 matmul; default 0),
 *                                      "sync_each_op" (wait after every op so
 *                                      a device fault names its op; default 0),
 *                                      "nvtx" (an NVTX range around every op),
 *                                      "kernel_timing" (GPU time per op in the stats),
 *                                      "current_device" (pygpu.cuda.set_device:
 *                                      where pinned host memory is allocated,
 *                                      so no context appears on GPU 0; default 0),
 *                                      "nccl_timeout_s" (how long an NCCL wait
 *                                      may take before the communicator is
 *                                      aborted; 0 = the default, 600 s),
 *                                      "int8_requant_in_gemm" (static int8 layers
 *                                      requantize in cuBLASLt's epilogue, within
 *                                      one level of the CPU's; default 1)
 *   pg_plugin_get_option(name, &value)
 *   pg_plugin_pci_bus_id(index, buf, len)  the PCI bus id of cuda:index
 *                                      ("0000:3b:00.0"), creating no context:
 *                                      what NVML is asked by (pygpu/cuda/_nvml.py)
 *
 * Which CUDA: the default build statically links the CUDA runtime of the
 * toolkit it finds (CUDA 13 here) and loads cuBLAS from the matching pip
 * wheel (nvidia-cublas 13). Static cudart means no libcudart.so to find at
 * run time and no clash with another copy loaded by PyTorch or CuPy; the cost
 * is that the driver must support that runtime: CUDA 13 needs an R580 or
 * newer driver, and on an older one (R535/R550 are common on H100 nodes)
 * unavailable_reason() says "CUDA driver too old: it supports CUDA 12.x,
 * pygpu was built with 13.0". Such nodes build with CUDA 12 instead: point
 * CUDA_HOME at a CUDA 12 toolkit and the build asks for nvidia-cublas-cu12.
 * CI checks that configuration against the newest CUDA 12.x wheels (.ci/run,
 * "CUDA 12 build"; docs/cuda.md): the host code compiled and linked, the
 * kernels compiled by NVRTC 12 and ptxas 12. Nothing in the plugin needs
 * CUDA 13.
 *
 * Device queries go straight to the runtime on each call (it honours
 * CUDA_VISIBLE_DEVICES and caches internally): nothing is cached before the
 * first use. With no driver, cudaGetDeviceCount fails without writing its
 * argument, so counts start at 0. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

PG_CUDA_EXPORT pg_status pg_plugin_init(const pg_core_api *core, const pg_backend **out);
/* read by the core before pg_plugin_init: a mismatch is refused by name */
PG_CUDA_EXPORT extern const int pg_plugin_abi_version;
const int pg_plugin_abi_version = PG_BACKEND_ABI_VERSION;

static int pg_cuda_device_count(const pg_backend *be)
{
    (void)be;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* the reason is unavailable_reason's to tell */
        return 0;
    }
    return n < PG_MAX_DEVICES_PER_TYPE ? n : PG_MAX_DEVICES_PER_TYPE;
}

static const char *pg_cuda_unavailable_reason(const pg_backend *be)
{
    (void)be;
    static _Thread_local char reason[256];
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err == cudaSuccess)
        return n > 0 ? NULL : "no CUDA GPU: the driver reports no device";
    (void)cudaGetLastError();
    if (err == cudaErrorNoDevice)
        return "no CUDA GPU: the driver reports no device (check CUDA_VISIBLE_DEVICES)";
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess)
        (void)cudaGetLastError();
    if (err == cudaErrorInsufficientDriver && driver == 0)
        snprintf(reason, sizeof reason, "no CUDA driver found (cudaGetDeviceCount: %s: %s)",
                 cudaGetErrorName(err), cudaGetErrorString(err));
    else if (err == cudaErrorInsufficientDriver)
        snprintf(reason, sizeof reason,
                 "CUDA driver too old: it supports CUDA %d.%d, pygpu was built with %d.%d "
                 "(cudaGetDeviceCount: %s)",
                 driver / 1000, driver % 1000 / 10, CUDART_VERSION / 1000,
                 CUDART_VERSION % 1000 / 10, cudaGetErrorName(err));
    else
        snprintf(reason, sizeof reason, "CUDA unavailable (cudaGetDeviceCount: %s: %s)",
                 cudaGetErrorName(err), cudaGetErrorString(err));
    return reason;
}

/* Name and memory of device `index`, queried once (cudaGetDeviceProperties
 * is slow) and kept. */
static pg_status pg_cuda_props(int index, const char *op, pg_cuda_device **out)
{
    if (index < 0 || index >= PG_MAX_DEVICES_PER_TYPE)
        return pg_cuda_error(PG_ERR_INDEX, "cuda:%d: %s: no such device", index, op);
    pg_cuda_device *d = &pg_cuda.dev[index];
    pg_status st = PG_OK;
    pthread_mutex_lock(&d->lock);
    if (!d->props_known) {
        struct cudaDeviceProp prop;
        st = PG_CUDA_RT(cudaGetDeviceProperties(&prop, index), index, op);
        if (st == PG_OK) {
            snprintf(d->name, sizeof d->name, "%s", prop.name);
            d->total_memory = prop.totalGlobalMem;
            d->props_known = true;
        }
    }
    pthread_mutex_unlock(&d->lock);
    *out = d;
    return st;
}

static pg_status pg_cuda_device_name(const pg_backend *be, int index, char *buf, size_t len)
{
    (void)be;
    pg_cuda_device *d;
    PG_TRY(pg_cuda_props(index, "device_name", &d));
    snprintf(buf, len, "%s", d->name);
    return PG_OK;
}

static size_t pg_cuda_total_memory(const pg_backend *be, int index)
{
    (void)be;
    pg_cuda_device *d;
    if (pg_cuda_props(index, "total_memory", &d) != PG_OK)
        return 0; /* "unknown", as the table allows */
    return d->total_memory;
}

/* 0, or -1 with a message in buf. A device query, not a context: asking it
 * for every GPU does not put a context (and its memory) on each one, which
 * is what cudaMemGetInfo did when pygpu.cuda.mem_get_info walked the GPUs. */
int pg_plugin_pci_bus_id(int index, char *buf, int len)
{
    if (buf == NULL || len < 16)
        return -1;
    cudaError_t err = cudaDeviceGetPCIBusId(buf, len, index);
    if (err == cudaSuccess)
        return 0;
    (void)cudaGetLastError();
    snprintf(buf, (size_t)len, "cudaDeviceGetPCIBusId(%d): %s", index, cudaGetErrorName(err));
    return -1;
}

/* The runtime's figure; creates a context on the device. pygpu.cuda asks
 * NVML first (pygpu/cuda/_nvml.py), which does not. */
static pg_status pg_cuda_mem_get_info(const pg_backend *be, int index, size_t *free_bytes,
                                      size_t *total_bytes)
{
    (void)be;
    pg_cuda_device *d;
    PG_TRY(pg_cuda_props(index, "mem_get_info", &d));
    PG_TRY(PG_CUDA_RT(cudaSetDevice(index), index, "mem_get_info"));
    return PG_CUDA_RT(cudaMemGetInfo(free_bytes, total_bytes), index, "mem_get_info");
}

/* What the kernels cover, asked by the core before it builds a node (pg_backend.h):
 * the PG_NODE rows' cuda column (pg_ops.def; NO_CUDA kinds the core composes or
 * refuses, CUDA_HALF ones run float16/bfloat16 too). float16/bfloat16 have kernels for what pg_node.h's half contract needs: fill, cast
 * (copy), the elementwise ops, the reductions (a sum written as float32), arange,
 * matmul and the fused linear layers (cublasGemmEx on the tensor cores, fp32
 * accumulation) and the fused unscale. Not random numbers, the cross-entropy or the
 * optimizer updates (autocast keeps losses in float32, and the optimizers update a
 * float32 master copy): the core refuses those on cuda, naming the op and the dtype. */
static bool pg_cuda_supports_op(const pg_backend *be, int op, int dtype)
{
    (void)be;
    return pg_cuda_runs_op(op, dtype); /* the PG_NODE rows' cuda column (cuda_launch.c) */
}

/* The node kinds whose kernels cover only part of what the core accepts, and the rule that
 * says which part (beside the kernels they guard); the other kinds run every node their
 * supports_op takes. */
static bool (*const pg_cuda_node_rules[PG_NUM_OPS])(const pg_node *) = {
    [PG_OP_CONV] = pg_cuda_cudnn_runs,
    [PG_OP_BATCH_NORM] = pg_cuda_batch_norm_runs,
    [PG_OP_CLAMP] = pg_cuda_clamp_runs,
    [PG_OP_SDPA] = pg_cuda_sdpa_runs,
    [PG_OP_SDPA_BWD] = pg_cuda_sdpa_runs,
    [PG_OP_FFT] = pg_cuda_cufft_runs,
    [PG_OP_MULTI] = pg_cuda_multi_runs,
    [PG_OP_LINALG] = pg_cuda_linalg_runs,
};

/* supports_node (pg_backend.h): the node's own rule, where its kind has one */
static bool pg_cuda_supports_node(const pg_backend *be, int index, const pg_node *node)
{
    (void)be;
    (void)index;
    bool (*rule)(const pg_node *) =
        node->op >= 0 && node->op < PG_NUM_OPS ? pg_cuda_node_rules[node->op] : NULL;
    return rule == NULL || rule(node);
}

const pg_backend pg_cuda_backend = {
    .name = "cuda",
    .type = PG_DEV_CUDA,
    .ctx = &pg_cuda,
    .device_count = pg_cuda_device_count,
    .device_name = pg_cuda_device_name,
    .total_memory = pg_cuda_total_memory,
    .raw_alloc = pg_cuda_raw_alloc,
    .raw_free = pg_cuda_raw_free,
    .host_alloc_pinned = pg_cuda_host_alloc_pinned,
    .host_free_pinned = pg_cuda_host_free_pinned,
    .launch = pg_cuda_launch,
    .copy = pg_cuda_copy,
    .wait_event = pg_cuda_wait_event,
    .synchronize = pg_cuda_synchronize,
    .unavailable_reason = pg_cuda_unavailable_reason,
    .mem_get_info = pg_cuda_mem_get_info,
    .supports_op = pg_cuda_supports_op,
    .supports_node = pg_cuda_supports_node,
};

pg_status pg_plugin_init(const pg_core_api *core, const pg_backend **out)
{
    if (core == NULL || out == NULL)
        return PG_ERR_VALUE;
    if (core->abi_version != PG_BACKEND_ABI_VERSION)
        /* the core checks pg_plugin_abi_version first and names both; a
         * caller that did not gets the message through its error_set, the
         * one member every layout puts second */
        return core->error_set(PG_ERR_UNAVAILABLE,
                               "the CUDA backend was built for backend ABI %d, the core has ABI "
                               "%d: rebuild both from one checkout",
                               PG_BACKEND_ABI_VERSION, core->abi_version);
    pg_cuda_state_init();
    pg_cuda.core = core;
    pg_cuda.backend = &pg_cuda_backend;
    *out = &pg_cuda_backend;
    return PG_OK;
}

/* The options pygpu._C._cuda_set_option/_cuda_get_option reach, by name: each an atomic int
 * of the plugin's state (cuda_internal.h says what each does) */
static const struct {
    const char *name;
    atomic_int *value;
} pg_cuda_options[] = {
    {"current_device", &pg_cuda.current_device},
    {"nccl_timeout_s", &pg_cuda.nccl_timeout_s},
    {"allow_tf32", &pg_cuda.allow_tf32},
    {"sync_each_op", &pg_cuda.sync_each_op},
    {"nvtx", &pg_cuda.nvtx},
    {"kernel_timing", &pg_cuda.kernel_timing},
    {"cudnn_benchmark", &pg_cuda.cudnn_benchmark},
    {"cudnn_deterministic", &pg_cuda.cudnn_deterministic},
    {"cudnn_enabled", &pg_cuda.cudnn_enabled},
    {"int8_requant_in_gemm", &pg_cuda.int8_requant_in_gemm},
    {"flash_sdp", &pg_cuda.flash_sdp},
};
#define PG_CUDA_NUM_OPTIONS (int)(sizeof pg_cuda_options / sizeof pg_cuda_options[0])

static atomic_int *pg_cuda_option(const char *name)
{
    for (int i = 0; name != NULL && i < PG_CUDA_NUM_OPTIONS; i++)
        if (strcmp(name, pg_cuda_options[i].name) == 0)
            return pg_cuda_options[i].value;
    return NULL;
}

/* the unknown option's error, naming the known ones from the table */
static pg_status pg_cuda_unknown_option(const char *name)
{
    char known[512] = "";
    for (int i = 0; i < PG_CUDA_NUM_OPTIONS; i++) {
        size_t k = strlen(known);
        snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "", pg_cuda_options[i].name);
    }
    return pg_cuda_error(PG_ERR_VALUE, "cuda: unknown option '%s' (known: %s)",
                         name != NULL ? name : "(null)", known);
}

pg_status pg_plugin_set_option(const char *name, int value)
{
    atomic_int *opt = pg_cuda_option(name);
    if (opt == NULL)
        return pg_cuda_unknown_option(name);
    if (opt == &pg_cuda.nvtx && value != 0 && !pg_cuda_have_nvtx())
        return pg_cuda_error(PG_ERR_UNAVAILABLE,
                             "cuda: NVTX ranges are unavailable: the plugin was built with a CUDA "
                             "toolkit without the nvtx3 headers (include/nvtx3/nvToolsExt.h)");
    if (opt == &pg_cuda.current_device) {
        if (value < 0 || value >= PG_MAX_DEVICES_PER_TYPE)
            return pg_cuda_error(PG_ERR_INDEX, "cuda: current_device %d is out of range", value);
        atomic_store(opt, value);
        return PG_OK;
    }
    if (opt == &pg_cuda.nccl_timeout_s) {
        if (value < 0)
            return pg_cuda_error(PG_ERR_VALUE, "cuda: nccl_timeout_s must be >= 0, got %d", value);
        atomic_store(opt, value);
        return PG_OK;
    }
    atomic_store(opt, value != 0);
    return PG_OK;
}

pg_status pg_plugin_get_option(const char *name, int *value)
{
    atomic_int *opt = pg_cuda_option(name);
    if (opt == NULL)
        return pg_cuda_unknown_option(name);
    *value = atomic_load(opt);
    return PG_OK;
}
