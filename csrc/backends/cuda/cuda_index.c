/* cuda_index.c - the CUDA plugin's launcher for the index family (PG_OP_INDEX):
 * turns a node (layouts in csrc/core/pg_ops_index.h) into the plain arguments of
 * kernels/index.cu and launches it on the device's stream, the kernel and its
 * arguments chosen by the sub-op's row (its family column, pg_subops.def). The generic
 * layer has checked everything but the index values, which the kernels check on the
 * device. */
#include <string.h>

#include "cuda_internal.h"
#include "pg_ops_index.h"

static void line_shape(const pg_tensor *t, int axis, pg_cuda_index_args *a)
{
    a->outer = a->inner = 1;
    for (int d = 0; d < axis; d++)
        a->outer *= t->shape[d];
    for (int d = axis + 1; d < t->ndim; d++)
        a->inner *= t->shape[d];
    a->len = t->shape[axis];
}

/* The arguments of each family's kernel (the INDEX rows' family column, pg_subops.def):
 * the strided walk of the moves and masked_fill (P follows the coordinates, M is indexed on
 * the axis), one line per (outer, inner) for the cumulative ops, argsort and topk, or
 * nonzero's mask and count. */
static void walk(const pg_tensor *P, const pg_tensor *M, pg_cuda_index_args *a)
{
    a->ndim = P->ndim;
    a->numel = 1;
    for (int d = 0; d < P->ndim; d++) {
        a->shape[d] = P->shape[d];
        a->p_strides[d] = P->strides[d];
        a->m_strides[d] = M->strides[d];
        a->numel *= P->shape[d];
    }
    a->p = pg_cuda_tensor_data(P);
    a->m = pg_cuda_tensor_data(M);
}

static void args_MOVE(const pg_node *n, pg_cuda_index_args *a)
{
    bool read = (a->flags & PG_SUBF_READ) != 0;
    const pg_tensor *M = read ? &n->src[0] : &n->dst;
    a->dtype = n->dst.dtype;
    walk(read ? &n->dst : &n->src[0], M, a);
    a->idx = (const int64_t *)pg_cuda_tensor_data(&n->src[1]);
    a->bound = M->shape[a->axis];
}

static void args_MASKED_FILL(const pg_node *n, pg_cuda_index_args *a)
{
    a->dtype = n->dst.dtype;
    walk(&n->dst, &n->src[0], a); /* P: dst, M: the mask */
    a->value = pg_cuda_tensor_data(&n->src[1]);
}

static void args_CUMULATE(const pg_node *n, pg_cuda_index_args *a)
{
    a->dtype = n->src[0].dtype;
    line_shape(&n->src[0], a->axis, a);
    a->bound = n->dst.shape[a->axis];
    a->src = pg_cuda_tensor_data(&n->src[0]);
    a->dst = pg_cuda_tensor_data(&n->dst);
}
#define args_ARGSORT args_CUMULATE
#define args_TOPK args_CUMULATE

static void args_NONZERO(const pg_node *n, pg_cuda_index_args *a)
{
    a->len = n->src[0].shape[0];
    a->bound = n->dst.shape[0];
    a->src = pg_cuda_tensor_data(&n->src[0]);
    a->dst = pg_cuda_tensor_data(&n->dst);
}

static const struct {
    void (*args)(const pg_node *, pg_cuda_index_args *);
    cudaError_t (*kernel)(const pg_cuda_ctx *, const pg_cuda_index_args *);
} families[PG_NUM_SUBOPS] = {
#define PG_SUBOP_INDEX(ID, name, flags, family)                                                    \
    [PG_INDEX_##ID] = {args_##family, pg_kernel_index_##family},
#include "pg_subops.def"
};

static cudaError_t launch_index(const pg_cuda_ctx *ctx, const pg_node *n)
{
    if (n->subop < 0 || n->subop >= PG_NUM_SUBOPS || !families[n->subop].kernel)
        return cudaErrorInvalidValue;
    pg_cuda_index_args a;
    memset(&a, 0, sizeof a);
    a.flags = pg_subop_flags(n->subop);
    a.axis = (int)n->p.index.axis;
    a.flag = (int)n->p.index.flag;
    families[n->subop].args(n, &a);
    return families[n->subop].kernel(ctx, &a);
}

/* node layouts: csrc/core/pg_ops_index.h */
pg_status pg_cuda_launch_index(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_index", launch_index(ctx, n));
}
