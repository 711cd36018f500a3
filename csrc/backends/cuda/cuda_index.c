/* cuda_index.c - the CUDA plugin's launcher for the index family (PG_OP_INDEX):
 * turns a node (layouts in csrc/core/pg_ops_index.h) into the plain arguments of
 * kernels/index.cu and launches it on the device's stream. The generic layer has
 * checked everything but the index values, which the kernels check on the device. */
#include <string.h>

#include "cuda_internal.h"
#include "pg_ops_index.h"

_Static_assert((int)PG_CUDA_IDX_GATHER == (int)PG_IDX_GATHER &&
                   (int)PG_CUDA_IDX_SCATTER_ADD == (int)PG_IDX_SCATTER_ADD &&
                   (int)PG_CUDA_IDX_INDEX_ADD == (int)PG_IDX_INDEX_ADD &&
                   (int)PG_CUDA_IDX_ARGSORT == (int)PG_IDX_ARGSORT &&
                   (int)PG_CUDA_IDX_MASKED_FILL == (int)PG_IDX_MASKED_FILL &&
                   (int)PG_CUDA_IDX_TOPK == (int)PG_IDX_TOPK &&
                   (int)PG_CUDA_NUM_INDEX == (int)PG_NUM_INDEX,
               "index subop codes differ between pg_ops_index.h and pg_cuda_kernels.h");

static void line_shape(const pg_tensor *t, int axis, pg_cuda_index_args *a)
{
    a->outer = a->inner = 1;
    for (int d = 0; d < axis; d++)
        a->outer *= t->shape[d];
    for (int d = axis + 1; d < t->ndim; d++)
        a->inner *= t->shape[d];
    a->len = t->shape[axis];
}

static cudaError_t launch_index(const pg_cuda_ctx *ctx, const pg_node *n)
{
    pg_cuda_index_args a;
    memset(&a, 0, sizeof a);
    a.subop = n->subop;
    a.axis = (int)n->p.train.i[0];
    a.flag = (int)n->p.train.i[1];
    switch (n->subop) {
    case PG_IDX_CUMSUM:
    case PG_IDX_CUMPROD:
    case PG_IDX_ARGSORT:
    case PG_IDX_TOPK:
        a.dtype = n->src[0].dtype;
        line_shape(&n->src[0], a.axis, &a);
        a.bound = n->dst.shape[a.axis];
        a.src = pg_cuda_tensor_data(&n->src[0]);
        a.dst = pg_cuda_tensor_data(&n->dst);
        return pg_kernel_index(ctx, &a);
    case PG_IDX_NONZERO:
        a.len = n->src[0].shape[0];
        a.bound = n->dst.shape[0];
        a.src = pg_cuda_tensor_data(&n->src[0]);
        a.dst = pg_cuda_tensor_data(&n->dst);
        return pg_kernel_index(ctx, &a);
    default:
        break;
    }
    bool read = n->subop == PG_IDX_GATHER || n->subop == PG_IDX_INDEX_SELECT;
    const pg_tensor *P = read || n->subop == PG_IDX_MASKED_FILL ? &n->dst : &n->src[0];
    const pg_tensor *M = n->subop == PG_IDX_MASKED_FILL ? &n->src[0]
                         : read                         ? &n->src[0]
                                                        : &n->dst;
    a.dtype = n->dst.dtype;
    a.ndim = P->ndim;
    a.numel = 1;
    for (int d = 0; d < P->ndim; d++) {
        a.shape[d] = P->shape[d];
        a.p_strides[d] = P->strides[d];
        a.m_strides[d] = M->strides[d];
        a.numel *= P->shape[d];
    }
    a.p = pg_cuda_tensor_data(P);
    a.m = pg_cuda_tensor_data(M);
    if (n->subop == PG_IDX_MASKED_FILL) {
        a.value = pg_cuda_tensor_data(&n->src[1]);
    } else {
        a.idx = (const int64_t *)pg_cuda_tensor_data(&n->src[1]);
        a.bound = M->shape[a.axis];
    }
    return pg_kernel_index(ctx, &a);
}

/* node layouts: csrc/core/pg_ops_index.h */
pg_status pg_cuda_launch_index(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_index", launch_index(ctx, n));
}
