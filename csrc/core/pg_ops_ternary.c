/* pg_ops_ternary.c - addcmul, addcdiv and lerp as one TERNARY node: three operands read
 * and one result written in a single pass, where the composition of rows (a product, a
 * scale, an add) makes three passes and two temporaries. The optimizers written in Python
 * (NAdam, RAdam: pygpu/optim/adam_variants.py) run on them.
 *
 * float32 and float64 only (pygpu/_tensor/math.py composes the other dtypes from rows).
 * The operands are cast to their common dtype (PyTorch's promotion, pg_dtype_result) and
 * broadcast to the result's shape; the in-place form writes self (src0), whose shape and
 * dtype must be the result's, as PyTorch's addcmul_ requires. value is applied in the
 * computed dtype. */
#include "pg_ops.h"

#include <string.h>

#include "pg_backend.h"

/* each TERNARY row's operand count (its nsrc column, pg_subops.def) */
static int operands_of(int op)
{
    static const signed char t[PG_NUM_SUBOPS] = {
#define PG_SUBOP_TERNARY(ID, name, flags, nsrc, ...) [PG_TERNARY_##ID] = nsrc,
#include "pg_subops.def"
    };
    return op >= 0 && op < PG_NUM_SUBOPS ? t[op] : 0;
}

/* self (src0) is written in place when `inplace`; else `out` is a new tensor. */
static pg_status ternary(int op, const pg_tensor *a, const pg_tensor *b, const pg_tensor *c,
                         double value, bool inplace, pg_tensor *out)
{
    if (pg_subop_node(op) != PG_OP_TERNARY)
        return pg_error_set(PG_ERR_VALUE, "ternary: %s is not a TERNARY sub-op", pg_subop_id(op));
    const char *name = pg_subop_name(op);
    bool three = operands_of(op) == 3;
    if (three != (c != NULL))
        return pg_error_set(PG_ERR_VALUE, "%s: internal: %s operands expected", name,
                            three ? "three" : "two");
    PG_TRY(pg_check_same_device(name, a, b));
    if (c)
        PG_TRY(pg_check_same_device(name, a, c));
    pg_tensor ab = *b; /* only dtype and ndim are read: the promotion of a, b (and c) */
    int dt;
    PG_TRY(pg_dtype_result(a, b, &dt));
    if (c) {
        pg_tensor tmp = *c;
        ab.dtype = dt;
        PG_TRY(pg_dtype_result(&ab, &tmp, &dt));
    }
    char dev[24];
    pg_device_str(pg_tensor_device(a), dev, sizeof dev);
    if (dt != PG_FLOAT32 && dt != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: the one-pass kernel takes float32 or float64, got "
                                          "%s on %s", name, pg_dtype_name((pg_dtype)dt), dev);
    PG_TRY(pg_backend_check_op(pg_tensor_device(a), PG_OP_TERNARY, dt, name));
    int nd, nd2;
    int64_t s1[PG_MAX_DIMS], shape[PG_MAX_DIMS];
    PG_TRY(pg_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &nd, s1, name));
    if (c)
        PG_TRY(pg_broadcast_shapes(nd, s1, c->ndim, c->shape, &nd2, shape, name));
    else {
        nd2 = nd;
        memcpy(shape, s1, sizeof(int64_t) * (size_t)nd);
    }
    if (inplace) {
        char x[160], y[160];
        if (a->storage->flags & PG_STORAGE_READONLY)
            return pg_error_set(PG_ERR_VALUE, "%s_: the tensor is read-only", name);
        if (a->dtype != dt)
            return pg_error_set(PG_ERR_DTYPE, "%s_: result type %s can't be cast to the desired "
                                              "output type %s", name,
                                pg_dtype_name((pg_dtype)dt), pg_dtype_name((pg_dtype)a->dtype));
        if (nd2 != a->ndim || memcmp(shape, a->shape, sizeof(int64_t) * (size_t)nd2) != 0)
            return pg_error_set(PG_ERR_SHAPE, "%s_: output with shape %s doesn't match the "
                                              "broadcast shape %s", name,
                                pg_shape_str(a->ndim, a->shape, x, sizeof x),
                                pg_shape_str(nd2, shape, y, sizeof y));
        pg_tensor_ref(a, out);
    } else {
        pg_tensor_out_init(out, NULL);
        PG_TRY(pg_tensor_empty(pg_tensor_device(a), (pg_dtype)dt, nd2, shape, out));
    }
    if (pg_tensor_numel(out) == 0)
        return PG_OK;
    pg_node n;
    pg_node_start(&n, PG_OP_TERNARY, op, name);
    n.p.ternary.value = value;
    const pg_tensor *srcs[3] = {a, b, c};
    const int nsrc = three ? 3 : 2;
    pg_status st = PG_OK;
    for (int i = 0; i < nsrc && st == PG_OK; i++)
        st = pg_prepare_operand(srcs[i], dt, nd2, shape, &n.src[i]);
    return pg_launch_and_clear(&n, nsrc, out, out, st);
}

pg_status pg_op_ternary(int op, const pg_tensor *a, const pg_tensor *b, const pg_tensor *c,
                        double value, pg_tensor *out)
{
    return ternary(op, a, b, c, value, false, out);
}

/* Another view of self's memory (self.addcmul_(self.T, ...)) would be read after parts of
 * it were written: such a call computes into a new tensor and copies it back. */
static bool aliases(const pg_tensor *self, const pg_tensor *t)
{
    if (!t || t->storage != self->storage)
        return false;
    return !(t->offset == self->offset && t->ndim == self->ndim &&
             memcmp(t->shape, self->shape, sizeof(int64_t) * (size_t)t->ndim) == 0 &&
             memcmp(t->strides, self->strides, sizeof(int64_t) * (size_t)t->ndim) == 0);
}

pg_status pg_op_ternary_(int op, const pg_tensor *self, const pg_tensor *b, const pg_tensor *c,
                         double value)
{
    pg_tensor ref;
    if (aliases(self, b) || aliases(self, c)) {
        PG_TRY(ternary(op, self, b, c, value, false, &ref));
        pg_status st = pg_op_copy(self, &ref);
        pg_tensor_clear(&ref);
        return st;
    }
    pg_status st = ternary(op, self, b, c, value, true, &ref);
    if (st == PG_OK)
        pg_tensor_clear(&ref);
    return st;
}
