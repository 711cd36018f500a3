/* cuda_train.c - the CUDA plugin's launchers for the fused training ops: each turns
 * a LINEAR_FWD/BWD, XENT_FWD/BWD, SGD or adaptive-optimizer node into the plain-pointer
 * arguments of kernels/train.cu and launches it on the device's stream (the
 * matmuls inside use the device's cuBLAS handle, under its lock). Operand
 * slots are those of csrc/core/pg_ops_train.c. The forward of a float32, float16 or
 * bfloat16 layer is one cublasLtMatmul with the bias (and relu) in its epilogue
 * (cuda_lt_gemm.c); kernels/train.cu's cuBLAS path runs where cuBLASLt has no kernel. */
#include <string.h>

#include "cuda_internal.h"
#include "pg_gemm.h"

_Static_assert((int)PG_CUDA_ACT_RELU == (int)PG_ACT_RELU &&
                   (int)PG_CUDA_ACT_SIGMOID == (int)PG_ACT_SIGMOID &&
                   (int)PG_CUDA_NUM_ACT == (int)PG_NUM_ACT,
               "activation codes differ between pg_node.h and pg_cuda_kernels.h");

static void *data_or_null(const pg_tensor *t)
{
    return t->storage ? pg_cuda_tensor_data(t) : NULL;
}

/* A contiguous 1-d space of n elements, for converting scratch buffers. */
static pg_cuda_iter flat_iter(int64_t n)
{
    pg_cuda_iter it;
    memset(&it, 0, sizeof it);
    it.ndim = 1;
    it.nops = 2;
    it.numel = n;
    it.shape[0] = n;
    it.strides[0][0] = it.strides[1][0] = 1;
    return it;
}

/* Under autocast the core sends mixed operands (csrc/core/pg_ops_train.c): a
 * float16/bfloat16 x and dy with the float32 weight, and, backward, float32 dW and db
 * (wgrad_f32), which must come straight from float32 accumulators, never rounded to 16
 * bits. The weight is rounded into 16-bit scratch first, forward and backward (as the
 * CPU kernels round it while packing, and as PyTorch's autocast casts it), and the
 * kernels run in the 16-bit dtype: both backward products on the tensor cores, dW
 * written as float32 by the GEMM itself (train.cu, a.gdtype). Until issue 38 the
 * backward widened every operand to float32 and ran float32 GEMMs without tensor cores
 * (0.16x PyTorch on the 4096-wide MLP on the H200); before issue 29 the kernel read the
 * float32 weight as 16-bit values and wrote float32 results into 16-bit buffers, past
 * their end (found by the emulated device, tests/cuda_emu). */
#define PG_LINEAR_SCRATCH 6

typedef struct linear_scratch {
    void *p[PG_LINEAR_SCRATCH];
    int n;
} linear_scratch;

/* n elements of dtype in stream-ordered scratch; *out NULL on failure */
static cudaError_t scratch(const pg_cuda_ctx *ctx, linear_scratch *sc, int64_t n, int dtype,
                           void **out)
{
    *out = NULL;
    cudaError_t e = cudaMallocAsync(out, (size_t)n * pg_cuda_itemsize(dtype), ctx->stream);
    if (e == cudaSuccess)
        sc->p[sc->n++] = *out;
    return e;
}

/* src (n elements of src_dtype) converted into new scratch of dtype */
static cudaError_t converted(const pg_cuda_ctx *ctx, linear_scratch *sc, const void *src,
                             int src_dtype, int64_t n, int dtype, const void **out)
{
    void *p;
    cudaError_t e = scratch(ctx, sc, n, dtype, &p);
    if (e == cudaSuccess) {
        pg_cuda_iter it = flat_iter(n);
        e = pg_kernel_copy(ctx, dtype, p, src_dtype, src, &it);
    }
    *out = p;
    return e;
}

static pg_status launch_linear(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n,
                               bool backward)
{
    const pg_tensor *x = &n->src[backward ? 1 : 0], *w = &n->src[backward ? 2 : 1];
    const int dt = x->dtype; /* what the kernels compute in */
    pg_cuda_linear_args a = {.dtype = dt, .act = n->subop, .gdtype = dt};
    a.n = x->shape[0];
    a.in = x->shape[1];
    a.out = w->shape[0];
    const int64_t nw = a.out * a.in;
    linear_scratch sc = {{NULL}, 0};
    cudaError_t err = cudaSuccess;
    a.x = pg_cuda_tensor_data(x);
    a.w = pg_cuda_tensor_data(w);
    if (w->dtype != dt)
        err = converted(ctx, &sc, a.w, w->dtype, nw, dt, &a.w);
    if (backward) {
        a.gdtype = n->dst.dtype; /* float32 dW and db for 16-bit operands under autocast */
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
    cublasStatus_t blas_st = CUBLAS_STATUS_SUCCESS;
    pg_status st = PG_OK;
    bool done = false;
    if (err == cudaSuccess && !backward && dt != PG_FLOAT64) {
        /* y (N,O) = act(x (N,I) @ W^T + b): W (O,I) is B transposed, every operand contiguous */
        pg_gemm g = {.M = a.n, .N = a.out, .K = a.in, .batch = 1, .trans_b = true,
                     .dtype_ab = dt, .dtype_c = dt, .compute = PG_FLOAT32,
                     .a = a.x, .lda = a.in, .b = a.w, .ldb = a.in, .c = a.y, .ldc = a.out,
                     .alpha = 1, .epilogue = a.b ? PG_EPI_BIAS : PG_EPI_NONE, .act = a.act,
                     .bias = a.b};
        bool refused = true;
        st = pg_cuda_lt_gemm(d, ctx, &g, n->name, &refused);
        done = st != PG_OK || !refused;
    }
    if (err == cudaSuccess && !done) {
        cublasHandle_t blas;
        st = pg_cuda_blas_acquire(d, ctx->stream, n->name, &blas); /* the work stream */
        if (st == PG_OK) {
            err = backward ? pg_kernel_linear_bwd(ctx, blas, &a, &blas_st)
                           : pg_kernel_linear_fwd(ctx, blas, &a, &blas_st);
            pg_cuda_blas_release(d);
        }
    }
    for (int i = 0; i < sc.n; i++) /* after the work that reads them, on the same stream */
        if (cudaFreeAsync(sc.p[i], ctx->stream) != cudaSuccess && err == cudaSuccess)
            err = cudaGetLastError();
    PG_TRY(st);
    PG_TRY(pg_cuda_check(PG_CUDA_LIB_CUBLAS, blas_st, d->index, n->name, "cublas<T>gemm", false));
    return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, d->index, n->name,
                         backward ? "pg_kernel_linear_bwd" : "pg_kernel_linear_fwd", false);
}

pg_status pg_cuda_launch_linear_fwd(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    return launch_linear(d, ctx, n, false);
}

pg_status pg_cuda_launch_linear_bwd(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    return launch_linear(d, ctx, n, true);
}

pg_status pg_cuda_launch_xent_fwd(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    cudaError_t err = pg_kernel_xent_fwd(ctx, n->dst.dtype, pg_cuda_tensor_data(&n->src[0]),
                                         (const int64_t *)pg_cuda_tensor_data(&n->src[1]),
                                         pg_cuda_tensor_data(&n->extra[0]),
                                         pg_cuda_tensor_data(&n->dst), n->src[0].shape[0],
                                         n->src[0].shape[1], (int)n->p.xent.mean);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_xent_fwd", err);
}

pg_status pg_cuda_launch_xent_bwd(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    cudaError_t err = pg_kernel_xent_bwd(ctx, n->dst.dtype, pg_cuda_tensor_data(&n->src[0]),
                                         (const int64_t *)pg_cuda_tensor_data(&n->src[1]),
                                         pg_cuda_tensor_data(&n->src[2]),
                                         pg_cuda_tensor_data(&n->dst), n->src[0].shape[0],
                                         n->src[0].shape[1], (int)n->p.xent.mean);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_xent_bwd", err);
}

pg_status pg_cuda_launch_sgd(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    cudaError_t err = pg_kernel_sgd(ctx, n->dst.dtype, pg_cuda_tensor_data(&n->dst),
                                    pg_cuda_tensor_data(&n->src[0]), data_or_null(&n->extra[0]),
                                    pg_cuda_numel(&n->dst), n->p.optim.hyper,
                                    (int)n->p.optim.flag[0], (int)n->p.optim.flag[1]);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_sgd", err);
}

/* the adaptive optimizers, one launcher per PG_OPTIM row (pg_ops.def): the operands of
 * pg_ops_train.c's layout to kernels/train.cu's pg_kernel_<name> */
#define PG_OPTIM(ID, name, ...)                                                                    \
    pg_status pg_cuda_launch_##name(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)   \
    {                                                                                              \
        cudaError_t err = pg_kernel_##name(                                                        \
            ctx, n->dst.dtype, pg_cuda_tensor_data(&n->dst), pg_cuda_tensor_data(&n->src[0]),      \
            data_or_null(&n->extra[0]), data_or_null(&n->extra[1]), data_or_null(&n->extra[2]),    \
            pg_cuda_numel(&n->dst), n->p.optim.hyper, n->p.optim.flag);                            \
        return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_" #name, err);                               \
    }
#include "pg_ops.def"
