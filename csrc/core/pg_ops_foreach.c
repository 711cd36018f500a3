/* pg_ops_foreach.c - the list ops of torch.nn.utils.clip_grad_norm_ and torch._foreach_*:
 * each checked once here and run as ONE node over a list of tensors (pg_node.h
 * pg_node_list), however many there are.
 *
 *   MULTI_NORM  list: (x_i) read          dst: () float32/float64, the p-norm of them all
 *   MULTI       subop BINARY, p.scalar unused (src1 is a tensor):
 *               list: (x_i, s, x_i)       x_i = x_i <op> s, s one element broadcast
 *
 * The tensors of one call share a device and a dtype (float32 or float64; the Python layer
 * groups them, as torch's foreach path groups by device and dtype) and are contiguous. */
#include <math.h>
#include <string.h>

#include "pg_backend.h"
#include "pg_ops.h"

static pg_status check_list_tensor(const char *op, const pg_tensor *first, const pg_tensor *t)
{
    if (t->dtype != PG_FLOAT32 && t->dtype != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: a list op takes float32 or float64 tensors, got %s",
                            op, pg_dtype_name((pg_dtype)t->dtype));
    if (t->dtype != first->dtype)
        return pg_error_set(PG_ERR_DTYPE, "%s: a list op takes one dtype, got %s and %s (group the "
                            "tensors by dtype)", op, pg_dtype_name((pg_dtype)first->dtype),
                            pg_dtype_name((pg_dtype)t->dtype));
    PG_TRY(pg_check_same_device(op, first, t));
    if (!pg_tensor_is_contiguous(t))
        return pg_error_set(PG_ERR_VALUE, "%s: a list op takes contiguous tensors", op);
    return PG_OK;
}

pg_status pg_op_multi_norm(int count, const pg_tensor *const *x, double norm_type, pg_tensor *out)
{
    const char *op = "_foreach_norm";
    if (count <= 0)
        return pg_error_set(PG_ERR_VALUE, "%s: an empty list has no device", op);
    for (int i = 0; i < count; i++)
        PG_TRY(check_list_tensor(op, x[0], x[i]));
    if (norm_type < 0 || isnan(norm_type))
        return pg_error_set(PG_ERR_VALUE, "%s: the norm's order must be >= 0 or inf, got %g", op,
                            norm_type);
    PG_TRY(pg_backend_check_op(pg_tensor_device(x[0]), PG_OP_MULTI_NORM, x[0]->dtype, op));
    pg_node_list *list;
    PG_TRY(pg_node_list_new(count, 1, 0, &list));
    for (int i = 0; i < count; i++) {
        list->t[(size_t)i * (size_t)list->width] = *x[i]; /* borrowed; slot 1: no dst */
        list->total += pg_tensor_numel(x[i]);
    }
    pg_status st = pg_tensor_empty(pg_tensor_device(x[0]), (pg_dtype)x[0]->dtype, 0, NULL, out);
    if (st == PG_OK) {
        pg_node n;
        pg_node_start(&n, PG_OP_MULTI_NORM, 0, op);
        n.p.scalar.f = norm_type;
        n.dst = *out;
        n.list = list;
        st = pg_launch(&n);
        if (st != PG_OK)
            pg_tensor_clear(out);
    }
    pg_node_list_release(list);
    return st;
}

pg_status pg_op_foreach_binary_(int bop, int count, const pg_tensor *const *x, const pg_tensor *s)
{
    const char *op = pg_binary_name(bop);
    const int in = pg_binary_in(bop);
    if (pg_binary_out(bop) != PG_OUT_SAME ||
        !(in == PG_IN_ANY || in == PG_IN_NUM || in == PG_IN_FLOAT || in == PG_IN_NUMF))
        return pg_error_set(PG_ERR_DTYPE, "%s: a list op updates float tensors in place: its "
                            "result must be a float of the tensors' dtype", op);
    if (count <= 0)
        return PG_OK;
    for (int i = 0; i < count; i++) {
        PG_TRY(check_list_tensor(op, x[0], x[i]));
        if (x[i]->storage->flags & PG_STORAGE_READONLY)
            return pg_error_set(PG_ERR_VALUE, "%s: tensor %d of the list is read-only", op, i);
    }
    PG_TRY(check_list_tensor(op, x[0], s));
    if (pg_tensor_numel(s) != 1)
        return pg_error_set(PG_ERR_SHAPE, "%s: the list's other operand must have one element, "
                            "got %lld", op, (long long)pg_tensor_numel(s));
    PG_TRY(pg_backend_check_op(pg_tensor_device(x[0]), PG_OP_MULTI, x[0]->dtype, op));
    pg_node_list *list;
    PG_TRY(pg_node_list_new(count, 2, 0, &list));
    list->subop = bop;
    for (int i = 0; i < count; i++) { /* the BINARY node x_i = x_i <op> s */
        pg_tensor *e = &list->t[(size_t)i * (size_t)list->width];
        e[0] = *x[i];
        e[1] = *s;
        e[2] = *x[i];
        list->total += pg_tensor_numel(x[i]);
    }
    pg_status st = PG_OK;
    if (list->total > 0) {
        pg_node n;
        pg_node_start(&n, PG_OP_MULTI, PG_OP_BINARY, op);
        n.dst = *x[0];
        n.list = list;
        st = pg_launch(&n);
    }
    pg_node_list_release(list);
    return st;
}
