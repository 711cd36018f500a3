/* complex.c - complex tensors in the bindings: the views between a complex tensor and its
 * float pairs (_C._view_as_real, _view_as_complex, _complex_part), the FFT node (_C._fft),
 * and the one fork that sends an elementwise op, a reduction or a product with a complex
 * operand (a complex tensor or a Python complex) to pygpu/_tensor/complex.py (the "complex" hook),
 * which composes it from real ops on those views. The core keeps no complex arithmetic of
 * its own (pg_ops_complex.c says why). */
#include "complex.h"

#include "errors.h"
#include "tensor_object.h"

bool pg_complex_operand(PyObject *o)
{
    if (o == NULL)
        return false;
    if (PyTensor_Check(o))
        return pg_dtype_is_complex((pg_dtype)((PyTensor *)o)->t.dtype);
    return PyComplex_Check(o);
}

PyObject *pg_complex_dispatch(const char *family, const char *name, PyObject *a, PyObject *b,
                              PyObject *args, PyObject *kwargs)
{
    PyObject *hook = pg_hook("complex");
    if (!hook)
        return NULL;
    return PyObject_CallFunction(hook, "ssOOOO", family, name, a, b ? b : Py_None,
                                 args ? args : Py_None, kwargs ? kwargs : Py_None);
}

int pg_complex_cast_warn(int from, int to)
{
    if (!pg_dtype_is_complex((pg_dtype)from) || pg_dtype_is_complex((pg_dtype)to))
        return 0;
    return PyErr_WarnEx(PyExc_UserWarning, "Casting complex values to real discards the "
                                           "imaginary part", 1);
}

static const pg_tensor *tensor_arg(PyObject *o, const char *fn)
{
    if (!PyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument 'input' must be Tensor, not %.80s", fn,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return &((PyTensor *)o)->t;
}

static PyObject *f_view_as_real(PyObject *mod, PyObject *t)
{
    (void)mod;
    const pg_tensor *pt = tensor_arg(t, "view_as_real");
    pg_tensor out;
    return pt ? pg_wrap_result(pg_view_complex_as_real(pt, &out), &out) : NULL;
}

static PyObject *f_view_as_complex(PyObject *mod, PyObject *t)
{
    (void)mod;
    const pg_tensor *pt = tensor_arg(t, "view_as_complex");
    pg_tensor out;
    return pt ? pg_wrap_result(pg_view_real_as_complex(pt, &out), &out) : NULL;
}

/* _complex_part(t, imag): Tensor.real / Tensor.imag of a complex tensor, a view */
static PyObject *f_complex_part(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *t;
    int imag;
    if (!PyArg_ParseTuple(args, "Op:_complex_part", &t, &imag))
        return NULL;
    const pg_tensor *pt = tensor_arg(t, imag ? "imag" : "real");
    pg_tensor out;
    return pt ? pg_wrap_result(pg_view_complex_part(pt, imag, &out), &out) : NULL;
}

/* _fill_complex(t, re, im): every element of complex t becomes re + im j */
static PyObject *f_fill_complex(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *t;
    double re, im;
    if (!PyArg_ParseTuple(args, "O!dd:_fill_complex", &PyTensor_Type, &t, &re, &im))
        return NULL;
    const pg_tensor *pt = &((PyTensor *)t)->t;
    if (!pg_dtype_is_complex((pg_dtype)pt->dtype))
        return PyErr_Format(PyExc_TypeError, "_fill_complex: a complex tensor expected");
    pg_status st = PG_CALL(pg_heavy(pt), pg_op_fill_complex(pt, re, im));
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

/* _fft(op, t, n, forward, fct): one FFT node (op an FFT row's ID: "C2C", "R2C", "C2R") along
 * t's last axis, on t's device (pygpu/fft/__init__.py) */
static PyObject *f_fft(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *id;
    PyObject *t;
    long long n;
    int forward, op;
    double fct;
    if (!PyArg_ParseTuple(args, "sO!Lpd:_fft", &id, &PyTensor_Type, &t, &n, &forward, &fct) ||
        (op = pg_subop_arg("_fft", PG_OP_FFT, 0, id)) < 0)
        return NULL;
    const pg_tensor *pt = &((PyTensor *)t)->t;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(pt), pg_op_fft(op, pt, (int64_t)n, forward, fct, &out));
    return pg_wrap_result(st, &out);
}

PyMethodDef pg_complex_functions[] = {
    {"_view_as_real", f_view_as_real, METH_O, "internal: view_as_real(t): a complex tensor's (re, im) pairs as a trailing axis of 2 (a view)"},
    {"_view_as_complex", f_view_as_complex, METH_O, "internal: view_as_complex(t): a float tensor whose last axis is 2 as complex (a view)"},
    {"_complex_part", f_complex_part, METH_VARARGS, "internal: _complex_part(t, imag): Tensor.real or Tensor.imag (a view)"},
    {"_fill_complex", f_fill_complex, METH_VARARGS, "internal: _fill_complex(t, re, im): fill a complex tensor with re + im j"},
    {"_fft", f_fft, METH_VARARGS, "internal: _fft(op, t, n, forward, fct): one FFT node (op an FFT row's ID) along the last axis -> a new tensor (pygpu/fft/__init__.py)"},
    {NULL, NULL, 0, NULL},
};
