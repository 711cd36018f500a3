/* cpu_backend.c - the CPU backend table: host memory, synchronous execution.
 *
 * The CPU is device "cpu": its memory is the host's, and ops run on the
 * caller's thread (the bindings release the GIL around large ones), large
 * ones split over the cpu device's pool (cpu_parallel.c), one thread per core
 * unless pygpu.set_num_threads says otherwise. A CPU
 * tensor can still be the target of an asynchronous copy from a device, so
 * before touching data we wait for any pending write (or read, for the
 * output) recorded on its storage. */
#include <string.h>

#include "../../core/pg_backend.h"
#include "cpu_parallel.h"

pg_status pg_cpu_execute(const pg_node *node)
{
    switch (node->op) {
    case PG_OP_FILL: return pg_cpu_fill(node);
    case PG_OP_COPY: return pg_cpu_copy(node);
    case PG_OP_BINARY: return pg_cpu_binary(node);
    case PG_OP_UNARY: return pg_cpu_unary(node);
    case PG_OP_REDUCE: return pg_cpu_reduce(node);
    case PG_OP_MATMUL: return pg_cpu_matmul(node);
    case PG_OP_ARANGE: return pg_cpu_arange(node);
    case PG_OP_RANDOM: return pg_cpu_random(node);
    case PG_OP_LINEAR_FWD: return pg_cpu_linear_fwd(node);
    case PG_OP_LINEAR_BWD: return pg_cpu_linear_bwd(node);
    case PG_OP_XENT_FWD: return pg_cpu_xent_fwd(node);
    case PG_OP_XENT_BWD: return pg_cpu_xent_bwd(node);
    case PG_OP_SGD: return pg_cpu_sgd(node);
    case PG_OP_ADAM: return pg_cpu_adam(node);
    case PG_OP_AMP_UNSCALE: return pg_cpu_amp_unscale(node);
    default: return pg_error_set(PG_ERR_RUNTIME, "unknown op %d", node->op);
    }
}

static int cpu_device_count(const pg_backend *be)
{
    (void)be;
    return 1;
}

static pg_status cpu_device_name(const pg_backend *be, int index, char *buf, size_t len)
{
    (void)be;
    (void)index;
    strncpy(buf, "host CPU", len - 1);
    buf[len - 1] = 0;
    return PG_OK;
}

static pg_status cpu_launch(const pg_backend *be, int index, const pg_node *node)
{
    (void)be;
    (void)index;
    for (int i = 0; i < node->nsrc; i++)
        if (node->src[i].storage && pg_storage_has_pending(node->src[i].storage))
            PG_TRY(pg_storage_wait(node->src[i].storage));
    if (pg_storage_has_pending(node->dst.storage))
        PG_TRY(pg_storage_wait_idle(node->dst.storage));
    for (int i = 0; i < node->nextra; i++)
        if (node->extra[i].storage && pg_storage_has_pending(node->extra[i].storage))
            PG_TRY(pg_storage_wait_idle(node->extra[i].storage));
    PG_TRY(pg_cpu_run(pg_cpu_pool(), node));
    if (pg_tensor_covers_storage(&node->dst)) /* a failed d2h copy's bytes are all replaced */
        pg_storage_clear_error(node->dst.storage);
    return PG_OK;
}

const pg_backend pg_cpu_backend = {
    .name = "cpu",
    .type = PG_DEV_CPU,
    .device_count = cpu_device_count,
    .device_name = cpu_device_name,
    .launch = cpu_launch,
};
