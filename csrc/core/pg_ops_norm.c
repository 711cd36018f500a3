/* pg_ops_norm.c - the generic layer of the normalizations, checked once here.
 *
 * Batch normalization in training: one node forward (the statistics, the running
 * statistics' update and the output), one node backward (pg_ops_conv.h lists the
 * operands). x is (N, C, ...) of any rank >= 2, seen as (N, C, L). Evaluation (the running
 * statistics) without a gradient is one EVAL_FWD node: a per-channel scale and shift, the
 * ReLU or ReLU6 after it fused (it was five tensor nodes over x, issue 45); with a gradient
 * it stays tensor ops (pygpu/nn/_normalization.py).
 *
 * Layer normalization over x's last axis: x seen as contiguous rows (R, C), one LAYER_NORM
 * node each way (its subop FWD or BWD, pg_subops.def), operands in slot order:
 *   FWD  src: x (R,C), w (C) | none, b (C) | none       dst: y (R,C)
 *        extra: save (R,2) | none: each row's mean and 1/sqrt(var + eps), what
 *        PyTorch's native_layer_norm returns for its backward; p.norm.eps
 *   BWD  src: dy (R,C), x (R,C), w (C) | none, save (R,2)
 *        dst: dx (R,C); extra: dw (C) | none, db (C) | none
 * The backward reads the saved statistics instead of recomputing them, and computes all
 * three gradients in one pass pair over the rows (pygpu/_ops/_layer_norm.py's composite
 * ran about twenty whole-tensor nodes for them). */
#include <string.h>

#include "pg_backend.h"
#include "pg_ops.h"
#include "pg_ops_conv.h"

/* x's shape as (N, C, L) */
static pg_status ncl(const char *op, const pg_tensor *x, int64_t s[3])
{
    if (x->ndim < 2)
        return pg_error_set(PG_ERR_VALUE, "%s: expected an input of 2 or more dimensions "
                                          "(N, C, ...), got %d-d", op, x->ndim);
    s[0] = x->shape[0];
    s[1] = x->shape[1];
    s[2] = 1;
    for (int d = 2; d < x->ndim; d++)
        s[2] *= x->shape[d];
    return PG_OK;
}

static void as_ncl(pg_tensor *t, const int64_t s[3])
{
    t->ndim = 3;
    memcpy(t->shape, s, sizeof(int64_t) * 3);
    pg_contiguous_strides(3, s, t->strides);
}

static pg_status check_channel_vec(const char *op, const char *what, const pg_tensor *t,
                                   const pg_tensor *x, int64_t C)
{
    if (!t)
        return PG_OK;
    PG_TRY(pg_conv_check_operand(op, what, t, x, -1));
    if (t->ndim != 1 || t->shape[0] != C)
        return pg_error_set(PG_ERR_RUNTIME, "%s: %s should contain %lld elements not %lld", op,
                            what, (long long)C, (long long)pg_tensor_numel(t));
    return PG_OK;
}

pg_status pg_op_batch_norm_train(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b,
                                 const pg_tensor *running_mean, const pg_tensor *running_var,
                                 double momentum, double eps, bool relu, pg_tensor *y,
                                 pg_tensor *save)
{
    const char *op = "batch_norm";
    pg_tensor_out_init(y, NULL);
    pg_tensor_out_init(save, NULL);
    PG_TRY(pg_conv_check_operand(op, "input", x, NULL, -1));
    int64_t s[3];
    PG_TRY(ncl(op, x, s));
    if (s[0] * s[2] <= 1) {
        char xs[96];
        return pg_error_set(PG_ERR_VALUE, "Expected more than 1 value per channel when "
                                          "training, got input size %s",
                            pg_shape_str(x->ndim, x->shape, xs, sizeof xs));
    }
    PG_TRY(check_channel_vec(op, "weight", w, x, s[1]));
    PG_TRY(check_channel_vec(op, "bias", b, x, s[1]));
    PG_TRY(check_channel_vec(op, "running_mean", running_mean, x, s[1]));
    PG_TRY(check_channel_vec(op, "running_var", running_var, x, s[1]));
    if (!running_mean != !running_var)
        return pg_error_set(PG_ERR_VALUE, "%s: give both running_mean and running_var or "
                                          "neither", op);
    const pg_tensor *rs[2] = {running_mean, running_var};
    for (int k = 0; k < 2; k++)
        if (rs[k] && !pg_tensor_is_contiguous(rs[k]))
            return pg_error_set(PG_ERR_VALUE, "%s: the running statistics must be contiguous",
                                op);
    pg_device dev = pg_tensor_device(x);
    PG_TRY(pg_backend_check_op(dev, PG_OP_BATCH_NORM, x->dtype, op));
    pg_node n;
    pg_node_start(&n, PG_OP_BATCH_NORM, PG_BATCH_NORM_TRAIN_FWD, op);
    n.p.norm.eps = eps;
    n.p.norm.momentum = momentum;
    n.p.norm.flags = relu ? PG_BN_F_RELU : 0;
    n.nextra = 3;
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)x->dtype, x->ndim, x->shape, &n.dst));
    int64_t ss[2] = {2, s[1]};
    pg_status st = pg_tensor_empty(dev, (pg_dtype)x->dtype, 2, ss, &n.extra[0]);
    if (st != PG_OK) {
        pg_tensor_clear(&n.dst);
        return st;
    }
    if (running_mean) { /* written in place: outputs as well as sources */
        pg_tensor_ref(running_mean, &n.extra[1]);
        pg_tensor_ref(running_var, &n.extra[2]);
    }
    pg_tensor yv = n.dst;
    as_ncl(&n.dst, s);
    const pg_tensor *in[5] = {x, w, b, running_mean, running_var};
    st = pg_conv_launch(&n, 5, in);
    for (int k = 1; k < 3; k++)
        if (st == PG_OK && n.extra[k].storage)
            pg_tensor_clear(&n.extra[k]);
    PG_TRY(st);
    *y = yv;
    *save = n.extra[0];
    return PG_OK;
}

pg_status pg_op_batch_norm_eval(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b,
                                const pg_tensor *running_mean, const pg_tensor *running_var,
                                double eps, int act, pg_tensor *y)
{
    const char *op = "batch_norm";
    pg_tensor_out_init(y, NULL);
    PG_TRY(pg_conv_check_operand(op, "input", x, NULL, -1));
    int64_t s[3];
    PG_TRY(ncl(op, x, s));
    if (!running_mean || !running_var)
        return pg_error_set(PG_ERR_RUNTIME, "running_mean and running_var must be defined in "
                                            "evaluation mode");
    if (act != 0 && act != PG_BN_F_RELU && act != PG_BN_F_RELU6)
        return pg_error_set(PG_ERR_VALUE, "%s: act must be 0, ReLU or ReLU6", op);
    PG_TRY(check_channel_vec(op, "weight", w, x, s[1]));
    PG_TRY(check_channel_vec(op, "bias", b, x, s[1]));
    PG_TRY(check_channel_vec(op, "running_mean", running_mean, x, s[1]));
    PG_TRY(check_channel_vec(op, "running_var", running_var, x, s[1]));
    pg_device dev = pg_tensor_device(x);
    PG_TRY(pg_backend_check_op(dev, PG_OP_BATCH_NORM, x->dtype, op));
    pg_node n;
    pg_node_start(&n, PG_OP_BATCH_NORM, PG_BATCH_NORM_EVAL_FWD, op);
    n.p.norm.eps = eps;
    n.p.norm.flags = act;
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)x->dtype, x->ndim, x->shape, &n.dst));
    pg_tensor yv = n.dst;
    as_ncl(&n.dst, s);
    /* x as (N, C, L): pg_conv_launch makes the sources contiguous, so a view of x is read
     * in its logical order; the (C) vectors likewise */
    pg_tensor xv;
    pg_status st = pg_op_contiguous(x, &xv);
    if (st != PG_OK) {
        pg_tensor_clear(&n.dst);
        return st;
    }
    as_ncl(&xv, s);
    const pg_tensor *in[5] = {&xv, w, b, running_mean, running_var};
    st = pg_conv_launch(&n, 5, in);
    pg_tensor_clear(&xv);
    PG_TRY(st);
    *y = yv;
    return PG_OK;
}

pg_status pg_op_batch_norm_backward(const pg_tensor *dy, const pg_tensor *x, const pg_tensor *w,
                                    const pg_tensor *save, const pg_tensor *y, bool want_dw,
                                    bool want_db, pg_tensor *dx, pg_tensor *dw, pg_tensor *db)
{
    const char *op = "batch_norm_backward";
    pg_tensor_out_init(dx, NULL);
    pg_tensor_out_init(dw, NULL);
    pg_tensor_out_init(db, NULL);
    PG_TRY(pg_conv_check_operand(op, "input", x, NULL, -1));
    PG_TRY(pg_conv_check_operand(op, "grad_output", dy, x, x->ndim));
    if (memcmp(dy->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
        return pg_error_set(PG_ERR_SHAPE, "%s: grad_output is not shaped as the input", op);
    int64_t s[3];
    PG_TRY(ncl(op, x, s));
    PG_TRY(check_channel_vec(op, "weight", w, x, s[1]));
    PG_TRY(pg_conv_check_operand(op, "saved statistics", save, x, 2));
    if (save->shape[0] != 2 || save->shape[1] != s[1])
        return pg_error_set(PG_ERR_SHAPE, "%s: the saved statistics must be (2, C)", op);
    if (y) {
        PG_TRY(pg_conv_check_operand(op, "output", y, x, x->ndim));
        if (memcmp(y->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
            return pg_error_set(PG_ERR_SHAPE, "%s: the output is not shaped as the input", op);
    }
    pg_device dev = pg_tensor_device(x);
    PG_TRY(pg_backend_check_op(dev, PG_OP_BATCH_NORM, x->dtype, op));
    pg_node n;
    pg_node_start(&n, PG_OP_BATCH_NORM, PG_BATCH_NORM_TRAIN_BWD, op);
    n.p.norm.flags = y ? PG_BN_F_RELU : 0;
    n.nextra = 2;
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)x->dtype, x->ndim, x->shape, &n.dst));
    pg_status st = PG_OK;
    if (want_dw)
        st = pg_tensor_empty(dev, (pg_dtype)x->dtype, 1, &s[1], &n.extra[0]);
    if (st == PG_OK && want_db)
        st = pg_tensor_empty(dev, (pg_dtype)x->dtype, 1, &s[1], &n.extra[1]);
    if (st != PG_OK) {
        pg_tensor_clear(&n.dst);
        if (n.extra[0].storage)
            pg_tensor_clear(&n.extra[0]);
        return st;
    }
    pg_tensor dxv = n.dst;
    as_ncl(&n.dst, s);
    pg_tensor xv, dyv, yv;
    memset(&yv, 0, sizeof yv);
    PG_TRY(pg_op_contiguous(x, &xv)); /* as (N, C, L) views: made contiguous first */
    st = pg_op_contiguous(dy, &dyv);
    if (st == PG_OK && y)
        st = pg_op_contiguous(y, &yv);
    if (st != PG_OK) {
        pg_tensor_clear(&xv);
        if (dyv.storage)
            pg_tensor_clear(&dyv);
        pg_tensor_clear(&n.dst);
        for (int k = 0; k < 2; k++)
            if (n.extra[k].storage)
                pg_tensor_clear(&n.extra[k]);
        return st;
    }
    as_ncl(&xv, s);
    as_ncl(&dyv, s);
    if (y)
        as_ncl(&yv, s);
    const pg_tensor *in[5] = {&dyv, &xv, w, save, y ? &yv : NULL};
    st = pg_conv_launch(&n, 5, in);
    pg_tensor_clear(&xv);
    pg_tensor_clear(&dyv);
    if (yv.storage)
        pg_tensor_clear(&yv);
    PG_TRY(st);
    *dx = dxv;
    *dw = n.extra[0];
    *db = n.extra[1];
    return PG_OK;
}

/* ---- layer norm --------------------------------------------------------------------------- */

/* t seen as a contiguous (R, C) matrix */
static void as_rows(pg_tensor *t, int64_t R, int64_t C)
{
    t->ndim = 2;
    t->shape[0] = R;
    t->shape[1] = C;
    pg_contiguous_strides(2, t->shape, t->strides);
}

/* w or b: NULL, or (C,) of x's dtype and device */
static pg_status check_row_vec(const char *op, const char *what, const pg_tensor *t,
                               const pg_tensor *x, int64_t C)
{
    if (!t)
        return PG_OK;
    PG_TRY(pg_conv_check_operand(op, what, t, x, -1));
    if (t->ndim != 1 || t->shape[0] != C) {
        char a[96];
        return pg_error_set(PG_ERR_SHAPE, "%s: %s has shape %s, expected [%lld]", op, what,
                            pg_shape_str(t->ndim, t->shape, a, sizeof a), (long long)C);
    }
    return PG_OK;
}

/* Launch `n` with its sources `in` made contiguous (NULL entries stay empty slots), the
 * first `rows` of them seen as (R, C); dst (and the extras) were allocated by the caller
 * and are released on failure. */
static pg_status ln_launch(pg_node *n, int nin, const pg_tensor *const *in, int rows,
                           int64_t R, int64_t C)
{
    pg_status st = PG_OK;
    memset(n->src, 0, sizeof n->src);
    for (int i = 0; i < nin && st == PG_OK; i++)
        if (in[i])
            st = pg_op_contiguous(in[i], &n->src[i]);
    n->nsrc = nin;
    for (int i = 0; i < rows && st == PG_OK; i++)
        as_rows(&n->src[i], R, C);
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

pg_status pg_op_layer_norm_rows(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b,
                                double eps, pg_tensor *out, pg_tensor *save)
{
    const char *op = "layer_norm";
    pg_tensor_out_init(out, NULL);
    if (save)
        pg_tensor_out_init(save, NULL);
    if (x->dtype != PG_FLOAT32 && x->dtype != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: the one-node layer_norm takes float32 or "
                                          "float64, got %s", op, pg_dtype_name((pg_dtype)x->dtype));
    if (x->ndim == 0)
        return pg_error_set(PG_ERR_SHAPE, "%s: the one-node layer_norm needs an axis", op);
    int64_t C = x->shape[x->ndim - 1], R = C ? pg_tensor_numel(x) / C : 0;
    PG_TRY(check_row_vec(op, "weight", w, x, C));
    PG_TRY(check_row_vec(op, "bias", b, x, C));
    pg_device dev = pg_tensor_device(x);
    PG_TRY(pg_backend_check_op(dev, PG_OP_LAYER_NORM, x->dtype, op));
    pg_node n;
    pg_node_start(&n, PG_OP_LAYER_NORM, PG_LAYER_NORM_FWD, op);
    n.p.norm.eps = eps;
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)x->dtype, x->ndim, x->shape, &n.dst));
    if (save) {
        int64_t ss[2] = {R, 2};
        pg_status st = pg_tensor_empty(dev, (pg_dtype)x->dtype, 2, ss, &n.extra[0]);
        if (st != PG_OK) {
            pg_tensor_clear(&n.dst);
            return st;
        }
        n.nextra = 1;
    }
    pg_tensor yv = n.dst;
    if (R > 0 && C > 0) {
        as_rows(&n.dst, R, C);
        const pg_tensor *in[3] = {x, w, b};
        PG_TRY(ln_launch(&n, 3, in, 1, R, C));
    }
    *out = yv;
    if (save)
        *save = n.extra[0];
    return PG_OK;
}

pg_status pg_op_layer_norm_backward(const pg_tensor *dy, const pg_tensor *x, const pg_tensor *w,
                                    const pg_tensor *save, bool want_dw, bool want_db,
                                    pg_tensor *dx, pg_tensor *dw, pg_tensor *db)
{
    const char *op = "layer_norm_backward";
    pg_tensor_out_init(dx, NULL);
    pg_tensor_out_init(dw, NULL);
    pg_tensor_out_init(db, NULL);
    PG_TRY(pg_conv_check_operand(op, "input", x, NULL, -1));
    if (x->ndim == 0)
        return pg_error_set(PG_ERR_SHAPE, "%s: the one-node layer_norm needs an axis", op);
    PG_TRY(pg_conv_check_operand(op, "grad_output", dy, x, x->ndim));
    if (memcmp(dy->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
        return pg_error_set(PG_ERR_SHAPE, "%s: grad_output is not shaped as the input", op);
    int64_t C = x->shape[x->ndim - 1], R = C ? pg_tensor_numel(x) / C : 0;
    PG_TRY(check_row_vec(op, "weight", w, x, C));
    PG_TRY(pg_conv_check_operand(op, "saved statistics", save, x, 2));
    if (save->shape[0] != R || save->shape[1] != 2)
        return pg_error_set(PG_ERR_SHAPE, "%s: the saved statistics must be (%lld, 2), one "
                                          "row per row of the input", op, (long long)R);
    pg_device dev = pg_tensor_device(x);
    PG_TRY(pg_backend_check_op(dev, PG_OP_LAYER_NORM, x->dtype, op));
    pg_node n;
    pg_node_start(&n, PG_OP_LAYER_NORM, PG_LAYER_NORM_BWD, op);
    n.nextra = 2;
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)x->dtype, x->ndim, x->shape, &n.dst));
    pg_status st = PG_OK;
    if (want_dw)
        st = pg_tensor_empty(dev, (pg_dtype)x->dtype, 1, &C, &n.extra[0]);
    if (st == PG_OK && want_db)
        st = pg_tensor_empty(dev, (pg_dtype)x->dtype, 1, &C, &n.extra[1]);
    if (st == PG_OK && R == 0) /* no rows: dw and db are sums of nothing */
        for (int k = 0; k < 2 && st == PG_OK; k++)
            if (n.extra[k].storage)
                st = pg_op_fill(&n.extra[k], (pg_scalar){.kind = PG_SCALAR_FLOAT, .f = 0.0});
    if (st != PG_OK) {
        pg_tensor_clear(&n.dst);
        for (int k = 0; k < 2; k++)
            if (n.extra[k].storage)
                pg_tensor_clear(&n.extra[k]);
        return st;
    }
    pg_tensor dxv = n.dst;
    if (R > 0 && C > 0) {
        as_rows(&n.dst, R, C);
        const pg_tensor *in[4] = {dy, x, w, save};
        PG_TRY(ln_launch(&n, 4, in, 2, R, C));
    }
    *dx = dxv;
    *dw = n.extra[0];
    *db = n.extra[1];
    return PG_OK;
}
