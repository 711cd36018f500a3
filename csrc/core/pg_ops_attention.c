/* pg_ops_attention.c - scaled-dot-product attention as ONE node each way: checked once
 * here, then a fused kernel that never writes the L x S score matrix (cpu/sim:
 * csrc/backends/cpu/cpu_attention.c, tiles over the GEMM contract and an online softmax;
 * cuda: csrc/backends/cuda/kernels/attention.cu). Its memory grows with L, not L x S: the
 * output, a logsumexp per query row, and each thread's tile scratch.
 *
 * Shapes (the Python layer folds any batch dimensions into Bt):
 *   q (Bt, Hq, L, E), k (Bt, Hk, S, E), v (Bt, Hk, S, Ev), Hq a multiple of Hk (a query
 *   head h reads key/value head h / (Hq / Hk): enable_gqa), every operand with unit
 *   stride on its last axis (others any: a head split by a transposed view needs no copy);
 *   mask | NULL: bool (true takes part) or q's dtype (added to the scores), broadcast to
 *   (Bt, Hq, L, S) as a stride-0 view, never materialised.
 * SDPA      src: q, k, v, mask | -                       dst: out (Bt, Hq, L, Ev)
 *           extra: lse (Bt, Hq, L), the rows' logsumexp (+inf for a fully masked row)
 * SDPA_BWD  src: q, k, v, mask | -, out, dout, lse       dst: dq; extra: dk, dv
 * p.sdpa: the scale, dropout_p, the generator's seed and the offset of element 0, causal
 * (top-left: key j <= query i, PyTorch's is_causal). */
#include <math.h>
#include <string.h>

#include "pg_ops.h"
#include "pg_backend.h"

static pg_status want4(const char *op, const char *what, const pg_tensor *t, int dt)
{
    if (t->dtype != dt)
        return pg_error_set(PG_ERR_DTYPE, "%s: %s is %s but query is %s", op, what,
                            pg_dtype_name((pg_dtype)t->dtype), pg_dtype_name((pg_dtype)dt));
    if (t->ndim != 4)
        return pg_error_set(PG_ERR_SHAPE, "%s: %s must be 4-d (batch, heads, rows, features), "
                                          "got %d-d", op, what, t->ndim);
    return PG_OK;
}

/* a reference of t with unit stride on its last axis (a copy only when it has none) */
static pg_status unit_last(const pg_tensor *t, pg_tensor *out)
{
    if (t->strides[3] == 1 || t->shape[3] == 1) {
        pg_tensor_ref(t, out);
        out->strides[3] = 1;
        return PG_OK;
    }
    return pg_op_contiguous(t, out);
}

typedef struct sdpa_in {
    pg_tensor q, k, v, mask; /* references, mask zeroed when absent */
} sdpa_in;

static void sdpa_in_clear(sdpa_in *in)
{
    pg_tensor *all[4] = {&in->q, &in->k, &in->v, &in->mask};
    for (int i = 0; i < 4; i++)
        if (all[i]->storage)
            pg_tensor_clear(all[i]);
}

static pg_status prepare(const char *op, const pg_tensor *q, const pg_tensor *k,
                         const pg_tensor *v, const pg_tensor *mask, sdpa_in *in)
{
    memset(in, 0, sizeof *in);
    int dt = q->dtype;
    if (dt != PG_FLOAT32 && dt != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: the fused kernel takes float32 or float64, got %s",
                            op, pg_dtype_name((pg_dtype)dt));
    PG_TRY(want4(op, "query", q, dt));
    PG_TRY(want4(op, "key", k, dt));
    PG_TRY(want4(op, "value", v, dt));
    PG_TRY(pg_check_same_device(op, q, k));
    PG_TRY(pg_check_same_device(op, q, v));
    char a[96], b[96];
    if (k->shape[0] != q->shape[0] || v->shape[0] != q->shape[0] || k->shape[1] != v->shape[1] ||
        k->shape[2] != v->shape[2] || k->shape[3] != q->shape[3])
        return pg_error_set(PG_ERR_SHAPE, "%s: key %s and value %s do not fit query %s", op,
                            pg_shape_str(4, k->shape, a, sizeof a),
                            pg_shape_str(4, v->shape, b, sizeof b),
                            pg_shape_str(4, q->shape, (char[96]){0}, 96));
    if (k->shape[1] == 0 || q->shape[1] % k->shape[1] != 0)
        return pg_error_set(PG_ERR_SHAPE, "%s: %lld query heads are not a multiple of %lld "
                                          "key/value heads", op, (long long)q->shape[1],
                            (long long)k->shape[1]);
    PG_TRY(unit_last(q, &in->q));
    pg_status st = unit_last(k, &in->k);
    if (st == PG_OK)
        st = unit_last(v, &in->v);
    if (st == PG_OK && mask) {
        if (mask->dtype != PG_BOOL && mask->dtype != dt)
            st = pg_error_set(PG_ERR_DTYPE, "%s: attn_mask must be bool or %s, got %s", op,
                              pg_dtype_name((pg_dtype)dt), pg_dtype_name((pg_dtype)mask->dtype));
        if (st == PG_OK)
            st = pg_check_same_device(op, q, mask);
        int64_t shape[4] = {q->shape[0], q->shape[1], q->shape[2], k->shape[2]};
        if (st == PG_OK)
            st = pg_view_broadcast(mask, 4, shape, &in->mask);
    }
    if (st != PG_OK)
        sdpa_in_clear(in);
    return st;
}

static void set_params(pg_node *n, double scale, bool causal, double p, uint64_t seed,
                       uint64_t offset)
{
    n->p.sdpa.scale = scale;
    n->p.sdpa.dropout_p = p;
    n->p.sdpa.seed = seed;
    n->p.sdpa.offset = offset;
    n->p.sdpa.causal = causal;
}

pg_status pg_op_sdpa_fwd(const pg_tensor *q, const pg_tensor *k, const pg_tensor *v,
                         const pg_tensor *mask, double scale, bool causal, double dropout_p,
                         pg_tensor *out, pg_tensor *lse, uint64_t *seed, uint64_t *offset)
{
    const char *op = "scaled_dot_product_attention";
    pg_tensor_out_init(out, NULL);
    pg_tensor_out_init(lse, NULL);
    if (!(dropout_p >= 0.0 && dropout_p < 1.0))
        return pg_error_set(PG_ERR_VALUE, "%s: dropout_p must be in [0, 1), got %g", op,
                            dropout_p);
    sdpa_in in;
    PG_TRY(prepare(op, q, k, v, mask, &in));
    pg_device dev = pg_tensor_device(q);
    pg_status st = pg_backend_check_op(dev, PG_OP_SDPA, q->dtype, op);
    int64_t oshape[4] = {q->shape[0], q->shape[1], q->shape[2], v->shape[3]};
    if (st == PG_OK)
        st = pg_tensor_empty(dev, (pg_dtype)q->dtype, 4, oshape, out);
    if (st == PG_OK)
        st = pg_tensor_empty(dev, (pg_dtype)q->dtype, 3, q->shape, lse);
    uint64_t count = (uint64_t)(q->shape[0] * q->shape[1] * q->shape[2] * k->shape[2]);
    *seed = *offset = 0;
    if (st == PG_OK && dropout_p > 0)
        pg_rng_reserve(dev, count, seed, offset);
    if (st == PG_OK && pg_tensor_numel(out) > 0) {
        if (k->shape[2] == 0) { /* no keys: every row fully masked, 0 (and lse +inf) */
            pg_scalar zero = {PG_SCALAR_INT, 0.0, 0}, inf = {PG_SCALAR_FLOAT, INFINITY, 0};
            st = pg_op_fill(out, zero);
            if (st == PG_OK)
                st = pg_op_fill(lse, inf);
        } else {
            pg_node n;
            pg_node_start(&n, PG_OP_SDPA, 0, op);
            n.nsrc = 4;
            n.src[0] = in.q;
            n.src[1] = in.k;
            n.src[2] = in.v;
            n.src[3] = in.mask;
            n.dst = *out;
            n.nextra = 1;
            n.extra[0] = *lse;
            set_params(&n, scale, causal, dropout_p, *seed, *offset);
            st = pg_launch(&n);
        }
    }
    sdpa_in_clear(&in);
    if (st != PG_OK) {
        pg_tensor_clear(out);
        pg_tensor_clear(lse);
    }
    return st;
}

pg_status pg_op_sdpa_bwd(const pg_tensor *q, const pg_tensor *k, const pg_tensor *v,
                         const pg_tensor *mask, const pg_tensor *out, const pg_tensor *dout,
                         const pg_tensor *lse, double scale, bool causal, double dropout_p,
                         uint64_t seed, uint64_t offset, pg_tensor *dq, pg_tensor *dk,
                         pg_tensor *dv)
{
    const char *op = "scaled_dot_product_attention_backward";
    pg_tensor_out_init(dq, NULL);
    pg_tensor_out_init(dk, NULL);
    pg_tensor_out_init(dv, NULL);
    sdpa_in in;
    PG_TRY(prepare(op, q, k, v, mask, &in));
    pg_tensor o, d, l;
    memset(&o, 0, sizeof o);
    memset(&d, 0, sizeof d);
    memset(&l, 0, sizeof l);
    int64_t oshape[4] = {q->shape[0], q->shape[1], q->shape[2], v->shape[3]};
    pg_status st = PG_OK;
    const pg_tensor *od[2] = {out, dout};
    for (int i = 0; i < 2 && st == PG_OK; i++) {
        st = want4(op, i ? "the output's gradient" : "the output", od[i], q->dtype);
        if (st == PG_OK && memcmp(od[i]->shape, oshape, sizeof oshape) != 0)
            st = pg_error_set(PG_ERR_SHAPE, "%s: the output's shape does not fit", op);
        if (st == PG_OK)
            st = pg_check_same_device(op, q, od[i]);
    }
    if (st == PG_OK && (lse->dtype != q->dtype || lse->ndim != 3 ||
                        memcmp(lse->shape, q->shape, 3 * sizeof(int64_t)) != 0))
        st = pg_error_set(PG_ERR_SHAPE, "%s: the saved logsumexp does not fit the query", op);
    if (st == PG_OK)
        st = pg_check_same_device(op, q, lse);
    if (st == PG_OK)
        st = unit_last(out, &o);
    if (st == PG_OK)
        st = unit_last(dout, &d);
    if (st == PG_OK)
        st = pg_op_contiguous(lse, &l);
    pg_device dev = pg_tensor_device(q);
    if (st == PG_OK)
        st = pg_backend_check_op(dev, PG_OP_SDPA_BWD, q->dtype, op);
    if (st == PG_OK)
        st = pg_tensor_empty(dev, (pg_dtype)q->dtype, 4, q->shape, dq);
    if (st == PG_OK)
        st = pg_tensor_empty(dev, (pg_dtype)q->dtype, 4, k->shape, dk);
    if (st == PG_OK)
        st = pg_tensor_empty(dev, (pg_dtype)q->dtype, 4, v->shape, dv);
    if (st == PG_OK && pg_tensor_numel(dq) + pg_tensor_numel(dk) + pg_tensor_numel(dv) > 0) {
        if (k->shape[2] == 0 || q->shape[2] == 0) {
            pg_scalar zero = {PG_SCALAR_INT, 0.0, 0};
            pg_tensor *zs[3] = {dq, dk, dv};
            for (int i = 0; i < 3 && st == PG_OK; i++)
                if (pg_tensor_numel(zs[i]) > 0)
                    st = pg_op_fill(zs[i], zero);
        } else {
            pg_node n;
            pg_node_start(&n, PG_OP_SDPA_BWD, 0, op);
            n.nsrc = 7;
            n.src[0] = in.q;
            n.src[1] = in.k;
            n.src[2] = in.v;
            n.src[3] = in.mask;
            n.src[4] = o;
            n.src[5] = d;
            n.src[6] = l;
            n.dst = *dq;
            n.nextra = 2;
            n.extra[0] = *dk;
            n.extra[1] = *dv;
            set_params(&n, scale, causal, dropout_p, seed, offset);
            st = pg_launch(&n);
        }
    }
    sdpa_in_clear(&in);
    pg_tensor *tmp[3] = {&o, &d, &l};
    for (int i = 0; i < 3; i++)
        if (tmp[i]->storage)
            pg_tensor_clear(tmp[i]);
    if (st != PG_OK) {
        pg_tensor *outs[3] = {dq, dk, dv};
        for (int i = 0; i < 3; i++)
            if (outs[i]->storage)
                pg_tensor_clear(outs[i]);
    }
    return st;
}
