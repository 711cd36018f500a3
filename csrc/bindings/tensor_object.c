/* tensor_object.c - the Tensor type: lifetime, registry, operators, indexing.
 *
 * Operators are C slots (nb_add, ...) so `a + b` reaches the core without a
 * Python-level call; scalars take NumPy 2's promotion rules in the core.
 * Methods and properties live in tensor_methods.c. */
#include "tensor_object.h"

#include <string.h>

#include "../core/pg_half.h"

static PyObject *g_dtypes[PG_NUM_DTYPES];
static PyObject *g_devices[PG_NUM_SLOTS];
static PyObject *g_hooks;

/* ---- lifetime ------------------------------------------------------------------------- */

PyObject *pg_wrap(pg_tensor *t)
{
    PyTensor *o = PyObject_New(PyTensor, &PyTensor_Type);
    if (!o) {
        pg_tensor_clear(t);
        return NULL;
    }
    o->t = *t;
    o->grad = NULL;
    o->grad_fn = NULL;
    o->requires_grad = 0;
    o->is_param = 0;
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
    PyObject_Free(self);
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

int pg_parse_dtype(PyObject *o, int *code)
{
    for (int i = 0; i < PG_NUM_DTYPES; i++) {
        if (o == g_dtypes[i]) {
            *code = i;
            return 0;
        }
    }
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
    for (int s = 0; s < PG_NUM_SLOTS; s++) {
        if (g_devices[s] == o) {
            *d = pg_device_from_slot(s);
            return 0;
        }
    }
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
    if (h->t.dtype != PG_BFLOAT16)
        return Py_NewRef(h);
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(&h->t), pg_op_astype(&h->t, PG_FLOAT32, &out));
    return pg_wrap_result(st, &out);
}

/* ---- operators ------------------------------------------------------------------------ */

/* Python bool/int/float -> pg_scalar; 1 if converted, 0 if not a scalar, -1 on error. */
static int as_scalar(PyObject *o, pg_scalar *s)
{
    if (PyBool_Check(o)) {
        s->kind = PG_SCALAR_BOOL;
        s->i = o == Py_True;
        s->f = (double)s->i;
        return 1;
    }
    if (PyLong_Check(o)) {
        s->kind = PG_SCALAR_INT;
        s->i = PyLong_AsLongLong(o);
        if (s->i == -1 && PyErr_Occurred())
            return -1;
        s->f = (double)s->i;
        return 1;
    }
    if (PyFloat_Check(o)) {
        s->kind = PG_SCALAR_FLOAT;
        s->f = PyFloat_AS_DOUBLE(o);
        s->i = 0;
        return 1;
    }
    return 0;
}

static PyObject *binary(PyObject *a, PyObject *b, int op)
{
    pg_tensor out;
    pg_status st;
    if (PyTensor_Check(a) && PyTensor_Check(b)) {
        const pg_tensor *ta = &((PyTensor *)a)->t, *tb = &((PyTensor *)b)->t;
        bool heavy = pg_heavy(ta) || pg_heavy(tb);
        st = PG_CALL(heavy, pg_op_binary(op, ta, tb, &out));
        PyObject *r = pg_wrap_result(st, &out);
        return PG_BIN_IS_COMPARE(op) ? r : pg_ag_record(r, pg_binary_name(op), a, b, NULL, NULL);
    }
    bool left = !PyTensor_Check(a);
    PyObject *other = left ? a : b;
    const pg_tensor *t = &((PyTensor *)(left ? b : a))->t;
    pg_scalar s;
    int r = as_scalar(other, &s);
    if (r < 0)
        return NULL;
    if (r == 0)
        Py_RETURN_NOTIMPLEMENTED;
    st = PG_CALL(pg_heavy(t), pg_op_binary_scalar(op, t, s, left, &out));
    PyObject *res = pg_wrap_result(st, &out);
    return PG_BIN_IS_COMPARE(op) ? res : pg_ag_record(res, pg_binary_name(op), a, b, NULL, NULL);
}

static PyObject *nb_add(PyObject *a, PyObject *b) { return binary(a, b, PG_BIN_ADD); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return binary(a, b, PG_BIN_SUB); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return binary(a, b, PG_BIN_MUL); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return binary(a, b, PG_BIN_DIV); }

PyObject *pg_py_binary(PyObject *a, PyObject *b, int op)
{
    if (!PyTensor_Check(a) && !PyTensor_Check(b)) {
        PyErr_SetString(PyExc_TypeError, "expected at least one pygpu.Tensor operand");
        return NULL;
    }
    PyObject *r = binary(a, b, op);
    if (r == Py_NotImplemented) {
        Py_DECREF(r);
        PyErr_Format(PyExc_TypeError,
                     "%s: unsupported operand types %.80s and %.80s (use Tensors or Python "
                     "numbers)",
                     pg_binary_name(op), Py_TYPE(a)->tp_name, Py_TYPE(b)->tp_name);
        return NULL;
    }
    return r;
}

PyObject *pg_unary_call(PyObject *self, int op);
static PyObject *unary(PyObject *a, int op) { return pg_unary_call(a, op); }

static PyObject *nb_neg(PyObject *a) { return unary(a, PG_UN_NEG); }
static PyObject *nb_abs(PyObject *a) { return unary(a, PG_UN_ABS); }
static PyObject *nb_pos(PyObject *a) { return Py_NewRef(a); }
static PyObject *nb_invert(PyObject *a) { return unary(a, PG_UN_NOT); }

static PyObject *matmul_impl(PyObject *a, PyObject *b);

static PyObject *nb_matmul(PyObject *a, PyObject *b)
{
    if (!PyTensor_Check(a) || !PyTensor_Check(b))
        Py_RETURN_NOTIMPLEMENTED;
    if (pg_autocast_regions > 0) { /* pygpu.autocast: the policy may cast the operands */
        PyObject *a2, *b2;
        if (pg_autocast_cast("matmul", a, b, &a2, &b2) < 0)
            return NULL;
        PyObject *r = matmul_impl(a2, b2);
        Py_DECREF(a2);
        Py_DECREF(b2);
        return r;
    }
    return matmul_impl(a, b);
}

static PyObject *matmul_impl(PyObject *a, PyObject *b)
{
    const pg_tensor *ta = &((PyTensor *)a)->t, *tb = &((PyTensor *)b)->t;
    pg_tensor out;
    bool heavy = ta->storage->device.type == PG_DEV_CPU &&
                 pg_tensor_numel(ta) + pg_tensor_numel(tb) >= 1024;
    pg_status st = PG_CALL(heavy, pg_op_matmul(ta, tb, &out));
    return pg_ag_record(pg_wrap_result(st, &out), "matmul", a, b, NULL, NULL);
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
    switch (h->t.dtype) {
    case PG_BOOL: r = PyBool_FromLong(*(const uint8_t *)p); break;
    case PG_INT64: r = PyLong_FromLongLong(*(const int64_t *)p); break;
    case PG_FLOAT32: r = PyFloat_FromDouble(*(const float *)p); break;
    case PG_FLOAT16: r = PyFloat_FromDouble(pg_f16_to_double(*(const uint16_t *)p)); break;
    case PG_BFLOAT16: r = PyFloat_FromDouble(pg_bf16_to_double(*(const uint16_t *)p)); break;
    default: r = PyFloat_FromDouble(*(const double *)p); break;
    }
    Py_DECREF(h);
    return r;
}

/* float(t) / int(t) on several elements is a TypeError, as in NumPy */
static int want_one(PyObject *a, const char *what)
{
    int64_t n = pg_tensor_numel(&((PyTensor *)a)->t);
    if (n == 1)
        return 0;
    PyErr_Format(PyExc_TypeError, "only a tensor with one element can be converted to %s; this "
                                  "one has %lld",
                 what, (long long)n);
    return -1;
}

static PyObject *nb_float(PyObject *a)
{
    if (want_one(a, "float") < 0)
        return NULL;
    PyObject *v = pg_item((PyTensor *)a);
    if (!v || PyFloat_Check(v))
        return v;
    Py_SETREF(v, PyNumber_Float(v));
    return v;
}

static PyObject *nb_int(PyObject *a)
{
    if (want_one(a, "int") < 0)
        return NULL;
    PyObject *v = pg_item((PyTensor *)a);
    if (!v || PyLong_CheckExact(v))
        return v; /* a bool is an int subclass, but __int__ must return an exact int */
    Py_SETREF(v, PyNumber_Long(v));
    return v;
}

static int nb_bool(PyObject *a)
{
    PyTensor *t = (PyTensor *)a;
    if (pg_tensor_numel(&t->t) != 1) {
        PyErr_Format(PyExc_ValueError, "the truth value of a tensor with %lld elements is "
                                       "ambiguous; use .any() or .all() style reductions",
                     (long long)pg_tensor_numel(&t->t));
        return -1;
    }
    PyObject *v = pg_item(t);
    if (!v)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

static PyNumberMethods tensor_as_number = {
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_true_divide = nb_div,
    .nb_negative = nb_neg,
    .nb_positive = nb_pos,
    .nb_absolute = nb_abs,
    .nb_invert = nb_invert,
    .nb_bool = nb_bool,
    .nb_int = nb_int,
    .nb_float = nb_float,
    .nb_matrix_multiply = nb_matmul,
};

static PyObject *richcompare(PyObject *a, PyObject *b, int opid)
{
    static const int ops[] = {[Py_LT] = PG_BIN_LT, [Py_LE] = PG_BIN_LE, [Py_EQ] = PG_BIN_EQ,
                              [Py_NE] = PG_BIN_NE, [Py_GT] = PG_BIN_GT, [Py_GE] = PG_BIN_GE};
    return binary(a, b, ops[opid]);
}

static Py_hash_t tensor_hash(PyObject *self) { return (Py_hash_t)((uintptr_t)self >> 4); }

/* ---- indexing ------------------------------------------------------------------------- */

/* Apply a basic index (int, slice, None, Ellipsis, or a tuple of them) as a view. */
static int index_view(const pg_tensor *t, PyObject *key, pg_tensor *out)
{
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (!items)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    int consumed = 0, ellipsis = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(items, i);
        if (k == Py_Ellipsis) {
            if (ellipsis >= 0) {
                Py_DECREF(items);
                PyErr_SetString(PyExc_IndexError, "an index can only have a single ellipsis ('...')");
                return -1;
            }
            ellipsis = (int)i;
        } else if (k != Py_None) {
            consumed++;
        }
    }
    if (consumed > t->ndim) {
        Py_DECREF(items);
        PyErr_Format(PyExc_IndexError, "too many indices for tensor: tensor is %d-dimensional, "
                                       "but %d were indexed",
                     t->ndim, consumed);
        return -1;
    }
    pg_tensor cur, next;
    pg_tensor_ref(t, &cur);
    int axis = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(items, i);
        pg_status st = PG_OK;
        if (k == Py_Ellipsis) {
            axis += t->ndim - consumed;
            continue;
        } else if (k == Py_None) {
            st = pg_view_unsqueeze(&cur, axis, &next);
            axis++;
        } else if (PySlice_Check(k)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(k, &start, &stop, &step) < 0)
                goto fail;
            Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)cur.shape[axis], &start, &stop, step);
            st = pg_view_slice(&cur, axis, start, len, step, &next);
            axis++;
        } else if (PyIndex_Check(k) && !PyBool_Check(k)) {
            Py_ssize_t idx = PyNumber_AsSsize_t(k, PyExc_IndexError);
            if (idx == -1 && PyErr_Occurred())
                goto fail;
            st = pg_view_select(&cur, axis, idx, &next);
        } else {
            PyErr_Format(PyExc_IndexError,
                         "only integers, slices (':'), ellipsis ('...') and None are valid "
                         "indices; got %.80s (advanced indexing is not supported yet)",
                         Py_TYPE(k)->tp_name);
            goto fail;
        }
        if (st != PG_OK) {
            pg_raise(st);
            goto fail;
        }
        pg_tensor_clear(&cur);
        cur = next;
    }
    Py_DECREF(items);
    *out = cur;
    return 0;
fail:
    Py_DECREF(items);
    pg_tensor_clear(&cur);
    return -1;
}

static PyObject *tensor_getitem(PyObject *self, PyObject *key)
{
    pg_tensor out;
    if (index_view(&((PyTensor *)self)->t, key, &out) < 0)
        return NULL;
    return pg_ag_record(pg_wrap(&out), "getitem", self, NULL, key, NULL);
}

static int tensor_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "cannot delete tensor elements");
        return -1;
    }
    if (pg_ag_check_inplace(self, "item assignment") < 0)
        return -1;
    if (!pg_grad_disabled && pg_ag_req(value)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "assigning a tensor that requires grad into another tensor is not "
                        "differentiable here; build the result with ops (e.g. pygpu.cat) or "
                        "assign value.detach() if no gradient should flow");
        return -1;
    }
    pg_tensor view;
    if (index_view(&((PyTensor *)self)->t, key, &view) < 0)
        return -1;
    pg_status st;
    pg_scalar s;
    int r = as_scalar(value, &s);
    if (r < 0) {
        pg_tensor_clear(&view);
        return -1;
    }
    if (r == 1) {
        st = PG_CALL(pg_heavy(&view), pg_op_fill(&view, s));
    } else if (PyTensor_Check(value)) {
        st = PG_CALL(pg_heavy(&view), pg_op_copy(&view, &((PyTensor *)value)->t));
    } else {
        pg_tensor_clear(&view);
        PyErr_Format(PyExc_TypeError, "can only assign a Python number or a Tensor, got %.80s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    pg_tensor_clear(&view);
    return st == PG_OK ? 0 : pg_raise_int(st);
}

static Py_ssize_t tensor_len(PyObject *self)
{
    const pg_tensor *t = &((PyTensor *)self)->t;
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
        return -1;
    }
    return (Py_ssize_t)t->shape[0];
}

static PyObject *tensor_sq_item(PyObject *self, Py_ssize_t i)
{
    const pg_tensor *t = &((PyTensor *)self)->t;
    if (t->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d tensor");
        return NULL;
    }
    if (i >= t->shape[0]) {
        PyErr_SetString(PyExc_IndexError, "tensor index out of range");
        return NULL;
    }
    pg_tensor out;
    PyObject *r = pg_wrap_result(pg_view_select(t, 0, i, &out), &out);
    if (!r || !pg_ag_req(self) || pg_grad_disabled)
        return r;
    PyObject *key = PyLong_FromSsize_t(i);
    if (!key) {
        Py_DECREF(r);
        return NULL;
    }
    r = pg_ag_record(r, "getitem", self, NULL, key, NULL);
    Py_DECREF(key);
    return r;
}

static PyObject *tensor_iter(PyObject *self)
{
    if (((PyTensor *)self)->t.ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d tensor");
        return NULL;
    }
    return PySeqIter_New(self);
}

static PyMappingMethods tensor_as_mapping = {
    .mp_length = tensor_len,
    .mp_subscript = tensor_getitem,
    .mp_ass_subscript = tensor_setitem,
};

static PySequenceMethods tensor_as_sequence = {
    .sq_length = tensor_len,
    .sq_item = tensor_sq_item,
};

static PyObject *tensor_repr(PyObject *self)
{
    PyObject *f = pg_hook("repr");
    return f ? PyObject_CallOneArg(f, self) : NULL;
}

PyTypeObject PyTensor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pygpu.Tensor",
    .tp_basicsize = sizeof(PyTensor),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_repr = tensor_repr,
    .tp_as_number = &tensor_as_number,
    .tp_as_sequence = &tensor_as_sequence,
    .tp_as_mapping = &tensor_as_mapping,
    .tp_hash = tensor_hash,
    .tp_as_buffer = &pg_tensor_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A multi-dimensional array on a device (cpu, sim:N or cuda:N).\n\n"
              "Create one with pygpu.tensor(), zeros(), from_numpy(), ...",
    .tp_richcompare = richcompare,
    .tp_iter = tensor_iter,
    .tp_methods = pg_tensor_methods,
    .tp_getset = pg_tensor_getset,
};
