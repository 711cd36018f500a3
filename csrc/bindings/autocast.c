/* autocast.c - the C side of pygpu.autocast and the half-precision introspection.
 *
 * The autocast policy lives in Python (pygpu/amp/autocast_mode.py, one
 * dispatch point). The C ops that it covers (matmul, sum, mean) ask it only
 * while some thread has a region open: pg_autocast_regions counts them, so
 * outside autocast those ops pay one atomic load. pg_autocast_cast calls the
 * "autocast" hook, which returns the operands cast for the op (and recorded by
 * autograd).
 *
 *   _autocast_regions(delta)   add delta (+1 enter, -1 exit); returns the count
 *   _amp_unscale_(g, inv_scale, found)   GradScaler's fused unscale + inf/NaN check
 *   _half_gemm_kernel(dtype)   which half GEMM kernel this CPU runs for dtype
 *                              ("convert_f32" or "avx512_bf16"), for tests/docs */
#include "../backends/cpu/cpu_gemm_half.h"
#include "autocast.h"

_Atomic int pg_autocast_regions;

int pg_autocast_cast(const char *op, PyObject *a, PyObject *b, PyObject **a2, PyObject **b2)
{
    PyObject *hook = pg_hook("autocast");
    if (!hook)
        return -1;
    PyObject *r = PyObject_CallFunction(hook, "sOO", op, a, b ? b : Py_None);
    if (!r)
        return -1;
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_RuntimeError, "autocast hook must return a pair");
        return -1;
    }
    *a2 = Py_NewRef(PyTuple_GET_ITEM(r, 0));
    *b2 = b ? Py_NewRef(PyTuple_GET_ITEM(r, 1)) : NULL;
    Py_DECREF(r);
    return 0;
}

static PyObject *f_autocast_regions(PyObject *mod, PyObject *arg)
{
    (void)mod;
    long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLong((long)(pg_autocast_regions += (int)d));
}

static PyObject *f_amp_unscale(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *g, *found;
    double inv;
    if (!PyArg_ParseTuple(args, "O!dO!:_amp_unscale_", &PyTensor_Type, &g, &inv, &PyTensor_Type,
                          &found))
        return NULL;
    const pg_tensor *tg = &((PyTensor *)g)->t, *tf = &((PyTensor *)found)->t;
    pg_status st = PG_CALL(tg->storage->device.type == PG_DEV_CPU && pg_heavy(tg),
                           pg_op_amp_unscale(tg, inv, tf));
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

static PyObject *f_half_gemm_kernel(PyObject *mod, PyObject *arg)
{
    (void)mod;
    int code;
    if (pg_parse_dtype(arg, &code) < 0)
        return NULL;
    if (code != PG_FLOAT16 && code != PG_BFLOAT16) {
        PyErr_SetString(PyExc_TypeError, "_half_gemm_kernel: dtype must be float16 or bfloat16");
        return NULL;
    }
    const char *name = "?";
    pg_cpu_gemm_half_kernel(code, code, &name);
    return PyUnicode_FromString(name);
}

PyMethodDef pg_autocast_functions[] = {
    {"_autocast_regions", f_autocast_regions, METH_O, "internal: count autocast regions (+1/-1)"},
    {"_amp_unscale_", f_amp_unscale, METH_VARARGS,
     "_amp_unscale_(g, inv_scale, found): g *= inv_scale in place; found = 1 if g held inf/NaN"},
    {"_half_gemm_kernel", f_half_gemm_kernel, METH_O,
     "_half_gemm_kernel(dtype): the CPU half GEMM kernel used for dtype on this machine"},
    {NULL, NULL, 0, NULL},
};
