/* sequence.c - pygpu._C's sequence-model ops: _rnn_forward and _rnn_backward (one
 * direction of one recurrent layer, csrc/core/pg_ops_rnn.c), _sdpa_fwd and _sdpa_bwd
 * (scaled-dot-product attention as one fused node each way, pg_ops_attention.c).
 *
 * Internal entry points for pygpu/_ops/_rnn.py, which checks the user-facing arguments
 * (PyTorch's messages) and wires autograd; the core still validates everything. The
 * ops write into the tensors given (the state, the output, the saved activations), as
 * the recurrence runs. The GIL is released on the cpu device (the GEMMs run there). */
#include "../core/pg_backend.h"
#include "errors.h"
#include "tensor_object.h"

#define T(o) (&((PyTensor *)(o))->t)
#define PG_RNN_MAX_STEPS 1000000

static int tensor_or_none(PyObject *o, const char *what, const pg_tensor **out)
{
    if (o == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "rnn: %s must be a pygpu.Tensor or None, got %.80s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = T(o);
    return 0;
}

static int tensor_arg(PyObject *o, const char *what, const pg_tensor **out)
{
    if (o == Py_None) {
        PyErr_Format(PyExc_TypeError, "rnn: %s must be a pygpu.Tensor, got None", what);
        return -1;
    }
    return tensor_or_none(o, what, out);
}

/* batch sizes: a sequence of ints -> a new int64 array (caller frees), *T its length */
static int64_t *batch_sizes(PyObject *seq, int64_t *T)
{
    PyObject *fast = PySequence_Fast(seq, "rnn: batch_sizes must be a sequence of ints");
    if (!fast)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > PG_RNN_MAX_STEPS) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "rnn: too many timesteps");
        return NULL;
    }
    int64_t *bs = PyMem_Malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!bs) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            PyMem_Free(bs);
            Py_DECREF(fast);
            return NULL;
        }
        bs[i] = v;
    }
    Py_DECREF(fast);
    *T = n;
    return bs;
}

static bool on_cpu(const pg_tensor *t) { return t->storage->device.type == PG_DEV_CPU; }

/* _rnn_forward(cell, g, w_hh, b_hh, w_hr, h, c, out, m, save, batch_sizes, reverse) -> None;
 * cell an RNN_CELL row's ID (csrc/core/pg_subops.def: PyTorch's mode, "LSTM") */
static PyObject *f_rnn_forward(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *id;
    int cell, reverse;
    PyObject *o[9], *bso;
    const pg_tensor *t[9];
    static const char *what[9] = {"g", "weight_hh", "bias_hh", "weight_hr", "h", "c",
                                  "out", "m", "save"};
    static const bool optional[9] = {0, 0, 1, 1, 0, 1, 0, 1, 1};
    if (!PyArg_ParseTuple(args, "sOOOOOOOOOOp:_rnn_forward", &id, &o[0], &o[1], &o[2], &o[3],
                          &o[4], &o[5], &o[6], &o[7], &o[8], &bso, &reverse) ||
        (cell = pg_subop_arg("_rnn_forward", PG_OP_RNN_CELL, 0, id)) < 0)
        return NULL;
    for (int i = 0; i < 9; i++)
        if ((optional[i] ? tensor_or_none : tensor_arg)(o[i], what[i], &t[i]) < 0)
            return NULL;
    int64_t T;
    int64_t *bs = batch_sizes(bso, &T);
    if (!bs)
        return NULL;
    pg_status st = PG_CALL(on_cpu(t[0]), pg_op_rnn_forward(cell, t[0], t[1], t[2], t[3], t[4], t[5],
                                                         t[6], t[7], t[8], T, bs, reverse));
    PyMem_Free(bs);
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

/* _rnn_backward(cell, save, w_hh, w_hr, m, dout, dh, dc, dg, dhw, dhall, batch_sizes,
 * reverse) -> None; cell an RNN_CELL row's ID */
static PyObject *f_rnn_backward(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *id;
    int cell, reverse;
    PyObject *o[10], *bso;
    const pg_tensor *t[10];
    static const char *what[10] = {"save", "weight_hh", "weight_hr", "m", "dout", "dh", "dc",
                                   "dg", "dhw", "dhall"};
    static const bool optional[10] = {0, 0, 1, 1, 1, 0, 1, 0, 1, 1};
    if (!PyArg_ParseTuple(args, "sOOOOOOOOOOOp:_rnn_backward", &id, &o[0], &o[1], &o[2], &o[3],
                          &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &bso, &reverse) ||
        (cell = pg_subop_arg("_rnn_backward", PG_OP_RNN_CELL, 0, id)) < 0)
        return NULL;
    for (int i = 0; i < 10; i++)
        if ((optional[i] ? tensor_or_none : tensor_arg)(o[i], what[i], &t[i]) < 0)
            return NULL;
    int64_t T;
    int64_t *bs = batch_sizes(bso, &T);
    if (!bs)
        return NULL;
    pg_status st = PG_CALL(on_cpu(t[0]), pg_op_rnn_backward(cell, t[0], t[1], t[2], t[3], t[4], t[5],
                                                          t[6], t[7], t[8], t[9], T, bs, reverse));
    PyMem_Free(bs);
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

/* _rnn_save_width(cell, H, P) -> the columns of a saved row (pg_ops_rnn.c); cell an
 * RNN_CELL row's ID */
static PyObject *f_rnn_save_width(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *id;
    int cell;
    long long H, P;
    if (!PyArg_ParseTuple(args, "sLL:_rnn_save_width", &id, &H, &P) ||
        (cell = pg_subop_arg("_rnn_save_width", PG_OP_RNN_CELL, 0, id)) < 0)
        return NULL;
    return PyLong_FromLongLong(pg_rnn_save_width(cell, H, P));
}

/* _sdpa_fwd(q, k, v, mask | None, scale, causal, dropout_p) -> (out, lse, seed, offset);
 * pygpu/_ops/_attention.py calls it where _C._has_node("SDPA", q, k, v) says the node runs */
static PyObject *f_sdpa_fwd(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *o[4];
    const pg_tensor *t[4];
    double scale, p;
    int causal;
    if (!PyArg_ParseTuple(args, "OOOOdpd:_sdpa_fwd", &o[0], &o[1], &o[2], &o[3], &scale, &causal,
                          &p))
        return NULL;
    static const char *what[4] = {"query", "key", "value", "attn_mask"};
    for (int i = 0; i < 4; i++)
        if ((i == 3 ? tensor_or_none : tensor_arg)(o[i], what[i], &t[i]) < 0)
            return NULL;
    pg_tensor out, lse;
    uint64_t seed, offset;
    pg_status st = PG_CALL(on_cpu(t[0]), pg_op_sdpa_fwd(t[0], t[1], t[2], t[3], scale, causal, p,
                                                       &out, &lse, &seed, &offset));
    if (st != PG_OK)
        return pg_raise(st);
    PyObject *po = pg_wrap(&out), *pl = po ? pg_wrap(&lse) : NULL;
    if (!po || !pl) {
        Py_XDECREF(po);
        return NULL;
    }
    return Py_BuildValue("(NNKK)", po, pl, (unsigned long long)seed, (unsigned long long)offset);
}

/* _sdpa_bwd(q, k, v, mask | None, out, dout, lse, scale, causal, dropout_p, seed, offset)
 * -> (dq, dk, dv) */
static PyObject *f_sdpa_bwd(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *o[7];
    const pg_tensor *t[7];
    double scale, p;
    int causal;
    unsigned long long seed, offset;
    if (!PyArg_ParseTuple(args, "OOOOOOOdpdKK:_sdpa_bwd", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &scale, &causal, &p, &seed, &offset))
        return NULL;
    static const char *what[7] = {"query", "key", "value", "attn_mask", "out", "dout", "lse"};
    for (int i = 0; i < 7; i++)
        if ((i == 3 ? tensor_or_none : tensor_arg)(o[i], what[i], &t[i]) < 0)
            return NULL;
    pg_tensor dq, dk, dv;
    pg_status st = PG_CALL(on_cpu(t[0]), pg_op_sdpa_bwd(t[0], t[1], t[2], t[3], t[4], t[5], t[6],
                                                       scale, causal, p, seed, offset, &dq, &dk,
                                                       &dv));
    if (st != PG_OK)
        return pg_raise(st);
    PyObject *a = pg_wrap(&dq), *b = a ? pg_wrap(&dk) : NULL, *c = b ? pg_wrap(&dv) : NULL;
    if (!c) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    return Py_BuildValue("(NNN)", a, b, c);
}

PyMethodDef pg_sequence_functions[] = {
    {"_sdpa_fwd", f_sdpa_fwd, METH_VARARGS, "internal: fused scaled-dot-product attention -> (out, lse, seed, offset)"},
    {"_sdpa_bwd", f_sdpa_bwd, METH_VARARGS, "internal: its backward -> (dq, dk, dv)"},
    {"_rnn_save_width", f_rnn_save_width, METH_VARARGS, "internal: the width of a recurrent layer's saved rows"},
    {"_rnn_forward", f_rnn_forward, METH_VARARGS, "internal: one direction of one recurrent layer, forward (pg_ops_rnn.c)"},
    {"_rnn_backward", f_rnn_backward, METH_VARARGS, "internal: one direction of one recurrent layer, backward (pg_ops_rnn.c)"},
    {NULL, NULL, 0, NULL},
};
