/* cuda_launch.c - the dispatcher: a table of launchers, one per node kind (the
 * PG_NODE rows' cuda column, pg_ops.def), each turning a pg_node into plain
 * pointers and iteration spaces and calling the kernel launchers of kernels/
 * on the device's compute stream; the elementwise, reduce, matmul and
 * generator kinds' launchers are here, the others beside their families.
 *
 * The node has been validated by the generic layer; this file only lays out
 * the work. After a successful launch the node's storages get the op's
 * sequence number (dst as written, sources as read), so wait_event knows
 * what to wait for. A launch error is reported at once, naming the op; a
 * fault while the kernel runs surfaces at the next wait (cuda_queue.c), or
 * right here when the "sync_each_op" option is on. */
#include <math.h>
#include <string.h>

#include "cuda_internal.h"
#include "pg_gemm.h"
#include "pg_half.h"

/* kernels/pg_cuda_kernels.h takes these codes from the op table (pg_ops.def, through
 * pg_op_props.h) so that kernels need not include pg_node.h (C-only); subops pass
 * through unchanged, and the checks below can no longer fail. */
#define PG_SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(PG_SAME(PG_CUDA_BIN_ADD, PG_BIN_ADD) && PG_SAME(PG_CUDA_BIN_DIV, PG_BIN_DIV) &&
                   PG_SAME(PG_CUDA_BIN_MAXIMUM, PG_BIN_MAXIMUM) &&
                   PG_SAME(PG_CUDA_BIN_EQ, PG_BIN_EQ) && PG_SAME(PG_CUDA_BIN_GE, PG_BIN_GE) &&
                   PG_SAME(PG_CUDA_NUM_BINARY, PG_NUM_BINARY),
               "binary op codes differ between pg_node.h and pg_cuda_kernels.h");
_Static_assert(PG_SAME(PG_CUDA_UN_NEG, PG_UN_NEG) && PG_SAME(PG_CUDA_UN_SIGMOID, PG_UN_SIGMOID) &&
                   PG_SAME(PG_CUDA_UN_RELU, PG_UN_RELU) && PG_SAME(PG_CUDA_UN_NOT, PG_UN_NOT) &&
                   PG_SAME(PG_CUDA_NUM_UNARY, PG_NUM_UNARY),
               "unary op codes differ between pg_node.h and pg_cuda_kernels.h");
_Static_assert(PG_SAME(PG_CUDA_RED_SUM, PG_RED_SUM) && PG_SAME(PG_CUDA_RED_MAX, PG_RED_MAX) &&
                   PG_SAME(PG_CUDA_RED_MIN, PG_RED_MIN) &&
                   PG_SAME(PG_CUDA_RED_ARGMAX, PG_RED_ARGMAX) &&
                   PG_SAME(PG_CUDA_NUM_REDUCE, PG_NUM_REDUCE),
               "reduce op codes differ between pg_node.h and pg_cuda_kernels.h");
_Static_assert(PG_CUDA_MAX_DIMS == PG_MAX_DIMS, "PG_CUDA_MAX_DIMS != PG_MAX_DIMS");
#undef PG_SAME

void pg_cuda_iter_init(pg_cuda_iter *it, int ndim, const int64_t *shape, int nops,
                       const int64_t *const *strides)
{
    memset(it, 0, sizeof *it);
    it->nops = nops;
    it->numel = 1;
    for (int d = 0; d < ndim; d++)
        it->numel *= shape[d];
    if (it->numel == 0)
        return;
    /* Walk axes outer to inner, dropping length-1 axes and folding an axis
     * into the previous (outer) one when, for every operand, stepping the
     * outer axis equals stepping the inner one shape[d] times. */
    int n = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1)
            continue;
        bool fold = n > 0;
        for (int op = 0; op < nops && fold; op++)
            fold = it->strides[op][n - 1] == strides[op][d] * shape[d];
        if (fold) {
            it->shape[n - 1] *= shape[d];
            for (int op = 0; op < nops; op++)
                it->strides[op][n - 1] = strides[op][d];
        } else {
            it->shape[n] = shape[d];
            for (int op = 0; op < nops; op++)
                it->strides[op][n] = strides[op][d];
            n++;
        }
    }
    it->ndim = n;
}

static void pg_cuda_iter_of(pg_cuda_iter *it, const pg_tensor *dst, const pg_tensor *a,
                            const pg_tensor *b)
{
    const int64_t *strides[3] = {dst->strides, a != NULL ? a->strides : NULL,
                                 b != NULL ? b->strides : NULL};
    pg_cuda_iter_init(it, dst->ndim, dst->shape, 1 + (a != NULL) + (b != NULL), strides);
}

static bool pg_cuda_is_half(int dtype) { return pg_dtype_is_half((pg_dtype)dtype); }
static bool pg_cuda_is_float(int dtype) { return pg_dtype_is_float((pg_dtype)dtype); }

pg_status pg_cuda_launch_fill(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    pg_cuda_iter it;
    pg_cuda_iter_of(&it, &n->dst, NULL, NULL);
    void *dst = pg_cuda_tensor_data(&n->dst);
    double f = n->p.scalar.f;
    bool zero = pg_cuda_is_float(n->dst.dtype) ? (f == 0.0 && !signbit(f)) : n->p.scalar.i == 0;
    if (zero && pg_cuda_iter_contiguous(&it) && it.numel > 0)
        return PG_CUDA_KERNEL_STATUS(
            d, n, "cudaMemsetAsync",
            cudaMemsetAsync(dst, 0, (size_t)it.numel * pg_cuda_itemsize(n->dst.dtype),
                            pg_cuda_noted(ctx, "cudaMemsetAsync")));
    /* a half fill writes the value's bits, rounded once from the double here as the CPU does */
    int64_t i = n->dst.dtype == PG_FLOAT16    ? (int64_t)pg_f16_from_double(f)
                : n->dst.dtype == PG_BFLOAT16 ? (int64_t)pg_bf16_from_double(f)
                                              : n->p.scalar.i;
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_fill",
                                 pg_kernel_fill(ctx, n->dst.dtype, dst, &it, f, i));
}

pg_status pg_cuda_launch_copy(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    pg_cuda_iter it;
    pg_cuda_iter_of(&it, &n->dst, &n->src[0], NULL);
    void *dst = pg_cuda_tensor_data(&n->dst);
    const void *src = pg_cuda_tensor_data(&n->src[0]);
    if (n->dst.dtype == n->src[0].dtype && pg_cuda_iter_contiguous(&it) && it.numel > 0)
        return PG_CUDA_KERNEL_STATUS(
            d, n, "cudaMemcpyAsync",
            cudaMemcpyAsync(dst, src, (size_t)it.numel * pg_cuda_itemsize(n->dst.dtype),
                            cudaMemcpyDeviceToDevice, ctx->stream));
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_copy",
                                 pg_kernel_copy(ctx, n->dst.dtype, dst, n->src[0].dtype, src, &it));
}

pg_status pg_cuda_launch_binary(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    pg_cuda_iter it;
    bool scalar = n->nsrc == 1;
    pg_cuda_iter_of(&it, &n->dst, &n->src[0], scalar ? NULL : &n->src[1]);
    /* a half op's scalar is applied as a float32 (pg_node.h): the kernel converts it */
    pg_cuda_scalar s = {n->p.scalar.f, n->p.scalar.i, n->p.scalar.scalar_left};
    cudaError_t err = pg_kernel_binary(ctx, n->subop, n->src[0].dtype, pg_cuda_tensor_data(&n->dst),
                                       pg_cuda_tensor_data(&n->src[0]),
                                       scalar ? NULL : pg_cuda_tensor_data(&n->src[1]), &s, &it);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_binary", err);
}

/* TERNARY (addcmul, addcdiv, lerp): dst and two or three sources, all of dst's shape */
pg_status pg_cuda_launch_ternary(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    pg_cuda_iter it;
    bool three = n->nsrc == 3;
    const int64_t *strides[4] = {n->dst.strides, n->src[0].strides, n->src[1].strides,
                                 three ? n->src[2].strides : n->src[1].strides};
    pg_cuda_iter_init(&it, n->dst.ndim, n->dst.shape, three ? 4 : 3, strides);
    cudaError_t err = pg_kernel_ternary(ctx, n->subop, n->dst.dtype, pg_cuda_tensor_data(&n->dst),
                                        pg_cuda_tensor_data(&n->src[0]),
                                        pg_cuda_tensor_data(&n->src[1]),
                                        three ? pg_cuda_tensor_data(&n->src[2]) : NULL,
                                        n->p.ternary.value, &it);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_ternary", err);
}

pg_status pg_cuda_launch_unary(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    pg_cuda_iter it;
    pg_cuda_iter_of(&it, &n->dst, &n->src[0], NULL);
    cudaError_t err = pg_kernel_unary(ctx, n->subop, n->src[0].dtype, pg_cuda_tensor_data(&n->dst),
                                      pg_cuda_tensor_data(&n->src[0]), &it);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_unary", err);
}

/* where: dst = cond ? a : dst */
pg_status pg_cuda_launch_select(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    pg_cuda_iter it;
    pg_cuda_iter_of(&it, &n->dst, &n->src[0], &n->src[1]);
    cudaError_t err = pg_kernel_select(ctx, (int)pg_cuda_itemsize(n->dst.dtype),
                                       pg_cuda_tensor_data(&n->dst), pg_cuda_tensor_data(&n->src[0]),
                                       pg_cuda_tensor_data(&n->src[1]), &it);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_select", err);
}

/* dst (..., 1, ...) = reduce of src (..., len, ...) over `axis`. */
pg_status pg_cuda_launch_reduce(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    const pg_tensor *src = &n->src[0], *dst = &n->dst;
    /* the sum of a half tensor is written as float32 (pg_node.h); a node that says
     * otherwise (a core from before that contract) is refused, not misread */
    if (n->subop == PG_RED_SUM && pg_cuda_is_half(src->dtype) && dst->dtype != PG_FLOAT32)
        return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_reduce", cudaErrorInvalidValue);
    int axis = n->p.reduce.axis, ndim = 0;
    int64_t shape[PG_MAX_DIMS] = {0}, dst_strides[PG_MAX_DIMS] = {0}, src_strides[PG_MAX_DIMS] = {0};
    for (int k = 0; k < src->ndim; k++) {
        if (k == axis)
            continue;
        shape[ndim] = dst->shape[k];
        dst_strides[ndim] = dst->strides[k];
        src_strides[ndim++] = src->strides[k];
    }
    const int64_t *strides[2] = {dst_strides, src_strides};
    pg_cuda_iter outer;
    pg_cuda_iter_init(&outer, ndim, shape, 2, strides);
    cudaError_t err = pg_kernel_reduce(ctx, n->subop, src->dtype, pg_cuda_tensor_data(dst),
                                       pg_cuda_tensor_data(src), &outer, src->shape[axis],
                                       src->strides[axis]);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_reduce", err);
}

pg_status pg_cuda_launch_matmul(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    const pg_tensor *a = &n->src[0], *b = &n->src[1], *c = &n->dst;
    if (pg_cuda_is_float(c->dtype)) { /* the GEMM contract: cuda_gemm.c */
        pg_gemm g;
        pg_gemm_of_matmul(a, b, c, pg_cuda_tensor_data(a), pg_cuda_tensor_data(b),
                          pg_cuda_tensor_data(c), &g);
        return pg_cuda_gemm(d, ctx, &g, n->name);
    }
    /* integers: the tiled kernel of kernels/matmul.cu (cuBLAS has no integer GEMM) */
    pg_cuda_matmul_args args = {
        .dtype = c->dtype,
        .batch = c->shape[0], .m = c->shape[1], .k = a->shape[2], .n = c->shape[2],
        .a = pg_cuda_tensor_data(a), .a_strides = {a->strides[0], a->strides[1], a->strides[2]},
        .b = pg_cuda_tensor_data(b), .b_strides = {b->strides[0], b->strides[1], b->strides[2]},
        .c = pg_cuda_tensor_data(c),
    };
    cublasStatus_t blas_st;
    cudaError_t err = pg_kernel_matmul(ctx, NULL, 0, &args, &blas_st);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_matmul", err);
}

pg_status pg_cuda_launch_arange(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    cudaError_t err = pg_kernel_arange(ctx, n->dst.dtype, pg_cuda_tensor_data(&n->dst),
                                       pg_cuda_numel(&n->dst), n->p.arange.start, n->p.arange.step);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_arange", err);
}

pg_status pg_cuda_launch_random(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    cudaError_t err = pg_kernel_random(ctx, n->subop, n->dst.dtype, pg_cuda_tensor_data(&n->dst),
                                       pg_cuda_numel(&n->dst), n->p.random.seed,
                                       n->p.random.offset);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_random", err);
}

/* operands: csrc/core/pg_ops_amp.c */
pg_status pg_cuda_launch_amp_unscale(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    cudaError_t err = pg_kernel_amp_unscale(ctx, n->dst.dtype, pg_cuda_tensor_data(&n->dst),
                                            pg_cuda_numel(&n->dst), n->p.amp.inv_scale,
                                            (float *)pg_cuda_tensor_data(&n->extra[0]));
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_amp_unscale", err);
}

/* ---- the row ops (kernels/rows.cu); operands: csrc/core/pg_ops_train.c, pg_ops_elementwise.c */

/* SOFTMAX: dst (R,C) = softmax of src0's rows (log_softmax: the row's LOG flag), both
 * contiguous */
pg_status pg_cuda_launch_softmax(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    int log = (pg_subop_flags(n->subop) & PG_SUBF_LOG) != 0;
    cudaError_t err = pg_kernel_softmax_rows(ctx, n->dst.dtype, log,
                                             pg_cuda_tensor_data(&n->src[0]),
                                             pg_cuda_tensor_data(&n->dst), n->dst.shape[0],
                                             n->dst.shape[1]);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_softmax_rows", err);
}

/* an optional operand's device pointer: NULL where the node's slot is empty */
static void *opt_data(const pg_tensor *t) { return t->storage ? pg_cuda_tensor_data(t) : NULL; }

/* LAYER_NORM (operands: csrc/core/pg_ops_norm.c). FWD: src0 x (R,C), src1 w, src2 b,
 * extra0 the rows' mean and rstd (R,2) (each optional); BWD: src0 dy, src1 x, src2 w,
 * src3 save, dst dx, extra0 dw, extra1 db */
pg_status pg_cuda_launch_layer_norm(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    int64_t R = n->dst.shape[0], C = n->dst.shape[1];
    if (n->subop == PG_LAYER_NORM_BWD) {
        cudaError_t err = pg_kernel_layer_norm_bwd_rows(
            ctx, n->dst.dtype, pg_cuda_tensor_data(&n->src[0]), pg_cuda_tensor_data(&n->src[1]),
            opt_data(&n->src[2]), pg_cuda_tensor_data(&n->src[3]), pg_cuda_tensor_data(&n->dst),
            opt_data(&n->extra[0]), opt_data(&n->extra[1]), R, C);
        return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_layer_norm_bwd_rows", err);
    }
    cudaError_t err = pg_kernel_layer_norm_rows(ctx, n->dst.dtype, pg_cuda_tensor_data(&n->src[0]),
                                                pg_cuda_tensor_data(&n->dst), opt_data(&n->src[1]),
                                                opt_data(&n->src[2]), opt_data(&n->extra[0]), R, C,
                                                n->p.norm.eps);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_layer_norm_rows", err);
}

/* CLAMP: dst = min(max(src0, lo), hi), any strides (in place: dst is src0); not hardtanh's
 * gradient (p.clamp.grad), which supports_node declines (pg_cuda_clamp_runs) */
bool pg_cuda_clamp_runs(const pg_node *n) { return !n->p.clamp.grad; }

pg_status pg_cuda_launch_clamp(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    if (n->p.clamp.grad)
        return pg_cuda_error(PG_ERR_RUNTIME, "hardtanh_backward: the cuda kernels have no "
                                             "gradient form of CLAMP");
    pg_cuda_iter it;
    pg_cuda_iter_of(&it, &n->dst, &n->src[0], NULL);
    cudaError_t err = pg_kernel_clamp(ctx, n->dst.dtype, pg_cuda_tensor_data(&n->dst),
                                      pg_cuda_tensor_data(&n->src[0]), &it, n->p.clamp.lo,
                                      n->p.clamp.hi);
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_clamp", err);
}

/* ---- the launch table: one launcher per node kind, from the PG_NODE rows' cuda column --- */

typedef struct pg_cuda_node_entry {
    pg_cuda_launcher launch; /* NULL: no kernel (NO_CUDA) */
    bool halves;             /* runs float16/bfloat16 operands too (CUDA_HALF, CUDA_ALL) */
    bool narrow_ints;        /* runs int8, uint8, int16 and int32 too (CUDA_ALL) */
} pg_cuda_node_entry;

#define CUDA(launcher) {launcher, false, false}
#define CUDA_HALF(launcher) {launcher, true, false}
#define CUDA_ALL(launcher) {launcher, true, true}
#define NO_CUDA {NULL, false, false}
static const pg_cuda_node_entry pg_cuda_nodes[PG_NUM_OPS] = {
#define PG_NODE(ID, params, cpu, split, panels, cuda, ...) [PG_OP_##ID] = cuda,
#include "pg_ops.def"
};
#undef CUDA
#undef CUDA_HALF
#undef CUDA_ALL
#undef NO_CUDA

bool pg_cuda_runs_op(int op, int dtype)
{
    if (op < 0 || op >= PG_NUM_OPS || pg_cuda_nodes[op].launch == NULL || dtype < 0 ||
        dtype >= PG_NUM_DTYPES)
        return false;
    /* float8: the cpu's casts (pg_fp8.h) only; a shell dtype's bytewise copy: cpu and sim */
    if (pg_dtype_is_fp8((pg_dtype)dtype) || pg_dtype_is_shell((pg_dtype)dtype))
        return false;
    /* the integers beside int64 (uint64 too) run where the "every dtype" dispatch does */
    if (pg_dtype_is_int((pg_dtype)dtype) && dtype != PG_INT64)
        return pg_cuda_nodes[op].narrow_ints;
    return pg_cuda_nodes[op].halves || !pg_cuda_is_half(dtype);
}

static pg_status pg_cuda_launch_node(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    if (n->op < 0 || n->op >= PG_NUM_OPS || pg_cuda_nodes[n->op].launch == NULL)
        return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: %s: op %d has no CUDA kernel", d->index,
                             n->name, n->op);
    return pg_cuda_nodes[n->op].launch(d, ctx, n);
}

pg_status pg_cuda_launch(const pg_backend *be, int index, const pg_node *node)
{
    (void)be;
    pg_cuda_device *d;
    PG_TRY(pg_cuda_device_get(index, node->name, &d));
    const pg_tensor *outs[1 + PG_NODE_MAX_EXTRA];
    int nout = pg_node_outputs(node, outs);
    pg_cuda_queue *q = &d->compute;
    /* the calling thread's current user stream on d, where the op runs, or NULL */
    pg_cuda_ustream *u = pg_cuda_current_ustream(d->index);
    if (u != NULL && u->capture != NULL)
        PG_TRY(pg_cuda_graph_refuse_frozen(d->index, node));
    for (int i = 0; i < node->nsrc; i++)
        if (node->src[i].storage) /* optional operands of fused ops may be absent */
            PG_TRY(pg_cuda_order_after_on(node->src[i].storage, q, u));
    for (int i = 0; i < nout; i++)
        PG_TRY(pg_cuda_order_after_on(outs[i]->storage, q, u));
    for (int i = 0, len = pg_node_list_len(node); i < len; i++) /* a list node's entries */
        if (pg_node_list_at(node, i)->storage)
            PG_TRY(pg_cuda_order_after_on(pg_node_list_at(node, i)->storage, q, u));
    /* compute's own work, queued since this thread's user stream last looked
     * (cuda_stream.c); ops on a user stream count as compute work (q) */
    PG_TRY(pg_cuda_stream_before_op(d, node->name));
    pg_cuda_ctx ctx = {pg_cuda_work_stream(d), d->sm_count, d->eflags_dev, NULL,
                       atomic_load(&pg_cuda.allow_tf32)};
    pg_cuda_prof prof;
    PG_TRY(pg_cuda_profile_begin(d, ctx.stream, node->name, &prof));
    if (prof.prof_id != 0)
        ctx.log = &prof.log.base;
    pg_status launched = pg_cuda_launch_node(d, &ctx, node);
    pg_cuda_profile_end(d, ctx.stream, &prof, launched == PG_OK);
    PG_TRY(launched);

    uint64_t seq = pg_cuda_note_queued_on(q, node->name, u);
    for (int i = 0; i < node->nsrc; i++)
        if (node->src[i].storage)
            pg_cuda_mark(node->src[i].storage, q, seq, false);
    for (int i = 0; i < nout; i++) {
        pg_cuda_mark(outs[i]->storage, q, seq, true);
        /* Every byte is rewritten by work ordered after whatever failed before, so the
         * failure a past wait recorded in this storage no longer describes it (as sim,
         * which clears once the op ran: here a failure of this op is recorded afresh
         * by the next wait that sees it). */
        if (pg_cuda.core->tensor_covers_storage(outs[i]))
            pg_cuda.core->storage_clear_error(outs[i]->storage);
    }
    for (int i = 0, len = pg_node_list_len(node); i < len; i++) { /* as above, per entry */
        const pg_tensor *t = pg_node_list_at(node, i);
        if (!t->storage)
            continue;
        bool writes = pg_node_list_writes(node, i);
        pg_cuda_mark(t->storage, q, seq, writes);
        if (writes && pg_cuda.core->tensor_covers_storage(t))
            pg_cuda.core->storage_clear_error(t->storage);
    }
    pg_cuda_stream_after_op(d, seq);
    if (u != NULL && u->capture != NULL)
        PG_TRY(pg_cuda_graph_note_op(u, node));
    if (atomic_load(&pg_cuda.sync_each_op))
        return pg_cuda_queue_sync(q, "cudaStreamSynchronize");
    return PG_OK;
}
