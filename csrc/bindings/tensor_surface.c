/* tensor_surface.c - the C side of the Tensor methods written in Python
 * (pygpu/_tensor_*.py): a way to put them into the type, the checked strided view
 * they build every view from, and the index family's ops (csrc/core/pg_ops_index.h).
 *
 * PyTensor_Type is a static type, so Python cannot setattr on it;
 * _add_tensor_methods(dict) writes functions and properties into its dict once at
 * import and tells the type cache (PyType_Modified), as PyTorch's torch/_tensor.py
 * adds its composites to the C tensor class. Indexing with tensors, lists and masks
 * is not a view: tensor_operators.c hands those keys to the "getitem"/"setitem" hooks
 * set here (_set_index_hooks), and keeps its C path for ints, slices, ... and None. */
#include "autograd.h"
#include "tensor_object.h"

#include "../core/pg_ops_index.h"

static PyObject *g_getitem_hook, *g_setitem_hook;

PyObject *pg_surface_getitem_hook(void) { return g_getitem_hook; }
PyObject *pg_surface_setitem_hook(void) { return g_setitem_hook; }

static PyObject *f_add_tensor_methods(PyObject *mod, PyObject *d)
{
    (void)mod;
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "_add_tensor_methods(dict of name -> function/property)");
        return NULL;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        if (!PyUnicode_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "_add_tensor_methods: names must be strings");
            return NULL;
        }
        if (PyDict_SetItem(PyTensor_Type.tp_dict, k, v) < 0)
            return NULL;
    }
    PyType_Modified(&PyTensor_Type);
    Py_RETURN_NONE;
}

static PyObject *f_set_index_hooks(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *g, *s;
    if (!PyArg_ParseTuple(args, "OO:_set_index_hooks", &g, &s))
        return NULL;
    Py_XSETREF(g_getitem_hook, Py_NewRef(g));
    Py_XSETREF(g_setitem_hook, Py_NewRef(s));
    Py_RETURN_NONE;
}

static pg_tensor *arg_tensor(PyObject *o, const char *op, const char *what)
{
    if (!PyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a Tensor, got %.80s", op, what,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return &((PyTensor *)o)->t;
}

static int parse_int64s(PyObject *o, int *n, int64_t *out, const char *what)
{
    PyObject *seq = PySequence_Fast(o, what);
    if (!seq)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    if (len > PG_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s: pygpu supports at most %d dimensions", what,
                     PG_MAX_DIMS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    *n = (int)len;
    Py_DECREF(seq);
    return 0;
}

/* _as_strided(t, shape, strides, offset): a view of t's storage (bounds checked) */
static PyObject *f_as_strided(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *t, *shp, *str;
    long long off;
    if (!PyArg_ParseTuple(args, "OOOL:_as_strided", &t, &shp, &str, &off))
        return NULL;
    pg_tensor *pt = arg_tensor(t, "as_strided", "the input");
    if (!pt)
        return NULL;
    int nd, ns;
    int64_t shape[PG_MAX_DIMS], strides[PG_MAX_DIMS];
    if (parse_int64s(shp, &nd, shape, "as_strided: shape") < 0 ||
        parse_int64s(str, &ns, strides, "as_strided: strides") < 0)
        return NULL;
    if (nd != ns)
        return PyErr_Format(pg_exc_shape, "mismatch in length of strides and shape (as_strided: "
                                          "%d sizes but %d strides)", nd, ns);
    pg_tensor out;
    PyObject *r = pg_wrap_result(pg_view_as_strided(pt, nd, shape, strides, off, &out), &out);
    pg_ag_note_view(r, t);
    return r;
}

/* _view_dtype(t, dtype): t's bytes as another dtype (Tensor.view(dtype)), a view that is not
 * recorded: PyTorch's view.dtype is not differentiable, so it never requires grad */
static PyObject *f_view_dtype(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *t, *dt;
    int code;
    if (!PyArg_ParseTuple(args, "OO:_view_dtype", &t, &dt))
        return NULL;
    pg_tensor *pt = arg_tensor(t, "view", "the input");
    if (!pt || pg_parse_dtype(dt, &code) < 0)
        return NULL;
    pg_tensor out;
    return pg_wrap_result(pg_view_dtype(pt, (pg_dtype)code, &out), &out);
}

/* _gather(src, dim, index) / _index_select(src, dim, index) */
static PyObject *take(PyObject *args, int op)
{
    PyObject *s, *i;
    int dim;
    if (!PyArg_ParseTuple(args, "OiO", &s, &dim, &i))
        return NULL;
    const char *name = pg_subop_name(op);
    pg_tensor *ps = arg_tensor(s, name, "the input"), *pi = ps ? arg_tensor(i, name, "index") : NULL;
    if (!pi)
        return NULL;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(pi), op == PG_INDEX_GATHER ? pg_op_gather(ps, dim, pi, &out)
                                                              : pg_op_index_select(ps, dim, pi, &out));
    return pg_wrap_result(st, &out);
}
static PyObject *f_gather(PyObject *m, PyObject *a) { (void)m; return take(a, PG_INDEX_GATHER); }
static PyObject *f_index_select(PyObject *m, PyObject *a) { (void)m; return take(a, PG_INDEX_INDEX_SELECT); }

/* _scatter(id, self, dim, index, src): id an INDEX row's ID that writes (PG_SUBF_WRITE:
 * "SCATTER", "SCATTER_ADD", "INDEX_COPY", "INDEX_ADD"); writes self in place and returns
 * None */
static PyObject *f_scatter(PyObject *mod, PyObject *args)
{
    (void)mod;
    int dim;
    const char *id;
    PyObject *self, *i, *s;
    if (!PyArg_ParseTuple(args, "sOiOO:_scatter", &id, &self, &dim, &i, &s))
        return NULL;
    int op = pg_subop_arg("_scatter", PG_OP_INDEX, PG_SUBF_WRITE, id);
    if (op < 0)
        return NULL;
    const char *name = pg_subop_name(op);
    pg_tensor *pself = arg_tensor(self, name, "self");
    pg_tensor *pi = pself ? arg_tensor(i, name, "index") : NULL;
    pg_tensor *ps = pi ? arg_tensor(s, name, "the source") : NULL;
    if (!ps || pg_ag_check_inplace(self, name) < 0)
        return NULL;
    pg_status st = PG_CALL(pg_heavy(ps), pg_op_scatter(op, pself, dim, pi, ps));
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

/* _cumulative(src, dim, prod) */
static PyObject *f_cumulative(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *s;
    int dim, prod;
    if (!PyArg_ParseTuple(args, "Oip:_cumulative", &s, &dim, &prod))
        return NULL;
    int op = prod ? PG_INDEX_CUMPROD : PG_INDEX_CUMSUM;
    pg_tensor *ps = arg_tensor(s, pg_subop_name(op), "the input");
    if (!ps)
        return NULL;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(ps), pg_op_cumulative(op, ps, dim, &out));
    return pg_wrap_result(st, &out);
}

/* _argsort(src, dim, descending) */
static PyObject *f_argsort(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *s;
    int dim, desc;
    if (!PyArg_ParseTuple(args, "Oip:_argsort", &s, &dim, &desc))
        return NULL;
    pg_tensor *ps = arg_tensor(s, "argsort", "the input");
    if (!ps)
        return NULL;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(ps), pg_op_argsort(ps, dim, desc, &out));
    return pg_wrap_result(st, &out);
}

/* _topk(src, dim, k, largest): the sorted positions of the k largest/smallest */
static PyObject *f_topk(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *s;
    int dim, largest;
    long long k;
    if (!PyArg_ParseTuple(args, "OiLp:_topk", &s, &dim, &k, &largest))
        return NULL;
    pg_tensor *ps = arg_tensor(s, "topk", "the input");
    if (!ps)
        return NULL;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(ps), pg_op_topk(ps, dim, k, largest, &out));
    return pg_wrap_result(st, &out);
}

/* _masked_fill_(self, mask, value): in place, returns None */
static PyObject *f_masked_fill_(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *self, *mask, *value;
    if (!PyArg_ParseTuple(args, "OOO:_masked_fill_", &self, &mask, &value))
        return NULL;
    pg_tensor *pself = arg_tensor(self, "masked_fill_", "self");
    pg_tensor *pm = pself ? arg_tensor(mask, "masked_fill_", "mask") : NULL;
    if (!pm || pg_ag_check_inplace(self, "masked_fill_") < 0)
        return NULL;
    pg_scalar v;
    if (PyBool_Check(value)) {
        v = (pg_scalar){PG_SCALAR_BOOL, value == Py_True, value == Py_True};
    } else if (PyLong_Check(value)) {
        if (pg_int_scalar(value, (pg_dtype)pself->dtype, &v) < 0)
            return NULL;
    } else if (PyFloat_Check(value)) {
        v = (pg_scalar){PG_SCALAR_FLOAT, PyFloat_AS_DOUBLE(value), 0};
    } else {
        return PyErr_Format(PyExc_TypeError, "masked_fill_: value must be a Python number or a "
                                             "0-d tensor, got %.80s",
                            Py_TYPE(value)->tp_name);
    }
    pg_status st = PG_CALL(pg_heavy(pself), pg_op_masked_fill(pself, pm, v));
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

/* _nonzero(mask, count): flat positions of the true elements */
static PyObject *f_nonzero(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *m;
    long long count;
    if (!PyArg_ParseTuple(args, "OL:_nonzero", &m, &count))
        return NULL;
    pg_tensor *pm = arg_tensor(m, "nonzero", "the mask");
    if (!pm)
        return NULL;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(pm), pg_op_nonzero(pm, count, &out));
    return pg_wrap_result(st, &out);
}

/* _storage_offset(t): the element offset of t's first element in its storage */
static PyObject *f_storage_offset(PyObject *mod, PyObject *t)
{
    (void)mod;
    pg_tensor *pt = arg_tensor(t, "storage_offset", "the input");
    return pt ? PyLong_FromLongLong(pt->offset) : NULL;
}

PyMethodDef pg_surface_functions[] = {
    {"_storage_offset", f_storage_offset, METH_O, "internal: the element offset of a tensor's first element in its storage"},
    {"_add_tensor_methods", f_add_tensor_methods, METH_O, "internal: put Python-written methods and properties into the Tensor type (pygpu/_tensor/surface.py)"},
    {"_set_index_hooks", f_set_index_hooks, METH_VARARGS, "internal: the Python getitem/setitem for keys that are not views (tensors, lists, masks)"},
    {"_view_dtype", f_view_dtype, METH_VARARGS, "internal: _view_dtype(t, dtype): t's bytes as dtype (Tensor.view(dtype)), not recorded by autograd"},
    {"_as_strided", f_as_strided, METH_VARARGS, "internal: _as_strided(t, shape, strides, offset): a view of t's storage, bounds checked"},
    {"_gather", f_gather, METH_VARARGS, "internal: _gather(src, dim, index)"},
    {"_index_select", f_index_select, METH_VARARGS, "internal: _index_select(src, dim, index)"},
    {"_scatter", f_scatter, METH_VARARGS, "internal: _scatter(op, self, dim, index, src): 0 scatter_, 1 scatter_add_, 2 index_copy_, 3 index_add_"},
    {"_cumulative", f_cumulative, METH_VARARGS, "internal: _cumulative(src, dim, prod)"},
    {"_argsort", f_argsort, METH_VARARGS, "internal: _argsort(src, dim, descending): stable"},
    {"_topk", f_topk, METH_VARARGS, "internal: _topk(src, dim, k, largest): sorted positions of the k largest/smallest"},
    {"_masked_fill_", f_masked_fill_, METH_VARARGS, "internal: _masked_fill_(self, mask, value)"},
    {"_nonzero", f_nonzero, METH_VARARGS, "internal: _nonzero(mask, count): flat positions of the true elements"},
    {NULL, NULL, 0, NULL},
};
