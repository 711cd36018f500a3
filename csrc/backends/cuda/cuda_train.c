/* cuda_train.c - the CUDA plugin's launcher for the fused training ops: turns
 * a LINEAR_FWD/BWD, XENT_FWD/BWD, SGD or ADAM node into the plain-pointer
 * arguments of kernels/train.cu and launches it on the device's stream (the
 * matmuls inside use the device's cuBLAS handle, under its lock). Operand
 * slots are those of csrc/core/pg_ops_train.c. */
#include "cuda_internal.h"

_Static_assert((int)PG_CUDA_ACT_RELU == (int)PG_ACT_RELU &&
                   (int)PG_CUDA_ACT_SIGMOID == (int)PG_ACT_SIGMOID &&
                   (int)PG_CUDA_NUM_ACT == (int)PG_NUM_ACT,
               "activation codes differ between pg_node.h and pg_cuda_kernels.h");

static int64_t numel(const pg_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

static void *data_or_null(const pg_tensor *t)
{
    return t->storage ? pg_cuda_tensor_data(t) : NULL;
}

static pg_status launch_linear(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n,
                               bool backward)
{
    pg_cuda_linear_args a = {.dtype = n->dst.dtype, .act = n->subop};
    const pg_tensor *x = &n->src[backward ? 1 : 0], *w = &n->src[backward ? 2 : 1];
    a.n = x->shape[0];
    a.in = x->shape[1];
    a.out = w->shape[0];
    a.x = pg_cuda_tensor_data(x);
    a.w = pg_cuda_tensor_data(w);
    if (backward) {
        a.dy = pg_cuda_tensor_data(&n->src[0]);
        a.y = data_or_null(&n->src[3]);
        a.dw = pg_cuda_tensor_data(&n->dst);
        a.dx = data_or_null(&n->extra[0]);
        a.db = data_or_null(&n->extra[1]);
        a.dz = data_or_null(&n->extra[2]);
    } else {
        a.b = data_or_null(&n->src[2]);
        a.y = pg_cuda_tensor_data(&n->dst);
    }
    cublasHandle_t blas;
    PG_TRY(pg_cuda_blas_acquire(d, ctx->stream, n->name, &blas)); /* the work stream */
    cublasStatus_t blas_st;
    cudaError_t err = backward ? pg_kernel_linear_bwd(ctx, blas, &a, &blas_st)
                               : pg_kernel_linear_fwd(ctx, blas, &a, &blas_st);
    pg_cuda_blas_release(d);
    PG_TRY(pg_cuda_check(PG_CUDA_LIB_CUBLAS, blas_st, d->index, n->name, "cublas<T>gemm", false));
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, d->index, n->name,
                         backward ? "pg_kernel_linear_bwd" : "pg_kernel_linear_fwd", false);
}

pg_status pg_cuda_launch_train(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    cudaError_t err;
    const char *call;
    int dt = n->dst.dtype;
    switch (n->op) {
    case PG_OP_LINEAR_FWD:
        return launch_linear(d, ctx, n, false);
    case PG_OP_LINEAR_BWD:
        return launch_linear(d, ctx, n, true);
    case PG_OP_XENT_FWD:
        call = "pg_kernel_xent_fwd";
        err = pg_kernel_xent_fwd(ctx, dt, pg_cuda_tensor_data(&n->src[0]),
                                 (const int64_t *)pg_cuda_tensor_data(&n->src[1]),
                                 pg_cuda_tensor_data(&n->extra[0]), pg_cuda_tensor_data(&n->dst),
                                 n->src[0].shape[0], n->src[0].shape[1], (int)n->p.train.i[0]);
        break;
    case PG_OP_XENT_BWD:
        call = "pg_kernel_xent_bwd";
        err = pg_kernel_xent_bwd(ctx, dt, pg_cuda_tensor_data(&n->src[0]),
                                 (const int64_t *)pg_cuda_tensor_data(&n->src[1]),
                                 pg_cuda_tensor_data(&n->src[2]), pg_cuda_tensor_data(&n->dst),
                                 n->src[0].shape[0], n->src[0].shape[1], (int)n->p.train.i[0]);
        break;
    case PG_OP_SGD:
        call = "pg_kernel_sgd";
        err = pg_kernel_sgd(ctx, dt, pg_cuda_tensor_data(&n->dst), pg_cuda_tensor_data(&n->src[0]),
                            data_or_null(&n->extra[0]), numel(&n->dst), n->p.train.f,
                            (int)n->p.train.i[0], (int)n->p.train.i[1]);
        break;
    case PG_OP_ADAM:
        call = "pg_kernel_adam";
        err = pg_kernel_adam(ctx, dt, n->subop, pg_cuda_tensor_data(&n->dst),
                             pg_cuda_tensor_data(&n->src[0]), data_or_null(&n->extra[0]),
                             data_or_null(&n->extra[1]), data_or_null(&n->extra[2]),
                             numel(&n->dst), n->p.train.f, n->p.train.i);
        break;
    default:
        return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: %s: op %d is not a training op", d->index,
                             n->name, n->op);
    }
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, d->index, n->name, call, false);
}
