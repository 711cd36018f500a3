/* tensor_operators.c - the Tensor type's operators and indexing, and the
 * assembly of its slots.
 *
 * Operators are C slots (nb_add, ...) so `a + b` reaches the core without a
 * Python-level call; scalars take NumPy 2's promotion rules in the core. This
 * file sits above tensor_object.c (the helpers), tensor_methods.c, autograd.c
 * and interop.c, and pg_tensor_type_ready() puts their tables into the type, so
 * that none of those reaches back up into the type's definition. */
#include "autocast.h"
#include "autograd.h"
#include "complex.h"
#include "tensor_object.h"

#include <stdio.h>
#include <string.h>


/* ---- operators ------------------------------------------------------------------------ */

/* A Python int beyond what an int scalar of dtype `dt` takes (pg_int_scalar): a float scalar
 * if the tensor holds floats (as NumPy converts it), else an OverflowError that names the
 * dtype and its range, as NumPy's does ("Python integer ... out of bounds for int64"). */
static int big_int_scalar(PyObject *o, pg_dtype dt, pg_scalar *s)
{
    PyErr_Clear();
    if (pg_dtype_is_float(dt)) {
        s->kind = PG_SCALAR_FLOAT;
        s->f = PyLong_AsDouble(o); /* beyond a double too: Python's own OverflowError */
        s->i = 0;
        return s->f == -1.0 && PyErr_Occurred() ? -1 : 1;
    }
    PyErr_Format(PyExc_OverflowError,
                 "Python integer %R out of bounds for %s: %s holds %s; use a float64 tensor "
                 "(.astype(pygpu.float64)) for larger numbers",
                 o, dt == PG_UINT64 ? "uint64" : "int64", dt == PG_UINT64 ? "uint64" : "int64",
                 dt == PG_UINT64 ? "-2**63 to 2**64 - 1 (a negative number wraps)"
                 : dt == PG_BOOL ? "-2**63 to 2**63 - 1 (-9223372036854775808 to "
                                   "9223372036854775807; what a Python int is taken as beside a "
                                   "bool tensor)"
                                 : "-2**63 to 2**63 - 1 (-9223372036854775808 to "
                                   "9223372036854775807)");
    return -1;
}

/* Python bool/int/float -> pg_scalar for an op on a tensor of dtype `dt`; 1 if
 * converted, 0 if not a scalar, -1 on error. */
static int as_scalar(PyObject *o, pg_dtype dt, pg_scalar *s)
{
    if (PyBool_Check(o)) {
        s->kind = PG_SCALAR_BOOL;
        s->i = o == Py_True;
        s->f = (double)s->i;
        return 1;
    }
    if (PyLong_Check(o)) {
        if (pg_int_scalar(o, dt, s) == 0)
            return 1;
        return PyErr_ExceptionMatches(PyExc_OverflowError) ? big_int_scalar(o, dt, s) : -1;
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
    if ((PyTensor_Check(a) || PyTensor_Check(b)) && (pg_complex_operand(a) || pg_complex_operand(b)))
        return pg_complex_dispatch("binary", pg_binary_name(op), a, b, NULL, NULL);
    if (PyTensor_Check(a) && PyTensor_Check(b)) {
        const pg_tensor *ta = &((PyTensor *)a)->t, *tb = &((PyTensor *)b)->t;
        bool heavy = pg_heavy(ta) || pg_heavy(tb);
        st = PG_CALL(heavy, pg_op_binary(op, ta, tb, &out));
        PyObject *r = pg_wrap_result(st, &out);
        return !pg_binary_differentiable(op) ? pg_ag_trace(r, pg_binary_name(op), a, b)
                                             : pg_ag_record(r, pg_binary_name(op), a, b, NULL, NULL);
    }
    bool left = !PyTensor_Check(a);
    PyObject *other = left ? a : b;
    const pg_tensor *t = &((PyTensor *)(left ? b : a))->t;
    pg_scalar s;
    int r = as_scalar(other, (pg_dtype)t->dtype, &s);
    if (r < 0)
        return NULL;
    if (r == 0)
        Py_RETURN_NOTIMPLEMENTED;
    st = PG_CALL(pg_heavy(t), pg_op_binary_scalar(op, t, s, left, &out));
    PyObject *res = pg_wrap_result(st, &out);
    return !pg_binary_differentiable(op) ? pg_ag_trace(res, pg_binary_name(op), a, b)
                                         : pg_ag_record(res, pg_binary_name(op), a, b, NULL, NULL);
}


/* The binary operators' slots, a row each: (slot function, op, dunder, reflected dunder). A
 * TorchFunctionMode sees each under its dunder (PG_TF_MODE_BINARY); then binary() runs it. */
#define PG_NB_BINARY_ROWS(X)                                                                  \
    X(nb_add, PG_BIN_ADD, "__add__", "__radd__")                                             \
    X(nb_sub, PG_BIN_SUB, "__sub__", "__rsub__")                                             \
    X(nb_mul, PG_BIN_MUL, "__mul__", "__rmul__")                                             \
    X(nb_div, PG_BIN_DIV, "__truediv__", "__rtruediv__")                                     \
    X(nb_mod, PG_BIN_REMAINDER, "__mod__", "__rmod__")                                       \
    X(nb_floordiv, PG_BIN_FLOOR_DIVIDE, "__floordiv__", "__rfloordiv__")                     \
    X(nb_and, PG_BIN_BITWISE_AND, "__and__", "__rand__")                                     \
    X(nb_or, PG_BIN_BITWISE_OR, "__or__", "__ror__")                                         \
    X(nb_xor, PG_BIN_BITWISE_XOR, "__xor__", "__rxor__")                                     \
    X(nb_lshift, PG_BIN_BITWISE_LEFT_SHIFT, "__lshift__", "__rlshift__")                     \
    X(nb_rshift, PG_BIN_BITWISE_RIGHT_SHIFT, "__rshift__", "__rrshift__")
#define PG_NB_BINARY_SLOT(fn, op, name, rname)                                                \
    static PyObject *fn(PyObject *a, PyObject *b)                                             \
    {                                                                                         \
        PG_TF_MODE_BINARY(a, b, name, rname);                                                 \
        return binary(a, b, op);                                                              \
    }
PG_NB_BINARY_ROWS(PG_NB_BINARY_SLOT)
#undef PG_NB_BINARY_SLOT

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

static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None)
        Py_RETURN_NOTIMPLEMENTED; /* pow(a, b, m): no modular power */
    PG_TF_MODE_BINARY(a, b, "__pow__", "__rpow__");
    return binary(a, b, PG_BIN_POW);
}

/* ---- in place: self.add_(other), self.exp_() ... (the op table's METHOD_INPLACE rows) ---- */

/* Under grad mode, when self or other requires grad, an in-place op goes through autograd
 * (pg_ag_inplace_begin/end, autograd.c): a leaf that requires grad is refused with
 * PyTorch's message; otherwise the op is recorded as self's new grad_fn, or refused where
 * pygpu cannot give self a correct history (pygpu/autograd/inplace.py says which). A
 * tensor that backward saved and that is written later fails that backward (the version
 * check, pygpu/autograd/versions.py). pg_inplace_check is for in-place ops autograd does
 * not record (clamp_): allowed only outside autograd. */
int pg_inplace_check(PyObject *self, PyObject *other, const char *name)
{
    PyObject *tok = pg_ag_inplace_begin(self, other, name, NULL);
    if (!tok)
        return -1;
    Py_DECREF(tok);
    return 0;
}

/* self <op>= other in place; returns self (a new reference). */
PyObject *pg_py_binary_(PyObject *self, PyObject *other, int op, const char *name)
{
    if (pg_complex_operand(self) || pg_complex_operand(other))
        return pg_complex_dispatch("binary_", pg_binary_name(op), self, other, NULL, NULL);
    PyObject *tok = pg_ag_inplace_begin(self, other, name,
                                        pg_binary_differentiable(op) ? pg_binary_name(op) : NULL);
    if (!tok)
        return NULL;
    const pg_tensor *t = &((PyTensor *)self)->t;
    pg_status st;
    if (PyTensor_Check(other)) {
        const pg_tensor *o = &((PyTensor *)other)->t;
        st = PG_CALL(pg_heavy(t) || pg_heavy(o), pg_op_binary_(op, t, o));
    } else {
        pg_scalar s;
        int r = as_scalar(other, (pg_dtype)t->dtype, &s);
        if (r <= 0) {
            Py_DECREF(tok);
            if (r < 0)
                return NULL;
            return PyErr_Format(PyExc_TypeError, "%s: expected a Tensor or a Python number, got "
                                                 "%.80s", name, Py_TYPE(other)->tp_name);
        }
        st = PG_CALL(pg_heavy(t), pg_op_binary_scalar_(op, t, s));
    }
    if (st != PG_OK) {
        Py_DECREF(tok);
        return pg_raise(st);
    }
    if (pg_ag_inplace_end(tok, self, other, pg_binary_name(op)) < 0)
        return NULL;
    return Py_NewRef(self);
}

PyObject *pg_unary_call(PyObject *self, int op);
static PyObject *unary(PyObject *a, int op, const char *dunder)
{
    if (pg_tf_modes_active) {
        PyObject *r = pg_tf_mode_operator(dunder, a, NULL);
        if (r || PyErr_Occurred())
            return r;
    }
    return pg_unary_call(a, op);
}

static PyObject *nb_neg(PyObject *a) { return unary(a, PG_UN_NEG, "__neg__"); }
static PyObject *nb_abs(PyObject *a) { return unary(a, PG_UN_ABS, "__abs__"); }
static PyObject *nb_pos(PyObject *a) { return Py_NewRef(a); }
/* ~ : bitwise (logical for bool) */
static PyObject *nb_invert(PyObject *a) { return unary(a, PG_UN_BITWISE_NOT, "__invert__"); }

static PyObject *matmul_impl(PyObject *a, PyObject *b);

static PyObject *nb_matmul(PyObject *a, PyObject *b)
{
    if (!PyTensor_Check(a) || !PyTensor_Check(b))
        Py_RETURN_NOTIMPLEMENTED;
    PG_TF_MODE_BINARY(a, b, "__matmul__", "__rmatmul__");
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
    if (pg_complex_operand(a) || pg_complex_operand(b))
        return pg_complex_dispatch("matmul", "matmul", a, b, NULL, NULL);
    const pg_tensor *ta = &((PyTensor *)a)->t, *tb = &((PyTensor *)b)->t;
    pg_tensor out;
    bool heavy = ta->storage->device.type == PG_DEV_CPU &&
                 pg_tensor_numel(ta) + pg_tensor_numel(tb) >= 1024;
    pg_status st = PG_CALL(heavy, pg_op_matmul(ta, tb, &out));
    return pg_ag_record(pg_wrap_result(st, &out), "matmul", a, b, NULL, NULL);
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

/* While a torch.jit.trace runs (pg_tracing), a tensor read as a Python value is reported to
 * the trace hook ("bool", "float" or "integer"; t.item() reports "number"), which warns as PyTorch's tracer does: the value is
 * frozen into the trace. */
static int trace_conversion(PyObject *a, const char *what)
{
    if (!pg_tracing)
        return 0;
    Py_INCREF(a);
    PyObject *r = pg_ag_trace_slow(a, what, a, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static PyObject *nb_float(PyObject *a)
{
    if (want_one(a, "float") < 0 || trace_conversion(a, "float") < 0)
        return NULL;
    PyObject *v = pg_item((PyTensor *)a);
    if (!v || PyFloat_Check(v))
        return v;
    Py_SETREF(v, PyNumber_Float(v));
    return v;
}

static PyObject *nb_int(PyObject *a)
{
    if (want_one(a, "int") < 0 || trace_conversion(a, "integer") < 0)
        return NULL;
    PyObject *v = pg_item((PyTensor *)a);
    if (!v || PyLong_CheckExact(v))
        return v; /* a bool is an int subclass, but __int__ must return an exact int */
    Py_SETREF(v, PyNumber_Long(v));
    return v;
}

/* operator.index(t): PyTorch's rule, an integer tensor of one element (classes[y] with a
 * 0-d label, range(n) with a tensor n); a float tensor is refused, as in PyTorch. */
static PyObject *nb_index(PyObject *a)
{
    const pg_tensor *t = &((PyTensor *)a)->t;
    if ((!pg_dtype_is_int((pg_dtype)t->dtype) && t->dtype != PG_BOOL) || pg_tensor_numel(t) != 1) {
        PyErr_Format(PyExc_TypeError, "only integer tensors of a single element can be "
                                      "converted to an index; this one is %s with %lld "
                                      "elements",
                     pg_dtype_name((pg_dtype)t->dtype), (long long)pg_tensor_numel(t));
        return NULL;
    }
    return nb_int(a);
}

static int nb_bool(PyObject *a)
{
    PyTensor *t = (PyTensor *)a;
    if (pg_tensor_numel(&t->t) != 1) {
        PyErr_Format(pg_exc_value, "Boolean value of Tensor with more than one value is "
                                   "ambiguous (a tensor of %lld elements); use .any() or .all() "
                                   "style reductions",
                     (long long)pg_tensor_numel(&t->t));
        return -1;
    }
    if (trace_conversion(a, "bool") < 0)
        return -1;
    PyObject *v = pg_item(t);
    if (!v)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* x += y (and -=, *=, /=, **=, &=, |=, ^=): in place, as PyTorch's (x.add_(y): the same
 * object and memory, so a view's base sees the write, and under autograd as add_). A
 * right operand that is neither a Tensor nor a Python number is left to Python. */
static PyObject *inplace_slot(PyObject *a, PyObject *b, int op, const char *name,
                              const char *dunder)
{
    PG_TF_MODE_BINARY(a, b, dunder, dunder);
    if (!PyTensor_Check(a) || !(PyTensor_Check(b) || PyBool_Check(b) || PyLong_Check(b) ||
                                PyFloat_Check(b) || PyComplex_Check(b)))
        Py_RETURN_NOTIMPLEMENTED;
    return pg_py_binary_(a, b, op, name);
}
static PyObject *nb_iadd(PyObject *a, PyObject *b) { return inplace_slot(a, b, PG_BIN_ADD, "add_", "__iadd__"); }
static PyObject *nb_isub(PyObject *a, PyObject *b) { return inplace_slot(a, b, PG_BIN_SUB, "sub_", "__isub__"); }
static PyObject *nb_imul(PyObject *a, PyObject *b) { return inplace_slot(a, b, PG_BIN_MUL, "mul_", "__imul__"); }
static PyObject *nb_idiv(PyObject *a, PyObject *b) { return inplace_slot(a, b, PG_BIN_DIV, "div_", "__itruediv__"); }
static PyObject *nb_imod(PyObject *a, PyObject *b)
{
    return inplace_slot(a, b, PG_BIN_REMAINDER, "remainder_", "__imod__");
}
static PyObject *nb_ifloordiv(PyObject *a, PyObject *b)
{
    return inplace_slot(a, b, PG_BIN_FLOOR_DIVIDE, "floor_divide_", "__ifloordiv__");
}
static PyObject *nb_iand(PyObject *a, PyObject *b)
{
    return inplace_slot(a, b, PG_BIN_BITWISE_AND, "bitwise_and_", "__iand__");
}
static PyObject *nb_ior(PyObject *a, PyObject *b)
{
    return inplace_slot(a, b, PG_BIN_BITWISE_OR, "bitwise_or_", "__ior__");
}
static PyObject *nb_ixor(PyObject *a, PyObject *b)
{
    return inplace_slot(a, b, PG_BIN_BITWISE_XOR, "bitwise_xor_", "__ixor__");
}
static PyObject *nb_ilshift(PyObject *a, PyObject *b)
{
    return inplace_slot(a, b, PG_BIN_BITWISE_LEFT_SHIFT, "bitwise_left_shift_", "__ilshift__");
}
static PyObject *nb_irshift(PyObject *a, PyObject *b)
{
    return inplace_slot(a, b, PG_BIN_BITWISE_RIGHT_SHIFT, "bitwise_right_shift_", "__irshift__");
}
static PyObject *nb_ipow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None)
        Py_RETURN_NOTIMPLEMENTED;
    return inplace_slot(a, b, PG_BIN_POW, "pow_", "__ipow__");
}

static PyNumberMethods tensor_as_number = {
    .nb_inplace_add = nb_iadd,
    .nb_inplace_subtract = nb_isub,
    .nb_inplace_multiply = nb_imul,
    .nb_inplace_true_divide = nb_idiv,
    .nb_inplace_remainder = nb_imod,
    .nb_inplace_floor_divide = nb_ifloordiv,
    .nb_inplace_power = nb_ipow,
    .nb_inplace_and = nb_iand,
    .nb_inplace_or = nb_ior,
    .nb_inplace_xor = nb_ixor,
    .nb_inplace_lshift = nb_ilshift,
    .nb_inplace_rshift = nb_irshift,
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_true_divide = nb_div,
    .nb_remainder = nb_mod,
    .nb_floor_divide = nb_floordiv,
    .nb_power = nb_pow,
    .nb_and = nb_and,
    .nb_or = nb_or,
    .nb_xor = nb_xor,
    .nb_lshift = nb_lshift,
    .nb_rshift = nb_rshift,
    .nb_negative = nb_neg,
    .nb_positive = nb_pos,
    .nb_absolute = nb_abs,
    .nb_invert = nb_invert,
    .nb_bool = nb_bool,
    .nb_int = nb_int,
    .nb_float = nb_float,
    .nb_index = nb_index,
    .nb_matrix_multiply = nb_matmul,
};

static PyObject *richcompare(PyObject *a, PyObject *b, int opid)
{
    static const int ops[] = {[Py_LT] = PG_BIN_LT, [Py_LE] = PG_BIN_LE, [Py_EQ] = PG_BIN_EQ,
                              [Py_NE] = PG_BIN_NE, [Py_GT] = PG_BIN_GT, [Py_GE] = PG_BIN_GE};
    static const char *const dunders[] = {[Py_LT] = "__lt__", [Py_LE] = "__le__",
                                          [Py_EQ] = "__eq__", [Py_NE] = "__ne__",
                                          [Py_GT] = "__gt__", [Py_GE] = "__ge__"};
    PG_TF_MODE_BINARY(a, b, dunders[opid], dunders[opid]);
    return binary(a, b, ops[opid]);
}


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

/* A key with a tensor, a list or a bool in it selects elements, not a view: the Python
 * layer (pygpu/_tensor/index.py, through tensor_surface.c's hooks) takes it. */
PyObject *pg_surface_getitem_hook(void);
PyObject *pg_surface_setitem_hook(void);
static int is_advanced_one(PyObject *k)
{
    if (PyTensor_Check(k) || PyList_Check(k) || PyBool_Check(k) || PyRange_Check(k))
        return 1;
    if (PyLong_Check(k) || PySlice_Check(k) || k == Py_None || k == Py_Ellipsis)
        return 0;
    /* a NumPy array of one or more dimensions (a 0-d one or a NumPy integer is an int) */
    if (!PyObject_CheckBuffer(k))
        return 0;
    PyObject *nd = PyObject_GetAttrString(k, "ndim");
    if (!nd) {
        PyErr_Clear();
        return 0;
    }
    long n = PyLong_Check(nd) ? PyLong_AsLong(nd) : 0;
    Py_DECREF(nd);
    return n > 0;
}
static int is_advanced(PyObject *key)
{
    if (!PyTuple_Check(key))
        return is_advanced_one(key);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); i++)
        if (is_advanced_one(PyTuple_GET_ITEM(key, i)))
            return 1;
    return 0;
}

static PyObject *tensor_getitem(PyObject *self, PyObject *key)
{
    PG_TF_MODE_BINARY(self, key, "__getitem__", "__getitem__");
    PyObject *hook = pg_surface_getitem_hook();
    if (hook && is_advanced(key))
        return PyObject_CallFunctionObjArgs(hook, self, key, NULL);
    pg_tensor out;
    if (index_view(&((PyTensor *)self)->t, key, &out) < 0)
        return NULL;
    return pg_ag_record(pg_wrap(&out), "getitem", self, NULL, key, NULL);
}

static int tensor_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    if (pg_tf_modes_active && value) { /* a TorchFunctionMode sees t[k] = v (torch_function.c) */
        PyObject *r = pg_tf_mode_operator3("__setitem__", self, key, value);
        if (r || PyErr_Occurred()) {
            Py_XDECREF(r);
            return r ? 0 : -1;
        }
    }
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "cannot delete tensor elements");
        return -1;
    }
    int handled = pg_ag_setitem(self, key, value); /* autograd records the write */
    if (handled)
        return handled < 0 ? -1 : 0;
    PyObject *hook = pg_surface_setitem_hook();
    if (hook && is_advanced(key)) {
        PyObject *r = PyObject_CallFunctionObjArgs(hook, self, key, value, NULL);
        Py_XDECREF(r);
        return r ? 0 : -1;
    }
    pg_tensor view;
    if (index_view(&((PyTensor *)self)->t, key, &view) < 0)
        return -1;
    pg_status st;
    pg_scalar s;
    int r = as_scalar(value, (pg_dtype)view.dtype, &s);
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
    if (!r || pg_grad_disabled)
        return r;
    pg_ag_note_view(r, self);
    if (!pg_ag_req(self))
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

/* The slots defined above tensor_object.c, then PyType_Ready (module init). */
int pg_tensor_type_ready(void)
{
    PyTensor_Type.tp_as_number = &tensor_as_number;
    PyTensor_Type.tp_as_sequence = &tensor_as_sequence;
    PyTensor_Type.tp_as_mapping = &tensor_as_mapping;
    PyTensor_Type.tp_as_buffer = &pg_tensor_as_buffer;
    PyTensor_Type.tp_richcompare = richcompare;
    PyTensor_Type.tp_iter = tensor_iter;
    PyTensor_Type.tp_methods = pg_tensor_methods;
    PyTensor_Type.tp_getset = pg_tensor_getset;
    return PyType_Ready(&PyTensor_Type);
}
