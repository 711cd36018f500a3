/* linalg.c - _C._linalg(op, A, B, flag, param, check): one LINALG node (core/pg_ops_linalg.c)
 * for pygpu/linalg/__init__.py, which makes the operands float32/float64 batches on a device whose
 * backend runs the node (_C._has_node("LINALG", A); else it moves them to the cpu) and
 * wraps the results (and their gradients). op is a LINALG row's ID (csrc/core/pg_subops.def:
 * "CHOLESKY"). Returns a tuple of Tensors: the op's outputs (pg_ops.h says which), then
 * info (LAPACK's, per matrix); with check, a nonzero info is raised instead. */
#include "tensor_object.h"

#include "errors.h"

static PyObject *f_linalg(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *id;
    int op, flag, check;
    double param;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "sO!Oidp:_linalg", &id, &PyTensor_Type, &a, &b, &flag, &param,
                          &check) ||
        (op = pg_subop_arg("_linalg", PG_OP_LINALG, 0, id)) < 0)
        return NULL;
    if (b != Py_None && !PyTensor_Check(b))
        return PyErr_Format(PyExc_TypeError, "_linalg: B must be a Tensor or None");
    const pg_tensor *ta = &((PyTensor *)a)->t;
    const pg_tensor *tb = b == Py_None ? NULL : &((PyTensor *)b)->t;
    pg_tensor outs[PG_LINALG_MAX_OUT + 1];
    int nout = 0;
    pg_status st = PG_CALL(pg_heavy(ta), pg_op_linalg(op, ta, tb, flag, param, check, outs, &nout));
    if (st != PG_OK)
        return pg_raise(st);
    PyObject *res = PyTuple_New(nout);
    for (int i = 0; i < nout; i++) {
        PyObject *t = res ? pg_wrap(&outs[i]) : NULL;
        if (!t) {
            if (res)
                Py_CLEAR(res);
            for (int j = i + 1; j < nout; j++)
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
     "internal: _linalg(op, A, B, flag, param, check): one LINALG node (op a LINALG row's ID) "
     "on A's device -> its outputs and info (pygpu/linalg/__init__.py)"},
    {NULL, NULL, 0, NULL},
};
