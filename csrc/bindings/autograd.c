/* autograd.c - the C side of autograd: grad mode, the per-tensor autograd
 * slots (requires_grad, grad, grad_fn, data) and the recording hook.
 *
 * The graph itself is Python (pygpu/autograd/): each differentiable op binding
 * calls pg_ag_record(), which costs two flag checks unless grad mode is on and
 * an operand requires grad; only then is the Python hook "record" called to
 * attach a grad_fn node. backward() is the Python hook "backward". */
#include "autograd.h"

_Thread_local int pg_grad_disabled;
_Thread_local int pg_tracing;

#define PT(o) ((PyTensor *)(o))

/* Call a Python hook (pg_hook's, named at the call: docs/architecture.md lists them) with
 * (name, out, a, b[, args, kwargs]); returns out, or NULL (out released) when it raised. */
static PyObject *call_hook(PyObject *hook, PyObject *out, const char *name, PyObject *a,
                           PyObject *b, int with_args, PyObject *args, PyObject *kwargs)
{
    if (!hook) {
        Py_DECREF(out);
        return NULL;
    }
    PyObject *r = with_args
        ? PyObject_CallFunction(hook, "sOOOOO", name, out, a ? a : Py_None, b ? b : Py_None,
                                args ? args : Py_None, kwargs ? kwargs : Py_None)
        : PyObject_CallFunction(hook, "sOOO", name, out, a ? a : Py_None, b ? b : Py_None);
    if (!r) {
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(r);
    return out;
}

PyObject *pg_ag_record_slow(PyObject *out, const char *name, PyObject *a, PyObject *b,
                            PyObject *args, PyObject *kwargs)
{
    return call_hook(pg_hook("record"), out, name, a, b, 1, args, kwargs);
}

PyObject *pg_ag_trace_slow(PyObject *out, const char *name, PyObject *a, PyObject *b)
{
    return call_hook(pg_hook("trace"), out, name, a, b, 0, NULL, NULL);
}

PyObject *pg_ag_trace_record_slow(PyObject *out, const char *name, PyObject *a, PyObject *b,
                                  PyObject *args, PyObject *kwargs)
{
    return call_hook(pg_hook("trace"), out, name, a, b, 1, args, kwargs);
}

static int leaf_error(void)
{
    PyErr_SetString(PyExc_RuntimeError,
                    "a leaf Variable that requires grad is being used in an in-place operation.");
    return -1;
}

/* PyTorch's refusal of an in-place write to an inference tensor outside inference_mode
 * (every in-place entry point below asks, grad mode or not). */
static int inference_write_error(PyObject *self)
{
    if (pg_inference_mode || !PyTensor_Check(self) || !PT(self)->t.storage ||
        !(PT(self)->t.storage->flags & PG_STORAGE_INFERENCE))
        return 0;
    PyErr_SetString(PyExc_RuntimeError,
                    "Inplace update to inference tensor outside InferenceMode is not allowed.You "
                    "can make a clone to get a normal tensor before doing inplace update.See "
                    "https://github.com/pytorch/rfcs/pull/17 for more details.");
    return -1;
}

int pg_ag_check_inplace(PyObject *self, const char *what)
{
    if (inference_write_error(self) < 0)
        return -1;
    if (pg_grad_disabled || !pg_ag_req(self))
        return 0;
    if (!PT(self)->grad_fn)
        return leaf_error();
    PyErr_Format(PyExc_RuntimeError,
                 "%s on a tensor that is part of an autograd graph: pygpu records no gradient "
                 "for this in-place op; write it out of place (e.g. y = y.clone(); then modify "
                 "the clone under pygpu.no_grad() and combine with ops), or do it under "
                 "`with pygpu.no_grad():` / on t.detach() if no gradient should flow through it",
                 what);
    return -1;
}

PyObject *pg_ag_inplace_begin(PyObject *self, PyObject *other, const char *name, const char *op)
{
    PyTensor *t = PT(self);
    if (inference_write_error(self) < 0)
        return NULL;
    if (pg_grad_disabled || !(pg_ag_req(self) || pg_ag_req(other)))
        Py_RETURN_NONE;
    if (t->requires_grad && !t->grad_fn)
        return leaf_error(), NULL;
    PyObject *hook = pg_hook("inplace_begin");
    return hook ? PyObject_CallFunction(hook, "szOO", name, op, self, other ? other : Py_None)
                : NULL;
}

int pg_ag_inplace_end(PyObject *tok, PyObject *self, PyObject *other, const char *op)
{
    if (tok == Py_None) {
        Py_DECREF(tok);
        return 0;
    }
    PyObject *hook = pg_hook("inplace_end");
    PyObject *r = hook ? PyObject_CallFunction(hook, "sOOO", op, tok, self, other ? other : Py_None)
                       : NULL;
    Py_DECREF(tok);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

int pg_ag_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    if (inference_write_error(self) < 0)
        return -1;
    if (pg_grad_disabled || !(pg_ag_req(self) || pg_ag_req(value)))
        return 0;
    PyObject *hook = pg_hook("setitem_grad");
    PyObject *r = hook ? PyObject_CallFunctionObjArgs(hook, self, key, value, NULL) : NULL;
    Py_XDECREF(r);
    return r ? 1 : -1;
}

PyObject *pg_ag_copy(PyObject *self, PyObject *src, int non_blocking, int *handled)
{
    if (inference_write_error(self) < 0) {
        *handled = 1; /* handled, with an error */
        return NULL;
    }
    *handled = !pg_grad_disabled && (pg_ag_req(self) || pg_ag_req(src));
    if (!*handled)
        return NULL;
    PyObject *hook = pg_hook("copy_grad");
    return hook ? PyObject_CallFunction(hook, "OOO", self, src, non_blocking ? Py_True : Py_False)
                : NULL;
}

/* ---- properties ----------------------------------------------------------------------- */

PyObject *pg_ag_get_requires_grad(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(pg_ag_req(self));
}

PyObject *pg_ag_get_base(PyObject *self, void *c)
{
    (void)c;
    return Py_NewRef(PT(self)->base ? PT(self)->base : Py_None);
}

/* PyTorch's version counter: the writes pygpu made to this tensor's memory (through any
 * view of it) since the first tensor over that memory was made, 0 for a fresh result */
PyObject *pg_ag_get_version(PyObject *self, void *c)
{
    (void)c;
    pg_storage *s = PT(self)->t.storage;
    if (!s)
        return PyLong_FromLong(0);
    uint_fast64_t w = atomic_load_explicit(&s->writes, memory_order_relaxed);
    uint_fast64_t b = atomic_load_explicit(&s->writes_base, memory_order_relaxed);
    return PyLong_FromUnsignedLongLong((unsigned long long)(b && w + 1 >= b ? w + 1 - b : 0));
}

/* the storage's write stamp (pg_storage.h): process-wide, changed by every write */
PyObject *pg_ag_get_write_stamp(PyObject *self, void *c)
{
    (void)c;
    pg_storage *s = PT(self)->t.storage;
    return PyLong_FromUnsignedLongLong(
        s ? (unsigned long long)atomic_load_explicit(&s->version, memory_order_relaxed) : 0ULL);
}

/* the dtypes that can require grad, as PyTorch's: the floats and the complex dtypes (whose
 * ops are composed from real ops on their views, pygpu/_tensor/complex.py, so their
 * gradients are those of the real pairs: PyTorch's conjugate Wirtinger convention) */
static int differentiable_dtype(PyObject *self)
{
    pg_dtype dt = (pg_dtype)PT(self)->t.dtype;
    return dt == PG_FLOAT32 || dt == PG_FLOAT64 || dt == PG_FLOAT16 || dt == PG_BFLOAT16 ||
           pg_dtype_is_complex(dt);
}

static int set_requires_grad(PyObject *self, int v)
{
    if (PT(self)->grad_fn && !v) {
        PyErr_SetString(PyExc_RuntimeError,
                        "you can only change requires_grad of leaf tensors; use t.detach() to "
                        "get a tensor without history");
        return -1;
    }
    if (v && !differentiable_dtype(self)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "only Tensors of floating point and complex dtype can require "
                        "gradients (convert with .astype(pygpu.float32))");
        return -1;
    }
    PT(self)->requires_grad = v;
    return 0;
}

int pg_ag_set_requires_grad(PyObject *self, PyObject *v, void *c)
{
    (void)c;
    if (!v) {
        PyErr_SetString(PyExc_TypeError, "cannot delete requires_grad");
        return -1;
    }
    int b = PyObject_IsTrue(v);
    return b < 0 ? -1 : set_requires_grad(self, b);
}

PyObject *pg_ag_get_grad(PyObject *self, void *c)
{
    (void)c;
    return Py_NewRef(PT(self)->grad ? PT(self)->grad : Py_None);
}

int pg_ag_set_grad(PyObject *self, PyObject *v, void *c)
{
    (void)c;
    if (v && v != Py_None && !PyTensor_Check(v)) {
        PyErr_Format(PyExc_TypeError, "grad must be a pygpu.Tensor or None, got %.80s",
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    if (v && v != Py_None) {
        const pg_tensor *t = &PT(self)->t, *g = &PT(v)->t;
        bool same = t->ndim == g->ndim;
        for (int i = 0; same && i < t->ndim; i++)
            same = t->shape[i] == g->shape[i];
        if (!same) {
            char a[96], b[96];
            PyErr_Format(pg_exc_shape, "attempting to assign a gradient of size '%s' to a tensor "
                                       "of size '%s'. Please ensure that the gradient and the "
                                       "tensor are the same size",
                         pg_shape_list_str(g->ndim, g->shape, a, sizeof a),
                         pg_shape_list_str(t->ndim, t->shape, b, sizeof b));
            return -1;
        }
    }
    int want = PT(self)->grad_dtype; /* 1: any dtype (grad_dtype None) */
    if (v && v != Py_None && want != 1 &&
        PT(v)->t.dtype != (want == 0 ? PT(self)->t.dtype : want - 2)) {
        PyObject *h = pg_hook("grad_dtype_error"); /* raises PyTorch's words */
        PyObject *r = h ? PyObject_CallFunctionObjArgs(h, self, v, NULL) : NULL;
        Py_XDECREF(r);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the gradient's dtype is not the tensor's grad_dtype");
        return -1;
    }
    Py_XSETREF(PT(self)->grad, (v && v != Py_None) ? Py_NewRef(v) : NULL);
    return 0;
}

/* Tensor._grad_dtype_code: the raw field (see tensor_object.h); Tensor.grad_dtype reads and
 * checks it in Python. */
PyObject *pg_ag_get_grad_dtype_code(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(PT(self)->grad_dtype);
}

int pg_ag_set_grad_dtype_code(PyObject *self, PyObject *v, void *c)
{
    (void)c;
    long code = v ? PyLong_AsLong(v) : -1;
    if (code == -1 && (!v || PyErr_Occurred())) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "cannot delete _grad_dtype_code");
        return -1;
    }
    if (code < 0 || (code > 1 && pg_check_dtype_code(code - 2) < 0))
        return -1;
    PT(self)->grad_dtype = (int)code;
    return 0;
}

static PyObject *f_set_inference_mode(PyObject *mod, PyObject *v)
{
    (void)mod;
    int on = PyObject_IsTrue(v);
    if (on < 0)
        return NULL;
    int was = pg_inference_mode;
    pg_inference_mode = on;
    return PyBool_FromLong(was);
}

static PyObject *f_inference_mode(PyObject *mod, PyObject *unused)
{
    (void)mod, (void)unused;
    return PyBool_FromLong(pg_inference_mode);
}

static PyObject *f_is_inference(PyObject *mod, PyObject *t)
{
    (void)mod;
    if (!PyTensor_Check(t)) {
        PyErr_Format(PyExc_TypeError, "is_inference(): argument 'input' (position 1) must be "
                     "Tensor, not %.80s", Py_TYPE(t)->tp_name);
        return NULL;
    }
    const pg_storage *s = PT(t)->t.storage;
    return PyBool_FromLong(s && (s->flags & PG_STORAGE_INFERENCE));
}

/* torch.utils.swap_tensors(a, b): the two objects trade everything they hold (memory view,
 * autograd state, roles), so every reference to `a` now sees what `b` was (how
 * Module.load_state_dict swaps a loaded value into a parameter that optimizers hold). */
static PyObject *f_swap_tensors(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTensor_Type, &a, &PyTensor_Type, &b))
        return NULL;
    if (Py_TYPE(a) != Py_TYPE(b)) {
        PyErr_Format(PyExc_RuntimeError, "swap_tensors: pygpu swaps tensors of one class only, "
                     "got %.80s and %.80s", Py_TYPE(a)->tp_name, Py_TYPE(b)->tp_name);
        return NULL;
    }
    PyTensor tmp = *PT(a);
    size_t head = offsetof(PyTensor, t);
    memcpy((char *)a + head, (char *)b + head, sizeof(PyTensor) - head);
    memcpy((char *)b + head, (char *)&tmp + head, sizeof(PyTensor) - head);
    Py_RETURN_NONE;
}

PyObject *pg_ag_get_grad_fn(PyObject *self, void *c)
{
    (void)c;
    return Py_NewRef(PT(self)->grad_fn ? PT(self)->grad_fn : Py_None);
}

PyObject *pg_ag_get_is_leaf(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(PT(self)->grad_fn == NULL &&
                           !(PT(self)->base && PT(PT(self)->base)->requires_grad));
}

static PyObject *detach(PyObject *self)
{
    pg_tensor out;
    pg_tensor_ref(&PT(self)->t, &out);
    return pg_wrap(&out);
}

PyObject *pg_ag_get_data(PyObject *self, void *c)
{
    (void)c;
    return detach(self);
}

int pg_ag_set_data(PyObject *self, PyObject *v, void *c)
{
    (void)c;
    if (!v || !PyTensor_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "data must be assigned a pygpu.Tensor");
        return -1;
    }
    pg_tensor nt;
    pg_tensor_ref(&PT(v)->t, &nt);
    pg_tensor old = PT(self)->t;
    PT(self)->t = nt;
    pg_tensor_clear(&old);
    Py_CLEAR(PT(self)->base); /* other memory: no longer a view of anything */
    return 0;
}

PyObject *pg_ag_get_is_param(PyObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(PT(self)->is_param);
}

int pg_ag_set_is_param(PyObject *self, PyObject *v, void *c)
{
    (void)c;
    int b = v ? PyObject_IsTrue(v) : 0;
    if (b < 0)
        return -1;
    PT(self)->is_param = b;
    return 0;
}

PyObject *pg_ag_get_buffer_kind(PyObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(PT(self)->buffer_kind);
}

int pg_ag_set_buffer_kind(PyObject *self, PyObject *v, void *c)
{
    (void)c;
    long k = v ? PyLong_AsLong(v) : 0;
    if (k == -1 && PyErr_Occurred())
        return -1;
    if (k < 0 || k > 2) {
        PyErr_SetString(PyExc_ValueError, "_buffer_kind is 0, 1 (persistent) or 2");
        return -1;
    }
    PT(self)->buffer_kind = (int)k;
    return 0;
}

/* ---- methods -------------------------------------------------------------------------- */

PyObject *pg_ag_requires_grad_(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = {"requires_grad", NULL};
    int v = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p", kw, &v) || set_requires_grad(self, v) < 0)
        return NULL;
    return Py_NewRef(self);
}

PyObject *pg_ag_detach(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    return detach(self);
}

PyObject *pg_ag_backward(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = {"gradient", "retain_graph", "create_graph", "inputs", NULL};
    PyObject *gradient = Py_None, *retain = Py_None, *create = Py_False, *inputs = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOO", kw, &gradient, &retain, &create,
                                     &inputs))
        return NULL;
    PyObject *hook = pg_hook("backward");
    return hook ? PyObject_CallFunctionObjArgs(hook, self, gradient, retain, create, inputs, NULL)
                : NULL;
}

/* internal: attach a grad_fn (the Python recording hook calls it) */
PyObject *pg_ag_set_grad_fn(PyObject *self, PyObject *fn)
{
    Py_XSETREF(PT(self)->grad_fn, fn == Py_None ? NULL : Py_NewRef(fn));
    PT(self)->requires_grad = fn != Py_None;
    Py_RETURN_NONE;
}

/* ---- module functions ----------------------------------------------------------------- */

static PyObject *f_set_grad_enabled(PyObject *mod, PyObject *v)
{
    (void)mod;
    int b = PyObject_IsTrue(v);
    if (b < 0)
        return NULL;
    int prev = !pg_grad_disabled;
    pg_grad_disabled = !b;
    return PyBool_FromLong(prev);
}

static PyObject *f_is_grad_enabled(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    return PyBool_FromLong(!pg_grad_disabled);
}

/* _grad_exclusive(t): whether t alone uses its memory (no other tensor or view
 * refers to its storage; queued work does not count), so that adding a gradient
 * into it in place changes nothing anyone else can see: PyTorch's use_count
 * test before it accumulates into .grad in place. */
static PyObject *f_grad_exclusive(PyObject *mod, PyObject *t)
{
    (void)mod;
    if (!PyTensor_Check(t)) {
        PyErr_SetString(PyExc_TypeError, "_grad_exclusive: expected a Tensor");
        return NULL;
    }
    pg_storage *s = PT(t)->t.storage;
    long users = pg_storage_users(s); /* one reading: see pg_storage.refs */
    return PyBool_FromLong(users == 1 && !(s->flags & (PG_STORAGE_EXTERNAL | PG_STORAGE_READONLY)));
}

/* _same_storage(a, b): whether two tensors use the same memory (views of one another) */
static PyObject *f_same_storage(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTensor_Type, &a, &PyTensor_Type, &b))
        return NULL;
    return PyBool_FromLong(PT(a)->t.storage == PT(b)->t.storage);
}

/* _note_view(out, src): pg_ag_note_view for a view a Python autograd Function made in its
 * forward (which runs under no_grad); the caller is under grad mode */
static PyObject *f_note_view(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *out, *src;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTensor_Type, &out, &PyTensor_Type, &src))
        return NULL;
    int saved = pg_grad_disabled;
    pg_grad_disabled = 0;
    pg_ag_note_view(out, src);
    pg_grad_disabled = saved;
    Py_RETURN_NONE;
}

/* _set_tracing(flag): this thread's tracing flag (pygpu.onnx); returns the previous one */
static PyObject *f_set_tracing(PyObject *mod, PyObject *flag)
{
    (void)mod;
    /* 0 off, 1 the ONNX exporter's (ops autograd does not record), 2 the JIT's (also the
     * differentiable ops on operands that do not require grad); True is 1 */
    long on = PyLong_Check(flag) ? PyLong_AsLong(flag) : PyObject_IsTrue(flag);
    if (on < 0 || on > 2) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "_set_tracing: expected 0, 1 or 2");
        return NULL;
    }
    int was = pg_tracing;
    pg_tracing = (int)on;
    return PyLong_FromLong(was);
}

PyMethodDef pg_autograd_functions[] = {
    {"_note_view", f_note_view, METH_VARARGS, "internal: out is a view of src (its _base)"},
    {"_set_tracing", f_set_tracing, METH_O, "internal: report untraced ops to the trace hook (this thread): 0 off, 1 ops autograd does not record, 2 those and differentiable ops on operands that do not require grad; returns the previous level"},
    {"_same_storage", f_same_storage, METH_VARARGS, "internal: a and b use the same memory"},
    {"_grad_exclusive", f_grad_exclusive, METH_O, "internal: t alone uses its storage"},
    {"_set_grad_enabled", f_set_grad_enabled, METH_O, "set this thread's grad mode; returns the previous one"},
    {"_set_inference_mode", f_set_inference_mode, METH_O, "set this thread's inference mode; returns the previous one"},
    {"_inference_mode", f_inference_mode, METH_NOARGS, "whether inference mode is on (this thread)"},
    {"_is_inference", f_is_inference, METH_O, "whether a tensor is an inference tensor (its memory was first held by a tensor made under inference_mode)"},
    {"_swap_tensors", f_swap_tensors, METH_VARARGS, "swap_tensors(a, b): a and b trade their contents (torch.utils.swap_tensors)"},
    {"is_grad_enabled", f_is_grad_enabled, METH_NOARGS, "whether ops on tensors that require grad are recorded (this thread)"},
    {NULL, NULL, 0, NULL},
};
