/* cuda_sequence.c - the CUDA plugin's launchers for the sequence-model nodes: RNN_CELL and
 * RNN_CELL_BWD (kernels/rnn.cu) and SDPA and SDPA_BWD (kernels/attention.cu). Each turns
 * the node's operands (slots: csrc/core/pg_ops_rnn.c, pg_ops_attention.c) into the plain
 * pointers and strides of the kernel's argument struct and launches it on the device's
 * stream; their PG_NODE rows (pg_ops.def) name them. The GEMMs around a recurrent cell are
 * separate MATMUL nodes (cuda_gemm.c). */
#include <string.h>

#include "cuda_internal.h"

static void *ptr(const pg_tensor *t) { return t->storage ? pg_cuda_tensor_data(t) : NULL; }

/* supports_node's rule for SDPA and SDPA_BWD: the fused kernels are switched on (option
 * "flash_sdp") and hold a query's and a value's head (E, Ev) in registers and shared memory,
 * up to PG_CUDA_SDPA_MAX_HEAD; q is src[0], v src[2] */
bool pg_cuda_sdpa_runs(const pg_node *n)
{
    if (!atomic_load_explicit(&pg_cuda.flash_sdp, memory_order_relaxed))
        return false;
    const pg_tensor *q = &n->src[0], *v = &n->src[2];
    if (n->nsrc < 3 || q->ndim != 4 || v->ndim != 4)
        return true; /* not a node the core launches: its own checks answer */
    return q->shape[3] <= PG_CUDA_SDPA_MAX_HEAD && v->shape[3] <= PG_CUDA_SDPA_MAX_HEAD;
}

pg_status pg_cuda_launch_rnn(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    pg_cuda_rnn_args a;
    memset(&a, 0, sizeof a);
    a.dtype = n->dst.dtype;
    a.cell = n->subop;
    pg_rnn_cell_cols cell = pg_rnn_cell(n->subop); /* its row's columns (pg_subops.def) */
    a.saved = cell.saved;
    a.bwd = n->op == PG_OP_RNN_CELL_BWD;
    a.rows = n->dst.shape[0];
    if (!a.bwd) {
        a.H = n->dst.shape[1];
        a.P = n->src[3].shape[1];
        a.KG = n->src[1].shape[1];
        a.g = ptr(&n->src[0]);
        a.ldg = n->src[0].strides[0];
        a.hw = ptr(&n->src[1]);
        a.b = ptr(&n->src[2]);
        a.hp = ptr(&n->src[3]);
        a.c = ptr(&n->src[4]);
        a.y = ptr(&n->dst);
        a.ldy = n->dst.strides[0];
        a.hn = ptr(&n->extra[0]);
        a.save = ptr(&n->extra[2]);
        a.S = n->extra[2].storage ? n->extra[2].shape[1] : 0;
    } else {
        a.KG = n->dst.shape[1];
        a.H = a.KG / cell.gates;
        a.S = n->src[0].shape[1];
        a.P = a.S - cell.saved * a.H - (cell.cell_state ? a.H : 0);
        a.save = ptr(&n->src[0]);
        a.dy = ptr(&n->src[1]);
        a.lddy = n->src[1].storage ? n->src[1].strides[0] : 0;
        a.dh = ptr(&n->src[2]);
        a.c = ptr(&n->src[3]);
        a.dg = ptr(&n->dst);
        a.lddg = n->dst.strides[0];
        a.dhw = ptr(&n->extra[0]);
        a.dhout = ptr(&n->extra[1]);
    }
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_rnn_cell", pg_kernel_rnn_cell(ctx, &a));
}

static void strides3(const pg_tensor *t, int64_t *s)
{
    for (int i = 0; i < 3; i++)
        s[i] = t->strides[i];
}

pg_status pg_cuda_launch_sdpa(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    const pg_tensor *q = &n->src[0], *k = &n->src[1], *v = &n->src[2], *m = &n->src[3];
    pg_cuda_sdpa_args a;
    memset(&a, 0, sizeof a);
    a.dtype = q->dtype;
    a.Bt = q->shape[0];
    a.Hq = q->shape[1];
    a.L = q->shape[2];
    a.E = q->shape[3];
    a.Hk = k->shape[1];
    a.S = k->shape[2];
    a.Ev = v->shape[3];
    a.q = ptr(q);
    a.k = ptr(k);
    a.v = ptr(v);
    strides3(q, a.qs);
    strides3(k, a.ks);
    strides3(v, a.vs);
    if (m->storage) {
        a.mask = ptr(m);
        a.mask_bool = m->dtype == PG_BOOL;
        for (int i = 0; i < 4; i++)
            a.ms[i] = m->strides[i];
    }
    a.scale = n->p.sdpa.scale;
    double p = n->p.sdpa.dropout_p;
    a.thresh = p > 0 ? (uint32_t)(p * 4294967296.0) : 0;
    a.inv_keep = p > 0 ? 1.0 / (1.0 - p) : 1.0;
    if (p > 0 && a.thresh == 0)
        a.thresh = 1; /* p below 2^-32: still "dropout on" (keeps every word >= 1) */
    a.offset = n->p.sdpa.offset;
    a.causal = n->p.sdpa.causal != 0;
    a.seed = n->p.sdpa.seed;
    bool bwd = n->op == PG_OP_SDPA_BWD;
    if (a.E > PG_CUDA_SDPA_MAX_HEAD || a.Ev > PG_CUDA_SDPA_MAX_HEAD) /* pg_cuda_sdpa_runs said so */
        return pg_cuda_error(PG_ERR_VALUE, "cuda:%d: %s: head dimensions above %d (here %lld "
                                           "and %lld) have no CUDA kernel yet",
                             d->index, n->name, PG_CUDA_SDPA_MAX_HEAD, (long long)a.E,
                             (long long)a.Ev);
    cudaError_t err;
    if (!bwd) {
        a.o = ptr(&n->dst);
        strides3(&n->dst, a.os);
        a.lse = ptr(&n->extra[0]);
        strides3(&n->extra[0], a.ls);
        err = pg_kernel_sdpa(ctx, &a, 0);
    } else {
        a.out = ptr(&n->src[4]);
        strides3(&n->src[4], a.outs);
        a.dout = ptr(&n->src[5]);
        strides3(&n->src[5], a.douts);
        a.lse = ptr(&n->src[6]);
        strides3(&n->src[6], a.ls);
        a.dq = ptr(&n->dst);
        strides3(&n->dst, a.dqs);
        a.dk = ptr(&n->extra[0]);
        strides3(&n->extra[0], a.dks);
        a.dv = ptr(&n->extra[1]);
        strides3(&n->extra[1], a.dvs);
        size_t bytes = (size_t)(a.Bt * a.Hq * a.L) * pg_cuda_itemsize(a.dtype);
        err = cudaMallocAsync(&a.delta, bytes ? bytes : 1, ctx->stream);
        if (err == cudaSuccess) {
            err = pg_kernel_sdpa(ctx, &a, 1);
            cudaError_t f = cudaFreeAsync(a.delta, ctx->stream); /* after the kernels */
            if (err == cudaSuccess)
                err = f;
        }
    }
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_sdpa", err);
}
