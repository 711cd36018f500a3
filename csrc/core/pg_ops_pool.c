/* pg_ops_pool.c - the generic layer of 2-d pooling: max, average and adaptive windows over
 * (N, C, H, W), and their gradients (pg_ops_conv.h lists the node's operands).
 *
 * The caller (pygpu/_ops/_conv.py) computes the output size, ceil_mode included, as
 * PyTorch does; here the geometry is checked again (kernel, stride, padding at most half
 * the kernel, an output of at least one element) with PyTorch's messages. */
#include <string.h>

#include "pg_backend.h"
#include "pg_ops.h"
#include "pg_ops_conv.h"

/* what a POOL row's flags say (pg_subops.def) */
static bool has_flag(int kind, unsigned flag) { return (pg_subop_flags(kind) & flag) != 0; }

static pg_status check_geom(const char *op, bool adaptive, const int64_t *x_shape,
                            const int64_t kernel[2], const int64_t stride[2],
                            const int64_t pad[2], const int64_t dilation[2],
                            const int64_t out_hw[2], pg_conv_geom *g)
{
    memset(g, 0, sizeof *g);
    for (int k = 0; k < 2; k++)
        if (out_hw[k] <= 0 || out_hw[k] > INT32_MAX)
            return pg_error_set(PG_ERR_RUNTIME, "%s: Given input size: (%lldx%lldx%lld). "
                                                "Calculated output size: (%lldx%lldx%lld). "
                                                "Output size is too small", op,
                                (long long)x_shape[1], (long long)x_shape[2],
                                (long long)x_shape[3], (long long)x_shape[1],
                                (long long)out_hw[0], (long long)out_hw[1]);
    if (adaptive)
        return PG_OK;
    for (int k = 0; k < 2; k++) {
        if (kernel[k] <= 0 || kernel[k] > INT32_MAX)
            return pg_error_set(PG_ERR_RUNTIME, "%s: kernel size should be greater than zero, "
                                                "but got kH: %lld kW: %lld", op,
                                (long long)kernel[0], (long long)kernel[1]);
        if (stride[k] <= 0 || stride[k] > INT32_MAX)
            return pg_error_set(PG_ERR_RUNTIME, "%s: stride should be greater than zero, but "
                                                "got dH: %lld dW: %lld", op,
                                (long long)stride[0], (long long)stride[1]);
        if (dilation[k] <= 0 || dilation[k] > INT32_MAX)
            return pg_error_set(PG_ERR_RUNTIME, "%s: dilation should be greater than zero, but "
                                                "got dilationH: %lld dilationW: %lld", op,
                                (long long)dilation[0], (long long)dilation[1]);
        if (pad[k] < 0)
            return pg_error_set(PG_ERR_RUNTIME, "%s: negative padding is not supported", op);
        if (pad[k] > ((kernel[k] - 1) * dilation[k] + 1) / 2)
            return pg_error_set(PG_ERR_RUNTIME, "%s: pad should be at most half of effective "
                                                "kernel size, but got pad=%lld, kernel_size=%lld "
                                                "and dilation=%lld", op, (long long)pad[k],
                                (long long)kernel[k], (long long)dilation[k]);
    }
    g->kh = (int32_t)kernel[0];
    g->kw = (int32_t)kernel[1];
    g->sh = (int32_t)stride[0];
    g->sw = (int32_t)stride[1];
    g->ph = (int32_t)pad[0];
    g->pw = (int32_t)pad[1];
    g->dh = (int32_t)dilation[0];
    g->dw = (int32_t)dilation[1];
    return PG_OK;
}

pg_status pg_op_pool2d(int kind, const pg_tensor *x, const int64_t kernel[2],
                       const int64_t stride[2], const int64_t pad[2], const int64_t dilation[2],
                       const int64_t out_hw[2], bool count_include_pad, int64_t divisor,
                       bool want_idx, pg_tensor *y, pg_tensor *idx)
{
    const char *op = "pool2d";
    pg_tensor_out_init(y, NULL);
    pg_tensor_out_init(idx, NULL);
    if (pg_subop_node(kind) != PG_OP_POOL || has_flag(kind, PG_SUBF_BWD))
        return pg_error_set(PG_ERR_VALUE, "%s: %s is not a pooling", op, pg_subop_id(kind));
    PG_TRY(pg_conv_check_operand(op, "input", x, NULL, 4));
    if (x->shape[2] <= 0 || x->shape[3] <= 0)
        return pg_error_set(PG_ERR_RUNTIME, "%s: Expected input's non-batch dimensions to have "
                                            "positive length", op);
    if (divisor < 0 || divisor > INT32_MAX)
        return pg_error_set(PG_ERR_RUNTIME, "%s: divisor must be not zero", op);
    pg_node n;
    pg_node_start(&n, PG_OP_POOL, kind, op);
    PG_TRY(check_geom(op, has_flag(kind, PG_SUBF_ADAPTIVE), x->shape, kernel, stride, pad,
                      dilation, out_hw, &n.p.conv));
    n.p.conv.flags = count_include_pad ? PG_POOL_F_COUNT_PAD : 0;
    n.p.conv.divisor = (int32_t)divisor;
    pg_device dev = pg_tensor_device(x);
    PG_TRY(pg_backend_check_op(dev, PG_OP_POOL, x->dtype, op));
    int64_t shape[4] = {x->shape[0], x->shape[1], out_hw[0], out_hw[1]};
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)x->dtype, 4, shape, &n.dst));
    n.nextra = 1;
    if (want_idx && has_flag(kind, PG_SUBF_MAX)) {
        pg_status st = pg_tensor_empty(dev, PG_INT64, 4, shape, &n.extra[0]);
        if (st != PG_OK) {
            pg_tensor_clear(&n.dst);
            return st;
        }
    }
    if (pg_tensor_numel(&n.dst) > 0) {
        const pg_tensor *in[1] = {x};
        PG_TRY(pg_conv_launch(&n, 1, in));
    }
    *y = n.dst;
    *idx = n.extra[0];
    return PG_OK;
}

pg_status pg_op_pool2d_backward(int kind, const pg_tensor *dy, const pg_tensor *idx,
                                const int64_t x_shape[4], const int64_t kernel[2],
                                const int64_t stride[2], const int64_t pad[2],
                                bool count_include_pad, int64_t divisor, pg_tensor *dx)
{
    const char *op = "pool2d_backward";
    pg_tensor_out_init(dx, NULL);
    if (pg_subop_node(kind) != PG_OP_POOL || !has_flag(kind, PG_SUBF_BWD))
        return pg_error_set(PG_ERR_VALUE, "%s: %s is not a pooling gradient", op,
                            pg_subop_id(kind));
    PG_TRY(pg_conv_check_operand(op, "grad_output", dy, NULL, 4));
    if (dy->shape[0] != x_shape[0] || dy->shape[1] != x_shape[1])
        return pg_error_set(PG_ERR_SHAPE, "%s: grad_output's (N, C) does not match the input's",
                            op);
    if (divisor < 0 || divisor > INT32_MAX)
        return pg_error_set(PG_ERR_RUNTIME, "%s: divisor must be not zero", op);
    pg_node n;
    pg_node_start(&n, PG_OP_POOL, kind, op);
    const pg_tensor *in[2] = {dy, NULL};
    int nin = 1;
    if (has_flag(kind, PG_SUBF_MAX)) { /* through the forward's indices */
        if (!idx || idx->dtype != PG_INT64 || idx->ndim != 4 ||
            memcmp(idx->shape, dy->shape, sizeof(int64_t) * 4) != 0)
            return pg_error_set(PG_ERR_SHAPE, "%s: the max pooling's indices must be int64 and "
                                              "shaped as grad_output", op);
        PG_TRY(pg_check_same_device(op, dy, idx));
        in[nin++] = idx;
        /* the windows' extent and stride when the caller knows them (else 0: adaptive
         * windows), so that a backend may scatter without ordering where no two windows
         * overlap (cuda's conv_layers.cu); every backend's result stays the CPU's */
        for (int i = 0; i < 2 && kernel && stride; i++)
            if (kernel[i] <= 0 || kernel[i] > INT32_MAX || stride[i] <= 0 || stride[i] > INT32_MAX)
                kernel = NULL;
        if (kernel && stride) {
            n.p.conv.kh = (int32_t)kernel[0];
            n.p.conv.kw = (int32_t)kernel[1];
            n.p.conv.sh = (int32_t)stride[0];
            n.p.conv.sw = (int32_t)stride[1];
        }
    } else {
        int64_t d1[2] = {1, 1};
        PG_TRY(check_geom(op, has_flag(kind, PG_SUBF_ADAPTIVE), x_shape, kernel, stride, pad, d1,
                          &dy->shape[2], &n.p.conv));
    }
    n.p.conv.flags = count_include_pad ? PG_POOL_F_COUNT_PAD : 0;
    n.p.conv.divisor = (int32_t)divisor;
    pg_device dev = pg_tensor_device(dy);
    PG_TRY(pg_backend_check_op(dev, PG_OP_POOL, dy->dtype, op));
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)dy->dtype, 4, x_shape, &n.dst));
    if (pg_tensor_numel(&n.dst) > 0)
        PG_TRY(pg_conv_launch(&n, nin, in));
    *dx = n.dst;
    return PG_OK;
}
