/* linalg.c - _C._linalg(op, A, B, flag, param): the LAPACK factorizations of
 * core/pg_ops_linalg.c for pygpu/linalg.py, which moves the operands to the cpu, makes
 * them contiguous float32/float64 batches and wraps the results (and their gradients).
 * Returns a tuple of Tensors, as many as the op has outputs (pg_ops.h says which). */
#include "tensor_object.h"

#include "errors.h"

static PyObject *f_linalg(PyObject *mod, PyObject *args)
{
    (void)mod;
    int op, flag;
    double param;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "iO!Oid:_linalg", &op, &PyTensor_Type, &a, &b, &flag, &param))
        return NULL;
    if (b != Py_None && !PyTensor_Check(b))
        return PyErr_Format(PyExc_TypeError, "_linalg: B must be a Tensor or None");
    const pg_tensor *ta = &((PyTensor *)a)->t;
    const pg_tensor *tb = b == Py_None ? NULL : &((PyTensor *)b)->t;
    pg_tensor outs[PG_LINALG_MAX_OUT];
    int nout = 0;
    pg_status st = PG_CALL(pg_heavy(ta), pg_op_linalg(op, ta, tb, flag, param, outs, &nout));
    if (st != PG_OK)
        return pg_raise(st);
    PyObject *res = PyTuple_New(nout);
    for (int i = 0; i < PG_LINALG_MAX_OUT; i++) {
        if (i >= nout) {
            pg_tensor_clear(&outs[i]);
            continue;
        }
        PyObject *t = res ? pg_wrap(&outs[i]) : NULL;
        if (!t) {
            if (res)
                Py_CLEAR(res);
            for (int j = i + 1; j < PG_LINALG_MAX_OUT; j++)
                pg_tensor_clear(&outs[j]);
            if (!res)
                pg_tensor_clear(&outs[i]);
            return NULL;
        }
        PyTuple_SET_ITEM(res, i, t);
    }
    return res;
}

PyMethodDef pg_linalg_functions[] = {
    {"_linalg", f_linalg, METH_VARARGS,
     "internal: _linalg(op, A, B, flag, param): a LAPACK factorization of contiguous cpu "
     "float32/float64 batches (pygpu/linalg.py)"},
    {NULL, NULL, 0, NULL},
};
