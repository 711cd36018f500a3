/* creation.c - the C side of pygpu.empty/zeros/full/arange/rand/randn.
 *
 * Each takes an already-parsed shape, dtype code and device (the Python
 * wrappers in pygpu/_creation.py parse user spellings) and creates the data
 * on that device directly: no host buffer, no transfer. */
#include "tensor_object.h"

static int parse_common(PyObject *shape_o, PyObject *dtype_o, PyObject *dev_o, int *ndim,
                        int64_t *shape, int *code, pg_device *dev)
{
    if (pg_parse_shape(shape_o, ndim, shape) < 0 || pg_parse_dtype(dtype_o, code) < 0 ||
        pg_parse_device(dev_o, dev) < 0)
        return -1;
    return 0;
}

/* _full(shape, value, dtype, device); value None means uninitialised (empty) */
static PyObject *f_full(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *shape_o, *value, *dtype_o, *dev_o;
    if (!PyArg_ParseTuple(args, "OOOO", &shape_o, &value, &dtype_o, &dev_o))
        return NULL;
    int ndim, code;
    int64_t shape[PG_MAX_DIMS];
    pg_device dev;
    if (parse_common(shape_o, dtype_o, dev_o, &ndim, shape, &code, &dev) < 0)
        return NULL;
    pg_tensor out;
    pg_status st;
    if (value == Py_None) {
        st = pg_tensor_empty(dev, (pg_dtype)code, ndim, shape, &out);
        return pg_wrap_result(st, &out);
    }
    pg_scalar s;
    if (PyBool_Check(value)) {
        s = (pg_scalar){PG_SCALAR_BOOL, value == Py_True, value == Py_True};
    } else if (PyLong_Check(value)) {
        s.kind = PG_SCALAR_INT;
        s.i = PyLong_AsLongLong(value);
        if (s.i == -1 && PyErr_Occurred())
            return NULL;
        s.f = (double)s.i;
    } else if (PyFloat_Check(value)) {
        s = (pg_scalar){PG_SCALAR_FLOAT, PyFloat_AS_DOUBLE(value), 0};
    } else {
        return PyErr_Format(PyExc_TypeError, "fill value must be a Python number, got %.80s",
                            Py_TYPE(value)->tp_name);
    }
    bool heavy = dev.type == PG_DEV_CPU && pg_shape_numel(ndim, shape) >= PG_NOGIL_NUMEL;
    st = PG_CALL(heavy, pg_op_full(dev, (pg_dtype)code, ndim, shape, s, &out));
    return pg_wrap_result(st, &out);
}

/* _arange(start, step, n, dtype, device) */
static PyObject *f_arange(PyObject *mod, PyObject *args)
{
    (void)mod;
    double start, step;
    long long n;
    PyObject *dtype_o, *dev_o;
    if (!PyArg_ParseTuple(args, "ddLOO", &start, &step, &n, &dtype_o, &dev_o))
        return NULL;
    int code;
    pg_device dev;
    if (pg_parse_dtype(dtype_o, &code) < 0 || pg_parse_device(dev_o, &dev) < 0)
        return NULL;
    pg_tensor out;
    pg_status st = PG_CALL(dev.type == PG_DEV_CPU && n >= PG_NOGIL_NUMEL,
                           pg_op_arange(dev, (pg_dtype)code, start, step, n, &out));
    return pg_wrap_result(st, &out);
}

/* _random(kind, shape, dtype, device[, seed, offset]): kind a RANDOM row's ID, "UNIFORM" or
 * "NORMAL"; with (seed, offset), a torch.Generator's draw at its own state, else the device
 * generator's */
static PyObject *f_random(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *id;
    int kind;
    PyObject *shape_o, *dtype_o, *dev_o, *seed_o = NULL, *offset_o = NULL;
    if (!PyArg_ParseTuple(args, "sOOO|OO:_random", &id, &shape_o, &dtype_o, &dev_o, &seed_o,
                          &offset_o) ||
        (kind = pg_subop_arg("_random", PG_OP_RANDOM, 0, id)) < 0)
        return NULL;
    uint64_t at[2];
    if (seed_o) {
        if (!offset_o)
            return PyErr_Format(PyExc_TypeError, "_random: a seed needs its offset");
        at[0] = PyLong_AsUnsignedLongLong(seed_o);
        at[1] = PyLong_AsUnsignedLongLong(offset_o);
        if (PyErr_Occurred())
            return NULL;
    }
    int ndim, code;
    int64_t shape[PG_MAX_DIMS];
    pg_device dev;
    if (parse_common(shape_o, dtype_o, dev_o, &ndim, shape, &code, &dev) < 0)
        return NULL;
    pg_tensor out;
    bool heavy = dev.type == PG_DEV_CPU && pg_shape_numel(ndim, shape) >= PG_NOGIL_NUMEL;
    pg_status st = seed_o ? PG_CALL(heavy, pg_op_random_at(dev, (pg_dtype)code, kind, ndim, shape,
                                                           at, &out))
                          : PG_CALL(heavy, pg_op_random(dev, (pg_dtype)code, kind, ndim, shape,
                                                        &out));
    return pg_wrap_result(st, &out);
}

PyMethodDef pg_creation_functions[] = {
    {"_full", f_full, METH_VARARGS, "internal: _full(shape, value_or_None, dtype, device)"},
    {"_arange", f_arange, METH_VARARGS, "internal: _arange(start, step, n, dtype, device)"},
    {"_random", f_random, METH_VARARGS, "internal: _random(kind, shape, dtype, device[, seed, offset]): kind a RANDOM row's ID (UNIFORM, NORMAL)"},
    {NULL, NULL, 0, NULL},
};
