/* size_object.c - pygpu.Size (torch.Size): the type of Tensor.shape and Tensor.size().
 *
 * A tuple of ints, as PyTorch's is, so every tuple operation and comparison works
 * ((2, 3) == x.shape); it differs from a tuple where programs see it: it prints as
 * PyTorch prints it, torch.Size([2, 3]) (a program run under `import pygpu as torch`
 * prints what it printed under torch), a slice of it is a Size, and it has numel().
 * Built in C because Tensor.shape is read on every op's Python path. */
#include "tensor_object.h"

static PyObject *size_repr(PyObject *self)
{
    PyObject *items = PyList_New(0);
    if (!items)
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self); i++)
        if (PyList_Append(items, PyTuple_GET_ITEM(self, i)) < 0) {
            Py_DECREF(items);
            return NULL;
        }
    PyObject *r = PyUnicode_FromFormat("torch.Size(%R)", items);
    Py_DECREF(items);
    return r;
}

static PyObject *size_numel(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    long long n = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self); i++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(self, i));
        if (v == -1 && PyErr_Occurred())
            return NULL;
        n *= v;
    }
    return PyLong_FromLongLong(n);
}

static PyObject *size_subscript(PyObject *self, PyObject *key)
{
    PyObject *r = PyTuple_Type.tp_as_mapping->mp_subscript(self, key);
    if (!r || !PySlice_Check(key))
        return r;
    PyObject *s = pg_size_from_tuple(r);
    Py_DECREF(r);
    return s;
}

static PyObject *size_reduce(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    PyObject *t = PyTuple_GetSlice(self, 0, PyTuple_GET_SIZE(self));
    return t ? Py_BuildValue("(O(N))", (PyObject *)Py_TYPE(self), t) : NULL;
}

static PyMethodDef size_methods[] = {
    {"numel", size_numel, METH_NOARGS, "the number of elements of a tensor of this shape"},
    {"__reduce__", size_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMappingMethods size_as_mapping;

PyTypeObject PySize_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pygpu.Size",
    .tp_repr = size_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_TUPLE_SUBCLASS,
    .tp_doc = "The shape of a tensor (torch.Size): a tuple of ints.",
    .tp_methods = size_methods,
    .tp_as_mapping = &size_as_mapping,
};

int pg_size_type_ready(void)
{
    PySize_Type.tp_base = &PyTuple_Type;
    size_as_mapping = *PyTuple_Type.tp_as_mapping;
    size_as_mapping.mp_subscript = size_subscript;
    return PyType_Ready(&PySize_Type);
}

/* A new Size with the items of tuple `t`. */
PyObject *pg_size_from_tuple(PyObject *t)
{
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    PyObject *r = PySize_Type.tp_alloc(&PySize_Type, n);
    if (!r)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(r, i, Py_NewRef(PyTuple_GET_ITEM(t, i)));
    return r;
}

/* A new Size of `ndim` lengths. */
PyObject *pg_size_new(int ndim, const int64_t *shape)
{
    PyObject *r = PySize_Type.tp_alloc(&PySize_Type, ndim);
    if (!r)
        return NULL;
    for (int i = 0; i < ndim; i++) {
        PyObject *v = PyLong_FromLongLong(shape[i]);
        if (!v) {
            Py_DECREF(r);
            return NULL;
        }
        PyTuple_SET_ITEM(r, i, v);
    }
    return r;
}
