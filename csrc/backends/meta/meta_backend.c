/* meta_backend.c - the 'meta' device: tensors with a shape, a dtype and strides but no data.
 *
 * PyTorch programs build a large model on 'meta' (`with torch.device("meta"): model = Net()`)
 * to learn its shapes, or to load its weights afterwards with load_state_dict(assign=True),
 * without allocating or initialising anything. Here that is one more backend table: an
 * allocation takes no memory (each gets a distinct address that is never dereferenced),
 * every node "runs" by doing nothing (the core has already checked it and computed its
 * output's shape), copies into a meta tensor do nothing, and a copy out of one is refused:
 * there is nothing to copy. */
#include "meta_backend.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "../../core/pg_status.h"

static int meta_device_count(const pg_backend *be)
{
    (void)be;
    return 1;
}

static pg_status meta_device_name(const pg_backend *be, int index, char *buf, size_t len)
{
    (void)be;
    (void)index;
    snprintf(buf, len, "meta (shapes only, no storage)");
    return PG_OK;
}

/* Distinct, aligned, never-dereferenced addresses from the top of the address space the
 * allocator's bookkeeping can key on; no memory is reserved. */
static _Atomic uintptr_t g_next = (uintptr_t)1 << 62;

static pg_status meta_raw_alloc(const pg_backend *be, int index, size_t nbytes, void **ptr)
{
    (void)be;
    (void)index;
    uintptr_t step = ((uintptr_t)nbytes + 255) & ~(uintptr_t)255;
    *ptr = (void *)atomic_fetch_add(&g_next, step ? step : 256);
    return PG_OK;
}

static void meta_raw_free(const pg_backend *be, int index, void *ptr)
{
    (void)be;
    (void)index;
    (void)ptr;
}

static pg_status meta_launch(const pg_backend *be, int index, const pg_node *node)
{
    (void)be;
    (void)index;
    (void)node;
    return PG_OK;
}

static pg_status meta_copy(const pg_backend *be, int index, const pg_copy *c)
{
    (void)be;
    (void)index;
    if (c->dst->device.type == PG_DEV_META)
        return PG_OK; /* into a meta tensor: nothing to write */
    return pg_error_set(PG_ERR_RUNTIME,
                        "Cannot copy out of meta tensor; no data! A 'meta' tensor has a shape "
                        "but no values: use torch.nn.Module.to_empty() (or "
                        "load_state_dict(..., assign=True)) to give a module built on 'meta' "
                        "real tensors");
}

static pg_status meta_wait_event(const pg_backend *be, pg_event ev)
{
    (void)be;
    (void)ev;
    return PG_OK;
}

static pg_status meta_synchronize(const pg_backend *be, int index)
{
    (void)be;
    (void)index;
    return PG_OK;
}

const pg_backend pg_meta_backend = {
    .name = "meta",
    .type = PG_DEV_META,
    .device_count = meta_device_count,
    .device_name = meta_device_name,
    .raw_alloc = meta_raw_alloc,
    .raw_free = meta_raw_free,
    .launch = meta_launch,
    .copy = meta_copy,
    .wait_event = meta_wait_event,
    .synchronize = meta_synchronize,
};
