/* pg_ops_conv.c - the generic layer of convolution: forward, input and weight gradients.
 *
 * Checks once, with PyTorch's messages (channel counts, groups, kernel against the padded
 * input, negative padding, the bias's size), before any node: the backends then trust the
 * node (pg_ops_conv.h lists its operands). Also the small checks the pooling and batch
 * norm files share (pg_conv_check_operand, pg_conv_launch). */
#include <stdio.h>
#include <string.h>

#include "pg_backend.h"
#include "pg_ops.h"
#include "pg_ops_conv.h"

pg_status pg_conv_check_operand(const char *op, const char *what, const pg_tensor *t,
                                const pg_tensor *like, int ndim)
{
    if (t->dtype != PG_FLOAT32 && t->dtype != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: %s must be float32 or float64, got %s", op, what,
                            pg_dtype_name((pg_dtype)t->dtype));
    if (like && t->dtype != like->dtype)
        return pg_error_set(PG_ERR_DTYPE, "%s: %s is %s but the input is %s; convert with "
                                          ".to()", op, what, pg_dtype_name((pg_dtype)t->dtype),
                            pg_dtype_name((pg_dtype)like->dtype));
    if (like)
        PG_TRY(pg_check_same_device(op, like, t));
    if (ndim >= 0 && t->ndim != ndim)
        return pg_error_set(PG_ERR_RUNTIME, "%s: expected %s to be %d-d, got %d-d", op, what,
                            ndim, t->ndim);
    return PG_OK;
}

/* Launch `n` (its sources given as `in`, made contiguous here), with dst and extras
 * allocated by the caller; on failure every output is released. */
pg_status pg_conv_launch(pg_node *n, int nin, const pg_tensor *const *in)
{
    pg_status st = PG_OK;
    memset(n->src, 0, sizeof n->src);
    for (int i = 0; i < nin && st == PG_OK; i++)
        if (in[i])
            st = pg_op_contiguous(in[i], &n->src[i]);
    n->nsrc = nin;
    if (st == PG_OK)
        st = pg_launch(n);
    for (int i = 0; i < nin; i++)
        if (n->src[i].storage)
            pg_tensor_clear(&n->src[i]);
    if (st != PG_OK) {
        pg_tensor_clear(&n->dst);
        for (int i = 0; i < n->nextra; i++)
            if (n->extra[i].storage)
                pg_tensor_clear(&n->extra[i]);
    }
    return st;
}

static void shape4_str(const int64_t *s, char *buf, int len)
{
    snprintf(buf, (size_t)len, "[%lld, %lld, %lld, %lld]", (long long)s[0], (long long)s[1],
             (long long)s[2], (long long)s[3]);
}

/* The geometry's own values, then the weight against the input's channels (PyTorch's
 * messages: at::native's conv checks). */
static pg_status check_args(const char *op, const pg_conv_args *a, const int64_t *w_shape)
{
    for (int k = 0; k < 2; k++) {
        if (a->stride[k] <= 0)
            return pg_error_set(PG_ERR_RUNTIME, "%s: non-positive stride is not supported", op);
        if (a->dilation[k] <= 0)
            return pg_error_set(PG_ERR_RUNTIME, "%s: dilation should be greater than zero", op);
        if (a->pad_before[k] < 0 || a->pad_after[k] < 0)
            return pg_error_set(PG_ERR_RUNTIME, "%s: negative padding is not supported", op);
        if (a->stride[k] > INT32_MAX || a->dilation[k] > INT32_MAX ||
            a->pad_before[k] > INT32_MAX || w_shape[2 + k] > INT32_MAX)
            return pg_error_set(PG_ERR_VALUE, "%s: stride, padding, dilation and kernel size "
                                              "must fit 32 bits", op);
    }
    if (a->groups <= 0 || a->groups > INT32_MAX)
        return pg_error_set(PG_ERR_RUNTIME, "%s: non-positive groups is not supported", op);
    if (w_shape[0] % a->groups != 0) {
        char ws[96];
        shape4_str(w_shape, ws, sizeof ws);
        return pg_error_set(PG_ERR_RUNTIME, "Given groups=%lld, expected weight to be divisible "
                                            "by %lld at dimension 0, but got weight of size %s "
                                            "instead", (long long)a->groups,
                            (long long)a->groups, ws);
    }
    for (int k = 0; k < 4; k++)
        if (w_shape[k] <= 0) {
            char ws[96];
            shape4_str(w_shape, ws, sizeof ws);
            return pg_error_set(PG_ERR_RUNTIME, "%s: weight of size %s has an empty dimension",
                                op, ws);
        }
    return PG_OK;
}

/* The output size of one axis, or a message when the kernel does not fit. */
static pg_status out_size(const char *op, const int64_t *x_shape, const int64_t *w_shape,
                          const pg_conv_args *a, int64_t *oh, int64_t *ow)
{
    int64_t o[2];
    for (int k = 0; k < 2; k++) {
        int64_t padded = x_shape[2 + k] + a->pad_before[k] + a->pad_after[k];
        int64_t span = a->dilation[k] * (w_shape[2 + k] - 1) + 1;
        if (padded < span)
            return pg_error_set(PG_ERR_RUNTIME, "%s: Calculated padded input size per channel: "
                                                "(%lld x %lld). Kernel size: (%lld x %lld). "
                                                "Kernel size can't be greater than actual input "
                                                "size", op,
                                (long long)(x_shape[2] + a->pad_before[0] + a->pad_after[0]),
                                (long long)(x_shape[3] + a->pad_before[1] + a->pad_after[1]),
                                (long long)(a->dilation[0] * (w_shape[2] - 1) + 1),
                                (long long)(a->dilation[1] * (w_shape[3] - 1) + 1));
        o[k] = (padded - span) / a->stride[k] + 1;
    }
    *oh = o[0];
    *ow = o[1];
    return PG_OK;
}

static pg_status check_channels(const int64_t *x_shape, const int64_t *w_shape,
                                const pg_conv_args *a)
{
    if (x_shape[1] == w_shape[1] * a->groups)
        return PG_OK;
    char ws[96], xs[96];
    shape4_str(w_shape, ws, sizeof ws);
    shape4_str(x_shape, xs, sizeof xs);
    return pg_error_set(PG_ERR_RUNTIME, "Given groups=%lld, weight of size %s, expected "
                                        "input%s to have %lld channels, but got %lld channels "
                                        "instead", (long long)a->groups, ws, xs,
                        (long long)(w_shape[1] * a->groups), (long long)x_shape[1]);
}

static pg_status check_bias(const int64_t *w_shape, const pg_tensor *b, int64_t n)
{
    if (b->ndim == 1 && b->shape[0] == n)
        return PG_OK;
    char ws[96], bs[96];
    shape4_str(w_shape, ws, sizeof ws);
    pg_shape_str(b->ndim, b->shape, bs, sizeof bs);
    return pg_error_set(PG_ERR_RUNTIME, "Given weight of size %s, expected bias to be "
                                        "1-dimensional with %lld elements, but got bias of size "
                                        "%s instead", ws, (long long)n, bs);
}

static void geom_of(const pg_conv_args *a, const int64_t *w_shape, pg_conv_geom *g)
{
    memset(g, 0, sizeof *g);
    g->kh = (int32_t)w_shape[2];
    g->kw = (int32_t)w_shape[3];
    g->sh = (int32_t)a->stride[0];
    g->sw = (int32_t)a->stride[1];
    g->ph = (int32_t)a->pad_before[0];
    g->pw = (int32_t)a->pad_before[1];
    g->dh = (int32_t)a->dilation[0];
    g->dw = (int32_t)a->dilation[1];
    g->groups = (int32_t)a->groups;
}

static void node_init(pg_node *n, int subop, const char *name, const pg_conv_args *a,
                      const int64_t *w_shape)
{
    memset(n, 0, sizeof *n);
    n->op = PG_OP_CONV;
    n->subop = subop;
    n->name = name;
    geom_of(a, w_shape, &n->p.conv);
}

/* dst described, not allocated: its dtype and 4-d shape (a question's node: supports_node) */
static void describe_dst(pg_node *n, int dtype, const int64_t shape[4])
{
    memset(&n->dst, 0, sizeof n->dst);
    n->dst.dtype = dtype;
    n->dst.ndim = 4;
    memcpy(n->dst.shape, shape, sizeof(int64_t) * 4);
}

/* the operands as the node's sources (borrowed: the node is described, not launched) */
static void describe_srcs(pg_node *n, int nin, const pg_tensor *const *in)
{
    memset(n->src, 0, sizeof n->src);
    n->nsrc = nin;
    for (int i = 0; i < nin; i++)
        if (in[i])
            n->src[i] = *in[i];
}

pg_status pg_conv2d_node(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b,
                         const pg_conv_args *a, pg_node *n)
{
    const char *op = "conv2d";
    PG_TRY(pg_conv_check_operand(op, "input", x, NULL, 4));
    PG_TRY(pg_conv_check_operand(op, "weight", w, x, 4));
    PG_TRY(check_args(op, a, w->shape));
    PG_TRY(check_channels(x->shape, w->shape, a));
    if (b) {
        PG_TRY(pg_conv_check_operand(op, "bias", b, x, -1));
        PG_TRY(check_bias(w->shape, b, w->shape[0]));
    }
    int64_t oh, ow;
    PG_TRY(out_size(op, x->shape, w->shape, a, &oh, &ow));
    int64_t shape[4] = {x->shape[0], w->shape[0], oh, ow};
    node_init(n, PG_CONV_FWD, op, a, w->shape);
    const pg_tensor *in[3] = {x, w, b};
    describe_srcs(n, 3, in);
    describe_dst(n, x->dtype, shape);
    return PG_OK;
}

pg_status pg_op_conv2d(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b,
                       const pg_conv_args *a, pg_tensor *y)
{
    pg_tensor_out_init(y, NULL);
    pg_node n;
    PG_TRY(pg_conv2d_node(x, w, b, a, &n));
    pg_device dev = pg_tensor_device(x);
    PG_TRY(pg_backend_check_op(dev, PG_OP_CONV, x->dtype, n.name));
    int64_t shape[4];
    memcpy(shape, n.dst.shape, sizeof shape);
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)x->dtype, 4, shape, &n.dst));
    if (pg_tensor_numel(&n.dst) == 0) {
        *y = n.dst;
        return PG_OK;
    }
    const pg_tensor *in[3] = {x, w, b};
    PG_TRY(pg_conv_launch(&n, 3, in));
    *y = n.dst;
    return PG_OK;
}

pg_status pg_conv2d_input_backward_node(const pg_tensor *dy, const pg_tensor *w,
                                        const pg_tensor *b, const int64_t x_shape[4],
                                        const pg_conv_args *a, pg_node *n)
{
    const char *op = "conv2d_input_backward";
    PG_TRY(pg_conv_check_operand(op, "grad_output", dy, NULL, 4));
    PG_TRY(pg_conv_check_operand(op, "weight", w, dy, 4));
    PG_TRY(check_args(op, a, w->shape));
    for (int k = 0; k < 4; k++)
        if (x_shape[k] < 0)
            return pg_error_set(PG_ERR_VALUE, "%s: negative input size", op);
    PG_TRY(check_channels(x_shape, w->shape, a));
    if (b) {
        PG_TRY(pg_conv_check_operand(op, "bias", b, dy, -1));
        PG_TRY(check_bias(w->shape, b, x_shape[1]));
    }
    int64_t oh, ow;
    PG_TRY(out_size(op, x_shape, w->shape, a, &oh, &ow));
    int64_t want[4] = {x_shape[0], w->shape[0], oh, ow};
    if (memcmp(want, dy->shape, sizeof want) != 0) {
        char ds[96], ws[96];
        shape4_str(dy->shape, ds, sizeof ds);
        shape4_str(want, ws, sizeof ws);
        return pg_error_set(PG_ERR_RUNTIME, "%s: grad_output of size %s, expected %s", op, ds,
                            ws);
    }
    node_init(n, PG_CONV_BWD_DATA, op, a, w->shape);
    const pg_tensor *in[3] = {dy, w, b};
    describe_srcs(n, 3, in);
    describe_dst(n, dy->dtype, x_shape);
    return PG_OK;
}

pg_status pg_op_conv2d_input_backward(const pg_tensor *dy, const pg_tensor *w,
                                      const pg_tensor *b, const int64_t x_shape[4],
                                      const pg_conv_args *a, pg_tensor *dx)
{
    pg_tensor_out_init(dx, NULL);
    pg_node n;
    PG_TRY(pg_conv2d_input_backward_node(dy, w, b, x_shape, a, &n));
    pg_device dev = pg_tensor_device(dy);
    PG_TRY(pg_backend_check_op(dev, PG_OP_CONV, dy->dtype, n.name));
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)dy->dtype, 4, x_shape, &n.dst));
    if (pg_tensor_numel(&n.dst) == 0) {
        *dx = n.dst;
        return PG_OK;
    }
    const pg_tensor *in[3] = {dy, w, b};
    PG_TRY(pg_conv_launch(&n, 3, in));
    *dx = n.dst;
    return PG_OK;
}

pg_status pg_op_conv2d_weight_backward(const pg_tensor *dy, const pg_tensor *x,
                                       const int64_t w_shape[4], const pg_conv_args *a,
                                       bool want_db, pg_tensor *dw, pg_tensor *db)
{
    const char *op = "conv2d_weight_backward";
    pg_tensor_out_init(dw, NULL);
    pg_tensor_out_init(db, NULL);
    PG_TRY(pg_conv_check_operand(op, "grad_output", dy, NULL, 4));
    PG_TRY(pg_conv_check_operand(op, "input", x, dy, 4));
    PG_TRY(check_args(op, a, w_shape));
    PG_TRY(check_channels(x->shape, w_shape, a));
    int64_t oh, ow;
    PG_TRY(out_size(op, x->shape, w_shape, a, &oh, &ow));
    int64_t want[4] = {x->shape[0], w_shape[0], oh, ow};
    if (memcmp(want, dy->shape, sizeof want) != 0) {
        char ds[96], ws[96];
        shape4_str(dy->shape, ds, sizeof ds);
        shape4_str(want, ws, sizeof ws);
        return pg_error_set(PG_ERR_RUNTIME, "%s: grad_output of size %s, expected %s", op, ds,
                            ws);
    }
    pg_device dev = pg_tensor_device(dy);
    PG_TRY(pg_backend_check_op(dev, PG_OP_CONV, dy->dtype, op));
    pg_node n;
    node_init(&n, PG_CONV_BWD_WEIGHT, op, a, w_shape);
    n.nextra = 1;
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)dy->dtype, 4, w_shape, &n.dst));
    pg_status st = want_db ? pg_tensor_empty(dev, (pg_dtype)dy->dtype, 1, w_shape, &n.extra[0])
                           : PG_OK;
    if (st != PG_OK) {
        pg_tensor_clear(&n.dst);
        return st;
    }
    const pg_tensor *in[2] = {dy, x};
    PG_TRY(pg_conv_launch(&n, 2, in)); /* N == 0 still launches: dW and db become zeros */
    *dw = n.dst;
    if (want_db)
        *db = n.extra[0];
    return PG_OK;
}
