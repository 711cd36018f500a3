/* pg_ops_reduce.c - checked reductions: sum, mean, max, min, argmax.
 *
 * Several axes reduce one at a time, the highest first; the input is made
 * contiguous so every backend sees a plain (outer, R, inner) block. Result
 * dtypes follow PyTorch: sum of bool and of every integer dtype is int64, max and
 * min keep the dtype, argmax is int64 (a flat index when no axis is given); mean of
 * integers is float64 (NumPy's; PyTorch refuses it). bool and the integers narrower
 * than int64 are reduced as int64 (a cast first; max and min cast back, exact; an order
 * reduces uint64's order key, pg_op_order_key, so 2**63 and above are its largest), so
 * the backends' reduction kernels see int64, the floats and the halves only.
 *
 * float16/bfloat16: max, min and argmax reduce the half tensor as it is. A
 * sum's node reads the half input and writes float32 (the backend accumulates
 * in float32 or wider), later axes reduce that float32, and the result is
 * rounded once to the input's dtype at the end; a mean divides the float32
 * sum before that one rounding. So the only float32 tensor is the size of the
 * result, never of the input (NumPy's float16 sum and mean, pairwise aside). */
#include "pg_ops.h"
#include "pg_backend.h"

#include <stdlib.h>
#include <string.h>

static const char *const red_names[PG_NUM_REDUCE] = {
#define PG_REDUCE(ID, name, py, grad, doc, ...) #name,
#include "pg_ops.def"
};

const char *pg_reduce_name(int op) { return red_names[op]; }

/* Reduce contiguous `c` over `axis`, keeping it as length 1. */
static pg_status reduce_axis(int op, const pg_tensor *c, int axis, pg_tensor *out)
{
    const char *name = red_names[op];
    if (c->shape[axis] == 0 && op != PG_RED_SUM)
        return pg_error_set(PG_ERR_VALUE,
                            "%s: cannot reduce over an empty axis (axis %d has length 0): %s has "
                            "no identity",
                            name, axis, name);
    int64_t shape[PG_MAX_DIMS];
    memcpy(shape, c->shape, sizeof shape);
    shape[axis] = 1;
    int dt = op == PG_RED_ARGMAX                                ? PG_INT64
             : op == PG_RED_SUM && pg_dtype_is_half((pg_dtype)c->dtype) ? PG_FLOAT32
                                                                      : c->dtype;
    PG_TRY(pg_tensor_empty(pg_tensor_device(c), (pg_dtype)dt, c->ndim, shape, out));
    if (pg_tensor_numel(out) == 0)
        return PG_OK;
    pg_status st;
    if (c->shape[axis] == 0) {
        pg_scalar zero = {PG_SCALAR_INT, 0.0, 0};
        st = pg_op_fill(out, zero);
    } else {
        pg_node n;
        n.nextra = 0;
        n.op = PG_OP_REDUCE;
        n.subop = op;
        n.nsrc = 1;
        n.src[0] = *c;
        n.dst = *out;
        n.p.reduce.axis = axis;
        n.name = name;
        st = pg_launch(&n);
    }
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

static int cmp_desc(const void *a, const void *b) { return *(const int *)b - *(const int *)a; }

/* pg_op_reduce; a half sum is left in float32 (`wide_sum`, for the mean) */
static pg_status reduce(int op, const pg_tensor *a, int naxes, const int *axes, bool keepdims,
                        bool wide_sum, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    const char *name = red_names[op];
    bool widen = a->dtype == PG_BOOL || pg_dtype_is_narrow_int((pg_dtype)a->dtype);
    int work = widen ? PG_INT64 : a->dtype;
    PG_TRY(pg_backend_check_op(pg_tensor_device(a), PG_OP_REDUCE, work, name));
    bool back_to_dtype = widen && (op == PG_RED_MAX || op == PG_RED_MIN); /* back to a->dtype */
    bool back_to_half = op == PG_RED_SUM && pg_dtype_is_half((pg_dtype)a->dtype) && !wide_sum;

    int ax[PG_MAX_DIMS];
    bool reduced[PG_MAX_DIMS] = {false};
    int nax = 0;
    if (axes) {
        if (op == PG_RED_ARGMAX && naxes != 1)
            return pg_error_set(PG_ERR_TYPE, "argmax takes a single axis (an int) or None");
        for (int i = 0; i < naxes; i++) {
            int x = axes[i] < 0 ? axes[i] + a->ndim : axes[i];
            if (x < 0 || x >= a->ndim)
                return pg_error_set(PG_ERR_AXIS, "%s: axis %d is out of bounds for array of "
                                                 "dimension %d",
                                    name, axes[i], a->ndim);
            if (reduced[x])
                return pg_error_set(PG_ERR_VALUE, "%s: duplicate value in axis: %d", name, axes[i]);
            reduced[x] = true;
            ax[nax++] = x;
        }
        qsort(ax, (size_t)nax, sizeof(int), cmp_desc);
    }

    pg_tensor cur, next;
    pg_tensor cast;
    pg_status st;
    if (widen && op != PG_RED_SUM) { /* an order: uint64's needs its key, not int64's bits */
        PG_TRY(pg_op_order_key(a, &cur));
    } else {
        if (work != a->dtype)
            PG_TRY(pg_op_astype(a, (pg_dtype)work, &cast));
        else
            pg_tensor_ref(a, &cast);
        st = pg_op_contiguous(&cast, &cur);
        pg_tensor_clear(&cast);
        if (st != PG_OK)
            return st;
    }

    if (!axes) { /* everything: flatten and reduce the one axis */
        int64_t n = pg_tensor_numel(&cur);
        st = pg_view_reshape(&cur, 1, &n, &next);
        pg_tensor_clear(&cur);
        if (st != PG_OK)
            return st;
        cur = next;
        st = reduce_axis(op, &cur, 0, &next);
        pg_tensor_clear(&cur);
        if (st != PG_OK)
            return st;
        cur = next;
        for (int d = 0; d < a->ndim; d++)
            reduced[d] = true;
    } else {
        for (int i = 0; i < nax && st == PG_OK; i++) {
            st = reduce_axis(op, &cur, ax[i], &next);
            pg_tensor_clear(&cur);
            if (st != PG_OK)
                return st;
            cur = next;
        }
    }
    /* final shape: the input's, with reduced axes as 1 (keepdims) or dropped */
    int64_t shape[PG_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < a->ndim; d++) {
        if (!reduced[d])
            shape[nd++] = a->shape[d];
        else if (keepdims)
            shape[nd++] = 1;
    }
    st = pg_view_reshape(&cur, nd, shape, &next);
    pg_tensor_clear(&cur);
    if (st != PG_OK)
        return st;
    if (!back_to_dtype && !back_to_half) {
        *out = next;
        return PG_OK;
    }
    st = back_to_dtype ? pg_op_order_key_back(&next, (pg_dtype)a->dtype, out)
                       : pg_op_astype(&next, (pg_dtype)a->dtype, out);
    pg_tensor_clear(&next);
    return st;
}

pg_status pg_op_reduce(int op, const pg_tensor *a, int naxes, const int *axes, bool keepdims,
                       pg_tensor *out)
{
    return reduce(op, a, naxes, axes, keepdims, false, out);
}

pg_status pg_op_mean(const pg_tensor *a, int naxes, const int *axes, bool keepdims, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    PG_TRY(pg_backend_check_op(pg_tensor_device(a), PG_OP_REDUCE,
                               pg_dtype_is_float((pg_dtype)a->dtype) ? a->dtype : PG_FLOAT64, "mean"));
    int64_t count = 1;
    if (axes) {
        for (int i = 0; i < naxes; i++) {
            int x = axes[i] < 0 ? axes[i] + a->ndim : axes[i];
            if (x >= 0 && x < a->ndim)
                count *= a->shape[x];
        }
    } else {
        count = pg_tensor_numel(a);
    }
    pg_tensor src, sum;
    if (!pg_dtype_is_float((pg_dtype)a->dtype))
        PG_TRY(pg_op_astype(a, PG_FLOAT64, &src));
    else
        pg_tensor_ref(a, &src);
    bool half = pg_dtype_is_half((pg_dtype)a->dtype);
    pg_status st = reduce(PG_RED_SUM, &src, naxes, axes, keepdims, half, &sum);
    pg_tensor_clear(&src);
    if (st != PG_OK)
        return st;
    pg_scalar n = {PG_SCALAR_FLOAT, (double)count, 0};
    pg_tensor q;
    st = pg_op_binary_scalar(PG_BIN_DIV, &sum, n, false, half ? &q : out);
    pg_tensor_clear(&sum);
    if (st != PG_OK || !half)
        return st;
    st = pg_op_astype(&q, (pg_dtype)a->dtype, out); /* the float32 mean, rounded once */
    pg_tensor_clear(&q);
    return st;
}
