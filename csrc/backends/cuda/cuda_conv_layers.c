/* cuda_conv_layers.c - the CUDA plugin's launchers for the POOL and BATCH_NORM nodes: each
 * turns the node's operands (csrc/core/pg_ops_conv.h's slots) into the plain arguments of
 * kernels/conv_layers.cu and launches on the op's stream. The convolution itself is
 * cuDNN's (cuda_cudnn.c). */
#include <string.h>

#include "cuda_internal.h"
#include "pg_ops_conv.h"

static const void *data_or_null(const pg_tensor *t)
{
    return t->storage ? pg_cuda_tensor_data(t) : NULL;
}

pg_status pg_cuda_launch_pool(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    const pg_conv_geom *g = &n->p.conv;
    const unsigned f = pg_subop_flags(n->subop); /* the sub-op's row (pg_subops.def) */
    const bool fwd = !(f & PG_SUBF_BWD);
    const pg_tensor *x = fwd ? &n->src[0] : &n->dst, *y = fwd ? &n->dst : &n->src[0];
    pg_cuda_pool_args a;
    memset(&a, 0, sizeof a);
    a.max = (f & PG_SUBF_MAX) != 0;
    a.backward = !fwd;
    a.adaptive = (f & PG_SUBF_ADAPTIVE) != 0;
    a.count_pad = (g->flags & PG_POOL_F_COUNT_PAD) != 0;
    a.dtype = n->dst.dtype;
    a.src = pg_cuda_tensor_data(&n->src[0]);
    a.dst = pg_cuda_tensor_data(&n->dst);
    if (a.max && a.backward)
        a.idx_in = (const int64_t *)pg_cuda_tensor_data(&n->src[1]);
    if (fwd && n->nextra > 0 && n->extra[0].storage)
        a.idx_out = (int64_t *)pg_cuda_tensor_data(&n->extra[0]);
    a.planes = x->shape[0] * x->shape[1];
    a.H = x->shape[2];
    a.W = x->shape[3];
    a.OH = y->shape[2];
    a.OW = y->shape[3];
    a.kh = g->kh;
    a.kw = g->kw;
    a.sh = g->sh > 0 ? g->sh : 1;
    a.sw = g->sw > 0 ? g->sw : 1;
    a.ph = g->ph;
    a.pw = g->pw;
    a.dh = g->dh > 0 ? g->dh : 1;
    a.dw = g->dw > 0 ? g->dw : 1;
    a.divisor = g->divisor;
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_pool", pg_kernel_pool(ctx, &a));
}

bool pg_cuda_batch_norm_runs(const pg_node *n) { return n->subop != PG_BATCH_NORM_EVAL_FWD; }

pg_status pg_cuda_launch_batch_norm(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    if (n->subop == PG_BATCH_NORM_EVAL_FWD) /* supports_node declined it: never launched */
        return pg_cuda_error(PG_ERR_RUNTIME, "batch_norm: the cuda kernels have no evaluation "
                                            "node (EVAL_FWD)");
    pg_cuda_bn_args a;
    memset(&a, 0, sizeof a);
    a.dtype = n->dst.dtype;
    a.backward = (pg_subop_flags(n->subop) & PG_SUBF_BWD) != 0;
    a.relu = (n->p.norm.flags & PG_BN_F_RELU) != 0;
    a.N = n->dst.shape[0];
    a.C = n->dst.shape[1];
    a.L = n->dst.shape[2];
    a.eps = n->p.norm.eps;
    a.momentum = n->p.norm.momentum;
    if (!a.backward) { /* src: x, w, b, running_mean, running_var; extra: save, rm, rv */
        a.x = pg_cuda_tensor_data(&n->src[0]);
        a.w = data_or_null(&n->src[1]);
        a.b = data_or_null(&n->src[2]);
        a.y = pg_cuda_tensor_data(&n->dst);
        a.save = pg_cuda_tensor_data(&n->extra[0]);
        if (n->nextra > 2 && n->extra[1].storage && n->extra[2].storage) {
            a.running_mean = pg_cuda_tensor_data(&n->extra[1]);
            a.running_var = pg_cuda_tensor_data(&n->extra[2]);
        }
    } else { /* src: dy, x, w, save, y (relu); dst: dx; extra: dw, db */
        a.dy = pg_cuda_tensor_data(&n->src[0]);
        a.x = pg_cuda_tensor_data(&n->src[1]);
        a.w = data_or_null(&n->src[2]);
        a.save = (void *)pg_cuda_tensor_data(&n->src[3]);
        if (a.relu)
            a.y = (void *)pg_cuda_tensor_data(&n->src[4]);
        a.dx = pg_cuda_tensor_data(&n->dst);
        a.dw = n->nextra > 0 ? (void *)data_or_null(&n->extra[0]) : NULL;
        a.db = n->nextra > 1 ? (void *)data_or_null(&n->extra[1]) : NULL;
    }
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_batch_norm", pg_kernel_batch_norm(ctx, &a));
}
