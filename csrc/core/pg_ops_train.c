/* pg_ops_train.c - the generic layer of the fused training ops: checked once here.
 *
 * Each op validates devices, dtypes (float32/float64, all equal; the linear
 * layers also float16/bfloat16) and shapes,
 * makes its inputs contiguous (a reference when they already are), allocates
 * outputs on the operands' device and launches ONE node: the backend runs the
 * whole fused computation (BLAS/cuBLAS matmuls plus fused elementwise passes)
 * for it. Operands and outputs of each node, in slot order:
 *
 *   LINEAR_FWD  src: x (N,I), W (O,I), b (O) | NULL          dst: y (N,O)
 *               subop: activation; y = act(x @ W^T + b)
 *               (half x: W may be float32, rounded to x's dtype as it is read;
 *               in LINEAR_BWD, dX = dz @ W reads it as pg_gemm.h b_exact says)
 *   LINEAR_BWD  src: dy (N,O), x (N,I), W (O,I), y (N,O) | NULL
 *               dst: dW (O,I); extra: dx (N,I) | NULL, db (O) | NULL,
 *               dz (N,O) scratch = dy * act'(y) | NULL when act is none
 *               dW and db have dy's dtype, or float32 for half operands under
 *               autocast (the parameters' float32: no rounding, no widening pass)
 *   XENT_FWD    src: logits (N,C), labels (N) int64     dst: loss (); extra: probs (N,C)
 *               p.xent.mean: mean (1) or sum (0)
 *   XENT_BWD    src: probs (N,C), labels (N), gloss ()  dst: dlogits (N,C)
 *   SGD         src: g, p, buf | NULL                   dst: p; extra: buf | NULL
 *               p.optim.hyper (f): lr, momentum, dampening, weight_decay;
 *               p.optim.flag (i): nesterov, first step
 *   ADAM, RMSPROP, ADAGRAD, ADADELTA: the adaptive optimizers (the op table's PG_OPTIM
 *               rows), one node kind each
 *               src: g, p, s0, s1                      dst: p; extra: s0, s1, s2
 *               (s2, when present, is read and written through extra[2] alone)
 *     ADAM      s0 m, s1 v, s2 vmax (amsgrad) | NULL
 *               f: lr/(1-b1^t), b1, b2, eps, wd (L2) or lr*wd (AdamW), sqrt(1-b2^t)
 *               i: amsgrad, decoupled (AdamW: p *= 1 - f[4] before the step)
 *     RMSPROP   s0 square_avg, s1 momentum buffer | NULL, s2 grad_avg (centered) | NULL
 *               f: lr, alpha, eps, wd, momentum
 *     ADAGRAD   s0 sum;                f: lr/(1+(t-1)*lr_decay), wd, eps
 *     ADADELTA  s0 square_avg, s1 acc_delta;  f: lr, rho, eps, wd
 *
 * A label out of [0, C) fails the op with a message naming the label and the
 * class count (at once on cpu; as the op's asynchronous failure on a device). */
#include <math.h>
#include <string.h>

#include "pg_ops.h"
#include "pg_backend.h"

static pg_status check_float(const char *op, const char *what, const pg_tensor *t, int dt)
{
    if (t->dtype != PG_FLOAT32 && t->dtype != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: %s must be float32 or float64, got %s", op, what,
                            pg_dtype_name((pg_dtype)t->dtype));
    if (dt >= 0 && t->dtype != dt)
        return pg_error_set(PG_ERR_DTYPE, "%s: %s is %s but the other operands are %s; convert "
                                          "with .astype()",
                            op, what, pg_dtype_name((pg_dtype)t->dtype), pg_dtype_name((pg_dtype)dt));
    return PG_OK;
}

/* The linear layers also take float16/bfloat16 (all operands one dtype; fp32 accumulation in
 * the backend's half GEMM) where the device's backend runs them (supports_op). */
static pg_status check_float_half(const char *op, const char *what, const pg_tensor *t, int dt,
                                  int node_op)
{
    if (t->dtype != PG_FLOAT16 && t->dtype != PG_BFLOAT16)
        return check_float(op, what, t, dt);
    if (dt >= 0 && t->dtype != dt)
        return check_float(op, what, t, dt);
    return pg_backend_check_op(pg_tensor_device(t), node_op, t->dtype, op);
}

static bool is_half_dt(int dt) { return dt == PG_FLOAT16 || dt == PG_BFLOAT16; }

/* The weight of a half layer may also be float32 (autocast's parameters): the forward GEMM
 * rounds each value to the layer's dtype as it reads it (pg_gemm.h b_f32), so y is exactly
 * that of weight.astype(dtype), without the cast; the backward's dX uses the float32 values
 * as they are where the GEMM computes in float32 (pg_gemm.h b_exact). */
static pg_status check_weight(const char *op, const pg_tensor *w, int dt, int node_op)
{
    if (is_half_dt(dt) && w->dtype == PG_FLOAT32)
        return PG_OK;
    return check_float_half(op, "weight", w, dt, node_op);
}

static pg_status check_shape(const char *op, const char *what, const pg_tensor *t, int ndim,
                             const int64_t *shape)
{
    bool ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++)
        ok = t->shape[i] == shape[i];
    if (ok)
        return PG_OK;
    char a[96], b[96];
    return pg_error_set(PG_ERR_SHAPE, "%s: %s has shape %s, expected %s", op, what,
                        pg_shape_str(t->ndim, t->shape, a, sizeof a),
                        pg_shape_str(ndim, shape, b, sizeof b));
}

static void node_init(pg_node *n, int op, int subop, const char *name)
{
    memset(n, 0, sizeof *n);
    n->op = op;
    n->subop = subop;
    n->name = name;
}

/* Contiguous references of `n` inputs (NULL entries stay zeroed); on failure clears all. */
static pg_status contiguous_all(int n, const pg_tensor *const *in, pg_tensor *out)
{
    memset(out, 0, sizeof(pg_tensor) * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (!in[i])
            continue;
        pg_status st = pg_op_contiguous(in[i], &out[i]);
        if (st != PG_OK) {
            for (int k = 0; k < i; k++)
                if (out[k].storage)
                    pg_tensor_clear(&out[k]);
            return st;
        }
    }
    return PG_OK;
}

static void clear_all(int n, pg_tensor *t)
{
    for (int i = 0; i < n; i++)
        if (t[i].storage)
            pg_tensor_clear(&t[i]);
}

/* ---- linear --------------------------------------------------------------------------- */

bool pg_linear_mask_runs_on(pg_device dev)
{
    return dev.type == PG_DEV_CPU || dev.type == PG_DEV_SIM;
}

/* A pruned layer's mask (pg_ops.h *_masked): float32, shaped as the float32 weight, on its
 * device, which runs the CPU's GEMM kernels (cpu, sim): they multiply it in as they pack W */
static pg_status check_mask(const char *op, const pg_tensor *w, const pg_tensor *mask)
{
    if (!mask)
        return PG_OK;
    if (w->dtype != PG_FLOAT32 || mask->dtype != PG_FLOAT32)
        return pg_error_set(PG_ERR_DTYPE, "%s: a fused weight mask needs a float32 weight and "
                                          "a float32 mask, got %s and %s; pass weight * mask",
                            op, pg_dtype_name((pg_dtype)w->dtype),
                            pg_dtype_name((pg_dtype)mask->dtype));
    PG_TRY(pg_check_same_device(op, w, mask));
    if (!pg_linear_mask_runs_on(pg_tensor_device(w)))
        return pg_error_set(PG_ERR_VALUE, "%s: a fused weight mask runs on cpu and sim only; "
                                          "on this device pass weight * mask", op);
    return check_shape(op, "weight mask", mask, 2, w->shape);
}

pg_status pg_op_linear_fwd(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b, int act,
                           pg_tensor *y)
{
    return pg_op_linear_fwd_masked(x, w, NULL, b, act, y);
}

pg_status pg_op_linear_fwd_masked(const pg_tensor *x, const pg_tensor *w, const pg_tensor *mask,
                                  const pg_tensor *b, int act, pg_tensor *y)
{
    const char *op = "linear";
    if (act < 0 || act >= PG_NUM_ACT)
        return pg_error_set(PG_ERR_VALUE, "%s: unknown activation code %d", op, act);
    PG_TRY(check_float_half(op, "input", x, -1, PG_OP_LINEAR_FWD));
    PG_TRY(check_weight(op, w, x->dtype, PG_OP_LINEAR_FWD));
    PG_TRY(pg_check_same_device(op, x, w));
    if (x->ndim != 2 || w->ndim != 2)
        return pg_error_set(PG_ERR_SHAPE, "%s: input must be (batch, in) and weight (out, in); "
                                          "got %d-d and %d-d", op, x->ndim, w->ndim);
    if (x->shape[1] != w->shape[1]) {
        char a[64], c[64];
        return pg_error_set(PG_ERR_SHAPE, "%s: input %s has %lld features but weight %s expects "
                                          "%lld (weight is (out_features, in_features))",
                            op, pg_shape_str(2, x->shape, a, sizeof a), (long long)x->shape[1],
                            pg_shape_str(2, w->shape, c, sizeof c), (long long)w->shape[1]);
    }
    if (x->shape[1] == 0 || w->shape[0] == 0)
        return pg_error_set(PG_ERR_SHAPE, "%s: in_features and out_features must be >= 1", op);
    if (b) {
        PG_TRY(check_float_half(op, "bias", b, x->dtype, PG_OP_LINEAR_FWD));
        PG_TRY(pg_check_same_device(op, x, b));
        PG_TRY(check_shape(op, "bias", b, 1, &w->shape[0]));
    }
    PG_TRY(check_mask(op, w, mask));
    int64_t shape[2] = {x->shape[0], w->shape[0]};
    const pg_tensor *in[4] = {x, w, b, mask};
    pg_node n;
    node_init(&n, PG_OP_LINEAR_FWD, act, op);
    PG_TRY(contiguous_all(4, in, n.src));
    n.nsrc = 4;
    pg_status st = pg_tensor_empty(pg_tensor_device(x), (pg_dtype)x->dtype, 2, shape, &n.dst);
    if (st == PG_OK && pg_tensor_numel(&n.dst) > 0)
        st = pg_launch(&n);
    clear_all(4, n.src);
    if (st != PG_OK) {
        if (n.dst.storage)
            pg_tensor_clear(&n.dst);
        return st;
    }
    *y = n.dst;
    return PG_OK;
}

pg_status pg_op_linear_bwd(const pg_tensor *dy, const pg_tensor *x, const pg_tensor *w,
                           const pg_tensor *y, int act, bool want_dx, bool want_db, bool wgrad_f32,
                           pg_tensor *dx, pg_tensor *dw, pg_tensor *db)
{
    return pg_op_linear_bwd_masked(dy, x, w, NULL, y, act, want_dx, want_db, wgrad_f32, dx, dw,
                                   db);
}

pg_status pg_op_linear_bwd_masked(const pg_tensor *dy, const pg_tensor *x, const pg_tensor *w,
                                  const pg_tensor *mask, const pg_tensor *y, int act, bool want_dx,
                                  bool want_db, bool wgrad_f32, pg_tensor *dx, pg_tensor *dw,
                                  pg_tensor *db)
{
    const char *op = "linear_backward";
    if (act < 0 || act >= PG_NUM_ACT)
        return pg_error_set(PG_ERR_VALUE, "%s: unknown activation code %d", op, act);
    if (act != PG_ACT_NONE && !y)
        return pg_error_set(PG_ERR_VALUE, "%s: the activation output is needed", op);
    PG_TRY(check_float_half(op, "grad", dy, -1, PG_OP_LINEAR_BWD));
    PG_TRY(check_float_half(op, "input", x, dy->dtype, PG_OP_LINEAR_BWD));
    PG_TRY(check_weight(op, w, dy->dtype, PG_OP_LINEAR_BWD));
    PG_TRY(pg_check_same_device(op, dy, x));
    PG_TRY(pg_check_same_device(op, dy, w));
    if (x->ndim != 2 || w->ndim != 2)
        return pg_error_set(PG_ERR_SHAPE, "%s: input and weight must be 2-d", op);
    int64_t N = x->shape[0], I = x->shape[1], O = w->shape[0];
    int64_t yshape[2] = {N, O}, wshape[2] = {O, I};
    PG_TRY(check_shape(op, "weight", w, 2, wshape));
    PG_TRY(check_shape(op, "grad", dy, 2, yshape));
    if (I == 0 || O == 0)
        return pg_error_set(PG_ERR_SHAPE, "%s: in_features and out_features must be >= 1", op);
    if (y && act != PG_ACT_NONE) {
        PG_TRY(check_float_half(op, "output", y, dy->dtype, PG_OP_LINEAR_BWD));
        PG_TRY(pg_check_same_device(op, dy, y));
        PG_TRY(check_shape(op, "output", y, 2, yshape));
    }
    pg_device dev = pg_tensor_device(dy);
    pg_dtype dt = (pg_dtype)dy->dtype;
    if (wgrad_f32 && dt != PG_FLOAT16 && dt != PG_BFLOAT16 && dt != PG_FLOAT32)
        return pg_error_set(PG_ERR_DTYPE, "%s: float32 weight gradients are for float16/bfloat16 "
                                          "operands, got %s", op, pg_dtype_name(dt));
    pg_dtype gdt = wgrad_f32 ? PG_FLOAT32 : dt; /* dW and db */
    PG_TRY(check_mask(op, w, mask));
    if (mask && gdt != PG_FLOAT32)
        return pg_error_set(PG_ERR_DTYPE, "%s: a fused weight mask needs float32 weight "
                                          "gradients (wgrad_f32 for half operands)", op);
    const pg_tensor *in[5] = {dy, x, w, act != PG_ACT_NONE ? y : NULL, mask};
    pg_node n;
    node_init(&n, PG_OP_LINEAR_BWD, act, op);
    PG_TRY(contiguous_all(5, in, n.src));
    n.nsrc = 5;
    n.nextra = 3;
    pg_status st = pg_tensor_empty(dev, gdt, 2, wshape, &n.dst);
    int64_t xshape[2] = {N, I};
    if (st == PG_OK && want_dx)
        st = pg_tensor_empty(dev, dt, 2, xshape, &n.extra[0]);
    if (st == PG_OK && want_db)
        st = pg_tensor_empty(dev, gdt, 1, &O, &n.extra[1]);
    if (st == PG_OK && act != PG_ACT_NONE)
        st = pg_tensor_empty(dev, dt, 2, yshape, &n.extra[2]);
    if (st == PG_OK)
        st = pg_launch(&n); /* N == 0 still launches: dW and db become zeros */
    clear_all(5, n.src);
    if (n.extra[2].storage)
        pg_tensor_clear(&n.extra[2]); /* the scratch lives until the queued op is done */
    if (st != PG_OK) {
        clear_all(1, &n.dst);
        clear_all(2, n.extra);
        return st;
    }
    *dw = n.dst;
    memset(dx, 0, sizeof *dx);
    memset(db, 0, sizeof *db);
    if (want_dx)
        *dx = n.extra[0];
    if (want_db)
        *db = n.extra[1];
    return PG_OK;
}

/* ---- softmax cross-entropy ------------------------------------------------------------ */

static pg_status check_labels(const char *op, const pg_tensor *logits, const pg_tensor *labels)
{
    PG_TRY(check_float(op, "input", logits, -1));
    PG_TRY(pg_check_same_device(op, logits, labels));
    if (logits->ndim != 2)
        return pg_error_set(PG_ERR_SHAPE, "%s: input must be (batch, classes), got %d-d", op,
                            logits->ndim);
    if (labels->dtype != PG_INT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: target must hold int64 class indices, got %s", op,
                            pg_dtype_name((pg_dtype)labels->dtype));
    return check_shape(op, "target", labels, 1, &logits->shape[0]);
}

/* t seen as a contiguous (R, C) matrix (the row ops' src0 and dst) */
static void as_rows(pg_tensor *t, int64_t R, int64_t C)
{
    t->ndim = 2;
    t->shape[0] = R;
    t->shape[1] = C;
    t->strides[0] = C;
    t->strides[1] = 1;
}

pg_status pg_op_softmax_rows(const pg_tensor *x, bool log, pg_tensor *out)
{
    const char *op = log ? "log_softmax" : "softmax";
    pg_tensor_out_init(out, NULL);
    if (x->dtype != PG_FLOAT32 && x->dtype != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: the one-node softmax takes float32 or float64, "
                                          "got %s", op, pg_dtype_name((pg_dtype)x->dtype));
    if (x->ndim == 0)
        return pg_error_set(PG_ERR_SHAPE, "%s: the one-node softmax needs an axis", op);
    pg_device dev = pg_tensor_device(x);
    PG_TRY(pg_backend_check_op(dev, PG_OP_SOFTMAX, x->dtype, op));
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)x->dtype, x->ndim, x->shape, out));
    int64_t C = x->shape[x->ndim - 1], R = C ? pg_tensor_numel(x) / C : 0;
    if (R == 0 || C == 0)
        return PG_OK;
    const pg_tensor *in[1] = {x};
    pg_node n;
    node_init(&n, PG_OP_SOFTMAX, log ? PG_SOFTMAX_LOG : PG_SOFTMAX_PLAIN, op);
    pg_status st = contiguous_all(1, in, n.src);
    if (st != PG_OK) {
        pg_tensor_clear(out);
        return st;
    }
    n.nsrc = 1;
    n.dst = *out;
    as_rows(&n.src[0], R, C); /* both as (R, C): the pool cuts rows (axis 0) */
    as_rows(&n.dst, R, C);
    st = pg_launch(&n);
    clear_all(1, n.src);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

pg_status pg_op_xent_fwd(const pg_tensor *logits, const pg_tensor *labels, bool mean,
                         pg_tensor *loss, pg_tensor *probs)
{
    const char *op = "cross_entropy";
    PG_TRY(check_labels(op, logits, labels));
    pg_device dev = pg_tensor_device(logits);
    const pg_tensor *in[2] = {logits, labels};
    pg_node n;
    node_init(&n, PG_OP_XENT_FWD, 0, op);
    n.p.xent.mean = mean;
    PG_TRY(contiguous_all(2, in, n.src));
    n.nsrc = 2;
    n.nextra = 1;
    const int64_t scalar_shape[1] = {1}; /* 0-d: the shape array is not read */
    pg_status st = pg_tensor_empty(dev, (pg_dtype)logits->dtype, 0, scalar_shape, &n.dst);
    if (st == PG_OK)
        st = pg_tensor_empty(dev, (pg_dtype)logits->dtype, 2, logits->shape, &n.extra[0]);
    if (st == PG_OK)
        st = pg_launch(&n);
    clear_all(2, n.src);
    if (st != PG_OK) {
        clear_all(1, &n.dst);
        clear_all(1, n.extra);
        return st;
    }
    *loss = n.dst;
    *probs = n.extra[0];
    return PG_OK;
}

pg_status pg_op_xent_bwd(const pg_tensor *probs, const pg_tensor *labels, const pg_tensor *gloss,
                         bool mean, pg_tensor *dlogits)
{
    const char *op = "cross_entropy_backward";
    PG_TRY(check_labels(op, probs, labels));
    PG_TRY(check_float(op, "grad", gloss, probs->dtype));
    PG_TRY(pg_check_same_device(op, probs, gloss));
    if (pg_tensor_numel(gloss) != 1)
        return pg_error_set(PG_ERR_SHAPE, "%s: the loss gradient must have one element", op);
    const pg_tensor *in[3] = {probs, labels, gloss};
    pg_node n;
    node_init(&n, PG_OP_XENT_BWD, 0, op);
    n.p.xent.mean = mean;
    PG_TRY(contiguous_all(3, in, n.src));
    n.nsrc = 3;
    pg_status st = pg_tensor_empty(pg_tensor_device(probs), (pg_dtype)probs->dtype, 2,
                                   probs->shape, &n.dst);
    if (st == PG_OK && pg_tensor_numel(&n.dst) > 0)
        st = pg_launch(&n);
    clear_all(3, n.src);
    if (st != PG_OK) {
        clear_all(1, &n.dst);
        return st;
    }
    *dlogits = n.dst;
    return PG_OK;
}

/* ---- optimizers ----------------------------------------------------------------------- */

static pg_status check_state(const char *op, const char *what, const pg_tensor *p,
                             const pg_tensor *t)
{
    PG_TRY(check_float(op, what, t, p->dtype));
    PG_TRY(pg_check_same_device(op, p, t));
    PG_TRY(check_shape(op, what, t, p->ndim, p->shape));
    if (!pg_tensor_is_contiguous(t))
        return pg_error_set(PG_ERR_VALUE, "%s: %s must be contiguous to be updated in place", op,
                            what);
    if (t->storage->flags & PG_STORAGE_READONLY)
        return pg_error_set(PG_ERR_VALUE, "%s: %s is read-only", op, what);
    return PG_OK;
}

/* SGD's node for one parameter, every operand checked, the grad made contiguous in
 * n->src[0] (a reference the caller clears after the launch); launched by pg_op_sgd, or
 * listed in a MULTI node by pg_op_optim_multi. */
static pg_status sgd_node(pg_node *n, const pg_tensor *p, const pg_tensor *g,
                          const pg_tensor *buf, const double h[5], int nesterov, int first)
{
    const char *op = "sgd";
    const double momentum = h[1];
    PG_TRY(check_state(op, "parameter", p, p));
    PG_TRY(check_float(op, "grad", g, p->dtype));
    PG_TRY(pg_check_same_device(op, p, g));
    PG_TRY(check_shape(op, "grad", g, p->ndim, p->shape));
    if (momentum != 0 && !buf)
        return pg_error_set(PG_ERR_VALUE, "%s: momentum needs a momentum buffer", op);
    if (buf)
        PG_TRY(check_state(op, "momentum buffer", p, buf));
    node_init(n, PG_OP_SGD, 0, op);
    for (int k = 0; k < 4; k++) /* lr, momentum, dampening, weight_decay */
        n->p.optim.hyper[k] = h[k];
    n->p.optim.flag[0] = nesterov;
    n->p.optim.flag[1] = first;
    /* src: g (contiguous copy if needed), p, buf; dst: p; extra: buf */
    PG_TRY(pg_op_contiguous(g, &n->src[0]));
    n->nsrc = 3;
    n->src[1] = *p;
    n->dst = *p;
    n->nextra = 1;
    if (momentum != 0) {
        n->src[2] = *buf; /* borrowed: the caller holds them until launch returns */
        n->extra[0] = *buf;
    }
    return PG_OK;
}

/* Launch one parameter's update node and release its contiguous grad. */
static pg_status launch_update(pg_node *n)
{
    pg_status st = pg_tensor_numel(&n->dst) > 0 ? pg_launch(n) : PG_OK;
    pg_tensor_clear(&n->src[0]);
    return st;
}

pg_status pg_op_sgd(const pg_tensor *p, const pg_tensor *g, const pg_tensor *buf, double lr,
                    double momentum, double dampening, double weight_decay, bool nesterov,
                    bool first)
{
    const double h[5] = {lr, momentum, dampening, weight_decay, 0};
    pg_node n;
    PG_TRY(sgd_node(&n, p, g, buf, h, nesterov, first));
    return launch_update(&n);
}

pg_status pg_op_adam(const pg_tensor *p, const pg_tensor *g, const pg_tensor *m,
                     const pg_tensor *v, double lr, double beta1, double beta2, double eps,
                     double weight_decay, int64_t step)
{
    const pg_tensor *state[3] = {m, v, NULL};
    const double hyper[5] = {lr, beta1, beta2, eps, weight_decay};
    return pg_op_optim("adam", p, g, state, hyper, step, 0, 0);
}

/* Each kind's node scalars (f, as the header lists them) from the caller's five
 * hyper-parameters at step t, and which optional state slots its flags turn on. */
static void optim_hyper_adam(double f[6], bool need[3], int64_t flag[2], const double h[5],
                             double t)
{
    const int64_t flag0 = flag[0], flag1 = flag[1];
    f[0] = h[0] / (1.0 - pow(h[1], t));
    f[1] = h[1];
    f[2] = h[2];
    f[3] = h[3];
    f[4] = flag1 ? h[0] * h[4] : h[4];
    f[5] = sqrt(1.0 - pow(h[2], t));
    need[2] = flag0; /* amsgrad */
}

static void optim_hyper_rmsprop(double f[6], bool need[3], int64_t flag[2], const double h[5],
                                double t)
{
    (void)t;
    const int64_t flag0 = flag[0];
    for (int k = 0; k < 5; k++)
        f[k] = h[k];
    need[1] = h[4] != 0; /* momentum */
    need[2] = flag0;     /* centered */
}

static void optim_hyper_adagrad(double f[6], bool need[3], int64_t flag[2], const double h[5],
                                double t)
{
    (void)need;
    (void)flag;
    f[0] = h[0] / (1.0 + (t - 1.0) * h[1]);
    f[1] = h[2];
    f[2] = h[3];
}

static void optim_hyper_adadelta(double f[6], bool need[3], int64_t flag[2], const double h[5],
                                 double t)
{
    (void)need;
    (void)t;
    (void)flag;
    for (int k = 0; k < 5; k++)
        f[k] = h[k];
}

/* RAdam (torch/optim/radam.py): h lr, beta1, beta2, eps, weight_decay; flag[1] decoupled.
 * f: the step's scale (rectified: lr * rect * sqrt(1 - beta2^t), else lr), 1 - beta1 (the
 * first moment's lerp weight), beta2, eps, weight decay (decoupled: lr * wd, p *= 1 - it
 * first), 1 - beta1^t; flag[0] set here: whether the step is rectified (rho_t > 5). */
static void optim_hyper_radam(double f[6], bool need[3], int64_t flag[2], const double h[5],
                              double t)
{
    (void)need;
    const double lr = h[0], b1 = h[1], b2 = h[2], bc2 = 1.0 - pow(b2, t);
    const double rho_inf = 2.0 / (1.0 - b2) - 1.0;
    const double rho_t = rho_inf - 2.0 * t * pow(b2, t) / bc2;
    flag[0] = rho_t > 5.0;
    f[0] = lr;
    if (flag[0])
        f[0] = lr * sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                         ((rho_inf - 4) * (rho_inf - 2) * rho_t)) * sqrt(bc2);
    f[1] = 1.0 - b1;
    f[2] = b2;
    f[3] = h[3];
    f[4] = flag[1] ? lr * h[4] : h[4];
    f[5] = 1.0 - pow(b1, t);
}

/* Adamax (torch/optim/adamax.py): h lr, beta1, beta2, eps, weight_decay. f: lr / (1 -
 * beta1^t), 1 - beta1 (the lerp weight), beta2, eps, weight_decay. */
static void optim_hyper_adamax(double f[6], bool need[3], int64_t flag[2], const double h[5],
                               double t)
{
    (void)need;
    (void)flag;
    f[0] = h[0] / (1.0 - pow(h[1], t));
    f[1] = 1.0 - h[1];
    f[2] = h[2];
    f[3] = h[3];
    f[4] = h[4];
}

/* The kinds, from the op table's PG_OPTIM rows: the node kind that runs each, its name,
 * what it calls its state slots (NULL: unused) and its scalars. */
typedef struct optim_kind {
    int op;
    const char *name;
    const char *slots[3];
    /* f from h at step t; flag holds the caller's two flags, which a kind may set (RAdam's
     * rectification is a function of t) */
    void (*hyper)(double f[6], bool need[3], int64_t flag[2], const double h[5], double t);
} optim_kind;

static const optim_kind optim_kinds[] = {
#define PG_OPTIM(ID, name, s0, s1, s2) {PG_OP_##ID, #name, {s0, s1, s2}, optim_hyper_##name},
#include "pg_ops.def"
};
#define NUM_OPTIM_KINDS ((int)(sizeof optim_kinds / sizeof optim_kinds[0]))

static const optim_kind *optim_kind_named(const char *name)
{
    for (int k = 0; k < NUM_OPTIM_KINDS; k++)
        if (strcmp(optim_kinds[k].name, name) == 0)
            return &optim_kinds[k];
    return NULL;
}

/* An adaptive kind's node for one parameter, checked, its grad contiguous in n->src[0] (as
 * sgd_node). */
static pg_status optim_node(pg_node *n, const optim_kind *kind, const pg_tensor *p,
                            const pg_tensor *g, const pg_tensor *const state[3],
                            const double hyper[5], int64_t step, int flag0, int flag1)
{
    const char *op = kind->name;
    if (step < 1)
        return pg_error_set(PG_ERR_VALUE, "%s: step must be >= 1, got %lld", op, (long long)step);
    PG_TRY(check_state(op, "parameter", p, p));
    PG_TRY(check_float(op, "grad", g, p->dtype));
    PG_TRY(pg_check_same_device(op, p, g));
    PG_TRY(check_shape(op, "grad", g, p->ndim, p->shape));
    /* which slots this call needs: the kind's fixed ones plus those its flags turn on */
    bool need[3] = {true, kind->slots[1] != NULL, false};
    node_init(n, kind->op, 0, op);
    n->p.optim.flag[0] = flag0;
    n->p.optim.flag[1] = flag1;
    kind->hyper(n->p.optim.hyper, need, n->p.optim.flag, hyper, (double)step);
    for (int s = 0; s < 3; s++) {
        if (need[s] && !state[s])
            return pg_error_set(PG_ERR_VALUE, "%s: the update needs its %s state", op,
                                kind->slots[s]);
        if (need[s])
            PG_TRY(check_state(op, kind->slots[s], p, state[s]));
    }
    /* src: g, p, s0, s1; dst: p; extra: s0, s1, s2 (the node holds at most 4 sources) */
    PG_TRY(pg_op_contiguous(g, &n->src[0]));
    n->nsrc = 4;
    n->src[1] = *p;
    for (int s = 0; s < 2; s++)
        if (need[s])
            n->src[2 + s] = *state[s];
    n->dst = *p;
    n->nextra = 3;
    for (int s = 0; s < 3; s++)
        if (need[s])
            n->extra[s] = *state[s];
    return PG_OK;
}

pg_status pg_op_optim(const char *name, const pg_tensor *p, const pg_tensor *g,
                      const pg_tensor *const state[3], const double hyper[5], int64_t step,
                      int flag0, int flag1)
{
    const optim_kind *kind = optim_kind_named(name);
    if (!kind)
        return pg_error_set(PG_ERR_VALUE, "optimizer update: unknown kind '%s' (adam, rmsprop, "
                            "adagrad, adadelta, radam or adamax)", name);
    pg_node n;
    PG_TRY(optim_node(&n, kind, p, g, state, hyper, step, flag0, flag1));
    return launch_update(&n);
}

/* One parameter's node of the kind `name` ("sgd" or a PG_OPTIM row's), as pg_op_sgd and
 * pg_op_optim build it. */
static pg_status any_optim_node(pg_node *n, const char *name, const pg_tensor *p,
                                const pg_tensor *g, const pg_tensor *const state[3],
                                const double hyper[5], int64_t step, int flag0, int flag1)
{
    if (strcmp(name, "sgd") == 0)
        return sgd_node(n, p, g, state[0], hyper, flag0, flag1);
    const optim_kind *kind = optim_kind_named(name);
    if (!kind)
        return pg_error_set(PG_ERR_VALUE, "optimizer update: unknown kind '%s' (sgd, adam, "
                            "rmsprop, adagrad, adadelta, radam or adamax)", name);
    return optim_node(n, kind, p, g, state, hyper, step, flag0, flag1);
}

/* The nodes of `count` parameters, each built and checked as its own update would be, then
 * listed in ONE MULTI node (pg_node.h pg_node_list): the backend runs them as one flat range
 * of elements, cut over its threads by the total, so the result is the per-parameter
 * updates' bit for bit. Every parameter on one device with one dtype (pygpu.optim groups
 * them as torch's foreach path does) and every node's scalars equal (one step count). */
pg_status pg_op_optim_multi(const char *name, int count, const pg_tensor *const *p,
                            const pg_tensor *const *g, const pg_tensor *const *state,
                            const double hyper[5], int64_t step, int flag0, int flag1)
{
    if (count <= 0)
        return PG_OK;
    pg_node first, n;
    PG_TRY(any_optim_node(&first, name, p[0], g[0], state, hyper, step, flag0, flag1));
    pg_node_list *list;
    pg_status st = pg_node_list_new(count, first.nsrc, first.nextra, &list);
    if (st != PG_OK) {
        pg_tensor_clear(&first.src[0]);
        return st;
    }
    int built = 0; /* entries whose contiguous grad (slot 0) the list owns */
    for (int i = 0; i < count && st == PG_OK; i++) {
        if (i > 0) {
            st = any_optim_node(&n, name, p[i], g[i], state + 3 * i, hyper, step, flag0, flag1);
            if (st != PG_OK)
                break;
        } else {
            n = first;
        }
        pg_tensor *e = &list->t[(size_t)i * (size_t)list->width];
        memcpy(e, n.src, sizeof(pg_tensor) * (size_t)n.nsrc);
        e[n.nsrc] = n.dst;
        memcpy(e + n.nsrc + 1, n.extra, sizeof(pg_tensor) * (size_t)n.nextra);
        built++;
        list->total += pg_tensor_numel(&n.dst);
        if (p[i]->dtype != p[0]->dtype)
            st = pg_error_set(PG_ERR_DTYPE, "%s: a multi-tensor step takes one dtype, got %s and "
                              "%s (group the parameters by dtype)", n.name,
                              pg_dtype_name((pg_dtype)p[0]->dtype),
                              pg_dtype_name((pg_dtype)p[i]->dtype));
        else
            st = pg_check_same_device(n.name, p[0], p[i]);
    }
    if (st == PG_OK)
        st = pg_backend_check_op(pg_tensor_device(p[0]), PG_OP_MULTI, p[0]->dtype, first.name);
    if (st == PG_OK && list->total > 0) {
        pg_node m;
        node_init(&m, PG_OP_MULTI, first.op, first.name);
        m.p = first.p;
        m.dst = *p[0];
        m.list = list;
        st = pg_launch(&m);
    }
    for (int i = 0; i < built; i++) { /* the core's grad references; a queued task keeps the
                                        * list's tensors and its own holds on their storages */
        pg_tensor grad = list->t[(size_t)i * (size_t)list->width];
        pg_tensor_clear(&grad);
    }
    pg_node_list_release(list);
    return st;
}
