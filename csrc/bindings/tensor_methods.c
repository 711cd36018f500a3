/* tensor_methods.c - Tensor properties and methods (shape, views, conversions, math).
 *
 * Argument parsing that is not on a hot path (to(), dtype strings, device
 * strings) goes through small Python hooks (pygpu/_hooks.py) to keep this
 * file about tensors rather than string handling. */
#include "autocast.h"
#include "autograd.h"
#include "complex.h"
#include "cuda_extras.h"
#include "tensor_object.h"
#include "../core/pg_backend.h"

#include <string.h>

PyObject *pg_array_dunder(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *pg_dlpack_dunder(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *pg_dlpack_device_dunder(PyObject *self, PyObject *noargs);

#define T(self) (&((PyTensor *)(self))->t)

/* One user axis number, checked against `ndim` in 64 bits before it is
 * narrowed to an int (2**32 must not become axis 0). NumPy's AxisError text. */
static int check_axis(int64_t axis, int ndim, const char *op)
{
    if (axis >= -(int64_t)ndim && axis < (int64_t)ndim)
        return 0;
    pg_raise(pg_error_set(PG_ERR_AXIS, "%s: axis %lld is out of bounds for array of dimension %d",
                          op, (long long)axis, ndim));
    return -1;
}

/* ---- properties ----------------------------------------------------------------------- */

static PyObject *shape_tuple(const pg_tensor *t) { return pg_size_new(t->ndim, t->shape); }

static PyObject *get_shape(PyObject *self, void *c) { (void)c; return shape_tuple(T(self)); }
static PyObject *get_dtype(PyObject *self, void *c) { (void)c; return Py_NewRef(pg_dtype_object(T(self)->dtype)); }
static PyObject *get_device(PyObject *self, void *c) { (void)c; return pg_device_object(pg_tensor_device(T(self))); }
static PyObject *get_ndim(PyObject *self, void *c) { (void)c; return PyLong_FromLong(T(self)->ndim); }
static PyObject *get_itemsize(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(pg_dtype_size((pg_dtype)T(self)->dtype));
}
static PyObject *get_nbytes(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLongLong(pg_tensor_numel(T(self)) * (int64_t)pg_dtype_size((pg_dtype)T(self)->dtype));
}
static PyObject *get_strides(PyObject *self, void *c) /* in elements, as PyTorch's stride() */
{
    (void)c;
    const pg_tensor *t = T(self);
    PyObject *r = PyTuple_New(t->ndim);
    for (int i = 0; r && i < t->ndim; i++)
        PyTuple_SET_ITEM(r, i, PyLong_FromLongLong(t->strides[i]));
    return r;
}

static PyObject *transpose_all(const pg_tensor *t)
{
    int perm[PG_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++)
        perm[i] = t->ndim - 1 - i;
    pg_tensor out;
    return pg_wrap_result(pg_view_transpose(t, t->ndim, perm, &out), &out);
}

static PyObject *get_T(PyObject *self, void *c)
{
    (void)c;
    return pg_ag_record(transpose_all(T(self)), "transpose", self, NULL, NULL, NULL);
}

PyObject *pg_ag_get_requires_grad(PyObject *self, void *c);
int pg_ag_set_requires_grad(PyObject *self, PyObject *v, void *c);
PyObject *pg_ag_get_grad(PyObject *self, void *c);
int pg_ag_set_grad(PyObject *self, PyObject *v, void *c);
PyObject *pg_ag_get_grad_fn(PyObject *self, void *c);
PyObject *pg_ag_get_is_leaf(PyObject *self, void *c);
PyObject *pg_ag_get_data(PyObject *self, void *c);
int pg_ag_set_data(PyObject *self, PyObject *v, void *c);
PyObject *pg_ag_get_is_param(PyObject *self, void *c);
int pg_ag_set_is_param(PyObject *self, PyObject *v, void *c);
PyObject *pg_ag_get_buffer_kind(PyObject *self, void *c);
int pg_ag_set_buffer_kind(PyObject *self, PyObject *v, void *c);
PyObject *pg_cuda_array_interface_get(PyObject *self, void *c); /* interop.c */
PyObject *pg_ag_get_grad_dtype_code(PyObject *self, void *c);
int pg_ag_set_grad_dtype_code(PyObject *self, PyObject *v, void *c);

PyGetSetDef pg_tensor_getset[] = {
    {"shape", get_shape, NULL, "the size of each axis, a pygpu.Size (a tuple)", NULL},
    {"dtype", get_dtype, NULL, "the element type", NULL},
    {"device", get_device, NULL, "where the memory lives", NULL},
    {"ndim", get_ndim, NULL, "the number of axes", NULL},
    {"nbytes", get_nbytes, NULL, "bytes the elements occupy (numel * itemsize)", NULL},
    {"itemsize", get_itemsize, NULL, "bytes per element", NULL},
    {"strides", get_strides, NULL, "steps between elements of each axis, in elements", NULL},
    {"T", get_T, NULL, "the tensor with its axes reversed (a view)", NULL},
    {"requires_grad", pg_ag_get_requires_grad, pg_ag_set_requires_grad, "whether autograd records ops on this tensor (settable on leaves)", NULL},
    {"grad", pg_ag_get_grad, pg_ag_set_grad, "the accumulated gradient (a Tensor) or None", NULL},
    {"_grad", pg_ag_get_grad, pg_ag_set_grad, "PyTorch's _grad: the same field as grad (Hogwild code such as A3C's sets a shared model's _grad to a worker's gradient)", NULL},
    {"_grad_dtype_code", pg_ag_get_grad_dtype_code, pg_ag_set_grad_dtype_code, "internal: the dtype .grad must have, raw (0 the tensor's own, 1 any, 2 + dtype code); Tensor.grad_dtype reads it", NULL},
    {"grad_fn", pg_ag_get_grad_fn, NULL, "the autograd node that produced this tensor, or None for a leaf", NULL},
    {"is_leaf", pg_ag_get_is_leaf, NULL, "True unless the tensor was produced by a recorded op", NULL},
    {"data", pg_ag_get_data, pg_ag_set_data, "the same memory without autograd history; assigning swaps the memory in place (Module.to uses it)", NULL},
    {"__cuda_array_interface__", pg_cuda_array_interface_get, NULL, "CUDA Array Interface v3 of a cuda tensor (CuPy, Numba, PyTorch read it); absent on other devices", NULL},
    {"_version", pg_ag_get_version, NULL, "PyTorch's version counter: the writes pygpu made to this tensor's memory (any view of it) since the tensor that first held it was made (0 for a fresh result); autograd reports it when a saved tensor was modified", NULL},
    {"_write_stamp", pg_ag_get_write_stamp, NULL, "a stamp that changes whenever pygpu writes this tensor's memory (any view of it), by an op or a copy; equal stamps mean the same memory, unwritten since (process-wide: compare it only for equality)", NULL},
    {"_base", pg_ag_get_base, NULL, "PyTorch's _base: the tensor this one is a view of (made under grad mode), or None", NULL},
    {"_is_param", pg_ag_get_is_param, pg_ag_set_is_param, "internal: made by pygpu.nn.Parameter", NULL},
    {"_buffer_kind", pg_ag_get_buffer_kind, pg_ag_set_buffer_kind,
     "internal: made by pygpu.nn.Buffer (1 persistent, 2 not persistent)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- layout --------------------------------------------------------------------------- */

static PyObject *m_numel(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyLong_FromLongLong(pg_tensor_numel(T(self)));
}

/* size(dim=None): torch's spelling of shape (scripts ported from PyTorch call x.size()[0]) */
static PyObject *m_size(PyObject *self, PyObject *args)
{
    PyObject *dim = Py_None;
    if (!PyArg_ParseTuple(args, "|O:size", &dim))
        return NULL;
    if (dim == Py_None)
        return shape_tuple(T(self));
    long long axis = PyLong_AsLongLong(dim);
    if (axis == -1 && PyErr_Occurred())
        return NULL;
    if (check_axis(axis, T(self)->ndim, "size") < 0)
        return NULL;
    int a = (int)(axis < 0 ? axis + T(self)->ndim : axis);
    return PyLong_FromLongLong(T(self)->shape[a]);
}

static PyObject *m_is_contiguous(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyBool_FromLong(pg_tensor_is_contiguous(T(self)));
}

/* reshape(2, 3), reshape((2, 3)), reshape(-1) */
static PyObject *m_reshape(PyObject *self, PyObject *args)
{
    PyObject *spec = PyTuple_GET_SIZE(args) == 1 && !PyLong_Check(PyTuple_GET_ITEM(args, 0))
                         ? PyTuple_GET_ITEM(args, 0)
                         : args;
    int ndim;
    int64_t shape[PG_MAX_DIMS];
    if (pg_parse_shape(spec, &ndim, shape) < 0)
        return NULL;
    const pg_tensor *t = T(self);
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == -1) {
            if (infer >= 0) {
                PyErr_SetString(pg_exc_shape, "only one dimension can be inferred (reshape: one "
                                              "-1 at most)");
                return NULL;
            }
            infer = i;
        } else {
            known *= shape[i];
        }
    }
    if (infer >= 0) {
        int64_t n = pg_tensor_numel(t);
        if (known == 0 || n % known != 0) {
            char a[160];
            PyErr_Format(pg_exc_shape, "shape '%s' is invalid for input of size %lld",
                         pg_shape_list_str(ndim, shape, a, sizeof a), (long long)n);
            return NULL;
        }
        shape[infer] = n / known;
    }
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(t), pg_op_reshape(t, ndim, shape, &out));
    return pg_ag_record(pg_wrap_result(st, &out), "reshape", self, NULL, NULL, NULL);
}

static PyObject *m_transpose(PyObject *self, PyObject *args)
{
    const pg_tensor *t = T(self);
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n == 0)
        return pg_ag_record(transpose_all(t), "transpose", self, NULL, NULL, NULL);
    PyObject *spec = n == 1 && !PyLong_Check(PyTuple_GET_ITEM(args, 0)) ? PyTuple_GET_ITEM(args, 0) : args;
    int ndim;
    int64_t axes[PG_MAX_DIMS];
    if (pg_parse_shape(spec, &ndim, axes) < 0)
        return NULL;
    int perm[PG_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        if (check_axis(axes[i], t->ndim, "transpose") < 0)
            return NULL;
        perm[i] = (int)(axes[i] < 0 ? axes[i] + t->ndim : axes[i]);
    }
    pg_tensor out;
    PyObject *r = pg_wrap_result(pg_view_transpose(t, ndim, perm, &out), &out);
    if (!r || !pg_ag_req(self) || pg_grad_disabled)
        return r;
    PyObject *p = PyTuple_New(ndim);
    if (!p) {
        Py_DECREF(r);
        return NULL;
    }
    for (int i = 0; i < ndim; i++)
        PyTuple_SET_ITEM(p, i, PyLong_FromLong(perm[i]));
    r = pg_ag_record(r, "transpose", self, NULL, p, NULL);
    Py_DECREF(p);
    return r;
}

static PyObject *m_contiguous(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(T(self)), pg_op_contiguous(T(self), &out));
    return pg_ag_record(pg_wrap_result(st, &out), "copy", self, NULL, NULL, NULL);
}

static PyObject *m_clone(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(T(self)), pg_op_astype(T(self), (pg_dtype)T(self)->dtype, &out));
    return pg_ag_record(pg_wrap_result(st, &out), "copy", self, NULL, NULL, NULL);
}

static PyObject *m_astype(PyObject *self, PyObject *arg)
{
    int code;
    if (pg_parse_dtype(arg, &code) < 0 || pg_complex_cast_warn(T(self)->dtype, code) < 0)
        return NULL;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(T(self)), pg_op_astype(T(self), (pg_dtype)code, &out));
    return pg_ag_record(pg_wrap_result(st, &out), "to", self, NULL, NULL, NULL);
}

/* ---- devices -------------------------------------------------------------------------- */

static int pg_load_cuda_for_pinning(void);

static PyObject *to_device(PyObject *self, pg_device dev, bool non_blocking)
{
    pg_tensor out;
    pg_status st;
    /* non_blocking to the host lands in pinned memory */
    if (non_blocking && dev.type == PG_DEV_CPU && pg_load_cuda_for_pinning() < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS st = pg_op_to_device(T(self), dev, non_blocking, PG_IMPLICIT_NONE, &out);
    Py_END_ALLOW_THREADS
    return pg_wrap_result(st, &out);
}

/* Tensor.to's arguments, parsed in C: 1 parsed, 0 a form left to the Python hook
 * (_hooks.parse_to: NumPy dtypes, "sim" meaning the current device, a device of a
 * backend not loaded yet, and every error, which it words), -1 error. */
static int parse_to_fast(PyObject *args, PyObject *kwargs, int *type, int *index, int *code,
                         int *non_blocking, int *copy)
{
    pg_device dev;
    bool has_dev = false;
    *code = -1;
    *non_blocking = *copy = 0;
    if (kwargs) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs, &pos, &key, &value)) {
            const char *k = PyUnicode_AsUTF8(key);
            if (!k)
                return -1;
            if (strcmp(k, "device") == 0) {
                if (value != Py_None) {
                    if (pg_parse_device_fast(value, &dev) != 1)
                        return 0;
                    has_dev = true;
                }
            } else if (strcmp(k, "dtype") == 0) {
                if (value != Py_None && pg_parse_dtype_fast(value, code) != 1)
                    return 0;
            } else if (strcmp(k, "non_blocking") == 0 || strcmp(k, "copy") == 0) {
                int v = PyObject_IsTrue(value);
                if (v < 0)
                    return -1;
                *(k[0] == 'c' ? copy : non_blocking) = v;
            } else {
                return 0;
            }
        }
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        int c;
        if (PyTensor_Check(a)) { /* its device and dtype */
            dev = pg_tensor_device(T(a));
            has_dev = true;
            *code = T(a)->dtype;
        } else if (PyBool_Check(a)) {
            *non_blocking = a == Py_True;
        } else if (pg_parse_dtype_fast(a, &c) == 1) {
            if (*code >= 0)
                return 0; /* given twice: the hook says so */
            *code = c;
        } else if (!has_dev && pg_parse_device_fast(a, &dev) == 1) {
            has_dev = true;
        } else {
            return 0;
        }
    }
    *type = has_dev ? dev.type : -1;
    *index = has_dev ? dev.index : 0;
    return 1;
}

/* to(device), to(dtype), to(device, dtype), to(other_tensor), non_blocking=, copy= */
/* torch's memory formats are the Python layer's (pygpu/_tensor/memory_format.py): to()
 * with memory_format= goes there whole ("to_memory_format", which calls back here without
 * it), and a new tensor made from a non-contiguous one is laid out in its order there
 * ("relayout": preserve_format). A contiguous tensor's to() never leaves C. */
static PyObject *m_to_memory_format(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *hook = pg_hook("to_memory_format");
    if (!hook)
        return NULL;
    PyObject *full = PyTuple_New(PyTuple_GET_SIZE(args) + 1);
    if (!full)
        return NULL;
    PyTuple_SET_ITEM(full, 0, Py_NewRef(self));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++)
        PyTuple_SET_ITEM(full, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    PyObject *r = PyObject_Call(hook, full, kwargs);
    Py_DECREF(full);
    return r;
}

static PyObject *m_to(PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (kwargs && PyDict_GetItemString(kwargs, "memory_format"))
        return m_to_memory_format(self, args, kwargs);
    int type, index, code, non_blocking, copy;
    int fast = parse_to_fast(args, kwargs, &type, &index, &code, &non_blocking, &copy);
    if (fast < 0)
        return NULL;
    if (!fast) {
        PyObject *parse = pg_hook("parse_to");
        if (!parse)
            return NULL;
        PyObject *r = PyObject_Call(parse, args, kwargs);
        if (!r)
            return NULL;
        int ok = PyArg_ParseTuple(r, "iiipp", &type, &index, &code, &non_blocking, &copy);
        Py_DECREF(r);
        if (!ok)
            return NULL;
    }
    PyObject *cur = Py_NewRef(self);
    if (type >= 0 && !pg_device_eq(pg_tensor_device(T(self)), (pg_device){type, index})) {
        Py_SETREF(cur, to_device(cur, (pg_device){type, index}, non_blocking));
        if (!cur)
            return NULL;
        copy = 0;
    }
    if ((code >= 0 && code != T(cur)->dtype) || copy) {
        pg_tensor out;
        int dt = code >= 0 ? code : T(cur)->dtype;
        if (pg_complex_cast_warn(T(cur)->dtype, dt) < 0) {
            Py_DECREF(cur);
            return NULL;
        }
        pg_status st = PG_CALL(pg_heavy(T(cur)), pg_op_astype(T(cur), (pg_dtype)dt, &out));
        Py_SETREF(cur, pg_wrap_result(st, &out));
    }
    if (cur == self)
        return cur;
    cur = pg_ag_record(cur, "to", self, NULL, NULL, NULL);
    if (cur && !pg_tensor_is_contiguous(T(self)) && pg_tensor_is_contiguous(T(cur))) {
        PyObject *relayout = pg_hook("relayout"); /* preserve_format: self's order */
        Py_SETREF(cur, relayout ? PyObject_CallFunctionObjArgs(relayout, cur, self, NULL) : NULL);
    }
    return cur;
}

static PyObject *m_cpu(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return pg_ag_record(to_device(self, (pg_device){PG_DEV_CPU, 0}, false), "to", self, NULL, NULL, NULL);
}

/* copy_(src, non_blocking=False): in-place copy, across devices too (as torch's copy_) */
static PyObject *m_copy_(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = {"src", "non_blocking", NULL};
    PyObject *src;
    int non_blocking = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|p", kw, &PyTensor_Type, &src, &non_blocking))
        return NULL;
    if (pg_complex_cast_warn(T(src)->dtype, T(self)->dtype) < 0)
        return NULL;
    int handled;
    PyObject *r = pg_ag_copy(self, src, non_blocking, &handled); /* autograd records it */
    if (handled)
        return r;
    pg_status st;
    Py_BEGIN_ALLOW_THREADS st = pg_op_copy_between(T(self), T(src), non_blocking);
    Py_END_ALLOW_THREADS
    if (st != PG_OK)
        return pg_raise(st);
    return Py_NewRef(self);
}

static PyObject *m_wait(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    if (pg_wait(T(self)) < 0)
        return NULL;
    return Py_NewRef(self);
}

/* For pygpu.data's prefetch (loader.py), which reuses a batch's device memory once nothing
 * uses it: the tensors and views sharing this tensor's storage (queued work not counted),
 * and whether queued work still holds it. */
static PyObject *m_storage_users(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyLong_FromLong(pg_storage_users(T(self)->storage));
}

/* Whether queued work still holds the storage (a sim task holds what it reads and writes
 * until it has run). */
static PyObject *m_storage_held(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyBool_FromLong(pg_storage_holds(T(self)->storage) != 0);
}

/* Pinned memory comes from the CUDA runtime when there is a GPU, and its
 * plugin is loaded on first use: load it now (pygpu.cuda._load, the one
 * loader, which records why cuda is unavailable), or a buffer pinned before
 * the first cuda use would be ordinary memory flagged pinned. */
static int pg_load_cuda_for_pinning(void) { return pg_cuda_load(0); }

static PyObject *m_pin_memory(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    if (pg_wait(T(self)) < 0 || pg_load_cuda_for_pinning() < 0)
        return NULL;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(T(self)), pg_op_pin_memory(T(self), &out));
    return pg_wrap_result(st, &out);
}

static PyObject *m_is_pinned(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyBool_FromLong((T(self)->storage->flags & PG_STORAGE_PINNED) != 0);
}

/* A host copy for a given implicit reason (used by repr in pygpu/_format.py). */
static PyObject *m_host(PyObject *self, PyObject *arg)
{
    long reason = PyLong_AsLong(arg);
    if (reason < 0 || reason >= PG_NUM_IMPLICIT) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "bad implicit-transfer reason");
        return NULL;
    }
    return pg_host_implicit((PyTensor *)self, (int)reason);
}

/* Tensor.numpy(*, force=False): PyTorch refuses a tensor that requires grad (the array
 * would escape autograd) unless force=True, which reads a detached alias. */
static PyObject *m_numpy(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"force", NULL};
    int force = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:numpy", kwlist, &force))
        return NULL;
    if (((PyTensor *)self)->requires_grad && !force) {
        PyErr_SetString(PyExc_RuntimeError, "Can't call numpy() on Tensor that requires grad. "
                                            "Use tensor.detach().numpy() instead.");
        return NULL;
    }
    PyTensor *h = (PyTensor *)pg_host_implicit((PyTensor *)self, PG_IMPLICIT_ARRAY);
    if (!h)
        return NULL;
    PyObject *r = pg_numpy_view(h);
    Py_DECREF(h);
    return r;
}

static PyObject *m_tolist(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    PyTensor *h = (PyTensor *)pg_host_implicit((PyTensor *)self, PG_IMPLICIT_TOLIST);
    if (!h)
        return NULL;
    Py_SETREF(h, (PyTensor *)pg_host_widened(h)); /* bfloat16 values as float32 (exact) */
    if (!h)
        return NULL;
    PyObject *arr = pg_numpy_view(h);
    Py_DECREF(h);
    if (!arr)
        return NULL;
    PyObject *r = PyObject_CallMethod(arr, "tolist", NULL);
    Py_DECREF(arr);
    return r;
}

static PyObject *m_item(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    if (pg_tracing) { /* torch.jit.trace warns: the number is frozen into the trace */
        Py_INCREF(self);
        PyObject *r = pg_ag_trace_slow(self, "number", self, NULL);
        if (!r)
            return NULL;
        Py_DECREF(r);
    }
    return pg_item((PyTensor *)self);
}

/* ---- math ----------------------------------------------------------------------------- */

/* axis=None | int | tuple of ints; each in [-ndim, ndim) */
static int parse_axes(PyObject *axis, int ndim, const char *op, int *naxes, int *axes, bool *all)
{
    *all = axis == NULL || axis == Py_None;
    if (*all)
        return 0;
    int64_t tmp[PG_MAX_DIMS];
    if (!PyLong_Check(axis) && !PyTuple_Check(axis) && !PyList_Check(axis)) {
        PyErr_Format(PyExc_TypeError, "axis must be None, an int or a tuple of ints, got %.80s",
                     Py_TYPE(axis)->tp_name);
        return -1;
    }
    if (pg_parse_shape(axis, naxes, tmp) < 0)
        return -1;
    for (int i = 0; i < *naxes; i++) {
        if (check_axis(tmp[i], ndim, op) < 0)
            return -1;
        axes[i] = (int)tmp[i];
    }
    return 0;
}

static PyObject *reduce_impl(PyObject *self, int op, PyObject *args, PyObject *kwargs);

PyObject *pg_reduce_call(PyObject *self, int op, PyObject *args, PyObject *kwargs)
{
    if (pg_complex_operand(self))
        return pg_complex_dispatch("reduce", op < 0 ? "mean" : pg_reduce_name(op), self, NULL,
                                   args, kwargs);
    if (pg_autocast_regions > 0 && (op < 0 || op == PG_RED_SUM)) { /* autocast: float32 sums */
        PyObject *s2, *unused;
        if (pg_autocast_cast(op < 0 ? "mean" : "sum", self, NULL, &s2, &unused) < 0)
            return NULL;
        PyObject *r = reduce_impl(s2, op, args, kwargs);
        Py_DECREF(s2);
        return r;
    }
    return reduce_impl(self, op, args, kwargs);
}

static PyObject *reduce_impl(PyObject *self, int op, PyObject *args, PyObject *kwargs)
{
    /* PyTorch's dim/keepdim are aliases of NumPy's axis/keepdims (issue 27) */
    static char *kw[] = {"axis", "keepdims", "dim", "keepdim", NULL};
    PyObject *axis = NULL, *dim = NULL;
    int keepdims = 0, keepdim = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OpOp", kw, &axis, &keepdims, &dim, &keepdim))
        return NULL;
    bool torch_names = dim || keepdim >= 0;
    if (torch_names) {
        if (dim && axis) {
            PyErr_SetString(PyExc_TypeError, "give dim or axis, not both");
            return NULL;
        }
        if (dim)
            axis = dim;
        if (keepdim >= 0)
            keepdims = keepdim;
    }
    int naxes = 0, axes[PG_MAX_DIMS];
    bool all;
    const pg_tensor *t = T(self);
    if (parse_axes(axis, t->ndim, op < 0 ? "mean" : pg_reduce_name(op), &naxes, axes, &all) < 0)
        return NULL;
    pg_tensor out;
    pg_status st = op < 0 ? PG_CALL(pg_heavy(t), pg_op_mean(t, naxes, all ? NULL : axes, keepdims, &out))
                          : PG_CALL(pg_heavy(t), pg_op_reduce(op, t, naxes, all ? NULL : axes, keepdims, &out));
    PyObject *r = pg_wrap_result(st, &out);
    if (op != PG_RED_SUM && op >= 0)
        return r; /* max/min/argmax: not differentiable here */
    if (torch_names && r && !pg_grad_disabled && pg_ag_req(self)) {
        /* autograd's rule reads NumPy's names (axis, keepdims): built only when it records
         * (a dict per call made sum(dim=1) 0.35 us slower than sum(1), issue 39) */
        PyObject *norm = Py_BuildValue("{s:O,s:O}", "axis", axis ? axis : Py_None, "keepdims",
                                       keepdims ? Py_True : Py_False);
        PyObject *empty = norm ? PyTuple_New(0) : NULL;
        r = empty ? pg_ag_record(r, op < 0 ? "mean" : "sum", self, NULL, empty, norm)
                  : (Py_XDECREF(r), NULL);
        Py_XDECREF(empty);
        Py_XDECREF(norm);
        return r;
    }
    return pg_ag_record(r, op < 0 ? "mean" : "sum", self, NULL, args, kwargs);
}

#define REDUCE_METHOD(NAME, OP) \
    static PyObject *m_##NAME(PyObject *self, PyObject *args, PyObject *kw) { return pg_reduce_call(self, OP, args, kw); }
#define PG_REDUCE(ID, name, py, grad, doc, ...) REDUCE_METHOD(name, PG_RED_##ID)
#include "../core/pg_ops.def"
REDUCE_METHOD(mean, -1)

PyObject *pg_unary_call(PyObject *self, int op)
{
    if (pg_complex_operand(self))
        return pg_complex_dispatch("unary", pg_unary_name(op), self, NULL, NULL, NULL);
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(T(self)), pg_op_unary(op, T(self), &out));
    PyObject *r = pg_wrap_result(st, &out);
    return !pg_unary_differentiable(op) ? pg_ag_trace(r, pg_unary_name(op), self, NULL)
                                        : pg_ag_record(r, pg_unary_name(op), self, NULL, NULL, NULL);
}

/* The op table's elementwise methods (Tensor.exp, add_, ...): elementwise_methods.c. */

#define KW (PyCFunction)(void (*)(void))
PyMethodDef pg_tensor_methods[] = {
    {"numel", m_numel, METH_NOARGS, "the number of elements"},
    {"size", m_size, METH_VARARGS, "size(dim=None): the shape tuple, or the size of axis dim (torch's spelling of shape)"},
    {"is_contiguous", m_is_contiguous, METH_NOARGS, "whether elements are laid out in C order"},
    {"reshape", m_reshape, METH_VARARGS, "the same elements in a new shape (a view when possible); -1 infers one axis"},
    {"transpose", m_transpose, METH_VARARGS, "permute axes (a view); no arguments reverses them"},
    {"contiguous", m_contiguous, METH_NOARGS, "self if C-contiguous, else a C-contiguous copy"},
    {"clone", m_clone, METH_NOARGS, "a copy on the same device"},
    {"astype", m_astype, METH_O, "a copy converted to another dtype"},
    {"to", KW m_to, METH_VARARGS | METH_KEYWORDS, "to(device=None, dtype=None, non_blocking=False, copy=False): move and/or convert; returns self if nothing changes"},
    {"copy_", KW m_copy_, METH_VARARGS | METH_KEYWORDS, "copy_(src, non_blocking=False): copy src's values into self (broadcasting on one device; a counted transfer across devices); returns self"},
    {"cpu", m_cpu, METH_NOARGS, "a copy on the host (self if already there)"},
    {"wait", m_wait, METH_NOARGS, "block until queued work producing this tensor is done; raises its failure"},
    {"_storage_users", m_storage_users, METH_NOARGS, "internal: tensors and views sharing the storage"},
    {"_storage_held", m_storage_held, METH_NOARGS, "internal: queued work still holds the storage"},
    {"pin_memory", m_pin_memory, METH_NOARGS, "a copy in page-locked host memory, for non_blocking copies"},
    {"is_pinned", m_is_pinned, METH_NOARGS, "whether the memory is page-locked host memory"},
    {"numpy", (PyCFunction)(void (*)(void))m_numpy, METH_VARARGS | METH_KEYWORDS,
     "numpy(*, force=False): an ndarray: shares memory on cpu; a counted (implicit) copy from a "
     "device. A tensor that requires grad is refused (RuntimeError, as PyTorch) unless force=True"},
    {"tolist", m_tolist, METH_NOARGS, "nested Python lists (an implicit transfer from a device)"},
    {"item", m_item, METH_NOARGS, "the single element as a Python number (an implicit transfer from a device)"},
    {"_host", m_host, METH_O, "internal: host copy counted as an implicit transfer of the given reason"},
#define PG_REDUCE(ID, name, py, grad, doc, ...) {#name, KW m_##name, METH_VARARGS | METH_KEYWORDS, doc},
#include "../core/pg_ops.def"
    {"mean", KW m_mean, METH_VARARGS | METH_KEYWORDS, "mean(axis=None, keepdims=False); dim/keepdim are PyTorch's spellings of axis/keepdims"},
    {"requires_grad_", KW pg_ag_requires_grad_, METH_VARARGS | METH_KEYWORDS, "requires_grad_(requires_grad=True): set the flag on a leaf; returns self"},
    {"detach", pg_ag_detach, METH_NOARGS, "the same memory as a new leaf without autograd history"},
    {"backward", KW pg_ag_backward, METH_VARARGS | METH_KEYWORDS, "backward(gradient=None, retain_graph=None, create_graph=False, inputs=None): accumulate d(self)/d(leaf) into every leaf's .grad (or only the given inputs'); a non-scalar needs `gradient`"},
    {"_set_grad_fn", pg_ag_set_grad_fn, METH_O, "internal: attach an autograd node (None detaches)"},
    {"__array__", KW pg_array_dunder, METH_VARARGS | METH_KEYWORDS, "NumPy conversion (counted when the tensor is on a device)"},
    {"__dlpack__", KW pg_dlpack_dunder, METH_VARARGS | METH_KEYWORDS, "export through DLPack (zero-copy)"},
    {"__dlpack_device__", pg_dlpack_device_dunder, METH_NOARGS, "(DLPack device type, index)"},
    {NULL, NULL, 0, NULL},
};
