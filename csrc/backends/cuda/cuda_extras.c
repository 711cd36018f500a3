/* cuda_extras.c - the plugin's second table (csrc/core/pg_cuda_extras.h) and
 * pg_plugin_get_extras, the one symbol that hands it out.
 *
 * Everything CUDA offers beyond the pg_backend table (options, device
 * properties, NVTX, streams, events, graphs, the interop stream hand-offs,
 * NCCL, the lazily loaded cuDNN and cuFFT) is reached through this table by pygpu._C (csrc/bindings/cuda_extras.c),
 * fetched once when the plugin is loaded. Before it, Python called 39 exported
 * pg_plugin_* symbols through ctypes; none of them is exported now (only
 * pg_plugin_abi_version, pg_plugin_init and this file's getter are).
 *
 * The NCCL entry points of cuda_nccl.c report a failure as non-zero with the
 * reason in a buffer; the adapters here turn that into the pg_status every
 * other entry returns (PG_ERR_COMM, pygpu's NcclError), with the message set
 * through the core's error_set, so the bindings have one way to raise. The top
 * layer (10): it calls into the layers below and nothing calls into it. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

PG_CUDA_EXPORT pg_status pg_plugin_get_extras(int version, const void **out);

#define PG_NCCL_WHY 1024

static pg_status nccl_status(int rc, pg_status st, const char *why)
{
    if (rc == 0)
        return PG_OK;
    return pg_cuda_error(st, "NCCL: %s", why[0] ? why : "the call failed (no reason given)");
}

static pg_status cudnn_load(const char *path)
{
    char why[512] = "";
    if (pg_plugin_cudnn_load(path, why, sizeof why) == 0)
        return PG_OK;
    return pg_cuda_error(PG_ERR_UNAVAILABLE, "cuDNN: %s", why);
}

static pg_status cufft_load(const char *path)
{
    char why[512] = "";
    if (pg_plugin_cufft_load(path, why, sizeof why) == 0)
        return PG_OK;
    return pg_cuda_error(PG_ERR_UNAVAILABLE, "cuFFT: %s", why);
}

static pg_status cusolver_load(const char *path)
{
    char why[512] = "";
    if (pg_plugin_cusolver_load(path, why, sizeof why) == 0)
        return PG_OK;
    return pg_cuda_error(PG_ERR_UNAVAILABLE, "cuSOLVER: %s", why);
}

static pg_status nccl_load(const char *path)
{
    char why[PG_NCCL_WHY] = "";
    int rc = pg_plugin_nccl_load(path, why, sizeof why);
    if (rc == 0)
        return PG_OK;
    /* the caller tries several paths and reports the reasons: no "NCCL:" prefix */
    return pg_cuda_error(PG_ERR_UNAVAILABLE, "%s", why[0] ? why : "NCCL could not be loaded");
}

static pg_status nccl_unique_id(char *out, size_t len)
{
    if (len < PG_CUDA_NCCL_ID_BYTES)
        return pg_cuda_error(PG_ERR_VALUE, "NCCL: a unique id needs %d bytes, got room for %zu",
                             PG_CUDA_NCCL_ID_BYTES, len);
    char why[PG_NCCL_WHY] = "";
    return nccl_status(pg_plugin_nccl_unique_id(out, why, sizeof why), PG_ERR_COMM, why);
}

static pg_status nccl_comm_init(int nranks, const char *id, size_t id_len, int rank, int device,
                                void **comm)
{
    if (id_len != PG_CUDA_NCCL_ID_BYTES)
        return pg_cuda_error(PG_ERR_VALUE, "NCCL: the unique id must be %d bytes, got %zu",
                             PG_CUDA_NCCL_ID_BYTES, id_len);
    char why[PG_NCCL_WHY] = "";
    return nccl_status(pg_plugin_nccl_comm_init(nranks, id, rank, device, comm, why, sizeof why),
                       PG_ERR_COMM, why);
}

static pg_status nccl_comm_destroy(void *comm)
{
    if (pg_plugin_nccl_comm_destroy(comm) == 0)
        return PG_OK;
    return pg_cuda_error(PG_ERR_COMM,
                         "NCCL: finalizing the communicator failed or timed out; it was aborted");
}

static pg_status nccl_comm_abort(void *comm)
{
    if (pg_plugin_nccl_comm_abort(comm) == 0)
        return PG_OK;
    return pg_cuda_error(PG_ERR_COMM, "NCCL: aborting the communicator failed");
}

static pg_status nccl_run(void *comm, int device, const pg_nccl_call *calls, int ncalls)
{
    char why[PG_NCCL_WHY] = "";
    return nccl_status(pg_plugin_nccl_run(comm, device, calls, ncalls, why, sizeof why),
                       PG_ERR_COMM, why);
}

static pg_status pci_bus_id(int index, char *buf, size_t len)
{
    if (len > 4096)
        len = 4096;
    if (pg_plugin_pci_bus_id(index, buf, (int)len) == 0)
        return PG_OK;
    return pg_cuda_error(PG_ERR_UNAVAILABLE, "cuda:%d: PCI bus id unknown (%s)", index,
                         len >= 16 ? buf : "buffer too small");
}

static const pg_cuda_extras pg_cuda_extras_table = {
    .size = sizeof(pg_cuda_extras),
    .version = PG_CUDA_EXTRAS_VERSION,
    .set_option = pg_plugin_set_option,
    .get_option = pg_plugin_get_option,
    .pci_bus_id = pci_bus_id,
    .device_properties = pg_plugin_device_properties,
    .nvtx_push = pg_plugin_nvtx_push,
    .nvtx_pop = pg_plugin_nvtx_pop,
    .stream_create = pg_plugin_stream_create,
    .stream_destroy = pg_plugin_stream_destroy,
    .stream_handle = pg_plugin_stream_handle,
    .stream_enter = pg_plugin_stream_enter,
    .stream_exit = pg_plugin_stream_exit,
    .stream_synchronize = pg_plugin_stream_synchronize,
    .stream_query = pg_plugin_stream_query,
    .stream_wait_event = pg_plugin_stream_wait_event,
    .stream_current_handle = pg_plugin_stream_current_handle,
    .event_create = pg_plugin_event_create,
    .event_destroy = pg_plugin_event_destroy,
    .event_record = pg_plugin_event_record,
    .event_query = pg_plugin_event_query,
    .event_synchronize = pg_plugin_event_synchronize,
    .event_elapsed_time = pg_plugin_event_elapsed_time,
    .graph_create = pg_plugin_graph_create,
    .graph_destroy = pg_plugin_graph_destroy,
    .graph_capture_begin = pg_plugin_graph_capture_begin,
    .graph_capture_end = pg_plugin_graph_capture_end,
    .graph_replay = pg_plugin_graph_replay,
    .graph_reset = pg_plugin_graph_reset,
    .graph_ops = pg_plugin_graph_ops,
    .stream_gather = pg_plugin_stream_gather,
    .stream_wait_for_current = pg_plugin_stream_wait_for_current,
    .storage_imported = pg_plugin_storage_imported,
    .nccl_load = nccl_load,
    .nccl_version = pg_plugin_nccl_version,
    .nccl_unique_id = nccl_unique_id,
    .nccl_comm_init = nccl_comm_init,
    .nccl_comm_destroy = nccl_comm_destroy,
    .nccl_comm_abort = nccl_comm_abort,
    .nccl_run = nccl_run,
    .cudnn_load = cudnn_load,
    .cudnn_version = pg_plugin_cudnn_version,
    .cudnn_offer = pg_plugin_cudnn_offer,
    .cufft_load = cufft_load,
    .cufft_version = pg_plugin_cufft_version,
    .cufft_offer = pg_plugin_cufft_offer,
    .cusolver_load = cusolver_load,
    .cusolver_version = pg_plugin_cusolver_version,
    .cusolver_offer = pg_plugin_cusolver_offer,
};

pg_status pg_plugin_get_extras(int version, const void **out)
{
    if (out == NULL)
        return PG_ERR_VALUE;
    *out = NULL;
    if (version != PG_CUDA_EXTRAS_VERSION)
        return pg_cuda_error(PG_ERR_UNAVAILABLE,
                             "the CUDA backend's extras table (streams, events, graphs, NCCL) is "
                             "version %d, the pygpu core asked for version %d: rebuild pygpu and "
                             "the plugin from one checkout (pip install .)",
                             PG_CUDA_EXTRAS_VERSION, version);
    *out = &pg_cuda_extras_table;
    return PG_OK;
}
