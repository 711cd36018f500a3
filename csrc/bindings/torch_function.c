/* torch_function.c - PyTorch's __torch_function__ protocol at the C edge (issue 43).
 *
 * A public function or Tensor method of pygpu is wrapped once at import in a dispatcher
 * object (pygpu/overrides.py: install). A call on plain tensors and Python scalars costs
 * the dispatcher one pointer comparison per argument and one more vectorcall; only when an
 * argument is a Tensor subclass, or an object whose class defines __torch_function__, or a
 * TorchFunctionMode is on the stack, does the call go to Python (overrides._dispatch),
 * which hands it to the overriding classes as PyTorch's handle_torch_function does. The
 * switches that turn the protocol off (DisableTorchFunctionSubclass, DisableTorchFunction)
 * and the number of modes live here so that the fast path reads two ints.
 *
 * Also here: Tensor.as_subclass and Tensor._make_subclass, which make a subclass object
 * over the same memory (pygpu.Tensor is a base type: a subclass instance is a PyTensor
 * plus the subclass's __dict__), and _C._disabled_torch_function_impl.
 * The state is process-wide (PyTorch's is per thread). */
#include <stddef.h>

#include "tensor_object.h"

/* 0: enabled; 1: subclasses' __torch_function__ off (DisableTorchFunctionSubclass);
 * 2: all off, modes too (DisableTorchFunction) */
static int g_disabled;
static int g_modes; /* TorchFunctionModes on pygpu.overrides' stack */
int pg_tf_modes_active; /* g_modes && g_disabled < 2: read by the operators' C slots */
static PyObject *g_dispatch;      /* overrides._dispatch(api, overloaded, args, kwargs) */
static PyObject *g_disabled_impl; /* _C._disabled_torch_function_impl */
static PyObject *g_tf_name;       /* "__torch_function__", interned */

/* Types that never override: the fast path's test, one comparison each. */
static inline int pg_tf_plain_type(PyTypeObject *tp)
{
    return tp == &PyTensor_Type || tp == &PyLong_Type || tp == &PyFloat_Type ||
           tp == &PyBool_Type || tp == Py_TYPE(Py_None) || tp == &PyUnicode_Type ||
           tp == &PySlice_Type || tp == &PyComplex_Type || tp == &PySize_Type ||
           tp == Py_TYPE(Py_Ellipsis);
}

/* Whether objects of type tp take calls through __torch_function__. */
static int pg_tf_overrides(PyTypeObject *tp)
{
    if (pg_tf_plain_type(tp) || tp == &PyTuple_Type || tp == &PyList_Type)
        return 0;
    PyObject *f = _PyType_Lookup(tp, g_tf_name); /* borrowed, cached by the type cache */
    return f && f != g_disabled_impl;
}

/* Append o (and, for a list or tuple, its items: cat's and stack's operands) to *out when
 * it overrides; *out is made on the first one. -1 with an exception. */
static int pg_tf_collect(PyObject *o, PyObject **out)
{
    PyTypeObject *tp = Py_TYPE(o);
    if (pg_tf_plain_type(tp))
        return 0;
    if (PyTuple_Check(o) || PyList_Check(o)) {
        PyObject *seq = PySequence_Fast(o, "");
        if (!seq)
            return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        PyObject **items = PySequence_Fast_ITEMS(seq);
        int rc = 0;
        for (Py_ssize_t i = 0; i < n && rc == 0; i++)
            if (!PyTuple_Check(items[i]) && !PyList_Check(items[i]) &&
                pg_tf_overrides(Py_TYPE(items[i])))
                rc = (*out || (*out = PyList_New(0))) ? PyList_Append(*out, items[i]) : -1;
        Py_DECREF(seq);
        return rc;
    }
    if (!pg_tf_overrides(tp))
        return 0;
    if (!*out && !(*out = PyList_New(0)))
        return -1;
    return PyList_Append(*out, o);
}

/* The arguments that override, in order (a new list), or Py_None when none does. */
static PyObject *pg_tf_overloaded(PyObject *const *args, Py_ssize_t n)
{
    PyObject *out = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (pg_tf_collect(args[i], &out) < 0) {
            Py_XDECREF(out);
            return NULL;
        }
    return out ? out : Py_NewRef(Py_None);
}

/* ---- the dispatcher: a function (pygpu.add) or a method (Tensor.add) ------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *func;          /* what it wraps */
    PyObject *name;          /* its __name__ where PyTorch's differs (Tensor.__add__: "add"), or NULL */
    vectorcallfunc vectorcall;
} PgDispatch;

static PyObject *dispatch_slow(PgDispatch *d, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *over = g_disabled ? Py_NewRef(Py_None) : pg_tf_overloaded(args, n + nkw);
    if (!over)
        return NULL;
    if (over == Py_None && !(g_modes && g_disabled < 2)) {
        Py_DECREF(over);
        return PyObject_Vectorcall(d->func, args, nargsf, kwnames);
    }
    if (!g_dispatch) {
        Py_DECREF(over);
        PyErr_SetString(PyExc_RuntimeError, "pygpu.overrides is not installed");
        return NULL;
    }
    PyObject *tuple = PyTuple_New(n), *kwargs = PyDict_New();
    PyObject *r = NULL;
    if (tuple && kwargs) {
        for (Py_ssize_t i = 0; i < n; i++)
            PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i]));
        int rc = 0;
        for (Py_ssize_t i = 0; i < nkw && rc == 0; i++)
            rc = PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[n + i]);
        if (rc == 0)
            r = PyObject_CallFunctionObjArgs(g_dispatch, (PyObject *)d, over, tuple, kwargs, NULL);
    }
    Py_XDECREF(tuple);
    Py_XDECREF(kwargs);
    Py_DECREF(over);
    return r;
}

static PyObject *dispatch_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames)
{
    PgDispatch *d = (PgDispatch *)self;
    if (g_modes && g_disabled < 2)
        return dispatch_slow(d, args, nargsf, kwnames);
    if (!g_disabled) {
        Py_ssize_t n = PyVectorcall_NARGS(nargsf) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!pg_tf_plain_type(Py_TYPE(args[i])))
                return dispatch_slow(d, args, nargsf, kwnames);
    }
    return PyObject_Vectorcall(d->func, args, nargsf, kwnames);
}

static PyObject *dispatch_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *func, *name = NULL;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "_TorchFunctionDispatch(func, name=None) takes no keywords");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O|U:_TorchFunctionDispatch", &func, &name))
        return NULL;
    if (!PyCallable_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "_TorchFunctionDispatch(func): func must be callable");
        return NULL;
    }
    PgDispatch *d = (PgDispatch *)type->tp_alloc(type, 0);
    if (!d)
        return NULL;
    d->func = Py_NewRef(func);
    d->name = Py_XNewRef(name);
    d->vectorcall = dispatch_vectorcall;
    return (PyObject *)d;
}

static void dispatch_dealloc(PgDispatch *d)
{
    PyObject_GC_UnTrack(d);
    Py_CLEAR(d->func);
    Py_CLEAR(d->name);
    Py_TYPE(d)->tp_free(d);
}

static int dispatch_traverse(PgDispatch *d, visitproc visit, void *arg)
{
    Py_VISIT(d->func);
    Py_VISIT(d->name);
    return 0;
}

static int dispatch_clear(PgDispatch *d)
{
    Py_CLEAR(d->func);
    Py_CLEAR(d->name);
    return 0;
}

/* The wrapped function's name, doc, signature and module are the dispatcher's, so
 * help(), inspect.signature() and func.__name__ in a __torch_function__ read as before. */
static PyObject *dispatch_getattro(PyObject *self, PyObject *name)
{
    PgDispatch *d = (PgDispatch *)self;
    static const char *forwarded[] = {"__name__", "__qualname__", "__doc__", "__module__",
                                      "__text_signature__", "__annotations__", "__defaults__",
                                      "__kwdefaults__", "__dict__", NULL};
    if (PyUnicode_Check(name)) {
        if (PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0)
            return Py_NewRef(d->func);
        if (d->name && PyUnicode_CompareWithASCIIString(name, "__name__") == 0)
            return Py_NewRef(d->name);
        for (int i = 0; forwarded[i]; i++)
            if (PyUnicode_CompareWithASCIIString(name, forwarded[i]) == 0)
                return PyObject_GetAttr(d->func, name);
    }
    PyObject *r = PyObject_GenericGetAttr(self, name);
    if (r || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return r;
    PyErr_Clear();
    return PyObject_GetAttr(d->func, name);
}

static PyObject *dispatch_repr(PgDispatch *d) { return PyObject_Repr(d->func); }

/* a method binds to its tensor as a Python function does */
static PyObject *dispatch_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (!obj || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

/* pickled by reference: pygpu.overrides._reduce */
static PyObject *dispatch_reduce(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    PyObject *mod = PyImport_ImportModule("pygpu.overrides");
    PyObject *r = mod ? PyObject_CallMethod(mod, "_reduce", "O", self) : NULL;
    Py_XDECREF(mod);
    return r;
}

static PyMethodDef dispatch_methods[] = {
    {"__reduce__", dispatch_reduce, METH_NOARGS, "pickled by reference"},
    {NULL, NULL, 0, NULL},
};

#define PG_DISPATCH_TYPE(NAME, DESCR_GET, EXTRA_FLAGS)                                    \
    {                                                                                      \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = NAME,                                     \
        .tp_basicsize = sizeof(PgDispatch),                                                \
        .tp_dealloc = (destructor)dispatch_dealloc,                                        \
        .tp_vectorcall_offset = offsetof(PgDispatch, vectorcall),                          \
        .tp_repr = (reprfunc)dispatch_repr,                                                \
        .tp_call = PyVectorcall_Call,                                                      \
        .tp_getattro = dispatch_getattro,                                                  \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | \
                    EXTRA_FLAGS,                                                           \
        .tp_doc = "A pygpu function or Tensor method that honours __torch_function__",     \
        .tp_traverse = (traverseproc)dispatch_traverse,                                    \
        .tp_clear = (inquiry)dispatch_clear,                                               \
        .tp_methods = dispatch_methods,                                                    \
        .tp_descr_get = DESCR_GET,                                                         \
        .tp_new = dispatch_new,                                                            \
    }

static PyTypeObject PgDispatchFunction_Type =
    PG_DISPATCH_TYPE("pygpu._C._TorchFunctionDispatch", NULL, 0);
static PyTypeObject PgDispatchMethod_Type =
    PG_DISPATCH_TYPE("pygpu._C._TorchFunctionMethod", dispatch_get, Py_TPFLAGS_METHOD_DESCRIPTOR);

/* ---- subclass objects ------------------------------------------------------------------ */

static int check_subclass(PyObject *cls, const char *fn)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTensor_Type)) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: Creating a Tensor subclass from a class that does not inherit from "
                     "Tensor is not possible. Make sure your class inherits from Tensor.", fn);
        return -1;
    }
    return 0;
}

/* A new object of type cls over src's memory (a view of all of it); with `history`, it
 * keeps src's autograd history (grad_fn, requires_grad, view base), else it is a leaf. */
static PyObject *pg_subclass_alias(PyTensor *src, PyTypeObject *cls, int history)
{
    PyTensor *o = (PyTensor *)cls->tp_alloc(cls, 0);
    if (!o)
        return NULL;
    pg_tensor_ref(&src->t, &o->t);
    if (history) {
        o->grad_fn = Py_XNewRef(src->grad_fn);
        o->base = Py_XNewRef(src->base);
        o->requires_grad = src->requires_grad;
    }
    return (PyObject *)o;
}

/* Tensor.as_subclass(cls): the same tensor (memory and autograd history) as an object of
 * cls. A leaf that requires grad is aliased through view_as first, so gradients through
 * the new object reach it (PyTorch shares one TensorImpl; pygpu's autograd state is the
 * object's). */
static PyObject *mt_as_subclass(PyObject *self, PyObject *cls)
{
    if (check_subclass(cls, "as_subclass") < 0)
        return NULL;
    PyTensor *t = (PyTensor *)self;
    if (t->requires_grad && !t->grad_fn) {
        PyObject *alias = PyObject_CallMethod(self, "view_as", "O", self);
        if (!alias)
            return NULL;
        PyObject *r = pg_subclass_alias((PyTensor *)alias, (PyTypeObject *)cls, 1);
        Py_DECREF(alias);
        return r;
    }
    return pg_subclass_alias(t, (PyTypeObject *)cls, 1);
}

/* Tensor._make_subclass(cls, data, require_grad=False): a new leaf of type cls over data's
 * memory (how nn.Parameter subclasses are built in PyTorch). */
static PyObject *f_make_subclass(PyObject *unused, PyObject *args, PyObject *kwargs)
{
    (void)unused;
    static char *kw[] = {"cls", "data", "require_grad", "dispatch_sizes_strides_policy",
                         "dispatch_device", "dispatch_layout", "_extra_dispatch_keys",
                         "storage_size", NULL};
    PyObject *cls, *data, *ignored[5] = {0};
    int require_grad = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p$OOOOO:_make_subclass", kw, &cls, &data,
                                     &require_grad, &ignored[0], &ignored[1], &ignored[2],
                                     &ignored[3], &ignored[4]))
        return NULL;
    if (check_subclass(cls, "_make_subclass") < 0)
        return NULL;
    if (!PyTensor_Check(data)) {
        PyErr_Format(PyExc_TypeError, "_make_subclass(): data must be a Tensor, not %.80s",
                     Py_TYPE(data)->tp_name);
        return NULL;
    }
    PyTensor *o = (PyTensor *)pg_subclass_alias((PyTensor *)data, (PyTypeObject *)cls, 0);
    if (o)
        o->requires_grad = require_grad;
    return (PyObject *)o;
}

static PyObject *f_disabled_impl(PyObject *unused, PyObject *args, PyObject *kwargs)
{
    /* _disabled_torch_function_impl(func, types, args=(), kwargs=None): run func as is */
    (void)unused;
    static char *kw[] = {"func", "types", "args", "kwargs", NULL};
    PyObject *func, *types, *fargs = NULL, *fkwargs = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OO:_disabled_torch_function_impl", kw,
                                     &func, &types, &fargs, &fkwargs))
        return NULL;
    int saved = g_disabled;
    if (g_disabled < 1)
        g_disabled = 1;
    PyObject *t = fargs ? PySequence_Tuple(fargs) : PyTuple_New(0);
    PyObject *r = t ? PyObject_Call(func, t, fkwargs == Py_None ? NULL : fkwargs) : NULL;
    Py_XDECREF(t);
    g_disabled = saved;
    return r;
}

/* An operator's C slot under a mode: call the Tensor dunder's dispatcher (the mode's path). */
static PyObject *mode_operator(const char *dunder, PyObject *const *args, Py_ssize_t n)
{
    PyObject *d = PyDict_GetItemString(PyTensor_Type.tp_dict, dunder); /* borrowed */
    if (!d || Py_TYPE(d) != &PgDispatchMethod_Type)
        return NULL;
    return dispatch_slow((PgDispatch *)d, args, (size_t)n, NULL);
}

PyObject *pg_tf_mode_operator(const char *dunder, PyObject *self, PyObject *other)
{
    PyObject *args[2] = {self, other};
    return mode_operator(dunder, args, other ? 2 : 1);
}

PyObject *pg_tf_mode_operator3(const char *dunder, PyObject *self, PyObject *a, PyObject *b)
{
    PyObject *args[3] = {self, a, b};
    return mode_operator(dunder, args, 3);
}

/* _torch_function_state() -> (disabled, modes); _set_torch_function_state(disabled, modes) */
static PyObject *f_state(PyObject *unused, PyObject *noargs)
{
    (void)unused;
    (void)noargs;
    return Py_BuildValue("ii", g_disabled, g_modes);
}

static PyObject *f_set_state(PyObject *unused, PyObject *args)
{
    (void)unused;
    int disabled, modes;
    if (!PyArg_ParseTuple(args, "ii:_set_torch_function_state", &disabled, &modes))
        return NULL;
    if (disabled < 0 || disabled > 2 || modes < 0) {
        PyErr_SetString(PyExc_ValueError, "_set_torch_function_state(disabled: 0..2, modes >= 0)");
        return NULL;
    }
    g_disabled = disabled;
    g_modes = modes;
    pg_tf_modes_active = modes && disabled < 2;
    Py_RETURN_NONE;
}

static PyObject *f_set_dispatch(PyObject *unused, PyObject *f)
{
    (void)unused;
    Py_XSETREF(g_dispatch, Py_NewRef(f));
    Py_RETURN_NONE;
}

/* has_torch_function(relevant_args), as PyTorch's C one: a mode is on, or one of the
 * arguments (not a plain Tensor) overrides */
static PyObject *f_has_torch_function(PyObject *unused, PyObject *seq)
{
    (void)unused;
    if (g_modes && g_disabled < 2)
        Py_RETURN_TRUE;
    if (g_disabled)
        Py_RETURN_FALSE;
    PyObject *fast = PySequence_Fast(seq, "has_torch_function: relevant_args must be a sequence");
    if (!fast)
        return NULL;
    int found = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast) && !found; i++)
        found = pg_tf_overrides(Py_TYPE(PySequence_Fast_GET_ITEM(fast, i)));
    Py_DECREF(fast);
    return PyBool_FromLong(found);
}

static PyObject *f_has_torch_function_variadic(PyObject *unused, PyObject *const *args,
                                               Py_ssize_t n)
{
    (void)unused;
    if (g_modes && g_disabled < 2)
        Py_RETURN_TRUE;
    if (g_disabled)
        Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < n; i++)
        if (pg_tf_overrides(Py_TYPE(args[i])))
            Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static PyObject *f_has_torch_function_unary(PyObject *unused, PyObject *o)
{
    return f_has_torch_function_variadic(unused, &o, 1);
}

PyMethodDef pg_torch_function_functions[] = {
    {"_make_subclass", (PyCFunction)(void (*)(void))f_make_subclass, METH_VARARGS | METH_KEYWORDS,
     "_make_subclass(cls, data, require_grad=False): a leaf of type cls over data's memory"},
    {"_disabled_torch_function_impl", (PyCFunction)(void (*)(void))f_disabled_impl,
     METH_VARARGS | METH_KEYWORDS,
     "a __torch_function__ that runs the function as is (the subclass's override is off)"},
    {"_torch_function_state", f_state, METH_NOARGS, "(disabled 0..2, number of modes)"},
    {"_set_torch_function_state", f_set_state, METH_VARARGS, "set (disabled, modes)"},
    {"_set_torch_function_dispatch", f_set_dispatch, METH_O, "the Python side of a dispatch"},
    {"_has_torch_function", f_has_torch_function, METH_O, "has_torch_function(relevant_args)"},
    {"_has_torch_function_unary", f_has_torch_function_unary, METH_O, "has_torch_function_unary(obj)"},
    {"_has_torch_function_variadic", (PyCFunction)(void (*)(void))f_has_torch_function_variadic,
     METH_FASTCALL, "has_torch_function_variadic(*args)"},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef pg_torch_function_methods[] = {
    {"as_subclass", mt_as_subclass, METH_O,
     "as_subclass(cls): the same tensor (memory and autograd history) as an object of cls"},
    {NULL, NULL, 0, NULL},
};

/* Module init: the dispatcher types, and the interned name and disabled impl the fast path
 * compares against. */
int pg_torch_function_init(PyObject *m)
{
    if (PyType_Ready(&PgDispatchFunction_Type) < 0 || PyType_Ready(&PgDispatchMethod_Type) < 0 ||
        PyModule_AddObjectRef(m, "_TorchFunctionDispatch", (PyObject *)&PgDispatchFunction_Type) < 0 ||
        PyModule_AddObjectRef(m, "_TorchFunctionMethod", (PyObject *)&PgDispatchMethod_Type) < 0)
        return -1;
    for (PyMethodDef *d = pg_torch_function_methods; d->ml_name; d++) {
        PyObject *descr = PyDescr_NewMethod(&PyTensor_Type, d);
        int rc = descr ? PyDict_SetItemString(PyTensor_Type.tp_dict, d->ml_name, descr) : -1;
        Py_XDECREF(descr);
        if (rc < 0)
            return -1;
    }
    PyType_Modified(&PyTensor_Type);
    g_tf_name = PyUnicode_InternFromString("__torch_function__");
    g_disabled_impl = PyObject_GetAttrString(m, "_disabled_torch_function_impl");
    return g_tf_name && g_disabled_impl ? 0 : -1;
}
