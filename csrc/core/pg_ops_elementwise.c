/* pg_ops_elementwise.c - checked binary, unary and copy/cast ops, their in-place
 * variants (add_, exp_, ...: the result written into self) and where.
 *
 * What dtypes an op takes and returns is its row's `in` and `out` columns
 * (pg_ops.def, read through pg_op_props.h by compute_dtype): no op is named here.
 *
 * Promotion follows PyTorch (torch.result_type, pg_dtype.h's pg_dtype_result_of):
 * two tensors promote by c10's table (a 0-d tensor counts only if its category is
 * above the other's); a Python scalar only lifts the category (bool < int < float:
 * an integer tensor with a Python float gives float32, PyTorch's default dtype) and
 * otherwise takes the tensor's dtype (float32 + 1.5 stays float32, int8 + 1000 stays
 * int8, 1000 wrapping as PyTorch's cast of it does). Mixed dtypes are
 * cast to the common dtype first, so kernels only ever see equal dtypes.
 * float16 and bfloat16 are no exception: their nodes carry the half tensors
 * themselves (a backend computes each element in float32 and rounds it once
 * at the store; a Python scalar reaches it as a float32), and a device whose
 * backend has no half kernel for the op refuses it here (supports_op). */
#include "pg_ops.h"

#include <stdio.h>
#include <string.h>

#include "pg_backend.h"
#include "pg_fp8_ops.h"
#include "pg_graph.h"
#include "pg_profile.h"
#include "pg_stats.h"

/* bool < integer < float: what promotion and in-place casts compare */
static int dtype_kind(int dt) { return pg_dtype_category((pg_dtype)dt); }

pg_status pg_dtype_result(const pg_tensor *a, const pg_tensor *b, int *dt)
{
    pg_result_state s = PG_RESULT_STATE_INIT;
    pg_result_state_add(&s, (pg_dtype)a->dtype, a->ndim == 0);
    pg_result_state_add(&s, (pg_dtype)b->dtype, b->ndim == 0);
    return (pg_status)pg_dtype_result_check(&s, dt);
}

static const char *const bin_names[PG_NUM_BINARY] = {
#define PG_BINARY(ID, name, ...) #name,
#include "pg_ops.def"
};
static const char *const un_names[PG_NUM_UNARY] = {
#define PG_UNARY(ID, name, ...) #name,
#include "pg_ops.def"
};

const char *pg_binary_name(int op) { return bin_names[op]; }
const char *pg_unary_name(int op) { return un_names[op]; }

/* pg_launch's checks, then the node is either recorded into this thread's capture
 * (pg_graph.h: nothing runs) or handed to its backend. */
static pg_status launch_checked(const pg_node *node, bool capture)
{
    /* dst's storage exists, so its device does: no index check on this hot path */
    pg_device dev = pg_tensor_device(&node->dst);
    const pg_backend *be = pg_backend_get(dev.type);
    if (!be)
        return pg_error_set(PG_ERR_UNAVAILABLE, "no backend for device type %d", dev.type);
    PG_TRY(pg_fork_check(dev.type));
    if (be->supports_node && !be->supports_node(be, dev.index, node)) /* a node's rules */
        return pg_backend_check_node(dev, node);
    /* no backend kernel but the FFT's takes complex operands: the bindings send complex
     * arithmetic to pygpu/_tensor/complex.py, which composes it from real nodes, so this refusal
     * is only met by an op that has no complex rule yet */
    if (node->op != PG_OP_FFT && pg_node_has_complex(node))
        return pg_error_set(PG_ERR_DTYPE, "\"%s\" not implemented for 'ComplexFloat' or "
                                          "'ComplexDouble' in pygpu",
                            node->name ? node->name : "op");
    bool run = true;
    if (capture) /* recorded into this thread's node graph (pg_graph.h): run only by a probe */
        PG_TRY(pg_graph_record(node, &run));
    /* versions move on at the capture too (autograd's in-place checks see its writes), and
     * again at each replay, which runs this path */
    const pg_tensor *outs[1 + PG_NODE_MAX_EXTRA];
    int nout = pg_node_outputs(node, outs);
    for (int i = 0; i < nout; i++)
        pg_storage_note_write(outs[i]->storage);
    for (int i = 0, len = pg_node_list_len(node); i < len; i++) /* a MULTI node's entries */
        if (pg_node_list_writes(node, i) && pg_node_list_at(node, i)->storage)
            pg_storage_note_write(pg_node_list_at(node, i)->storage);
    if (!run)
        return PG_OK;
    pg_stats_op(dev);
    /* pygpu.profiler: an event for the op (0 and one atomic load when not recording); cpu
     * computes inside the call, the other backends report the device time later */
    uint64_t prof = pg_profile_op_begin(node);
    pg_status st = be->launch(be, dev.index, node);
    pg_profile_op_end(prof, dev.type == PG_DEV_CPU);
    return st;
}

pg_status pg_launch(const pg_node *node) { return launch_checked(node, pg_graph_capturing()); }

/* A node graph's replay (pg_graph.h): its recorded nodes, in order, through the path an
 * eager op takes after its checks (cpu runs each at once, sim queues it after the work
 * pending on its storages); here, beside pg_launch, so that pg_graph.c stays below it. */
pg_status pg_graph_replay(pg_graph *g)
{
    int n;
    const pg_node *nodes;
    PG_TRY(pg_graph_replay_begin(g, &nodes, &n));
    for (int i = 0; i < n; i++)
        PG_TRY(launch_checked(&nodes[i], false));
    return PG_OK;
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
    /* a shell dtype (pg_dtype.h): PyTorch copies the bits types and float4 to their own dtype
     * only, and refuses the sub-byte integers' copies and every cast, in these words */
    int shell = pg_dtype_is_shell((pg_dtype)t->dtype)       ? t->dtype
                : pg_dtype_is_shell((pg_dtype)other_dtype) ? other_dtype
                                                           : -1;
    if (shell >= 0 && (t->dtype != other_dtype || !pg_dtype_shell_copies((pg_dtype)shell)))
        return pg_error_set(PG_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'",
                            t->dtype == other_dtype || pg_dtype_kind_of((pg_dtype)shell) == PG_KIND_FP4
                                ? "copy_kernel"
                                : "copy_",
                            pg_dtype_legacy_name((pg_dtype)shell));
    if (shell >= 0) /* its bytes' copy (pg_op_copy), which every backend runs */
        return PG_OK;
    PG_TRY(pg_backend_check_op(pg_tensor_device(t), PG_OP_COPY, t->dtype, op));
    return pg_backend_check_op(pg_tensor_device(t), PG_OP_COPY, other_dtype, op);
}

static void node_init(pg_node *n, int op, int subop, const char *name)
{
    n->op = op;
    n->subop = subop;
    n->nsrc = 0;
    n->nextra = 0;
    n->name = name;
}

/* The last step of every node here (declared in pg_ops.h, pg_ops_ternary.c's too). */
pg_status pg_launch_and_clear(pg_node *n, int nsrc, const pg_tensor *dst, pg_tensor *fresh,
                              pg_status st)
{
    if (st == PG_OK && pg_tensor_numel(dst) > 0) {
        n->nsrc = nsrc;
        n->dst = *dst;
        st = pg_launch(n);
    }
    for (int i = 0; i < nsrc; i++)
        pg_tensor_clear(&n->src[i]);
    if (st != PG_OK && fresh)
        pg_tensor_clear(fresh);
    return st;
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

/* pg_op_copy of a complex dst or src, on the real views (pg_ops_complex.c): src broadcast
 * to dst's shape first, so that the views below line up axis by axis */
static pg_status copy_complex(const pg_tensor *dst, const pg_tensor *src)
{
    bool dc = pg_dtype_is_complex((pg_dtype)dst->dtype), sc = pg_dtype_is_complex((pg_dtype)src->dtype);
    pg_tensor s, a, b;
    PG_TRY(pg_view_broadcast(src, dst->ndim, dst->shape, &s));
    pg_status st;
    if (dc && sc) { /* pairs into pairs, cast part by part */
        st = pg_view_complex_as_real(dst, &a);
        if (st == PG_OK) {
            st = pg_view_complex_as_real(&s, &b);
            if (st == PG_OK) {
                st = pg_op_copy(&a, &b);
                pg_tensor_clear(&b);
            }
            pg_tensor_clear(&a);
        }
    } else if (dc) { /* a real source: the real part, then a zero imaginary part */
        st = pg_view_complex_part(dst, false, &a);
        if (st == PG_OK) {
            st = pg_op_copy(&a, &s);
            pg_tensor_clear(&a);
        }
        if (st == PG_OK)
            st = pg_view_complex_part(dst, true, &a);
        if (st == PG_OK) { /* a FILL node of 0 (pg_op_fill lives above this file) */
            pg_node n;
            pg_node_start(&n, PG_OP_FILL, 0, "fill");
            n.dst = a;
            if (pg_tensor_numel(&a) > 0)
                st = pg_launch(&n);
            pg_tensor_clear(&a);
        }
    } else { /* into a real dst: the real part (PyTorch warns that the imaginary is dropped) */
        st = pg_view_complex_part(&s, false, &b);
        if (st == PG_OK) {
            st = pg_op_copy(dst, &b);
            pg_tensor_clear(&b);
        }
    }
    pg_tensor_clear(&s);
    return st;
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
    if (pg_dtype_is_complex((pg_dtype)dst->dtype) || pg_dtype_is_complex((pg_dtype)src->dtype))
        return copy_complex(dst, src);
    if (pg_dtype_is_shell((pg_dtype)dst->dtype)) { /* (check_copy_dtypes: src's dtype too) */
        /* a shell dtype's copy is its bytes' copy: the same layouts as the unsigned integer of
         * its size, so no backend sees a shell dtype (cpu, sim and cuda run it alike) */
        pg_dtype bytes = pg_dtype_size((pg_dtype)dst->dtype) == 1 ? PG_UINT8 : PG_UINT16;
        pg_tensor d = *dst, s = *src;
        d.dtype = s.dtype = bytes;
        return pg_op_copy(&d, &s);
    }
    pg_node n;
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
    return pg_launch_and_clear(&n, 1, dst, NULL, st);
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

/* uint64's order key flips its top bit, in place on a fresh int64 tensor: its own inverse */
static pg_status flip_top_bit_(const pg_tensor *t)
{
    pg_scalar top = {PG_SCALAR_INT, -0x1p63, INT64_MIN};
    return pg_op_binary_scalar_(PG_BIN_BITWISE_XOR, t, top);
}

pg_status pg_op_order_key(const pg_tensor *t, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    if (t->dtype == PG_INT64)
        return pg_op_contiguous(t, out);
    PG_TRY(pg_op_astype(t, PG_INT64, out));
    pg_status st = t->dtype == PG_UINT64 ? flip_top_bit_(out) : PG_OK;
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

pg_status pg_op_order_key_back(const pg_tensor *key, pg_dtype dt, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    PG_TRY(pg_op_astype(key, dt == PG_UINT64 ? PG_INT64 : dt, out));
    if (dt != PG_UINT64)
        return PG_OK;
    pg_tensor bits = *out;
    pg_status st = flip_top_bit_(&bits);
    if (st == PG_OK)
        st = pg_op_astype(&bits, PG_UINT64, out); /* the same bits, as uint64 */
    pg_tensor_clear(&bits);
    return st;
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

pg_status pg_prepare_operand(const pg_tensor *t, int dt, int ndim, const int64_t *shape,
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
    pg_status st = pg_prepare_operand(a, dt, a->ndim, a->shape, &n->src[0]);
    if (st != PG_OK) {
        pg_tensor_clear(out);
        return st;
    }
    return pg_launch_and_clear(n, 1, out, out, st);
}

/* A float8 operand (pg_fp8_ops.h): float32, where PyTorch runs the op on the format (the
 * caller rounds a float8 result back once, fp8_round_back), else PyTorch's refusal in its
 * words. number: an operand is a Python number or a 0-d tensor. */
static pg_status fp8_compute(int kind, int op, const char *name, int ct, bool number, int *compute)
{
    const char *kernel;
    if (!pg_fp8_op_runs(kind, op, (pg_dtype)ct, number, &kernel))
        return pg_error_set(PG_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'",
                            kernel ? kernel : name, pg_dtype_legacy_name((pg_dtype)ct));
    *compute = PG_FLOAT32;
    return PG_OK;
}

/* the dtype a kernel writes a result of dtype rt in: float32 for a float8 one (rounded back
 * by fp8_round_back), rt itself for the others */
static int computed_result(int rt) { return pg_dtype_is_fp8((pg_dtype)rt) ? PG_FLOAT32 : rt; }

/* The float32 result `wide` of a float8 op rounded once into `dt` (a float8 dtype) as *out;
 * a bool result, and a failed status, pass through. */
static pg_status fp8_round_back(pg_status st, int dt, pg_tensor *out)
{
    if (st != PG_OK || !pg_dtype_is_fp8((pg_dtype)dt))
        return st;
    pg_tensor wide = *out;
    st = pg_op_astype(&wide, (pg_dtype)dt, out);
    pg_tensor_clear(&wide);
    return st;
}

/* The dtype the binary or unary op `op` (node kind `kind`) computes in, from its operands'
 * common dtype `ct` and its `in` column (pg_ops.def): one function for every unary and binary
 * op, no op lists. A refusal names the op, the dtype and the device of `t` (an operand). */
static pg_status compute_dtype(int kind, int op, int ct, bool number, const pg_tensor *t,
                               int *compute)
{
    const char *name = kind == PG_OP_BINARY ? bin_names[op] : un_names[op];
    int in = kind == PG_OP_BINARY ? pg_binary_in(op) : pg_unary_in(op);
    if (pg_dtype_is_fp8((pg_dtype)ct))
        return fp8_compute(kind, op, name, ct, number, compute);
    bool is_float = pg_dtype_is_float((pg_dtype)ct);
    const char *dt = pg_dtype_name((pg_dtype)ct);
    char dev[24];
    pg_device_str(pg_tensor_device(t), dev, sizeof dev);
    switch (in) {
    case PG_IN_NUM:
    case PG_IN_NUMF:
        if (ct == PG_BOOL)
            return pg_error_set(PG_ERR_DTYPE,
                                "%s: arithmetic on bool tensors is not supported (got bool on "
                                "%s); convert first with .astype(pygpu.int64)",
                                name, dev);
        if (in == PG_IN_NUMF && !is_float)
            ct = PG_FLOAT32; /* true division of integers: the default dtype, as PyTorch */
        break;
    case PG_IN_FLOAT:
        if (!is_float)
            ct = PG_FLOAT32; /* PyTorch's default dtype (NumPy gives float64 for int64) */
        break;
    case PG_IN_BOOL:
        if (ct != PG_BOOL)
            return pg_error_set(PG_ERR_DTYPE, "%s expects a bool tensor, got %s on %s", name, dt,
                                dev);
        break;
    case PG_IN_TOBOOL: ct = PG_BOOL; break; /* nonzero is true, as PyTorch's logical ops */
    case PG_IN_INTBOOL:
        if (is_float)
            return pg_error_set(PG_ERR_DTYPE,
                                "%s takes bool or integer tensors, got %s on %s (as in PyTorch; "
                                "for a truth test use the logical_* ops)",
                                name, dt, dev);
        break;
    case PG_IN_INT:
        if (!pg_dtype_is_int((pg_dtype)ct))
            return pg_error_set(PG_ERR_DTYPE, "%s takes integer tensors, got %s on %s (as in "
                                              "PyTorch: not implemented for bool and floats)",
                                name, dt, dev);
        break;
    default: break; /* PG_IN_ANY */
    }
    *compute = ct;
    return PG_OK;
}

/* ... for a binary op, and the dtype of its result (a float8 op's: the float8 dtype, which
 * the caller rounds a float32 result back to) */
static pg_status arithmetic_dtype(int op, int ct, bool number, const pg_tensor *t, int *compute,
                                  int *result)
{
    int fp8 = pg_dtype_is_fp8((pg_dtype)ct) ? ct : -1;
    PG_TRY(compute_dtype(PG_OP_BINARY, op, ct, number, t, compute));
    if (fp8 >= 0) {
        *result = pg_binary_out(op) == PG_OUT_BOOL ? PG_BOOL : fp8;
        return PG_OK;
    }
    if (op == PG_BIN_NEXTAFTER && pg_dtype_is_half((pg_dtype)*compute)) { /* no half's next float32 */
        char dev[24];
        pg_device_str(pg_tensor_device(t), dev, sizeof dev);
        return pg_error_set(PG_ERR_DTYPE, "nextafter: not implemented for %s on %s (float32 and "
                                          "float64 only)", pg_dtype_name((pg_dtype)*compute), dev);
    }
    *result = pg_binary_out(op) == PG_OUT_BOOL ? PG_BOOL : *compute;
    return PG_OK;
}

/* ---- memory order ---------------------------------------------------------------------
 * An op whose lead operand is laid out in another order than its dims (a channels_last
 * tensor, a transpose) runs on the views in memory order, where a dense lead is contiguous
 * (the kernels' fast path: no gather), and its result is viewed back: the output keeps the
 * lead's layout, as PyTorch's TensorIterator keeps it. The lead is the
 * first operand of the output's shape (a broadcast bias never leads). A contiguous lead
 * costs one check. */
static bool same_shape(const pg_tensor *t, int nd, const int64_t *shape)
{
    if (t->ndim != nd)
        return false;
    for (int i = 0; i < nd; i++)
        if (t->shape[i] != shape[i])
            return false;
    return true;
}

/* out = r viewed back from memory order perm (r's reference passes to out). */
static pg_status view_back(pg_tensor *r, const int *perm, pg_tensor *out)
{
    int inv[PG_MAX_DIMS];
    for (int i = 0; i < r->ndim; i++)
        inv[perm[i]] = i;
    pg_status st = pg_view_transpose(r, r->ndim, inv, out);
    pg_tensor_clear(r);
    return st;
}

/* t broadcast to (nd, shape), then permuted to memory order perm. */
static pg_status in_memory_order(const pg_tensor *t, int nd, const int64_t *shape,
                                 const int *perm, pg_tensor *out)
{
    pg_tensor full;
    PG_TRY(pg_view_broadcast(t, nd, shape, &full));
    pg_status st = pg_view_transpose(&full, nd, perm, out);
    pg_tensor_clear(&full);
    return st;
}

static pg_status binary_op(int op, const pg_tensor *a, const pg_tensor *b, pg_tensor *out,
                           bool keep_layout)
{
    pg_tensor_out_init(out, NULL);
    const char *name = bin_names[op];
    PG_TRY(pg_check_same_device(name, a, b));
    int ct, rt;
    PG_TRY(pg_dtype_result(a, b, &ct));
    PG_TRY(arithmetic_dtype(op, ct, a->ndim == 0 || b->ndim == 0, a, &ct, &rt));
    PG_TRY(pg_backend_check_op(pg_tensor_device(a), PG_OP_BINARY, ct, name));
    int nd;
    int64_t shape[PG_MAX_DIMS];
    PG_TRY(pg_broadcast_shapes(a->ndim, a->shape, b->ndim, b->shape, &nd, shape, name));
    if (nd > PG_MAX_DIMS)
        return pg_error_set(PG_ERR_VALUE, "%s: result would have more than %d dimensions", name,
                            PG_MAX_DIMS);
    const pg_tensor *lead = same_shape(a, nd, shape) ? a : same_shape(b, nd, shape) ? b : NULL;
    int perm[PG_MAX_DIMS];
    if (keep_layout && lead && pg_tensor_memory_order(lead, perm)) {
        pg_tensor av, bv, r;
        PG_TRY(in_memory_order(a, nd, shape, perm, &av));
        pg_status st = in_memory_order(b, nd, shape, perm, &bv);
        if (st == PG_OK)
            st = binary_op(op, &av, &bv, &r, false); /* once: the views are in memory order */
        pg_tensor_clear(&av);
        pg_tensor_clear(&bv);
        return st == PG_OK ? view_back(&r, perm, out) : st;
    }
    PG_TRY(pg_tensor_empty(pg_tensor_device(a), (pg_dtype)computed_result(rt), nd, shape, out));
    if (pg_tensor_numel(out) == 0)
        return fp8_round_back(PG_OK, rt, out);
    pg_node n;
    node_init(&n, PG_OP_BINARY, op, name);
    memset(n.src, 0, sizeof n.src);
    pg_status st = pg_prepare_operand(a, ct, nd, shape, &n.src[0]);
    if (st == PG_OK)
        st = pg_prepare_operand(b, ct, nd, shape, &n.src[1]);
    return fp8_round_back(pg_launch_and_clear(&n, 2, out, out, st), rt, out);
}

pg_status pg_op_binary(int op, const pg_tensor *a, const pg_tensor *b, pg_tensor *out)
{
    return binary_op(op, a, b, out, true);
}

/* integer division by the number 0 (fmod, remainder, floor_divide): PyTorch raises
 * ZeroDivisionError. A kernel cannot raise, so a zero element of a divisor tensor gives 0
 * (cpu_math_binary.c); a number is checked here. */
static pg_status check_int_divisor(int op, int ct, const pg_tensor *t, pg_scalar s, bool scalar_left)
{
    if (scalar_left || !pg_dtype_is_int((pg_dtype)ct) ||
        (op != PG_BIN_FMOD && op != PG_BIN_REMAINDER && op != PG_BIN_FLOOR_DIVIDE))
        return PG_OK;
    if ((s.kind == PG_SCALAR_FLOAT ? s.f : (double)s.i) != 0)
        return PG_OK;
    char dev[24];
    pg_device_str(pg_tensor_device(t), dev, sizeof dev);
    return pg_error_set(PG_ERR_RUNTIME, "%s: ZeroDivisionError (an %s tensor on %s divided by 0)",
                        bin_names[op], pg_dtype_name((pg_dtype)ct), dev);
}

/* A tensor of dtype dt with a Python scalar: the scalar only lifts the category (a wrapped
 * number: bool, int64, or float32, PyTorch's default dtype). */
static int scalar_promote(int dt, pg_scalar s)
{
    pg_result_state r = PG_RESULT_STATE_INIT;
    pg_result_state_add(&r, (pg_dtype)dt, 0);
    pg_result_state_add(&r, s.kind == PG_SCALAR_BOOL  ? PG_BOOL
                            : s.kind == PG_SCALAR_INT ? PG_INT64
                                                      : PG_FLOAT32, 2);
    return pg_dtype_result_of(&r);
}

static pg_status binary_scalar_op(int op, const pg_tensor *a, pg_scalar s, bool scalar_left,
                                  pg_tensor *out, bool keep_layout)
{
    pg_tensor_out_init(out, NULL);
    const char *name = bin_names[op];
    int ct = scalar_promote(a->dtype, s);
    if (op == PG_BIN_POW && !scalar_left && s.kind != PG_SCALAR_BOOL &&
        (s.kind == PG_SCALAR_FLOAT ? s.f : (double)s.i) == 2.0 && pg_dtype_is_float((pg_dtype)ct) &&
        ct == a->dtype)
        return pg_op_binary(PG_BIN_MUL, a, a, out); /* x ** 2 is x * x, as PyTorch's square */
    int rt;
    if (pg_dtype_is_fp8((pg_dtype)ct)) { /* PyTorch wraps the number in a tensor of the format */
        s.f = pg_fp8_round((pg_dtype)ct, s.f);
        s.kind = PG_SCALAR_FLOAT;
    }
    PG_TRY(arithmetic_dtype(op, ct, true, a, &ct, &rt));
    PG_TRY(check_int_divisor(op, ct, a, s, scalar_left));
    PG_TRY(pg_backend_check_op(pg_tensor_device(a), PG_OP_BINARY, ct, name));
    int perm[PG_MAX_DIMS];
    if (keep_layout && pg_tensor_memory_order(a, perm)) { /* keep a's layout (above) */
        pg_tensor av, r;
        PG_TRY(pg_view_transpose(a, a->ndim, perm, &av));
        pg_status st = binary_scalar_op(op, &av, s, scalar_left, &r, false);
        pg_tensor_clear(&av);
        return st == PG_OK ? view_back(&r, perm, out) : st;
    }
    PG_TRY(pg_tensor_empty(pg_tensor_device(a), (pg_dtype)computed_result(rt), a->ndim, a->shape,
                           out));
    if (pg_tensor_numel(out) == 0)
        return fp8_round_back(PG_OK, rt, out);
    pg_node n;
    node_init(&n, PG_OP_BINARY, op, name);
    n.p.scalar.f = s.f; /* an int's value too (a uint64 one's i holds only its bits) */
    /* a float scalar reaches an integer kernel only as a truth value (logical ops) */
    n.p.scalar.i = s.kind == PG_SCALAR_FLOAT ? (int64_t)(s.f != 0) : s.i;
    n.p.scalar.scalar_left = scalar_left;
    return fp8_round_back(launch_one_input(&n, a, ct, out), rt, out);
}

pg_status pg_op_binary_scalar(int op, const pg_tensor *a, pg_scalar s, bool scalar_left,
                              pg_tensor *out)
{
    return binary_scalar_op(op, a, s, scalar_left, out, true);
}

static pg_status unary_op(int op, const pg_tensor *a, pg_tensor *out, bool keep_layout)
{
    pg_tensor_out_init(out, NULL);
    const char *name = un_names[op];
    int dt;
    PG_TRY(compute_dtype(PG_OP_UNARY, op, a->dtype, false, a, &dt));
    int rt = pg_unary_out(op) == PG_OUT_BOOL ? PG_BOOL
             : pg_dtype_is_fp8((pg_dtype)a->dtype) ? a->dtype : dt;
    PG_TRY(pg_backend_check_op(pg_tensor_device(a), PG_OP_UNARY, dt, name));
    int perm[PG_MAX_DIMS];
    if (keep_layout && pg_tensor_memory_order(a, perm)) { /* keep a's layout (above) */
        pg_tensor av, r;
        PG_TRY(pg_view_transpose(a, a->ndim, perm, &av));
        pg_status st = unary_op(op, &av, &r, false);
        pg_tensor_clear(&av);
        return st == PG_OK ? view_back(&r, perm, out) : st;
    }
    PG_TRY(pg_tensor_empty(pg_tensor_device(a), (pg_dtype)computed_result(rt), a->ndim, a->shape,
                           out));
    if (pg_tensor_numel(out) == 0)
        return fp8_round_back(PG_OK, rt, out);
    pg_node n;
    node_init(&n, PG_OP_UNARY, op, name);
    return fp8_round_back(launch_one_input(&n, a, dt, out), rt, out);
}

pg_status pg_op_unary(int op, const pg_tensor *a, pg_tensor *out)
{
    return unary_op(op, a, out, true);
}

/* ---- in place ------------------------------------------------------------------------- */

/* What PyTorch checks before an in-place op writes `self`: the result dtype `rt` casts to
 * self's without changing kind, the broadcast shape is self's, and no element of self is
 * another's (a broadcast view). */
static pg_status check_inplace(const char *name, const pg_tensor *self, int rt, int nd,
                               const int64_t *shape)
{
    char a[160], b[160];
    if (self->storage->flags & PG_STORAGE_READONLY)
        return pg_error_set(PG_ERR_VALUE, "%s_: the tensor is read-only", name);
    if (dtype_kind(rt) > dtype_kind(self->dtype))
        return pg_error_set(PG_ERR_DTYPE,
                            "%s_: result type %s can't be cast to the desired output type %s (an "
                            "in-place op keeps self's dtype; use the out-of-place op)",
                            name, pg_dtype_name((pg_dtype)rt), pg_dtype_name((pg_dtype)self->dtype));
    if (nd != self->ndim || memcmp(shape, self->shape, sizeof(int64_t) * (size_t)nd) != 0)
        return pg_error_set(PG_ERR_SHAPE,
                            "%s_: output with shape %s doesn't match the broadcast shape %s",
                            name, pg_shape_str(self->ndim, self->shape, a, sizeof a),
                            pg_shape_str(nd, shape, b, sizeof b));
    for (int i = 0; i < self->ndim; i++)
        if (self->strides[i] == 0 && self->shape[i] > 1)
            return pg_error_set(PG_ERR_VALUE,
                                "%s_: unsupported operation: more than one element of the "
                                "written-to tensor refers to a single memory location; clone() "
                                "it first",
                                name);
    return PG_OK;
}

/* A computed result `tmp` into self (cast), then released. */
static pg_status copy_back(const pg_tensor *self, pg_tensor *tmp, pg_status st)
{
    if (st == PG_OK)
        st = pg_op_copy(self, tmp);
    pg_tensor_clear(tmp);
    return st;
}

pg_status pg_op_binary_(int op, const pg_tensor *self, const pg_tensor *b)
{
    const char *name = bin_names[op];
    PG_TRY(pg_check_same_device(name, self, b));
    int ct, rt, nd;
    int64_t shape[PG_MAX_DIMS];
    PG_TRY(pg_dtype_result(self, b, &ct));
    PG_TRY(arithmetic_dtype(op, ct, self->ndim == 0 || b->ndim == 0, self, &ct, &rt));
    PG_TRY(pg_backend_check_op(pg_tensor_device(self), PG_OP_BINARY, ct, name));
    PG_TRY(pg_broadcast_shapes(self->ndim, self->shape, b->ndim, b->shape, &nd, shape, name));
    PG_TRY(check_inplace(name, self, rt, nd, shape));
    if (pg_tensor_numel(self) == 0)
        return PG_OK;
    if (ct != self->dtype || rt != self->dtype || copy_overlaps(self, b)) {
        pg_tensor tmp;
        return copy_back(self, &tmp, pg_op_binary(op, self, b, &tmp));
    }
    pg_node n; /* dst == src0: each element is read before it is written */
    node_init(&n, PG_OP_BINARY, op, name);
    memset(n.src, 0, sizeof n.src);
    pg_tensor_ref(self, &n.src[0]);
    return pg_launch_and_clear(&n, 2, self, NULL, pg_prepare_operand(b, ct, nd, shape, &n.src[1]));
}

pg_status pg_op_binary_scalar_(int op, const pg_tensor *self, pg_scalar s)
{
    const char *name = bin_names[op];
    int ct, rt;
    PG_TRY(arithmetic_dtype(op, scalar_promote(self->dtype, s), true, self, &ct, &rt));
    PG_TRY(check_int_divisor(op, ct, self, s, false));
    PG_TRY(pg_backend_check_op(pg_tensor_device(self), PG_OP_BINARY, ct, name));
    PG_TRY(check_inplace(name, self, rt, self->ndim, self->shape));
    if (pg_tensor_numel(self) == 0)
        return PG_OK;
    if (ct != self->dtype || rt != self->dtype) {
        pg_tensor tmp;
        return copy_back(self, &tmp, pg_op_binary_scalar(op, self, s, false, &tmp));
    }
    pg_node n;
    node_init(&n, PG_OP_BINARY, op, name);
    n.p.scalar.f = s.f; /* an int's value too (a uint64 one's i holds only its bits) */
    n.p.scalar.i = s.kind == PG_SCALAR_FLOAT ? (int64_t)(s.f != 0) : s.i;
    n.p.scalar.scalar_left = 0;
    pg_tensor_ref(self, &n.src[0]);
    return pg_launch_and_clear(&n, 1, self, NULL, PG_OK);
}

/* clamp's one-pass node, in place (clamp_) or into a new tensor: what both refuse */
static pg_status clamp_check(const char *name, const pg_tensor *self, double lo, double hi)
{
    if (self->dtype != PG_FLOAT32 && self->dtype != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: the one-pass clamp takes float32 or float64, "
                                          "got %s", name, pg_dtype_name((pg_dtype)self->dtype));
    if (lo != lo || hi != hi)
        return pg_error_set(PG_ERR_VALUE, "%s: the one-pass clamp takes no NaN bound", name);
    return pg_backend_check_op(pg_tensor_device(self), PG_OP_CLAMP, self->dtype, "clamp");
}

pg_status pg_op_clamp_(const pg_tensor *self, double lo, double hi)
{
    const char *name = "clamp";
    PG_TRY(clamp_check("clamp_", self, lo, hi));
    PG_TRY(check_inplace(name, self, self->dtype, self->ndim, self->shape));
    if (pg_tensor_numel(self) == 0)
        return PG_OK;
    pg_node n; /* dst == src0: each element is read before it is written */
    node_init(&n, PG_OP_CLAMP, 0, name);
    n.p.clamp.lo = lo;
    n.p.clamp.hi = hi;
    n.p.clamp.grad = 0; /* node_init leaves the parameters as they were */
    pg_tensor_ref(self, &n.src[0]);
    return pg_launch_and_clear(&n, 1, self, NULL, PG_OK);
}

pg_status pg_op_clamp(const pg_tensor *self, double lo, double hi, pg_tensor *out)
{
    const char *name = "clamp";
    pg_tensor_out_init(out, NULL);
    PG_TRY(clamp_check(name, self, lo, hi));
    PG_TRY(pg_tensor_empty(pg_tensor_device(self), (pg_dtype)self->dtype, self->ndim,
                           self->shape, out));
    if (pg_tensor_numel(self) == 0)
        return PG_OK;
    pg_node n;
    node_init(&n, PG_OP_CLAMP, 0, name);
    n.p.clamp.lo = lo;
    n.p.clamp.hi = hi;
    n.p.clamp.grad = 0; /* node_init leaves the parameters as they were */
    pg_tensor_ref(self, &n.src[0]);
    return pg_launch_and_clear(&n, 1, out, out, PG_OK);
}

pg_status pg_op_hardtanh_backward(const pg_tensor *dy, const pg_tensor *y, double lo, double hi,
                                  pg_tensor *out)
{
    const char *name = "hardtanh_backward";
    pg_tensor_out_init(out, NULL);
    PG_TRY(clamp_check(name, y, lo, hi));
    if (dy->dtype != y->dtype || dy->ndim != y->ndim ||
        memcmp(dy->shape, y->shape, sizeof(int64_t) * (size_t)y->ndim) != 0)
        return pg_error_set(PG_ERR_SHAPE, "%s: grad_output and the output must have one shape "
                                          "and dtype", name);
    PG_TRY(pg_check_same_device(name, dy, y));
    PG_TRY(pg_tensor_empty(pg_tensor_device(y), (pg_dtype)y->dtype, y->ndim, y->shape, out));
    if (pg_tensor_numel(y) == 0)
        return PG_OK;
    pg_node n;
    node_init(&n, PG_OP_CLAMP, 0, name);
    n.p.clamp.lo = lo;
    n.p.clamp.hi = hi;
    n.p.clamp.grad = 1;
    pg_tensor_ref(dy, &n.src[0]);
    pg_tensor_ref(y, &n.src[1]);
    return pg_launch_and_clear(&n, 2, out, out, PG_OK);
}

pg_status pg_op_unary_(int op, const pg_tensor *self)
{
    const char *name = un_names[op];
    int dt;
    PG_TRY(compute_dtype(PG_OP_UNARY, op, self->dtype, false, self, &dt));
    int rt = pg_unary_out(op) == PG_OUT_BOOL ? PG_BOOL
             : pg_dtype_is_fp8((pg_dtype)self->dtype) ? self->dtype : dt;
    PG_TRY(pg_backend_check_op(pg_tensor_device(self), PG_OP_UNARY, dt, name));
    PG_TRY(check_inplace(name, self, rt, self->ndim, self->shape));
    if (pg_tensor_numel(self) == 0)
        return PG_OK;
    if (dt != self->dtype || rt != self->dtype) {
        pg_tensor tmp;
        return copy_back(self, &tmp, pg_op_unary(op, self, &tmp));
    }
    pg_node n;
    node_init(&n, PG_OP_UNARY, op, name);
    pg_tensor_ref(self, &n.src[0]);
    return pg_launch_and_clear(&n, 1, self, NULL, PG_OK);
}

/* ---- where ---------------------------------------------------------------------------- */

pg_status pg_op_where(const pg_tensor *cond, const pg_tensor *a, const pg_tensor *b,
                      pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    PG_TRY(pg_check_same_device("where", cond, a));
    PG_TRY(pg_check_same_device("where", cond, b));
    if (cond->dtype != PG_BOOL)
        return pg_error_set(PG_ERR_DTYPE,
                            "where: expected condition to be a bool tensor, got %s (compare "
                            "first, e.g. x > 0, or .astype(pygpu.bool))",
                            pg_dtype_name((pg_dtype)cond->dtype));
    int dt;
    PG_TRY(pg_dtype_result(a, b, &dt));
    PG_TRY(pg_backend_check_op(pg_tensor_device(cond), PG_OP_SELECT, dt, "where"));
    int nd, nd2;
    int64_t s1[PG_MAX_DIMS], shape[PG_MAX_DIMS];
    PG_TRY(pg_broadcast_shapes(cond->ndim, cond->shape, a->ndim, a->shape, &nd, s1, "where"));
    PG_TRY(pg_broadcast_shapes(nd, s1, b->ndim, b->shape, &nd2, shape, "where"));
    PG_TRY(pg_tensor_empty(pg_tensor_device(cond), (pg_dtype)dt, nd2, shape, out));
    if (pg_tensor_numel(out) == 0)
        return PG_OK;
    pg_status st = pg_op_copy(out, b); /* b broadcast and cast into the result */
    pg_node n;
    node_init(&n, PG_OP_SELECT, 0, "where");
    memset(n.src, 0, sizeof n.src);
    if (st == PG_OK)
        st = pg_view_broadcast(cond, nd2, shape, &n.src[0]);
    if (st == PG_OK)
        st = pg_prepare_operand(a, dt, nd2, shape, &n.src[1]);
    return pg_launch_and_clear(&n, 2, out, out, st);
}
