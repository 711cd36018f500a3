/* sequence.c - pygpu._C's sequence-model ops: _rnn_forward and _rnn_backward (one
 * direction of one recurrent layer, csrc/core/pg_ops_rnn.c).
 *
 * Internal entry points for pygpu/_rnn_ops.py, which checks the user-facing arguments
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

/* _rnn_forward(cell, g, w_hh, b_hh, w_hr, h, c, out, m, save, batch_sizes, reverse) -> None */
static PyObject *f_rnn_forward(PyObject *mod, PyObject *args)
{
    (void)mod;
    int cell, reverse;
    PyObject *o[9], *bso;
    const pg_tensor *t[9];
    static const char *what[9] = {"g", "weight_hh", "bias_hh", "weight_hr", "h", "c",
                                  "out", "m", "save"};
    static const bool optional[9] = {0, 0, 1, 1, 0, 1, 0, 1, 1};
    if (!PyArg_ParseTuple(args, "iOOOOOOOOOOp:_rnn_forward", &cell, &o[0], &o[1], &o[2], &o[3],
                          &o[4], &o[5], &o[6], &o[7], &o[8], &bso, &reverse))
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
 * reverse) -> None */
static PyObject *f_rnn_backward(PyObject *mod, PyObject *args)
{
    (void)mod;
    int cell, reverse;
    PyObject *o[10], *bso;
    const pg_tensor *t[10];
    static const char *what[10] = {"save", "weight_hh", "weight_hr", "m", "dout", "dh", "dc",
                                   "dg", "dhw", "dhall"};
    static const bool optional[10] = {0, 0, 1, 1, 1, 0, 1, 0, 1, 1};
    if (!PyArg_ParseTuple(args, "iOOOOOOOOOOOp:_rnn_backward", &cell, &o[0], &o[1], &o[2], &o[3],
                          &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &bso, &reverse))
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

/* _rnn_save_width(cell, H, P) -> the columns of a saved row (pg_ops_rnn.c) */
static PyObject *f_rnn_save_width(PyObject *mod, PyObject *args)
{
    (void)mod;
    int cell;
    long long H, P;
    if (!PyArg_ParseTuple(args, "iLL:_rnn_save_width", &cell, &H, &P))
        return NULL;
    return PyLong_FromLongLong(pg_rnn_save_width(cell, H, P));
}

PyMethodDef pg_sequence_functions[] = {
    {"_rnn_save_width", f_rnn_save_width, METH_VARARGS, "internal: the width of a recurrent layer's saved rows"},
    {"_rnn_forward", f_rnn_forward, METH_VARARGS, "internal: one direction of one recurrent layer, forward (pg_ops_rnn.c)"},
    {"_rnn_backward", f_rnn_backward, METH_VARARGS, "internal: one direction of one recurrent layer, backward (pg_ops_rnn.c)"},
    {NULL, NULL, 0, NULL},
};
