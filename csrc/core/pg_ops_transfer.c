/* pg_ops_transfer.c - moving tensors between devices, and waiting for them.
 *
 * The one place where bytes cross between host and device, and so the one
 * place they are counted: every transfer is recorded here (count, bytes,
 * pinned, async, implicit trigger) before the backend moves it; the backend
 * adds the link-busy time, and what else the call took is counted as waiting. A transfer always moves one contiguous block:
 * a strided view is first compacted on its own device. */
#include "pg_ops.h"

#include <string.h>

#include "pg_backend.h"
#include "pg_graph.h"
#include "pg_profile.h"
#include "pg_stats.h"

static pg_status copy_block(const pg_backend *be, int index, int kind, const pg_tensor *src,
                            const pg_tensor *dst, bool async, int implicit)
{
    PG_TRY(pg_graph_refuse_host(kind == PG_COPY_D2D ? "a copy between devices"
                                                    : "a copy between host and device"));
    size_t nbytes = (size_t)pg_tensor_numel(src) * pg_dtype_size((pg_dtype)src->dtype);
    size_t isz = pg_dtype_size((pg_dtype)src->dtype);
    pg_copy c = {
        .kind = kind,
        .src = src->storage,
        .src_offset = (size_t)src->offset * isz,
        .dst = dst->storage,
        .dst_offset = (size_t)dst->offset * isz,
        .nbytes = nbytes,
        .async = async,
    };
    bool pinned = (src->storage->flags | dst->storage->flags) & PG_STORAGE_PINNED;
    pg_stats_transfer(pg_tensor_device(src), pg_tensor_device(dst), nbytes, pinned, async, implicit);
    /* The backend records the link-busy time (pg_stats_transfer_time); a blocking copy
     * records it on this thread, so the rest of the call's wall time is waiting: for
     * the device to produce the source or release the destination, and to see the
     * copy finished. An async copy's waiting happens later, in a counted sync. */
    uint64_t t0 = pg_now_ns(), link0 = pg_stats_thread_link_ns();
    pg_storage_note_write(c.dst);
    pg_status st = be->copy(be, index, &c);
    if (st != PG_OK)
        return st;
    uint64_t ns = pg_now_ns() - t0;
    uint64_t link = async ? 0 : pg_stats_thread_link_ns() - link0;
    uint64_t wait = async || link > ns ? 0 : ns - link;
    pg_stats_transfer_wait(implicit, wait);
    pg_profile_copy(pg_tensor_device(src), pg_tensor_device(dst), src, nbytes, t0, t0 + ns, link);
    pg_transfer_hook hook = pg_stats_get_transfer_hook();
    if (!hook)
        return PG_OK;
    /* call-site attribution is on (pygpu.track(call_sites=True)): report this transfer */
    const void *host = NULL;
    if (kind == PG_COPY_H2D)
        host = (const char *)c.src->data + c.src_offset;
    else if (kind == PG_COPY_D2H && !async)
        host = (const char *)c.dst->data + c.dst_offset;
    pg_transfer_event ev = {pg_tensor_device(src), pg_tensor_device(dst), nbytes, ns,
                            link, wait, pinned, async, implicit, host};
    hook(&ev);
    return PG_OK;
}

pg_status pg_op_to_device(const pg_tensor *t, pg_device dev, bool non_blocking, int implicit,
                          pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    pg_device from = pg_tensor_device(t);
    if (pg_device_eq(from, dev)) {
        pg_tensor_ref(t, out);
        return PG_OK;
    }
    const pg_backend *be_to = NULL, *be_from = NULL;
    PG_TRY(pg_backend_for(dev, &be_to));
    PG_TRY(pg_backend_for(from, &be_from));
    if (from.type != PG_DEV_CPU && dev.type != PG_DEV_CPU && from.type != dev.type) {
        /* two kinds of accelerator: stage through the host (two counted transfers) */
        pg_tensor host;
        PG_TRY(pg_op_to_device(t, (pg_device){PG_DEV_CPU, 0}, false, implicit, &host));
        pg_status st = pg_op_to_device(&host, dev, non_blocking, implicit, out);
        pg_tensor_clear(&host);
        return st;
    }
    pg_tensor src;
    PG_TRY(pg_op_contiguous(t, &src));
    pg_status st;
    if (dev.type == PG_DEV_CPU) { /* d2h; non_blocking lands in pinned memory, as in PyTorch */
        st = pg_tensor_empty(dev, (pg_dtype)t->dtype, t->ndim, t->shape, out);
        if (st == PG_OK && non_blocking) {
            pg_storage *pinned;
            st = pg_storage_new(dev, out->storage->nbytes, PG_STORAGE_PINNED, &pinned);
            if (st == PG_OK) {
                pg_storage_release(out->storage);
                out->storage = pinned;
            }
        }
        if (st == PG_OK)
            st = copy_block(be_from, from.index, PG_COPY_D2H, &src, out, non_blocking, implicit);
    } else {
        st = pg_tensor_empty(dev, (pg_dtype)t->dtype, t->ndim, t->shape, out);
        if (st == PG_OK) {
            bool h2d = from.type == PG_DEV_CPU;
            /* a pageable source cannot be copied asynchronously (it may change) */
            bool async = non_blocking && (!h2d || (src.storage->flags & PG_STORAGE_PINNED));
            st = copy_block(be_to, h2d ? dev.index : from.index, h2d ? PG_COPY_H2D : PG_COPY_D2D,
                            &src, out, async, implicit);
        }
    }
    if (st != PG_OK && out->storage)
        pg_tensor_clear(out);
    pg_tensor_clear(&src);
    return st;
}

pg_status pg_op_copy_between(const pg_tensor *dst, const pg_tensor *src, bool non_blocking)
{
    pg_device from = pg_tensor_device(src), to = pg_tensor_device(dst);
    if (pg_device_eq(from, to))
        return pg_op_copy(dst, src);
    if (dst->storage->flags & PG_STORAGE_READONLY)
        return pg_error_set(PG_ERR_VALUE, "copy_: the destination is read-only");
    if (dst->ndim != src->ndim || memcmp(dst->shape, src->shape, sizeof(int64_t) * dst->ndim) != 0) {
        char a[160], b[160];
        return pg_error_set(PG_ERR_SHAPE, "copy_ across devices needs equal shapes, got %s into %s",
                            pg_shape_str(src->ndim, src->shape, a, sizeof a),
                            pg_shape_str(dst->ndim, dst->shape, b, sizeof b));
    }
    if (!pg_tensor_is_contiguous(dst) || dst->dtype != src->dtype) {
        /* land in a contiguous buffer on the destination, then convert there */
        pg_tensor tmp;
        PG_TRY(pg_op_to_device(src, to, false, PG_IMPLICIT_NONE, &tmp));
        pg_status st = pg_op_copy(dst, &tmp);
        pg_tensor_clear(&tmp);
        return st;
    }
    const pg_backend *be_to, *be_from;
    PG_TRY(pg_backend_for(to, &be_to));
    PG_TRY(pg_backend_for(from, &be_from));
    if (from.type != PG_DEV_CPU && to.type != PG_DEV_CPU && from.type != to.type) {
        pg_tensor host;
        PG_TRY(pg_op_to_device(src, (pg_device){PG_DEV_CPU, 0}, false, PG_IMPLICIT_NONE, &host));
        pg_status st = pg_op_copy_between(dst, &host, non_blocking);
        pg_tensor_clear(&host);
        return st;
    }
    pg_tensor c;
    PG_TRY(pg_op_contiguous(src, &c));
    pg_status st;
    if (to.type == PG_DEV_CPU) {
        bool async = non_blocking && (dst->storage->flags & PG_STORAGE_PINNED);
        st = copy_block(be_from, from.index, PG_COPY_D2H, &c, dst, async, PG_IMPLICIT_NONE);
    } else if (from.type == PG_DEV_CPU) {
        bool async = non_blocking && (c.storage->flags & PG_STORAGE_PINNED);
        st = copy_block(be_to, to.index, PG_COPY_H2D, &c, dst, async, PG_IMPLICIT_NONE);
    } else {
        st = copy_block(be_from, from.index, PG_COPY_D2D, &c, dst, non_blocking, PG_IMPLICIT_NONE);
    }
    pg_tensor_clear(&c);
    return st;
}

pg_status pg_op_pin_memory(const pg_tensor *t, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    if (pg_tensor_device(t).type != PG_DEV_CPU)
        return pg_error_set(PG_ERR_VALUE, "pin_memory: only cpu tensors can be pinned; this one "
                                          "is on a device");
    if (t->storage->flags & PG_STORAGE_PINNED) {
        pg_tensor_ref(t, out);
        return PG_OK;
    }
    size_t nbytes = (size_t)pg_tensor_numel(t) * pg_dtype_size((pg_dtype)t->dtype);
    pg_storage *s;
    PG_TRY(pg_storage_new(pg_tensor_device(t), nbytes, PG_STORAGE_PINNED, &s));
    *out = *t;
    out->storage = s;
    out->offset = 0;
    pg_contiguous_strides(t->ndim, t->shape, out->strides);
    pg_status st = pg_op_copy(out, t);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

pg_status pg_tensor_wait(const pg_tensor *t)
{
    PG_TRY(pg_graph_refuse_host("a host read of a tensor (.item(), .tolist(), .numpy(), print)"));
    return pg_storage_wait(t->storage);
}

pg_status pg_device_synchronize(pg_device dev)
{
    const pg_backend *be;
    PG_TRY(pg_graph_refuse_host("synchronize()"));
    PG_TRY(pg_backend_for(dev, &be));
    if (!be->synchronize)
        return PG_OK;
    uint64_t t0 = pg_now_ns();
    pg_status st = be->synchronize(be, dev.index);
    pg_stats_sync(dev, pg_now_ns() - t0);
    return st;
}
