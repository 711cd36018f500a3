/* elementwise_methods.c - the Tensor methods of the op table's elementwise ops,
 * generated from csrc/core/pg_ops.def's `method` column (METHOD(m): Tensor.m;
 * METHOD_INPLACE(m): Tensor.m and the in-place Tensor.m_), and the elementwise
 * ops made of several nodes: where (a copy and a SELECT node) and clamp/clip
 * (maximum, then minimum; clamp_ with two number bounds is one CLAMP node, one pass,
 * where the device's backend has the kernel), as module functions and methods.
 *
 * The methods take PyTorch's signatures: x.add(y, alpha=2), x.pow(2), x.eq(y),
 * x.exp_(). An in-place method writes self (pg_op_binary_ / pg_op_unary_: one
 * node with dst == src0 where the op computes in self's dtype) and returns
 * self; under grad mode it follows pg_inplace_check (tensor_operators.c).
 * module.c adds these methods to the ready type (pg_elementwise_methods_ready), so
 * tensor_operators.c, below this file, never refers back up to it. */
#include "../core/pg_backend.h"
#include "autograd.h"
#include "tensor_object.h"

#include <string.h>

PyObject *pg_py_binary(PyObject *a, PyObject *b, int op);
PyObject *pg_py_binary_(PyObject *self, PyObject *other, int op, const char *name);
PyObject *pg_unary_call(PyObject *self, int op);
int pg_inplace_check(PyObject *self, PyObject *other, const char *name);

/* other * alpha for add/sub's alpha= (PyTorch: x.add(y, alpha=a) is x + a * y) */
static PyObject *binary_method(PyObject *self, PyObject *args, PyObject *kwargs, int op,
                               bool inplace, const char *name)
{
    static char *kw[] = {"other", "alpha", NULL};
    PyObject *other, *alpha = NULL;
    char fmt[64];
    snprintf(fmt, sizeof fmt, "O|$O:%s", name);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kw, &other, &alpha))
        return NULL;
    PyObject *scaled = NULL;
    if (alpha && alpha != Py_None) {
        if (op != PG_BIN_ADD && op != PG_BIN_SUB)
            return PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument "
                                                 "'alpha'", name);
        scaled = PyNumber_Multiply(other, alpha);
        if (!scaled)
            return NULL;
        other = scaled;
    }
    PyObject *r = inplace ? pg_py_binary_(self, other, op, name) : pg_py_binary(self, other, op);
    Py_XDECREF(scaled);
    return r;
}

static PyObject *unary_inplace(PyObject *self, int op, const char *name)
{
    PyObject *tok = pg_ag_inplace_begin(self, NULL, name,
                                        pg_unary_differentiable(op) ? pg_unary_name(op) : NULL);
    if (!tok)
        return NULL;
    const pg_tensor *t = &((PyTensor *)self)->t;
    pg_status st = PG_CALL(pg_heavy(t), pg_op_unary_(op, t));
    if (st != PG_OK) {
        Py_DECREF(tok);
        return pg_raise(st);
    }
    if (pg_ag_inplace_end(tok, self, NULL, pg_unary_name(op)) < 0)
        return NULL;
    return Py_NewRef(self);
}

/* pg_ops.def's method column -> (method name, kind): N none, M method, I method + in place */
#define MARGS_NO_METHOD _, N
#define MARGS_METHOD(m) m, M
#define MARGS_METHOD_INPLACE(m) m, I
#define PG_APPLY(f, args) f args

#define BIN_DEF(OP, m, k) BIN_DEF_##k(OP, m)
#define BIN_DEF_N(OP, m)
#define BIN_DEF_M(OP, m)                                                                   \
    static PyObject *mt_##m(PyObject *self, PyObject *args, PyObject *kw)                  \
    {                                                                                      \
        return binary_method(self, args, kw, OP, false, #m);                               \
    }
#define BIN_DEF_I(OP, m)                                                                   \
    BIN_DEF_M(OP, m)                                                                       \
    static PyObject *mt_##m##_(PyObject *self, PyObject *args, PyObject *kw)               \
    {                                                                                      \
        return binary_method(self, args, kw, OP, true, #m "_");                            \
    }
#define PG_BINARY(ID, name, gen, method, ...) PG_APPLY(BIN_DEF, (PG_BIN_##ID, MARGS_##method))
#include "../core/pg_ops.def"

#define UN_DEF(OP, m, k) UN_DEF_##k(OP, m)
#define UN_DEF_N(OP, m)
#define UN_DEF_M(OP, m)                                                                    \
    static PyObject *mt_##m(PyObject *self, PyObject *noargs)                              \
    {                                                                                      \
        (void)noargs;                                                                      \
        return pg_unary_call(self, OP);                                                    \
    }
#define UN_DEF_I(OP, m)                                                                    \
    UN_DEF_M(OP, m)                                                                        \
    static PyObject *mt_##m##_(PyObject *self, PyObject *noargs)                           \
    {                                                                                      \
        (void)noargs;                                                                      \
        return unary_inplace(self, OP, #m "_");                                            \
    }
#define PG_UNARY(ID, name, gen, method, ...) PG_APPLY(UN_DEF, (PG_UN_##ID, MARGS_##method))
#include "../core/pg_ops.def"

/* ---- where ---------------------------------------------------------------------------- */

/* A Python number as a 0-d tensor of the dtype a tensor operand promotes it to (PyTorch's rule, as
 * the binary ops: a scalar only lifts the kind), or of its own kind when no tensor is given
 * (bool, int64, float32), on `dev`. */
static PyObject *scalar_tensor(PyObject *v, const pg_tensor *like, pg_device dev)
{
    int dt;
    bool is_bool = PyBool_Check(v), is_int = PyLong_Check(v) && !is_bool;
    if (!is_bool && !is_int && !PyFloat_Check(v))
        return PyErr_Format(PyExc_TypeError, "where: expected a Tensor or a Python number, got "
                                             "%.80s", Py_TYPE(v)->tp_name);
    if (!like)
        dt = is_bool ? PG_BOOL : is_int ? PG_INT64 : PG_FLOAT32;
    else if (is_int && like->dtype == PG_BOOL)
        dt = PG_INT64;
    else if (!is_bool && !is_int && !pg_dtype_is_float((pg_dtype)like->dtype))
        dt = PG_FLOAT32; /* PyTorch's default dtype */
    else
        dt = like->dtype;
    pg_scalar s;
    s.kind = PyFloat_Check(v) ? PG_SCALAR_FLOAT : is_bool ? PG_SCALAR_BOOL : PG_SCALAR_INT;
    s.f = PyFloat_Check(v) ? PyFloat_AS_DOUBLE(v) : 0;
    s.i = s.kind == PG_SCALAR_FLOAT ? 0 : PyLong_AsLongLong(v);
    if (s.kind != PG_SCALAR_FLOAT) {
        if (s.i == -1 && PyErr_Occurred())
            return NULL;
        s.f = (double)s.i;
    }
    pg_tensor out;
    pg_status st = pg_op_full(dev, (pg_dtype)dt, 0, NULL, s, &out);
    return pg_wrap_result(st, &out);
}

static PyObject *where_impl(PyObject *cond, PyObject *a, PyObject *b)
{
    if (!PyTensor_Check(cond))
        return PyErr_Format(PyExc_TypeError, "where: condition must be a bool Tensor, got %.80s",
                            Py_TYPE(cond)->tp_name);
    const pg_tensor *c = &((PyTensor *)cond)->t;
    pg_device dev = pg_tensor_device(c);
    PyObject *ta = PyTensor_Check(a) ? Py_NewRef(a) : NULL, *tb = PyTensor_Check(b) ? Py_NewRef(b) : NULL;
    if (!ta)
        ta = scalar_tensor(a, tb ? &((PyTensor *)tb)->t : NULL, dev);
    if (ta && !tb)
        tb = scalar_tensor(b, &((PyTensor *)ta)->t, dev);
    if (!ta || !tb) {
        Py_XDECREF(ta);
        Py_XDECREF(tb);
        return NULL;
    }
    const pg_tensor *x = &((PyTensor *)ta)->t, *y = &((PyTensor *)tb)->t;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(x) || pg_heavy(y), pg_op_where(c, x, y, &out));
    PyObject *r = pg_wrap_result(st, &out);
    PyObject *args = r ? PyTuple_Pack(1, cond) : NULL;
    /* the rule needs cond: it comes as the op's args (rules.py, _CTX_OF_OP["where"]) */
    PyObject *res = args ? pg_ag_record(r, "where", PyTensor_Check(a) ? a : NULL,
                                        PyTensor_Check(b) ? b : NULL, args, NULL)
                         : (Py_XDECREF(r), (PyObject *)NULL);
    Py_XDECREF(args);
    Py_DECREF(ta);
    Py_DECREF(tb);
    return res;
}

PyObject *pg_f_where(PyObject *mod, PyObject *args, PyObject *kwargs)
{
    (void)mod;
    static char *kw[] = {"condition", "input", "other", NULL};
    PyObject *c, *a, *b;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO:where", kw, &c, &a, &b))
        return NULL;
    return where_impl(c, a, b);
}

/* x.where(condition, y): where(condition, x, y), as PyTorch */
static PyObject *mt_where(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = {"condition", "other", NULL};
    PyObject *c, *b;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:where", kw, &c, &b))
        return NULL;
    return where_impl(c, self, b);
}

/* ---- clamp / clip --------------------------------------------------------------------- */

/* a Python int or float (not bool): a bound the one-pass clamp_ takes */
static bool number_bound(PyObject *v)
{
    return PyFloat_CheckExact(v) || PyLong_CheckExact(v);
}

/* clamp(x, min, max) = minimum(maximum(x, min), max), either bound None (not both); the
 * bounds are Tensors or numbers. NaN stays NaN; min > max gives max, as PyTorch. The two
 * ops record their own backward rules (a bound that requires grad gets its share). */
static PyObject *clamp_impl(PyObject *x, PyObject *lo, PyObject *hi, bool inplace,
                            const char *name)
{
    if (!PyTensor_Check(x))
        return PyErr_Format(PyExc_TypeError, "%s expects a pygpu.Tensor, got %.80s", name,
                            Py_TYPE(x)->tp_name);
    if (lo == Py_None)
        lo = NULL;
    if (hi == Py_None)
        hi = NULL;
    if (!lo && !hi) {
        PyErr_Format(PyExc_RuntimeError, "%s: at least one of 'min' or 'max' must not be None",
                     name);
        return NULL;
    }
    if (inplace) {
        if (pg_inplace_check(x, lo, name) < 0 || pg_inplace_check(x, hi, name) < 0)
            return NULL;
        const pg_tensor *t = &((PyTensor *)x)->t;
        if (lo && hi && number_bound(lo) && number_bound(hi) &&
            (t->dtype == PG_FLOAT32 || t->dtype == PG_FLOAT64) &&
            pg_backend_has_op(pg_tensor_device(t), PG_OP_CLAMP, t->dtype)) {
            double l = PyFloat_AsDouble(lo), h = PyFloat_AsDouble(hi);
            if ((l == -1.0 || h == -1.0) && PyErr_Occurred())
                return NULL;
            if (l == l && h == h) { /* one pass (a NaN bound takes the two-op path) */
                pg_status st = PG_CALL(pg_heavy(t), pg_op_clamp_(t, l, h));
                return st == PG_OK ? Py_NewRef(x) : pg_raise(st);
            }
        }
        PyObject *r = lo ? pg_py_binary_(x, lo, PG_BIN_MAXIMUM, name) : Py_NewRef(x);
        if (r && hi) {
            Py_DECREF(r);
            r = pg_py_binary_(x, hi, PG_BIN_MINIMUM, name);
        }
        return r;
    }
    PyObject *r = lo ? pg_py_binary(x, lo, PG_BIN_MAXIMUM) : Py_NewRef(x);
    if (r && hi) {
        PyObject *r2 = pg_py_binary(r, hi, PG_BIN_MINIMUM);
        Py_DECREF(r);
        r = r2;
    }
    return r;
}

#define CLAMP_FN(NAME)                                                                     \
    PyObject *pg_f_##NAME(PyObject *mod, PyObject *args, PyObject *kwargs)                 \
    {                                                                                      \
        (void)mod;                                                                         \
        static char *kw[] = {"input", "min", "max", NULL};                                 \
        PyObject *x, *lo = Py_None, *hi = Py_None;                                         \
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:" #NAME, kw, &x, &lo, &hi))   \
            return NULL;                                                                   \
        return clamp_impl(x, lo, hi, false, #NAME);                                        \
    }
CLAMP_FN(clamp)
CLAMP_FN(clip)

#define CLAMP_METHOD(NAME, INPLACE)                                                        \
    static PyObject *mt_##NAME(PyObject *self, PyObject *args, PyObject *kwargs)           \
    {                                                                                      \
        static char *kw[] = {"min", "max", NULL};                                          \
        PyObject *lo = Py_None, *hi = Py_None;                                             \
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:" #NAME, kw, &lo, &hi))        \
            return NULL;                                                                   \
        return clamp_impl(self, lo, hi, INPLACE, #NAME);                                   \
    }
CLAMP_METHOD(clamp, false)
CLAMP_METHOD(clip, false)
CLAMP_METHOD(clamp_, true)
CLAMP_METHOD(clip_, true)

/* ---- the table ------------------------------------------------------------------------ */

#define KW (PyCFunction)(void (*)(void))
#define BIN_ENTRY(m, k, doc) BIN_ENTRY_##k(m, doc)
#define BIN_ENTRY_N(m, doc)
#define BIN_ENTRY_M(m, doc) {#m, KW mt_##m, METH_VARARGS | METH_KEYWORDS, doc},
#define BIN_ENTRY_I(m, doc)                                                                \
    BIN_ENTRY_M(m, doc)                                                                    \
    {#m "_", KW mt_##m##_, METH_VARARGS | METH_KEYWORDS, "in place (into self): " doc},
#define UN_ENTRY(m, k, doc) UN_ENTRY_##k(m, doc)
#define UN_ENTRY_N(m, doc)
#define UN_ENTRY_M(m, doc) {#m, mt_##m, METH_NOARGS, doc},
#define UN_ENTRY_I(m, doc)                                                                 \
    UN_ENTRY_M(m, doc)                                                                     \
    {#m "_", mt_##m##_, METH_NOARGS, "in place (into self): " doc},

static PyMethodDef pg_elementwise_methods[] = {
#define PG_BINARY(ID, name, gen, method, py, grad, doc, ...) PG_APPLY(BIN_ENTRY, (MARGS_##method, doc))
#include "../core/pg_ops.def"
#define PG_UNARY(ID, name, gen, method, py, grad, doc, ...) PG_APPLY(UN_ENTRY, (MARGS_##method, doc))
#include "../core/pg_ops.def"
    {"where", KW mt_where, METH_VARARGS | METH_KEYWORDS, "where(condition, other): self where condition is true, else other"},
    {"clamp", KW mt_clamp, METH_VARARGS | METH_KEYWORDS, "clamp(min=None, max=None): each element into [min, max] (Tensors or numbers)"},
    {"clip", KW mt_clip, METH_VARARGS | METH_KEYWORDS, "clip(min=None, max=None): clamp's other name"},
    {"clamp_", KW mt_clamp_, METH_VARARGS | METH_KEYWORDS, "clamp in place (into self)"},
    {"clip_", KW mt_clip_, METH_VARARGS | METH_KEYWORDS, "clamp in place (into self)"},
    {NULL, NULL, 0, NULL},
};

/* Add the methods above to the ready Tensor type, as tp_methods' would be (module init). */
int pg_elementwise_methods_ready(void)
{
    PyTypeObject *type = &PyTensor_Type;
    for (PyMethodDef *d = pg_elementwise_methods; d->ml_name; d++) {
        PyObject *descr = PyDescr_NewMethod(type, d);
        int rc = descr ? PyDict_SetItemString(type->tp_dict, d->ml_name, descr) : -1;
        Py_XDECREF(descr);
        if (rc < 0)
            return -1;
    }
    PyType_Modified(type);
    return 0;
}

/* ---- addcmul / addcdiv / lerp: one TERNARY node ------------------------------------------- */

/* _C._ternary(op, a, b, c, value, inplace): pg_op_ternary(_) for pygpu/_tensor_math.py, which
 * records the gradient (its Functions) and composes the dtypes the node does not take. c is
 * None for lerp with a number weight; inplace writes a and returns it. No autograd here. */
PyObject *pg_f_ternary(PyObject *mod, PyObject *args)
{
    (void)mod;
    int op, inplace;
    double value;
    PyObject *a, *b, *c;
    if (!PyArg_ParseTuple(args, "iO!O!Odp:_ternary", &op, &PyTensor_Type, &a, &PyTensor_Type, &b,
                          &c, &value, &inplace))
        return NULL;
    if (c != Py_None && !PyTensor_Check(c))
        return PyErr_Format(PyExc_TypeError, "_ternary: the third operand must be a Tensor or None");
    const pg_tensor *ta = &((PyTensor *)a)->t, *tb = &((PyTensor *)b)->t;
    const pg_tensor *tc = c == Py_None ? NULL : &((PyTensor *)c)->t;
    if (inplace) {
        pg_status st = PG_CALL(pg_heavy(ta), pg_op_ternary_(op, ta, tb, tc, value));
        return st == PG_OK ? Py_NewRef(a) : pg_raise(st);
    }
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(ta), pg_op_ternary(op, ta, tb, tc, value, &out));
    return pg_wrap_result(st, &out);
}
