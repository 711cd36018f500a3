/* pg_ops_elementwise.c - checked binary, unary and copy/cast ops.
 *
 * Promotion follows NumPy 2: two tensors promote by pg_dtype_promote; a
 * Python scalar only lifts the kind (bool < int < float) and otherwise takes
 * the tensor's dtype (NEP 50: float32 + 1.5 stays float32). Mixed dtypes are
 * cast to the common dtype first, so kernels only ever see equal dtypes.
 * float16 and bfloat16 are no exception: their nodes carry the half tensors
 * themselves (a backend computes each element in float32 and rounds it once
 * at the store; a Python scalar reaches it as a float32), and a device whose
 * backend has no half kernel for the op refuses it here (supports_op). */
#include "pg_ops.h"

#include <stdio.h>
#include <string.h>

#include "pg_backend.h"
#include "pg_stats.h"

static const char *const bin_names[PG_NUM_BINARY] = {
#define PG_BINARY(ID, name, gen, py, grad, doc) #name,
#include "pg_ops.def"
};
static const char *const un_names[PG_NUM_UNARY] = {
#define PG_UNARY(ID, name, gen, py, grad, doc) #name,
#include "pg_ops.def"
};

const char *pg_binary_name(int op) { return bin_names[op]; }
const char *pg_unary_name(int op) { return un_names[op]; }

pg_status pg_launch(const pg_node *node)
{
    /* dst's storage exists, so its device does: no index check on this hot path */
    pg_device dev = pg_tensor_device(&node->dst);
    const pg_backend *be = pg_backend_get(dev.type);
    if (!be)
        return pg_error_set(PG_ERR_UNAVAILABLE, "no backend for device type %d", dev.type);
    pg_stats_op(dev);
    const pg_tensor *outs[1 + PG_NODE_MAX_EXTRA];
    int nout = pg_node_outputs(node, outs);
    for (int i = 0; i < nout; i++)
        pg_storage_note_write(outs[i]->storage);
    return be->launch(be, dev.index, node);
}

pg_status pg_check_same_device(const char *op, const pg_tensor *a, const pg_tensor *b)
{
    pg_device da = pg_tensor_device(a), db = pg_tensor_device(b);
    if (pg_device_eq(da, db))
        return PG_OK;
    char sa[24], sb[24];
    pg_device_str(da, sa, sizeof sa);
    pg_device_str(db, sb, sizeof sb);
    return pg_error_set(PG_ERR_DEVICE,
                        "%s: expected all tensors on the same device, but found %s and %s; move "
                        "one of them first, e.g. b.to('%s') (pygpu never copies between devices "
                        "behind your back)",
                        op, sa, sb, sa);
}

/* A cast or copy runs where the backend has kernels for both dtypes (pg_backend.h supports_op). */
static pg_status check_copy_dtypes(const char *op, const pg_tensor *t, int other_dtype)
{
    PG_TRY(pg_backend_check_op(pg_tensor_device(t), PG_OP_COPY, t->dtype, op));
    return pg_backend_check_op(pg_tensor_device(t), PG_OP_COPY, other_dtype, op);
}

static void node_init(pg_node *n, int op, int subop, const char *name)
{
    n->op = op;
    n->subop = subop;
    n->nsrc = 0;
    n->name = name;
}

/* The elements [lo, hi) a view can touch, in elements of its storage. */
static void view_extent(const pg_tensor *t, int64_t *lo, int64_t *hi)
{
    *lo = *hi = t->offset;
    for (int i = 0; i < t->ndim; i++) {
        int64_t span = (t->shape[i] - 1) * t->strides[i];
        if (span < 0)
            *lo += span;
        else
            *hi += span;
    }
    *hi += 1;
}

/* True when writing `dst` element by element could overwrite parts of `src`
 * not yet read (t[1:] = t[:-1]): same storage, overlapping ranges, and not
 * the very same layout (an element copied onto itself is harmless). */
static bool copy_overlaps(const pg_tensor *dst, const pg_tensor *src)
{
    if (dst->storage != src->storage || pg_tensor_numel(dst) == 0 || pg_tensor_numel(src) == 0)
        return false;
    if (dst->offset == src->offset && dst->ndim == src->ndim && dst->dtype == src->dtype &&
        memcmp(dst->shape, src->shape, sizeof(int64_t) * dst->ndim) == 0 &&
        memcmp(dst->strides, src->strides, sizeof(int64_t) * dst->ndim) == 0)
        return false;
    int64_t dlo, dhi, slo, shi;
    view_extent(dst, &dlo, &dhi);
    view_extent(src, &slo, &shi);
    return dlo < shi && slo < dhi;
}

pg_status pg_op_copy(const pg_tensor *dst, const pg_tensor *src)
{
    PG_TRY(pg_check_same_device("copy", dst, src));
    if (dst->storage->flags & PG_STORAGE_READONLY)
        return pg_error_set(PG_ERR_VALUE, "copy: the destination is read-only");
    PG_TRY(check_copy_dtypes("copy", dst, src->dtype));
    if (copy_overlaps(dst, src)) { /* through a temporary, as NumPy does */
        pg_tensor tmp;
        PG_TRY(pg_op_astype(src, (pg_dtype)src->dtype, &tmp));
        pg_status st = pg_op_copy(dst, &tmp);
        pg_tensor_clear(&tmp);
        return st;
    }
    pg_node n;
    n.nextra = 0;
    node_init(&n, PG_OP_COPY, 0, "copy");
    PG_TRY(pg_view_broadcast(src, dst->ndim, dst->shape, &n.src[0]));
    int nd;
    int64_t shp[PG_MAX_DIMS];
    pg_status st = pg_broadcast_shapes(src->ndim, src->shape, dst->ndim, dst->shape, &nd, shp, "copy");
    if (st == PG_OK && (nd != dst->ndim || memcmp(shp, dst->shape, sizeof(int64_t) * nd) != 0)) {
        char a[160], b[160];
        st = pg_error_set(PG_ERR_SHAPE, "copy: cannot copy shape %s into shape %s",
                          pg_shape_str(src->ndim, src->shape, a, sizeof a),
                          pg_shape_str(dst->ndim, dst->shape, b, sizeof b));
    }
    if (st == PG_OK && pg_tensor_numel(dst) > 0) {
        n.nsrc = 1;
        n.dst = *dst;
        st = pg_launch(&n);
    }
    pg_tensor_clear(&n.src[0]);
    return st;
}

pg_status pg_op_astype(const pg_tensor *t, pg_dtype dt, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    if (!pg_dtype_supported(dt))
        return pg_error_set(PG_ERR_DTYPE, "astype: dtype code %d is not a pygpu dtype", (int)dt);
    PG_TRY(pg_tensor_empty(pg_tensor_device(t), dt, t->ndim, t->shape, out));
    pg_status st = pg_op_copy(out, t);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

pg_status pg_op_contiguous(const pg_tensor *t, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    if (pg_tensor_is_contiguous(t)) {
        pg_tensor_ref(t, out);
        return PG_OK;
    }
    return pg_op_astype(t, (pg_dtype)t->dtype, out);
}

pg_status pg_op_reshape(const pg_tensor *t, int ndim, const int64_t *shape, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    pg_status st = pg_view_reshape(t, ndim, shape, out);
    if (st != PG_ERR_VALUE)
        return st; /* a view, or a real error */
    pg_tensor c;
    PG_TRY(pg_op_contiguous(t, &c));
    st = pg_view_reshape(&c, ndim, shape, out);
    pg_tensor_clear(&c);
    return st;
}

/* `t` cast to dtype `dt` and broadcast to `ndim`/`shape`, as a new reference. */
static pg_status prepare_operand(const pg_tensor *t, int dt, int ndim, const int64_t *shape,
                                 pg_tensor *out)
{
    if (t->dtype == dt)
        return pg_view_broadcast(t, ndim, shape, out);
    pg_tensor cast;
    PG_TRY(pg_op_astype(t, (pg_dtype)dt, &cast));
    pg_status st = pg_view_broadcast(&cast, ndim, shape, out);
    pg_tensor_clear(&cast);
    return st;
}

/* Finish a one-input node: `a` cast to `dt` is its source, `out` its destination
 * (released again if the launch fails). */
static pg_status launch_one_input(pg_node *n, const pg_tensor *a, int dt, pg_tensor *out)
{
    pg_status st = prepare_operand(a, dt, a->ndim, a->shape, &n->src[0]);
    if (st == PG_OK) {
        n->nsrc = 1;
        n->dst = *out;
        st = pg_launch(n);
        pg_tensor_clear(&n->src[0]);
    }
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

static pg_status arithmetic_dtype(int op, int ct, int *compute, int *result)
{
    bool arith = op == PG_BIN_ADD || op == PG_BIN_SUB || op == PG_BIN_MUL || op == PG_BIN_DIV;
    if (arith && ct == PG_BOOL)
        return pg_error_set(PG_ERR_DTYPE,
                            "%s: arithmetic on bool tensors is not supported; convert first "
                            "with .astype(pygpu.int64)",
                            bin_names[op]);
    if (op == PG_BIN_DIV && !pg_dtype_is_float((pg_dtype)ct))
        ct = PG_FLOAT64; /* true division, as NumPy */
    *compute = ct;
    *result = PG_BIN_IS_COMPARE(op) ? PG_BOOL : ct;
    return PG_OK;
}

pg_status pg_op_binary(int op, const pg_tensor *a, const pg_tensor *b, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    const char *name = bin_names[op];
    PG_TRY(pg_check_same_device(name, a, b));
    int ct, rt;
    PG_TRY(arithmetic_dtype(op, pg_dtype_promote((pg_dtype)a->dtype, (pg_dtype)b->dtype), &ct, &rt));
    PG_TRY(pg_backend_check_op(pg_tensor_device(a), PG_OP_BINARY, ct, name));
    int nd;
    int64_t shape[PG_MAX_DIMS];
    PG_TRY(pg_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &nd, shape, name));
    if (nd > PG_MAX_DIMS)
        return pg_error_set(PG_ERR_VALUE, "%s: result would have more than %d dimensions", name,
                            PG_MAX_DIMS);
    PG_TRY(pg_tensor_empty(pg_tensor_device(a), (pg_dtype)rt, nd, shape, out));
    if (pg_tensor_numel(out) == 0)
        return PG_OK;
    pg_node n;
    n.nextra = 0;
    node_init(&n, PG_OP_BINARY, op, name);
    memset(n.src, 0, sizeof n.src);
    pg_status st = prepare_operand(a, ct, nd, shape, &n.src[0]);
    if (st == PG_OK)
        st = prepare_operand(b, ct, nd, shape, &n.src[1]);
    if (st == PG_OK) {
        n.nsrc = 2;
        n.dst = *out;
        st = pg_launch(&n);
    }
    pg_tensor_clear(&n.src[0]);
    pg_tensor_clear(&n.src[1]);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

pg_status pg_op_binary_scalar(int op, const pg_tensor *a, pg_scalar s, bool scalar_left,
                              pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    const char *name = bin_names[op];
    int ct = a->dtype;
    if (s.kind == PG_SCALAR_INT && ct == PG_BOOL)
        ct = PG_INT64;
    else if (s.kind == PG_SCALAR_FLOAT && !pg_dtype_is_float((pg_dtype)ct))
        ct = PG_FLOAT64;
    int rt;
    PG_TRY(arithmetic_dtype(op, ct, &ct, &rt));
    PG_TRY(pg_backend_check_op(pg_tensor_device(a), PG_OP_BINARY, ct, name));
    PG_TRY(pg_tensor_empty(pg_tensor_device(a), (pg_dtype)rt, a->ndim, a->shape, out));
    if (pg_tensor_numel(out) == 0)
        return PG_OK;
    pg_node n;
    n.nextra = 0;
    node_init(&n, PG_OP_BINARY, op, name);
    n.p.scalar.f = s.kind == PG_SCALAR_FLOAT ? s.f : (double)s.i;
    n.p.scalar.i = s.kind == PG_SCALAR_FLOAT ? (int64_t)0 : s.i;
    n.p.scalar.scalar_left = scalar_left;
    return launch_one_input(&n, a, ct, out);
}

pg_status pg_op_unary(int op, const pg_tensor *a, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    const char *name = un_names[op];
    if (op == PG_UN_NOT && a->dtype != PG_BOOL)
        return pg_error_set(PG_ERR_DTYPE, "logical_not expects a bool tensor, got %s",
                            pg_dtype_name((pg_dtype)a->dtype));
    int dt = a->dtype;
    bool float_only = op == PG_UN_EXP || op == PG_UN_LOG || op == PG_UN_SQRT ||
                      op == PG_UN_TANH || op == PG_UN_SIGMOID;
    if (float_only && !pg_dtype_is_float((pg_dtype)dt))
        dt = dt == PG_BOOL ? PG_FLOAT32 : PG_FLOAT64; /* NumPy gives float64 for int64 */
    if (dt == PG_BOOL && (op == PG_UN_NEG || op == PG_UN_RELU))
        return pg_error_set(PG_ERR_DTYPE, "%s is not supported for bool tensors; use %s or "
                                          ".astype(pygpu.int64) first",
                            name, op == PG_UN_NEG ? "pygpu.logical_not" : "the mask itself");
    if (op == PG_UN_NOT && dt != PG_BOOL)
        return pg_error_set(PG_ERR_DTYPE, "logical_not expects a bool tensor, got %s",
                            pg_dtype_name((pg_dtype)dt));
    PG_TRY(pg_backend_check_op(pg_tensor_device(a), PG_OP_UNARY, dt, name));
    PG_TRY(pg_tensor_empty(pg_tensor_device(a), (pg_dtype)dt, a->ndim, a->shape, out));
    if (pg_tensor_numel(out) == 0)
        return PG_OK;
    pg_node n;
    n.nextra = 0;
    node_init(&n, PG_OP_UNARY, op, name);
    return launch_one_input(&n, a, dt, out);
}
