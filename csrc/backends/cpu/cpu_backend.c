/* cpu_backend.c - the CPU backend table: host memory, synchronous execution.
 *
 * The CPU is device "cpu": its memory is the host's, and ops run on the
 * caller's thread (the bindings release the GIL around large ones), large
 * ones split over the cpu device's pool (cpu_parallel.c), one thread per core
 * unless pygpu.set_num_threads says otherwise. A CPU
 * tensor can still be the target of an asynchronous copy from a device, so
 * before touching data we wait for any pending write (or read, for the
 * output) recorded on its storage. Which kernel runs an op is decided in
 * cpu_dispatch.c, below the pool (cpu_parallel.c), not here: the table uses
 * the pool, the pool uses the dispatcher, and nothing points back up. The one
 * cpu-only step: a weight's pre-packed bf16 panels (cpu_bf16_panels.h), which
 * need an op to run when it is launched, as here.
 *
 * raw_alloc/raw_free are the host allocator under the core's caching
 * allocator (pg_allocator.h), which serves large host storages. */
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_backend.h"
#include "cpu_bf16_panels.h"
#include "cpu_busy.h"

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

static pg_status cpu_raw_alloc(const pg_backend *be, int index, size_t nbytes, void **ptr)
{
    (void)be;
    (void)index;
    if (posix_memalign(ptr, 64, nbytes) != 0) {
        *ptr = NULL;
        return pg_error_set(PG_ERR_NOMEM, "out of host memory: cannot allocate %zu bytes", nbytes);
    }
    pg_host_advise_hugepages(*ptr, nbytes);
    return PG_OK;
}

static void cpu_raw_free(const pg_backend *be, int index, void *ptr)
{
    (void)be;
    (void)index;
    free(ptr);
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
    for (int i = 0, len = pg_node_list_len(node); i < len; i++) { /* a MULTI node's entries */
        pg_storage *st = pg_node_list_at(node, i)->storage;
        if (st && pg_storage_has_pending(st))
            PG_TRY(pg_node_list_writes(node, i) ? pg_storage_wait_idle(st) : pg_storage_wait(st));
    }
    bool done; /* an optimizer step or bf16 layer that pre-packed weight panels serve */
    PG_TRY(pg_cpu_panels_launch(pg_cpu_pool(), node, &done));
    if (!done)
        PG_TRY(pg_cpu_run_timed(pg_cpu_pool(), node)); /* PYGPU_NODE_BUSY: timed */
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
    .raw_alloc = cpu_raw_alloc,
    .raw_free = cpu_raw_free,
};
