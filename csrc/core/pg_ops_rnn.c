/* pg_ops_rnn.c - one direction of one recurrent layer (RNN tanh/relu, LSTM with an
 * optional projection, GRU) over a sequence, forward and backward: checked once here,
 * then per timestep a MATMUL node (the hidden state's projection, the GEMM contract)
 * and ONE fused RNN_CELL node (every gate, the cell update and the output in one pass
 * over the step's rows); backward per step one RNN_CELL_BWD node and one MATMUL.
 *
 * The input projections of every timestep are NOT computed here: the caller runs them
 * as one linear layer (G = X @ W_ih^T + b_ih, pygpu/_ops/_rnn.py) before, and the weight
 * gradients as whole-sequence GEMMs after (dW_ih = dG^T X, dW_hh = dHW^T Hprev), which
 * is where almost all of the FLOPs are, in large products.
 *
 * Layout, as PyTorch's packed sequences: the rows of timestep t are rows
 * off[t] .. off[t] + bs[t] of every (N, .) operand, N = sum(bs); batch sizes never grow
 * with t (a padded batch is bs[t] = B for every t). A forward layer runs t = 0 .. T-1, a
 * reverse one T-1 .. 0. The carried state h (B, P) and c (B, H) is updated in place,
 * rows 0 .. bs[t]: it holds h0/c0 before and h_n/c_n after, each sequence's last step.
 *
 * Shapes (KG = gates * H: RNN 1, LSTM 4, GRU 3 gates; P = H, or proj_size):
 *   g (N, KG), w_hh (KG, P), b_hh (KG) | NULL, w_hr (P, H) | NULL (LSTM projection),
 *   h (B, P), c (B, H) (LSTM), out (N, P) (rows may be strided: a bidirectional layer
 *   writes its half of (N, 2P)), m (N, H) (projection only: o * tanh(c) before it),
 *   save (N, S) | NULL: per row [gates (KS) | h_prev (P) | c_prev (H, LSTM)],
 *   KS = H (RNN: its output), 4H (LSTM: i f g o; GRU: r z n and W_hn h + b_hn).
 * RNN_CELL   src: g rows, hw (n, KG), b_hh, h rows, c rows | -
 *            dst: y rows (out, or m with a projection)
 *            extra: h rows (written; none with a projection), c rows, save rows | -
 * RNN_CELL_BWD src: save rows, dy rows | -, dh rows | -, dc rows | -
 *            dst: dG rows (the gates' pre-activation gradients, input side)
 *            extra: dHW rows (GRU: the hidden side, which differs in the n gate) | -,
 *                   dh rows (GRU: written dy * z) | -, dc rows (LSTM) | -
 * subop: the cell kind (an RNN_CELL row of pg_subops.def: PG_RNN_CELL_LSTM, ...). */
#include <string.h>

#include "pg_ops.h"
#include "pg_backend.h"

static int cell_gates(int cell) { return pg_rnn_cell(cell).gates; }

int64_t pg_rnn_save_width(int cell, int64_t H, int64_t P)
{
    pg_rnn_cell_cols c = pg_rnn_cell(cell); /* the cell's row: saved gates, a cell state */
    return c.saved * H + P + (c.cell_state ? H : 0);
}

/* rows [r0, r0 + n) of a 2-d tensor, borrowed (no reference taken: the caller's tensors
 * outlive every node launched from them, and an async backend retains what it queues) */
static pg_tensor rows(const pg_tensor *t, int64_t r0, int64_t n)
{
    pg_tensor v = *t;
    v.offset += r0 * t->strides[0];
    v.shape[0] = n;
    return v;
}

static pg_tensor none(void)
{
    pg_tensor z;
    memset(&z, 0, sizeof z);
    return z;
}

/* c (n, N) = a (n, K) @ op(b): b stored (N, K) and transposed (tb) or (K, N) as it is;
 * a and c rows may be strided. One MATMUL node (the GEMM contract, pg_gemm.h). */
static pg_status mm(const pg_tensor *a, const pg_tensor *b, bool tb, const pg_tensor *c,
                    const char *name)
{
    pg_node n;
    pg_node_start(&n, PG_OP_MATMUL, 0, name);
    n.nsrc = 2;
    pg_tensor *A = &n.src[0], *B = &n.src[1], *C = &n.dst;
    *A = *a;
    *B = *b;
    *C = *c;
    int64_t K = a->shape[1], N = c->shape[1];
    A->ndim = B->ndim = C->ndim = 3;
    A->shape[0] = B->shape[0] = C->shape[0] = 1;
    A->shape[1] = a->shape[0];
    A->shape[2] = K;
    A->strides[0] = 0;
    A->strides[1] = a->strides[0];
    A->strides[2] = 1;
    B->shape[1] = K;
    B->shape[2] = N;
    B->strides[0] = 0;
    B->strides[1] = tb ? 1 : b->strides[0];
    B->strides[2] = tb ? b->strides[0] : 1;
    C->shape[1] = c->shape[0];
    C->shape[2] = N;
    C->strides[0] = 0;
    C->strides[1] = c->strides[0];
    C->strides[2] = 1;
    if (c->shape[0] == 0)
        return PG_OK;
    return pg_launch(&n);
}

static pg_status want(const char *op, const char *what, const pg_tensor *t, int dt, int64_t r,
                      int64_t cols, bool contiguous)
{
    if (t->dtype != dt)
        return pg_error_set(PG_ERR_DTYPE, "%s: %s is %s, expected %s", op, what,
                            pg_dtype_name((pg_dtype)t->dtype), pg_dtype_name((pg_dtype)dt));
    char a[96];
    if (t->ndim != 2 || (r >= 0 && t->shape[0] != r) || t->shape[1] != cols)
        return pg_error_set(PG_ERR_SHAPE, "%s: %s has shape %s, expected (%lld, %lld)", op, what,
                            pg_shape_str(t->ndim, t->shape, a, sizeof a), (long long)r,
                            (long long)cols);
    if ((cols > 1 && t->strides[1] != 1) || (contiguous && t->shape[0] > 1 && t->strides[0] != cols))
        return pg_error_set(PG_ERR_VALUE, "%s: %s must have unit-stride rows%s", op, what,
                            contiguous ? " and be contiguous" : "");
    return PG_OK;
}

static pg_status check_dims(const char *op, int cell, int64_t T, const int64_t *bs, int64_t B,
                            int64_t *N)
{
    if (pg_subop_node(cell) != PG_OP_RNN_CELL)
        return pg_error_set(PG_ERR_VALUE, "%s: %s is not a cell kind", op, pg_subop_id(cell));
    int64_t n = 0;
    for (int64_t t = 0; t < T; t++) {
        if (bs[t] < 1 || bs[t] > B || (t > 0 && bs[t] > bs[t - 1]))
            return pg_error_set(PG_ERR_VALUE, "%s: batch sizes must be in [1, %lld] and never "
                                              "grow; step %lld has %lld", op, (long long)B,
                                (long long)t, (long long)bs[t]);
        n += bs[t];
    }
    *N = n;
    return PG_OK;
}

static pg_status check_device(const char *op, int nt, const pg_tensor *const *ts)
{
    for (int i = 1; i < nt; i++)
        if (ts[i])
            PG_TRY(pg_check_same_device(op, ts[0], ts[i]));
    int dt = ts[0]->dtype;
    if (dt != PG_FLOAT32 && dt != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: the recurrent kernels take float32 or float64, "
                                          "got %s", op, pg_dtype_name((pg_dtype)dt));
    return PG_OK;
}

pg_status pg_op_rnn_forward(int cell, const pg_tensor *g, const pg_tensor *w_hh,
                            const pg_tensor *b_hh, const pg_tensor *w_hr, const pg_tensor *h,
                            const pg_tensor *c, const pg_tensor *out, const pg_tensor *m,
                            const pg_tensor *save, int64_t T, const int64_t *bs, bool reverse)
{
    const char *op = "rnn_cell";
    const pg_tensor *all[] = {g, w_hh, b_hh, w_hr, h, c, out, m, save};
    PG_TRY(check_device(op, 9, all));
    int dt = g->dtype;
    int64_t B = h->ndim == 2 ? h->shape[0] : -1, N;
    PG_TRY(check_dims(op, cell, T, bs, B, &N));
    bool lstm = cell == PG_RNN_CELL_LSTM, proj = w_hr != NULL;
    if (proj && !lstm)
        return pg_error_set(PG_ERR_VALUE, "%s: only an LSTM has a projection", op);
    int64_t P = h->shape[1], KG = w_hh->ndim == 2 ? w_hh->shape[0] : -1;
    int64_t H = KG / cell_gates(cell);
    PG_TRY(want(op, "the input projections", g, dt, N, KG, false));
    PG_TRY(want(op, "weight_hh", w_hh, dt, KG, P, false));
    if (b_hh && (b_hh->dtype != dt || b_hh->ndim != 1 || b_hh->shape[0] != KG ||
                 (KG > 1 && b_hh->strides[0] != 1)))
        return pg_error_set(PG_ERR_SHAPE, "%s: bias_hh must be a unit-stride (%lld) %s vector",
                            op, (long long)KG, pg_dtype_name((pg_dtype)dt));
    if (proj)
        PG_TRY(want(op, "weight_hr", w_hr, dt, P, H, false));
    else if (P != H)
        return pg_error_set(PG_ERR_SHAPE, "%s: the hidden state has %lld features, the cell %lld",
                            op, (long long)P, (long long)H);
    PG_TRY(want(op, "the hidden state", h, dt, B, P, true));
    if (lstm != (c != NULL))
        return pg_error_set(PG_ERR_VALUE, "%s: a cell state goes with an LSTM, and only with one",
                            op);
    if (c)
        PG_TRY(want(op, "the cell state", c, dt, B, H, true));
    PG_TRY(want(op, "the output", out, dt, N, P, false));
    if (proj != (m != NULL))
        return pg_error_set(PG_ERR_VALUE, "%s: a projection needs its (N, H) buffer", op);
    if (m)
        PG_TRY(want(op, "the projection's input", m, dt, N, H, true));
    int64_t S = pg_rnn_save_width(cell, H, P);
    if (save)
        PG_TRY(want(op, "the saved activations", save, dt, N, S, true));
    pg_device dev = pg_tensor_device(g);
    PG_TRY(pg_backend_check_op(dev, PG_OP_RNN_CELL, dt, op));
    if (N == 0 || B == 0)
        return PG_OK;

    pg_tensor hw, bias;
    memset(&bias, 0, sizeof bias);
    int64_t shw[2] = {B, KG}, sb[1] = {KG};
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)dt, 2, shw, &hw));
    pg_status st = PG_OK;
    if (!b_hh) { /* the kernels always add a bias: zeros for bias=False */
        pg_scalar zero = {PG_SCALAR_INT, 0.0, 0};
        st = pg_op_full(dev, (pg_dtype)dt, 1, sb, zero, &bias);
        b_hh = &bias;
    }
    /* the offset of each step's rows */
    int64_t off = reverse ? N : 0;
    for (int64_t k = 0; k < T && st == PG_OK; k++) {
        int64_t t = reverse ? T - 1 - k : k, n = bs[t];
        int64_t r0 = reverse ? (off -= n) : off;
        if (!reverse)
            off += n;
        pg_tensor hr = rows(h, 0, n), hwr = rows(&hw, 0, n);
        st = mm(&hr, w_hh, true, &hwr, op); /* hw = h @ W_hh^T */
        if (st != PG_OK)
            break;
        pg_node nd;
        memset(&nd, 0, sizeof nd);
        nd.op = PG_OP_RNN_CELL;
        nd.subop = cell;
        nd.name = op;
        nd.nsrc = 5;
        nd.src[0] = rows(g, r0, n);
        nd.src[1] = hwr;
        nd.src[2] = *b_hh;
        nd.src[3] = hr;
        nd.src[4] = c ? rows(c, 0, n) : none();
        nd.dst = proj ? rows(m, r0, n) : rows(out, r0, n);
        nd.nextra = 3;
        nd.extra[0] = proj ? none() : hr;
        nd.extra[1] = nd.src[4];
        nd.extra[2] = save ? rows(save, r0, n) : none();
        st = pg_launch(&nd);
        if (st == PG_OK && proj) { /* h_t = m_t @ W_hr^T, into the output, then the state */
            pg_tensor mr = rows(m, r0, n), orow = rows(out, r0, n);
            st = mm(&mr, w_hr, true, &orow, op);
            if (st == PG_OK)
                st = pg_op_copy(&hr, &orow);
        }
    }
    pg_tensor_clear(&hw);
    if (bias.storage)
        pg_tensor_clear(&bias);
    return st;
}

pg_status pg_op_rnn_backward(int cell, const pg_tensor *save, const pg_tensor *w_hh,
                             const pg_tensor *w_hr, const pg_tensor *m, const pg_tensor *dout,
                             const pg_tensor *dh, const pg_tensor *dc, const pg_tensor *dg,
                             const pg_tensor *dhw, const pg_tensor *dhall, int64_t T,
                             const int64_t *bs, bool reverse)
{
    const char *op = "rnn_cell_backward";
    const pg_tensor *all[] = {save, w_hh, w_hr, m, dout, dh, dc, dg, dhw, dhall};
    PG_TRY(check_device(op, 10, all));
    int dt = save->dtype;
    int64_t B = dh->ndim == 2 ? dh->shape[0] : -1, N;
    PG_TRY(check_dims(op, cell, T, bs, B, &N));
    bool lstm = cell == PG_RNN_CELL_LSTM, gru = cell == PG_RNN_CELL_GRU, proj = w_hr != NULL;
    int64_t P = dh->shape[1], KG = w_hh->ndim == 2 ? w_hh->shape[0] : -1;
    int64_t H = KG / cell_gates(cell), S = pg_rnn_save_width(cell, H, P);
    if (proj && !lstm)
        return pg_error_set(PG_ERR_VALUE, "%s: only an LSTM has a projection", op);
    PG_TRY(want(op, "the saved activations", save, dt, N, S, true));
    PG_TRY(want(op, "weight_hh", w_hh, dt, KG, P, false));
    PG_TRY(want(op, "the hidden state's gradient", dh, dt, B, P, true));
    if (lstm != (dc != NULL))
        return pg_error_set(PG_ERR_VALUE, "%s: a cell state goes with an LSTM, and only with one",
                            op);
    if (dc)
        PG_TRY(want(op, "the cell state's gradient", dc, dt, B, H, true));
    if (dout)
        PG_TRY(want(op, "the output's gradient", dout, dt, N, P, false));
    PG_TRY(want(op, "the gates' gradient", dg, dt, N, KG, true));
    if (gru != (dhw != NULL))
        return pg_error_set(PG_ERR_VALUE, "%s: a GRU, and only a GRU, has a separate "
                                          "hidden-side gradient", op);
    if (dhw)
        PG_TRY(want(op, "the hidden side's gradient", dhw, dt, N, KG, true));
    if (proj) {
        if (!m || !dhall)
            return pg_error_set(PG_ERR_VALUE, "%s: a projection needs m and dh_all", op);
        PG_TRY(want(op, "weight_hr", w_hr, dt, P, H, false));
        PG_TRY(want(op, "the projection's input", m, dt, N, H, true));
        PG_TRY(want(op, "dh_all", dhall, dt, N, P, true));
    } else if (P != H) {
        return pg_error_set(PG_ERR_SHAPE, "%s: the hidden state has %lld features, the cell %lld",
                            op, (long long)P, (long long)H);
    }
    pg_device dev = pg_tensor_device(save);
    PG_TRY(pg_backend_check_op(dev, PG_OP_RNN_CELL_BWD, dt, op));
    if (N == 0 || B == 0)
        return PG_OK;

    /* scratch: the GRU's h_prev gradient through W_hh (added to dy * z), a projection's dm */
    pg_tensor scr;
    memset(&scr, 0, sizeof scr);
    int64_t sshape[2] = {B, proj ? H : P};
    if (gru || proj)
        PG_TRY(pg_tensor_empty(dev, (pg_dtype)dt, 2, sshape, &scr));
    pg_status st = PG_OK;
    /* the backward visits the steps in the opposite order of the forward */
    int64_t off = reverse ? 0 : N;
    for (int64_t k = 0; k < T && st == PG_OK; k++) {
        int64_t t = reverse ? k : T - 1 - k, n = bs[t];
        int64_t r0 = reverse ? off : (off -= n);
        if (reverse)
            off += n;
        pg_tensor dhr = rows(dh, 0, n);
        pg_node nd;
        memset(&nd, 0, sizeof nd);
        nd.op = PG_OP_RNN_CELL_BWD;
        nd.subop = cell;
        nd.name = op;
        nd.nsrc = 4;
        nd.src[0] = rows(save, r0, n);
        if (proj) { /* dh_t = dout_t + dh; dm = dh_t @ W_hr */
            pg_tensor dha = rows(dhall, r0, n), dmr = rows(&scr, 0, n);
            if (dout) {
                pg_tensor dor = rows(dout, r0, n);
                st = pg_op_copy(&dha, &dor);
                if (st == PG_OK)
                    st = pg_op_binary_(PG_BIN_ADD, &dha, &dhr);
            } else {
                st = pg_op_copy(&dha, &dhr);
            }
            if (st == PG_OK)
                st = mm(&dha, w_hr, false, &dmr, op);
            if (st != PG_OK)
                break;
            nd.src[1] = dmr;
            nd.src[2] = none();
        } else {
            nd.src[1] = dout ? rows(dout, r0, n) : none();
            nd.src[2] = dhr;
        }
        nd.src[3] = dc ? rows(dc, 0, n) : none();
        nd.dst = rows(dg, r0, n);
        nd.nextra = 3;
        nd.extra[0] = dhw ? rows(dhw, r0, n) : none();
        nd.extra[1] = gru ? dhr : none();
        nd.extra[2] = nd.src[3];
        st = pg_launch(&nd);
        if (st != PG_OK)
            break;
        /* dh_prev = d(hidden side) @ W_hh (GRU: plus the dy * z the cell wrote) */
        if (gru) {
            pg_tensor side = rows(dhw, r0, n), sr = rows(&scr, 0, n);
            st = mm(&side, w_hh, false, &sr, op);
            if (st == PG_OK)
                st = pg_op_binary_(PG_BIN_ADD, &dhr, &sr);
        } else {
            pg_tensor side = rows(dg, r0, n);
            st = mm(&side, w_hh, false, &dhr, op);
        }
    }
    if (scr.storage)
        pg_tensor_clear(&scr);
    return st;
}
