/* elementwise_methods.c - the Tensor methods of the op table's elementwise ops,
 * generated from csrc/core/pg_ops.def's `method` column (METHOD(m): Tensor.m;
 * METHOD_INPLACE(m): Tensor.m and the in-place Tensor.m_), where (a copy and a SELECT
 * node) as a module function and a method, and clamp's one-node calls (_C._clamp,
 * _C._clamp_bound_), which pygpu/_ops/_clamp.py composes clamp/clip/clamp_ from.
 *
 * The methods take PyTorch's signatures: x.add(y, alpha=2), x.pow(2), x.eq(y),
 * x.exp_(). An in-place method writes self (pg_op_binary_ / pg_op_unary_: one
 * node with dst == src0 where the op computes in self's dtype) and returns
 * self; under grad mode it follows pg_inplace_check (tensor_operators.c).
 * module.c adds these methods to the ready type (pg_elementwise_methods_ready), so
 * tensor_operators.c, below this file, never refers back up to it. */
#include "../core/pg_backend.h"
#include "autograd.h"
#include "complex.h"
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
    if (pg_complex_operand(self))
        return pg_complex_dispatch("unary_", pg_unary_name(op), self, NULL, NULL, NULL);
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
    if (is_int) {
        if (pg_int_scalar(v, (pg_dtype)dt, &s) < 0)
            return NULL;
    } else {
        s.kind = is_bool ? PG_SCALAR_BOOL : PG_SCALAR_FLOAT;
        s.f = is_bool ? (double)(v == Py_True) : PyFloat_AS_DOUBLE(v);
        s.i = v == Py_True;
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
    if (pg_complex_operand(a) || pg_complex_operand(b)) { /* composed on the real pairs */
        PyObject *args = PyTuple_Pack(1, cond);
        PyObject *r = args ? pg_complex_dispatch("where", "where", a, b, args, NULL) : NULL;
        Py_XDECREF(args);
        return r;
    }
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

/* ---- clamp's one-node calls (the op is composed in pygpu/_ops/_clamp.py) ---------------- */

/* _C._clamp(x, lo, hi, inplace=False): min(max(x, lo), hi) for two number bounds as one
 * CLAMP node (x float32/float64 on a backend with the node: the caller asks _has_node),
 * into x when inplace (refused under autograd, as clamp_ records no gradient). Records
 * nothing: the caller takes this path only where there is nothing to record. */
PyObject *pg_f_clamp_node(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *x;
    double lo, hi;
    int inplace = 0;
    if (!PyArg_ParseTuple(args, "O!dd|p:_clamp", &PyTensor_Type, &x, &lo, &hi, &inplace))
        return NULL;
    const pg_tensor *t = &((PyTensor *)x)->t;
    if (inplace) {
        if (pg_inplace_check(x, NULL, "clamp_") < 0)
            return NULL;
        pg_status st = PG_CALL(pg_heavy(t), pg_op_clamp_(t, lo, hi));
        return st == PG_OK ? Py_NewRef(x) : pg_raise(st);
    }
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(t), pg_op_clamp(t, lo, hi, &out));
    return pg_wrap_result(st, &out);
}

/* _C._hardtanh_backward(dy, y, lo, hi): hardtanh's input gradient from its output y, one
 * CLAMP node (the caller asks _has_node("CLAMP", y, "grad")); records nothing */
PyObject *pg_f_hardtanh_backward(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *dy, *y;
    double lo, hi;
    if (!PyArg_ParseTuple(args, "O!O!dd:_hardtanh_backward", &PyTensor_Type, &dy, &PyTensor_Type,
                          &y, &lo, &hi))
        return NULL;
    const pg_tensor *t = &((PyTensor *)y)->t;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(t), pg_op_hardtanh_backward(&((PyTensor *)dy)->t, t, lo, hi,
                                                                &out));
    return pg_wrap_result(st, &out);
}

/* _C._clamp_bound_(x, bound, upper, name, next=None): x = maximum(x, bound) (upper:
 * minimum) in place, one BINARY node, the bound a Tensor or a number; `name` (clamp_,
 * clip_) is checked as an in-place op autograd does not record, against the bound and
 * against `next` (the other bound, written after this one), before anything is written. */
PyObject *pg_f_clamp_bound_(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *x, *bound, *next = Py_None;
    int upper;
    const char *name;
    if (!PyArg_ParseTuple(args, "O!Ops|O:_clamp_bound_", &PyTensor_Type, &x, &bound, &upper,
                          &name, &next))
        return NULL;
    if (pg_inplace_check(x, bound, name) < 0 ||
        (next != Py_None && pg_inplace_check(x, next, name) < 0))
        return NULL;
    return pg_py_binary_(x, bound, upper ? PG_BIN_MINIMUM : PG_BIN_MAXIMUM, name);
}


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

/* _C._ternary(op, a, b, c, value, inplace): pg_op_ternary(_) for pygpu/_tensor/math.py, which
 * records the gradient (its Functions) and composes the dtypes the node does not take. c is
 * None for lerp with a number weight; inplace writes a and returns it. No autograd here. */
PyObject *pg_f_ternary(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *id;
    int op, inplace;
    double value;
    PyObject *a, *b, *c;
    if (!PyArg_ParseTuple(args, "sO!O!Odp:_ternary", &id, &PyTensor_Type, &a, &PyTensor_Type, &b,
                          &c, &value, &inplace) ||
        (op = pg_subop_arg("_ternary", PG_OP_TERNARY, 0, id)) < 0)
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
