/* tensor_object.c - the Tensor type's base: lifetime, the registry of Python
 * objects and hooks, parsing devices/dtypes/shapes, waiting and implicit
 * transfers.
 *
 * The bottom of the bindings: every other binding file uses these helpers and
 * this file uses none of them. The type's operators and indexing
 * (tensor_operators.c), methods and properties (tensor_methods.c), autograd
 * slots (autograd.c) and buffer protocol (interop.c) sit above it and are put
 * into the type by pg_tensor_type_ready() at module init. */
#include "tensor_object.h"

#include <string.h>

#include "../core/pg_backend.h"
#include "../core/pg_fp8.h"
#include "../core/pg_graph.h"
#include "../core/pg_half.h"

static PyObject *g_dtypes[PG_NUM_DTYPES];
static PyObject *g_devices[PG_NUM_SLOTS];
static PyObject *g_hooks;

/* ---- lifetime ------------------------------------------------------------------------- */

_Thread_local int pg_inference_mode;

PyObject *pg_wrap(pg_tensor *t)
{
    PyTensor *o = PyObject_New(PyTensor, &PyTensor_Type);
    if (!o) {
        pg_tensor_clear(t);
        return NULL;
    }
    o->t = *t;
    if (t->storage) { /* the first tensor over a storage fixes its version 0 (pg_storage.h) */
        uint_fast64_t unset = 0;
        uint_fast64_t now = atomic_load_explicit(&t->storage->writes, memory_order_relaxed);
        if (atomic_compare_exchange_strong(&t->storage->writes_base, &unset, now + 1) &&
            pg_inference_mode) /* a new storage made under inference_mode */
            t->storage->flags |= PG_STORAGE_INFERENCE;
    }
    o->grad = NULL;
    o->grad_fn = NULL;
    o->base = NULL;
    o->requires_grad = 0;
    o->is_param = 0;
    o->buffer_kind = 0;
    o->grad_dtype = 0;
    return (PyObject *)o;
}

PyObject *pg_wrap_result(pg_status st, pg_tensor *t)
{
    if (st != PG_OK)
        return pg_raise(st);
    return pg_wrap(t);
}

static void tensor_dealloc(PyTensor *self)
{
    pg_storage *s = self->t.storage;
    self->t.storage = NULL;
    if (s)
        pg_storage_release(s);
    Py_CLEAR(self->grad);
    Py_CLEAR(self->grad_fn);
    Py_CLEAR(self->base);
    Py_TYPE(self)->tp_free((PyObject *)self); /* a subclass's object is the GC's */
}

/* ---- registry ------------------------------------------------------------------------- */

int pg_registry_setup(PyObject *dtypes, PyObject *hooks)
{
    if (!PyTuple_Check(dtypes) || PyTuple_GET_SIZE(dtypes) != PG_NUM_DTYPES || !PyDict_Check(hooks)) {
        PyErr_SetString(PyExc_TypeError, "_setup(dtypes: tuple of every dtype, hooks: dict)");
        return -1;
    }
    for (int i = 0; i < PG_NUM_DTYPES; i++) {
        Py_XSETREF(g_dtypes[i], Py_NewRef(PyTuple_GET_ITEM(dtypes, i)));
    }
    Py_XSETREF(g_hooks, Py_NewRef(hooks));
    return 0;
}

PyObject *pg_dtype_object(int code) { return g_dtypes[code]; }

PyObject *pg_hook(const char *name)
{
    PyObject *h = g_hooks ? PyDict_GetItemString(g_hooks, name) : NULL;
    if (!h)
        PyErr_Format(PyExc_RuntimeError, "pygpu is not initialised (missing hook %s)", name);
    return h;
}

PyObject *pg_device_object(pg_device d)
{
    int slot = pg_device_slot(d);
    if (!g_devices[slot]) {
        PyObject *f = pg_hook("make_device");
        if (!f)
            return NULL;
        PyObject *o = PyObject_CallFunction(f, "si", pg_device_type_name(d.type), d.index);
        if (!o)
            return NULL;
        g_devices[slot] = o;
    }
    return Py_NewRef(g_devices[slot]);
}

int pg_check_device(pg_device d)
{
    if (d.type < 0 || d.type >= PG_NUM_DEVICE_TYPES) {
        PyErr_Format(PyExc_ValueError, "device type %d is not one of 0 (cpu), 1 (sim), 2 (cuda)",
                     d.type);
        return -1;
    }
    int max = d.type == PG_DEV_CPU ? 1 : PG_MAX_DEVICES_PER_TYPE;
    if (d.index < 0 || d.index >= max) {
        PyErr_Format(PyExc_ValueError, "device index %d is out of range for %s: it must be in "
                                       "0..%d",
                     d.index, pg_device_type_name(d.type), max - 1);
        return -1;
    }
    return 0;
}

int pg_check_dtype_code(long code)
{
    if (pg_dtype_valid((int)code) && code == (int)code)
        return 0;
    PyErr_Format(PyExc_ValueError, "dtype code %ld is not a pygpu dtype (codes are 0..%d)", code,
                 PG_NUM_DTYPES - 1);
    return -1;
}

/* Devices and dtypes are parsed here, in C: the pygpu DType and Device objects
 * by identity, and the canonical spellings ("float32", "cpu", "sim:1") by
 * their names from the C core (pg_dtype_name, pg_device_type_name). The
 * Python hooks (pygpu/_dtype.py, _device.py) are the cold path: NumPy dtypes
 * and types, "sim" meaning the current device, a device whose backend is not
 * loaded yet (cuda), and every malformed spelling, whose error they word. */

#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')

int pg_parse_dtype_fast(PyObject *o, int *code)
{
    for (int i = 0; i < PG_NUM_DTYPES; i++) {
        if (o == g_dtypes[i]) {
            *code = i;
            return 1;
        }
    }
    if (!PyUnicode_Check(o))
        return 0;
    const char *s = PyUnicode_AsUTF8(o);
    if (!s) {
        PyErr_Clear(); /* unencodable: the hook words the error */
        return 0;
    }
    for (int i = 0; i < PG_NUM_DTYPES; i++) {
        if (strcmp(s, pg_dtype_name((pg_dtype)i)) == 0) {
            *code = i;
            return 1;
        }
    }
    return 0;
}

int pg_parse_device_fast(PyObject *o, pg_device *d)
{
    for (int s = 0; s < PG_NUM_SLOTS; s++) {
        if (g_devices[s] == o) {
            *d = pg_device_from_slot(s);
            return 1;
        }
    }
    if (!PyUnicode_Check(o))
        return 0;
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(o, &len);
    if (!s) {
        PyErr_Clear();
        return 0;
    }
    for (int type = 0; type < PG_NUM_DEVICE_TYPES; type++) {
        const char *name = pg_device_type_name(type);
        size_t n = strlen(name);
        if (strncmp(s, name, n) != 0)
            continue;
        const char *rest = s + n;
        if (*rest == 0 && type == PG_DEV_CPU) {
            *d = (pg_device){PG_DEV_CPU, 0};
            return 1;
        }
        /* type:N with one or two ASCII digits, nothing else */
        if (rest[0] != ':' || !IS_DIGIT(rest[1]))
            return 0;
        int index = rest[1] - '0';
        if (rest[2]) {
            if (!IS_DIGIT(rest[2]) || rest[3])
                return 0;
            index = index * 10 + (rest[2] - '0');
        }
        if (type == PG_DEV_CPU) {
            if (index != 0)
                return 0;
        } else {
            /* the device must exist; an absent backend or index gets the hook's message */
            const pg_backend *be = pg_backend_get(type);
            if (!be || index >= PG_MAX_DEVICES_PER_TYPE || index >= be->device_count(be))
                return 0;
        }
        *d = (pg_device){type, index};
        return 1;
    }
    return 0;
}

int pg_parse_dtype(PyObject *o, int *code)
{
    int fast = pg_parse_dtype_fast(o, code);
    if (fast)
        return fast < 0 ? -1 : 0;
    PyObject *f = pg_hook("dtype_code"); /* strings, NumPy dtypes and types */
    if (!f)
        return -1;
    PyObject *r = PyObject_CallOneArg(f, o);
    if (!r)
        return -1;
    long c = PyLong_AsLong(r);
    Py_DECREF(r);
    if ((c == -1 && PyErr_Occurred()) || pg_check_dtype_code(c) < 0)
        return -1;
    *code = (int)c;
    return 0;
}

int pg_parse_device(PyObject *o, pg_device *d)
{
    int fast = pg_parse_device_fast(o, d);
    if (fast)
        return fast < 0 ? -1 : 0;
    PyObject *f = pg_hook("parse_device"); /* strings and Device objects -> (type, index) */
    if (!f)
        return -1;
    PyObject *r = PyObject_CallOneArg(f, o);
    if (!r)
        return -1;
    int ok = PyArg_ParseTuple(r, "ii", &d->type, &d->index);
    Py_DECREF(r);
    return ok ? pg_check_device(*d) : -1;
}

int pg_parse_shape(PyObject *o, int *ndim, int64_t *shape)
{
    if (PyLong_Check(o)) { /* a single int: 1-d */
        shape[0] = PyLong_AsLongLong(o);
        *ndim = 1;
        return (shape[0] == -1 && PyErr_Occurred()) ? -1 : 0;
    }
    PyObject *seq = PySequence_Fast(o, "shape must be an int or a sequence of ints");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > PG_MAX_DIMS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "pygpu supports at most %d dimensions, got %zd",
                     PG_MAX_DIMS, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyLong_Check(item) && !PyIndex_Check(item)) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "shape entries must be ints, got %.80s",
                         Py_TYPE(item)->tp_name);
            return -1;
        }
        shape[i] = PyLong_AsLongLong(item);
        if (shape[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    *ndim = (int)n;
    Py_DECREF(seq);
    return 0;
}

/* ---- waiting and implicit transfers --------------------------------------------------- */

int pg_guard_level;

int pg_wait(const pg_tensor *t)
{
    pg_status refused = pg_graph_refuse_host("a host read of a tensor (.item(), .tolist(), "
                                             ".numpy(), print)");
    if (refused != PG_OK)
        return pg_raise_int(refused);
    if (!pg_storage_has_pending(t->storage) && !atomic_load(&t->storage->error))
        return 0;
    pg_status st;
    Py_BEGIN_ALLOW_THREADS st = pg_tensor_wait(t);
    Py_END_ALLOW_THREADS
    return st == PG_OK ? 0 : pg_raise_int(st);
}

static const char *const implicit_names[PG_NUM_IMPLICIT] = {
    "explicit", "repr", "item", "tolist", "array", "dlpack", "other"};

PyObject *pg_host_implicit(PyTensor *self, int reason)
{
    pg_device dev = pg_tensor_device(&self->t);
    if (dev.type == PG_DEV_CPU) {
        if (pg_wait(&self->t) < 0)
            return NULL;
        return Py_NewRef(self);
    }
    char devs[24];
    pg_device_str(dev, devs, sizeof devs);
    if (pg_guard_level == 2)
        return pg_raise(pg_error_set(PG_ERR_TRANSFER,
                                     "implicit device-to-host transfer of %lld bytes from %s "
                                     "(triggered by %s) under transfer_guard('disallow'); copy "
                                     "explicitly with .cpu() / .to('cpu') if you mean it",
                                     (long long)(pg_tensor_numel(&self->t) *
                                                 (int64_t)pg_dtype_size((pg_dtype)self->t.dtype)),
                                     devs, implicit_names[reason]));
    if (pg_guard_level == 1 &&
        PyErr_WarnFormat(pg_warn_transfer, 1,
                         "implicit device-to-host transfer from %s triggered by %s", devs,
                         implicit_names[reason]) < 0)
        return NULL;
    pg_tensor out;
    pg_status st;
    pg_device cpu = {PG_DEV_CPU, 0};
    Py_BEGIN_ALLOW_THREADS st = pg_op_to_device(&self->t, cpu, false, reason, &out);
    Py_END_ALLOW_THREADS
    return pg_wrap_result(st, &out);
}

const char *pg_implicit_name(int reason) { return implicit_names[reason]; }

PyObject *pg_host_widened(PyTensor *h)
{
    if (h->t.dtype != PG_BFLOAT16 && h->t.dtype != PG_COMPLEX32) /* (NumPy has neither) */
        return Py_NewRef(h);
    pg_tensor out;
    pg_dtype wide = h->t.dtype == PG_COMPLEX32 ? PG_COMPLEX64 : PG_FLOAT32;
    pg_status st = PG_CALL(pg_heavy(&h->t), pg_op_astype(&h->t, wide, &out));
    return pg_wrap_result(st, &out);
}

/* One element as a Python number, through an implicit transfer if on a device. */
PyObject *pg_item(PyTensor *self)
{
    if (pg_tensor_numel(&self->t) != 1)
        return pg_raise(pg_error_set(PG_ERR_VALUE,
                                     "only a tensor with exactly one element can be converted to "
                                     "a Python scalar; this one has %lld",
                                     (long long)pg_tensor_numel(&self->t)));
    PyTensor *h = (PyTensor *)pg_host_implicit(self, PG_IMPLICIT_ITEM);
    if (!h)
        return NULL;
    const char *p = pg_tensor_data(&h->t);
    PyObject *r;
    switch (h->t.dtype) { /* one case per row of the dtype table (pg_dtype.h) */
#define PG_ITEM_CASE(ID, name, size, ctype, kind, ...)                                     \
    case PG_##ID: r = PG_ITEM_##kind(ID, ctype, p); break;
#define PG_ITEM_KIND_BOOL(ID, T, p) PyBool_FromLong(*(const T *)p)
#define PG_ITEM_KIND_SINT(ID, T, p) PyLong_FromLongLong(*(const T *)p)
#define PG_ITEM_KIND_UINT(ID, T, p) PyLong_FromUnsignedLongLong(*(const T *)p)
#define PG_ITEM_KIND_FLOAT(ID, T, p) PyFloat_FromDouble(*(const T *)p)
#define PG_ITEM_KIND_HALF(ID, T, p) PyFloat_FromDouble(pg_##ID##_to_double(*(const T *)p))
#define PG_ITEM_KIND_COMPLEX(ID, T, p) PyComplex_FromDoubles(PG_PART_##ID(((const T *)p)->re), PG_PART_##ID(((const T *)p)->im))
#define PG_PART_COMPLEX64(x) (x)
#define PG_PART_COMPLEX128(x) (x)
#define PG_PART_COMPLEX32(x) pg_f16_to_double(x)
#define PG_ITEM_KIND_FP8(ID, T, p) PyFloat_FromDouble(pg_fp8_to_double_##ID(*(const T *)p))
/* the shell dtypes: bytes PyTorch reads no number from */
#define PG_ITEM_SHELL(ID) pg_raise(pg_error_set(PG_ERR_NOT_IMPLEMENTED, "\"_local_scalar_dense_cpu\" not implemented for '%s'", pg_dtype_legacy_name(PG_##ID)))
#define PG_ITEM_KIND_SUBU(ID, T, p) PG_ITEM_SHELL(ID)
#define PG_ITEM_KIND_SUBS(ID, T, p) PG_ITEM_SHELL(ID)
#define PG_ITEM_KIND_BITS(ID, T, p) PG_ITEM_SHELL(ID)
#define PG_ITEM_KIND_FP4(ID, T, p) PG_ITEM_SHELL(ID)
#define pg_FLOAT16_to_double pg_f16_to_double
#define pg_BFLOAT16_to_double pg_bf16_to_double
        PG_DTYPES(PG_ITEM_CASE)
    default: r = NULL; break;
    }
    Py_DECREF(h);
    return r;
}


static Py_hash_t tensor_hash(PyObject *self) { return (Py_hash_t)((uintptr_t)self >> 4); }

static PyObject *tensor_repr(PyObject *self)
{
    PyObject *f = pg_hook("repr");
    return f ? PyObject_CallOneArg(f, self) : NULL;
}

/* pygpu.Tensor(3, 4), Tensor([1., 2.]), Tensor(): PyTorch's legacy constructor, which
 * programs still write (a float32 tensor of that shape, or of that data). The parsing and
 * its errors are Python's (pygpu/_legacy.py: legacy_new); a subclass's constructor gives an
 * object of the subclass over the same memory (Tensor.as_subclass, torch_function.c). */
static PyObject *tensor_legacy_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *f = pg_hook("legacy_new");
    if (!f)
        return NULL;
    PyObject *r = PyObject_Call(f, args, kwargs);
    if (r && type != &PyTensor_Type)
        Py_SETREF(r, PyObject_CallMethod(r, "as_subclass", "O", (PyObject *)type));
    return r;
}

PyTypeObject PyTensor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pygpu.Tensor",
    .tp_basicsize = sizeof(PyTensor),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_repr = tensor_repr,
    .tp_new = tensor_legacy_new,
    .tp_hash = tensor_hash,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, /* subclasses: issue 43 */
    .tp_doc = "A multi-dimensional array on a device (cpu, sim:N or cuda:N).\n\n"
              "Create one with pygpu.tensor(), zeros(), from_numpy(), ...",
    /* operators, indexing, methods, properties and the buffer protocol are set by
     * pg_tensor_type_ready() (tensor_operators.c), the layer above this one */
};

int pg_int_scalar(PyObject *o, pg_dtype dt, pg_scalar *s)
{
    s->kind = PG_SCALAR_INT;
    s->i = PyLong_AsLongLong(o);
    s->f = (double)s->i;
    if (!(s->i == -1 && PyErr_Occurred()))
        return 0;
    if (dt != PG_UINT64 || !PyErr_ExceptionMatches(PyExc_OverflowError))
        return -1;
    PyErr_Clear();
    unsigned long long u = PyLong_AsUnsignedLongLong(o); /* a negative one: OverflowError */
    if (u == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    s->i = (int64_t)u;
    s->f = (double)u;
    return 0;
}
