/* cuda_multi.c - the list nodes' launchers: MULTI (pygpu.optim's multi-tensor step, one
 * node per parameter group, device and dtype; torch._foreach_mul_'s BINARY list) and
 * MULTI_NORM (clip_grad_norm_'s total norm). Each lays the node's list (pg_node.h
 * pg_node_list) out as kernel entries, pg_cuda_kernels.h's pg_cuda_mt_entry: an entry's
 * operands in the slot order of its kind's single-tensor launcher (cuda_train.c), and calls
 * the kind's list launcher, which runs the whole list in a few launches of a chunk table
 * passed by value (kernels/pg_multi_tensor.cuh, as PyTorch's multi_tensor_apply): AdamW
 * over a 6-layer GPT's 76 tensors takes two launches instead of 76. The table is a
 * kernel argument, so a CUDA graph captures it as it is; MULTI_NORM's partial sums live in
 * stream-ordered scratch, which a capture turns into the graph's own allocation.
 *
 * Which kinds a MULTI node may list on cuda: the table below (supports_node asks it, through
 * pg_cuda_multi_runs): SGD, every PG_OPTIM row's kind and BINARY. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

typedef cudaError_t (*pg_cuda_multi_kernel)(PG_CUDA_MULTI_ARGS);

/* each listable kind's list launcher (kernels/optim.cu, kernels/elementwise_binary.cu) */
static const pg_cuda_multi_kernel multi_kernels[PG_NUM_OPS] = {
    [PG_OP_SGD] = pg_kernel_multi_sgd,
    [PG_OP_BINARY] = pg_kernel_multi_binary,
#define PG_OPTIM(ID, name, ...) [PG_OP_##ID] = pg_kernel_multi_##name,
#include "pg_ops.def"
};

bool pg_cuda_multi_runs(const pg_node *n)
{
    return n->op != PG_OP_MULTI || (n->subop >= 0 && n->subop < PG_NUM_OPS && multi_kernels[n->subop]);
}

static int64_t numel(const pg_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

/* the operands of `count` slots as an entry of `len` elements (NULL storage: NULL) */
static void entry_of_slots(const pg_tensor *const *slot, int count, int64_t len,
                           pg_cuda_mt_entry *out)
{
    memset(out, 0, sizeof *out);
    out->numel = len;
    for (int s = 0; s < count; s++) {
        if (!slot[s]->storage)
            continue;
        out->ptr[s] = pg_cuda_tensor_data(slot[s]);
        if (numel(slot[s]) == 1 && len != 1)
            out->bcast |= 1u << s;
    }
}

/* MULTI's entry e: dst, src0, then the kind's extras (its states) or, for a kind without
 * any (BINARY), its other sources */
static void multi_entry(const pg_node *n, int e, pg_cuda_mt_entry *out)
{
    pg_node sub;
    pg_node_list_entry(n, e, &sub);
    const pg_tensor *slot[PG_CUDA_MT_SLOTS] = {&sub.dst, &sub.src[0]};
    int k = 2;
    if (sub.nextra > 0)
        for (int s = 0; s < sub.nextra && k < PG_CUDA_MT_SLOTS; s++)
            slot[k++] = &sub.extra[s];
    else
        for (int s = 1; s < sub.nsrc && k < PG_CUDA_MT_SLOTS; s++)
            slot[k++] = &sub.src[s];
    entry_of_slots(slot, k, numel(&sub.dst), out);
}

static pg_status entries_alloc(const pg_cuda_device *d, const pg_node *n, pg_cuda_mt_entry **out)
{
    int count = n->list->count;
    *out = malloc((size_t)(count > 0 ? count : 1) * sizeof **out);
    if (*out == NULL)
        return pg_cuda_error(PG_ERR_NOMEM, "cuda:%d: %s: out of host memory for a list of %d "
                                           "entries", d->index, n->name, count);
    return PG_OK;
}

pg_status pg_cuda_launch_multi(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    if (!pg_cuda_multi_runs(n))
        return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: %s: a list of node kind %d has no CUDA "
                                             "kernel", d->index, n->name, n->subop);
    const pg_node_list *l = n->list;
    pg_cuda_mt_entry *e;
    PG_TRY(entries_alloc(d, n, &e));
    for (int i = 0; i < l->count; i++)
        multi_entry(n, i, &e[i]);
    cudaError_t err = multi_kernels[n->subop](ctx, l->subop, n->dst.dtype, e, l->count,
                                              n->p.optim.hyper, n->p.optim.flag);
    free(e);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_multi", err);
}

pg_status pg_cuda_launch_multi_norm(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    const pg_node_list *l = n->list;
    pg_cuda_mt_entry *e;
    PG_TRY(entries_alloc(d, n, &e));
    int64_t chunks = 0;
    for (int i = 0; i < l->count; i++) {
        const pg_tensor *x = &l->t[(size_t)i * (size_t)l->width];
        entry_of_slots(&x, 1, numel(x), &e[i]);
        chunks += (e[i].numel + PG_CUDA_MT_CHUNK - 1) / PG_CUDA_MT_CHUNK;
    }
    double *partials = NULL; /* one per chunk, freed after the kernels on the same stream */
    const char *call = "cudaMallocAsync";
    cudaError_t err = cudaMallocAsync((void **)&partials,
                                      (size_t)(chunks > 0 ? chunks : 1) * sizeof(double),
                                      ctx->stream);
    if (err == cudaSuccess) {
        call = "pg_kernel_multi_norm";
        err = pg_kernel_multi_norm(ctx, n->dst.dtype, e, l->count, n->p.scalar.f, partials,
                                   pg_cuda_tensor_data(&n->dst));
        cudaError_t ferr = cudaFreeAsync(partials, ctx->stream);
        if (err == cudaSuccess && ferr != cudaSuccess) {
            call = "cudaFreeAsync";
            err = ferr;
        }
    }
    free(e);
    return PG_CUDA_KERNEL_STATUS(d, n, call, err);
}
