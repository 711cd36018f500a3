/* pg_ops_norm.c - the generic layer of batch normalization in training: one node forward
 * (the statistics, the running statistics' update and the output), one node backward
 * (pg_ops_conv.h lists the operands). x is (N, C, ...) of any rank >= 2, seen as (N, C, L).
 * Evaluation (the running statistics) is a per-channel scale and shift: tensor ops. */
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
