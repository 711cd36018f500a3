/* math.c - module-level math functions: pygpu.matmul, maximum, exp, sum, ...
 * Thin: each forwards to the same core op as the operator or method. The
 * binary, unary and reduce ones are generated from the op table
 * (core/pg_ops.def), which _C._op_table() also hands to Python. */
#include "../core/pg_backend.h"
#include "../core/pg_ops_conv.h"
#include "tensor_object.h"

#include <string.h>

PyObject *pg_py_binary(PyObject *a, PyObject *b, int op);
PyObject *pg_reduce_call(PyObject *self, int op, PyObject *args, PyObject *kwargs);
PyObject *pg_unary_call(PyObject *self, int op);

static int want_tensor(PyObject *o, const char *fn)
{
    if (PyTensor_Check(o))
        return 0;
    PyErr_Format(PyExc_TypeError, "%s expects a pygpu.Tensor, got %.80s (convert with "
                                  "pygpu.tensor(x))",
                 fn, Py_TYPE(o)->tp_name);
    return -1;
}

/* PyTorch's out= on the elementwise functions and matmul: the result is written into
 * `out` with copy_ (same shape; its dtype casts as copy_ does) and `out` is returned.
 * Only the keyword `out` is taken; a call without keywords costs nothing more. */
static int parse_out(PyObject *kwargs, const char *fn, PyObject **out)
{
    *out = NULL;
    if (!kwargs || PyDict_GET_SIZE(kwargs) == 0)
        return 0;
    PyObject *o = PyDict_GetItemString(kwargs, "out"); /* borrowed */
    if (!o || PyDict_GET_SIZE(kwargs) != 1) {
        PyErr_Format(PyExc_TypeError, "%s() takes one keyword argument, out=", fn);
        return -1;
    }
    if (o == Py_None)
        return 0;
    if (!PyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): out must be a pygpu.Tensor, got %.80s", fn,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = o;
    return 0;
}

static PyObject *into_out(PyObject *r, PyObject *out, const char *fn)
{
    if (!r || !out)
        return r;
    const pg_tensor *t = &((PyTensor *)r)->t, *o = &((PyTensor *)out)->t;
    int same = t->ndim == o->ndim;
    for (int i = 0; same && i < t->ndim; i++)
        same = t->shape[i] == o->shape[i];
    if (!same) {
        PyObject *rs = PyObject_GetAttrString(r, "shape"), *os = PyObject_GetAttrString(out, "shape");
        if (rs && os)
            PyErr_Format(PyExc_RuntimeError, "%s(): out has shape %R but the result has shape "
                                             "%R; pass an out of that shape (pygpu does not "
                                             "resize out)",
                         fn, os, rs);
        Py_XDECREF(rs);
        Py_XDECREF(os);
        Py_DECREF(r);
        return NULL;
    }
    PyObject *c = PyObject_CallMethod(out, "copy_", "O", r);
    Py_DECREF(r);
    return c; /* copy_ returns out */
}

static PyObject *f_matmul(PyObject *mod, PyObject *args, PyObject *kwargs)
{
    (void)mod;
    PyObject *a, *b, *out;
    if (parse_out(kwargs, "matmul", &out) < 0 || !PyArg_ParseTuple(args, "OO:matmul", &a, &b) ||
        want_tensor(a, "matmul") < 0 || want_tensor(b, "matmul") < 0)
        return NULL;
    return into_out(PyNumber_MatrixMultiply(a, b), out, "matmul");
}

#define BINARY_FN(NAME, OP)                                                        \
    static PyObject *f_##NAME(PyObject *mod, PyObject *args, PyObject *kwargs)     \
    {                                                                              \
        (void)mod;                                                                 \
        PyObject *a, *b, *out;                                                     \
        if (parse_out(kwargs, #NAME, &out) < 0 ||                                  \
            !PyArg_ParseTuple(args, "OO:" #NAME, &a, &b))                          \
            return NULL;                                                           \
        return into_out(pg_py_binary(a, b, OP), out, #NAME);                       \
    }
/* The op table's FN rows get a module function; NONE rows none. */
#define GEN_FN(...) __VA_ARGS__
#define GEN_NONE(...)
#define PG_BINARY(ID, name, gen, ...) GEN_##gen(BINARY_FN(name, PG_BIN_##ID))
#include "../core/pg_ops.def"

#define UNARY_FN(NAME, OP)                                                         \
    static PyObject *f_##NAME(PyObject *mod, PyObject *args, PyObject *kwargs)     \
    {                                                                              \
        (void)mod;                                                                 \
        PyObject *x, *out;                                                         \
        if (parse_out(kwargs, #NAME, &out) < 0 ||                                  \
            !PyArg_ParseTuple(args, "O:" #NAME, &x) || want_tensor(x, #NAME) < 0)   \
            return NULL;                                                           \
        return into_out(pg_unary_call(x, OP), out, #NAME);                         \
    }
#define PG_UNARY(ID, name, gen, ...) GEN_##gen(UNARY_FN(name, PG_UN_##ID))
#include "../core/pg_ops.def"

#define REDUCE_FN(NAME, OP)                                                          \
    static PyObject *f_##NAME(PyObject *mod, PyObject *args, PyObject *kwargs)       \
    {                                                                                \
        (void)mod;                                                                   \
        if (PyTuple_GET_SIZE(args) < 1) {                                            \
            PyErr_SetString(PyExc_TypeError, #NAME "() needs a tensor");             \
            return NULL;                                                             \
        }                                                                            \
        PyObject *x = PyTuple_GET_ITEM(args, 0);                                     \
        if (want_tensor(x, #NAME) < 0)                                               \
            return NULL;                                                             \
        PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));          \
        if (!rest)                                                                   \
            return NULL;                                                             \
        PyObject *r = pg_reduce_call(x, OP, rest, kwargs);                           \
        Py_DECREF(rest);                                                             \
        return r;                                                                    \
    }
#define PG_REDUCE(ID, name, py, grad, doc, ...) REDUCE_FN(name, PG_RED_##ID)
#include "../core/pg_ops.def"
REDUCE_FN(mean, -1) /* a sum, then a divide (pg_op_mean) */

/* _C._op_table(): ((name, family, node, py names, grad name or None, saves, amp, dtypes), ...),
 * one tuple per row of pg_ops.def; family is binary/unary/reduce or the row's kind;
 * saves and amp are the rows' last two columns (what the backward reads, the autocast
 * policy), which pygpu/autograd/rules.py and pygpu/amp read instead of lists of their own;
 * dtypes is a binary or unary row's input class (ANY, NUM, FLOAT, ...: pg_op_props.h), None
 * for the other rows, which the tests read instead of restating it. */
static const struct {
    const char *name, *family, *node, *py, *grad, *saves, *amp, *in;
} g_op_rows[] = {
#define PG_BINARY(ID, name, gen, method, py, grad, doc, in, out, saves, amp, ...)                 \
    {#name, "binary", #name, py, grad, #saves, #amp, #in},
#define PG_UNARY(ID, name, gen, method, py, grad, doc, in, out, cost, saves, amp, ...)            \
    {#name, "unary", #name, py, grad, #saves, #amp, #in},
#define PG_REDUCE(ID, name, py, grad, doc, saves, amp, ...) {#name, "reduce", #name, py, grad, #saves, #amp, NULL},
#define PG_OTHER(name, node, kind, py, grad, saves, amp, ...) {#name, #kind, node, py, grad, #saves, #amp, NULL},
#include "../core/pg_ops.def"
};
static PyObject *f_op_table(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    size_t n = sizeof g_op_rows / sizeof *g_op_rows;
    PyObject *rows = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; rows && i < n; i++) {
        PyObject *py = PyUnicode_FromString(g_op_rows[i].py);
        PyObject *names = py ? PyUnicode_Split(py, NULL, -1) : NULL;
        PyObject *row = names ? Py_BuildValue("(sszNzssz)", g_op_rows[i].name, g_op_rows[i].family,
                                              g_op_rows[i].node, PyList_AsTuple(names),
                                              g_op_rows[i].grad, g_op_rows[i].saves, g_op_rows[i].amp,
                                              g_op_rows[i].in)
                              : NULL;
        Py_XDECREF(py);
        Py_XDECREF(names);
        if (!row)
            Py_CLEAR(rows);
        else
            PyTuple_SET_ITEM(rows, (Py_ssize_t)i, row);
    }
    return rows;
}

/* _C._act_table(): ((name, code, nn module name), ...), the fused layers' activations
 * (pg_ops.def's PG_ACT rows; code 0, no activation, has no row). */
static PyObject *f_act_table(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    return Py_BuildValue("("
#define PG_ACT(ID, ...) "(sis)"
#include "../core/pg_ops.def"
                         ")"
#define PG_ACT(ID, name, module, ...) , #name, (int)PG_ACT_##ID, module
#include "../core/pg_ops.def"
    );
}

/* _C._node_table(): ((ID, params, cpu, split, panels, cuda, graph, doc), ...): the
 * PG_NODE rows (pg_ops.def) as their text, for tests/test_node_table.py and the docs; the
 * backends read the columns in C. */
static PyObject *f_node_table(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    static const char *const rows[][8] = {
#define PG_NODE(ID, params, cpu, split, panels, cuda, graph, doc)                                  \
    {#ID, #params, #cpu, #split, #panels, #cuda, #graph, doc},
#include "../core/pg_ops.def"
    };
    const Py_ssize_t n = (Py_ssize_t)(sizeof rows / sizeof rows[0]);
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) {
        const char *const *r = rows[i];
        PyObject *row = Py_BuildValue("(ssssssss)", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
        if (!row)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, row);
    }
    return t;
}

/* CONV's node from (kind, x, w, geom[, x_shape]): the forward's, or the input gradient's */
static int describe_conv(PyObject *args, pg_node *n)
{
    const char *kind;
    PyObject *x, *w;
    pg_conv_args a;
    int64_t xs[4] = {-1, -1, -1, -1};
    if (!PyArg_ParseTuple(args, "sO!O!(LLLLLLLLL)|(LLLL):_has_node", &kind, &PyTensor_Type, &x,
                          &PyTensor_Type, &w, &a.stride[0], &a.stride[1], &a.dilation[0],
                          &a.dilation[1], &a.pad_before[0], &a.pad_after[0], &a.pad_before[1],
                          &a.pad_after[1], &a.groups, &xs[0], &xs[1], &xs[2], &xs[3]))
        return -1;
    const pg_tensor *tx = &((PyTensor *)x)->t, *tw = &((PyTensor *)w)->t;
    pg_status st = PyTuple_GET_SIZE(args) > 4
                       ? pg_conv2d_input_backward_node(tx, tw, NULL, xs, &a, n)
                       : pg_conv2d_node(tx, tw, NULL, &a, n);
    if (st != PG_OK) { /* an invalid convolution has no node: the op's checks say why */
        pg_raise(st);
        return -1;
    }
    return 0;
}

/* A PG_NODE row's ID ("SOFTMAX") as its node kind, or -1 */
static int node_kind_named(const char *id)
{
    static const struct {
        const char *id;
        int op;
    } kinds[] = {
#define PG_NODE(ID, ...) {#ID, PG_OP_##ID},
#include "../core/pg_ops.def"
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].id, id) == 0)
            return kinds[i].op;
    return -1;
}

/* MULTI's node from ("MULTI", x, entry_kind): a list of x's device and dtype whose entries
 * are nodes of entry_kind (a PG_NODE row's ID: "ADAM", "SGD", "BINARY"), which backends
 * may run only some of (cuda: the kinds with a list kernel) */
static int describe_multi(PyObject *args, pg_node *n)
{
    const char *kind, *entries;
    PyObject *x;
    if (!PyArg_ParseTuple(args, "sO!s:_has_node", &kind, &PyTensor_Type, &x, &entries))
        return -1;
    int sub = node_kind_named(entries);
    if (sub < 0) {
        PyErr_Format(PyExc_ValueError, "_has_node: no node kind %s for a MULTI node's entries",
                     entries);
        return -1;
    }
    const pg_tensor *t = &((PyTensor *)x)->t;
    pg_node_start(n, PG_OP_MULTI, sub, kind);
    n->dst.dtype = t->dtype;
    n->dst.ndim = t->ndim;
    memcpy(n->dst.shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    return 0;
}

/* LINALG's node from (kind, A, sub-op[, B]): the sub-op a LINALG row's ID ("CHOLESKY"), so
 * that the backend answers per sub-op (cuda's cuSOLVER has no lstsq) */
static int describe_linalg(PyObject *args, pg_node *n)
{
    const char *kind, *id;
    PyObject *a, *b = Py_None;
    if (!PyArg_ParseTuple(args, "sO!s|O:_has_node", &kind, &PyTensor_Type, &a, &id, &b))
        return -1;
    if (b != Py_None && !PyTensor_Check(b)) {
        PyErr_Format(PyExc_TypeError, "_has_node: LINALG's B must be a Tensor or None");
        return -1;
    }
    int op = pg_subop_arg("_has_node", PG_OP_LINALG, 0, id);
    if (op < 0)
        return -1;
    memset(n, 0, sizeof *n);
    n->op = PG_OP_LINALG;
    n->subop = op;
    n->name = pg_subop_name(op);
    n->src[0] = ((PyTensor *)a)->t;
    n->nsrc = 1;
    if (b != Py_None)
        n->src[n->nsrc++] = ((PyTensor *)b)->t;
    return 0;
}

/* BATCH_NORM's node from (kind, x[, sub-op]): the sub-op a BATCH_NORM row's ID ("EVAL_FWD";
 * TRAIN_FWD when not given), x as its (N, C, ...) input: cuda runs training only */
static int describe_batch_norm(PyObject *args, pg_node *n)
{
    const char *kind, *id = "TRAIN_FWD";
    PyObject *x;
    if (!PyArg_ParseTuple(args, "sO!|s:_has_node", &kind, &PyTensor_Type, &x, &id))
        return -1;
    int sub = pg_subop_arg("_has_node", PG_OP_BATCH_NORM, 0, id);
    if (sub < 0)
        return -1;
    const pg_tensor *t = &((PyTensor *)x)->t;
    memset(n, 0, sizeof *n);
    pg_node_start(n, PG_OP_BATCH_NORM, sub, kind);
    n->src[0] = *t;
    n->nsrc = 1;
    n->dst.dtype = t->dtype;
    n->dst.ndim = t->ndim;
    memcpy(n->dst.shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    return 0;
}

/* CLAMP's node from (kind, x[, "grad"]): the clamp of x, or with "grad" hardtanh's gradient
 * (dy and y shaped as x), which cuda declines */
static int describe_clamp(PyObject *args, pg_node *n)
{
    const char *kind, *form = "";
    PyObject *x;
    if (!PyArg_ParseTuple(args, "sO!|s:_has_node", &kind, &PyTensor_Type, &x, &form))
        return -1;
    if (*form && strcmp(form, "grad") != 0) {
        PyErr_Format(PyExc_ValueError, "_has_node: CLAMP's form is \"grad\" or none, not %s",
                     form);
        return -1;
    }
    const pg_tensor *t = &((PyTensor *)x)->t;
    memset(n, 0, sizeof *n);
    pg_node_start(n, PG_OP_CLAMP, 0, kind);
    n->p.clamp.grad = *form != 0;
    n->src[0] = *t;
    n->nsrc = 1;
    if (n->p.clamp.grad)
        n->src[n->nsrc++] = *t;
    n->dst.dtype = t->dtype;
    n->dst.ndim = t->ndim;
    memcpy(n->dst.shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    return 0;
}

/* the kinds whose node needs more than its operands to describe (their parameters) */
static const struct {
    int op;
    int (*describe)(PyObject *args, pg_node *n);
} describers[] = {{PG_OP_CONV, describe_conv}, {PG_OP_MULTI, describe_multi},
                   {PG_OP_LINALG, describe_linalg}, {PG_OP_BATCH_NORM, describe_batch_norm},
                   {PG_OP_CLAMP, describe_clamp}};

/* _C._has_node(kind, x, *more): whether x's backend runs the node the op would launch: the
 * kind (a PG_NODE row's ID, "SOFTMAX") on x's dtype (supports_op), and the node as it
 * stands, its parameters included (supports_node): cuDNN's padding rule, attention's head
 * dimensions. The one question the composite ops ask before they choose the node over
 * their composition. `more`: the op's other operands, as the op takes them:
 *   CONV   (w, geom): conv2d's forward node; (w, geom, x_shape): the input gradient's
 *          (conv_transpose2d's forward), geom as _conv2d's
 *   MULTI  (entry_kind): a list of x's dtype whose entries are nodes of that kind ("ADAM")
 *   LINALG (sub-op[, B]): the sub-op a LINALG row's ID ("CHOLESKY"), B its second operand
 *   others the tensors in the node's first source slots (SDPA: k, v)
 * The node is described, never launched: its sources borrowed, dst without storage. */
static PyObject *f_has_node(PyObject *mod, PyObject *args)
{
    (void)mod;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs < 2)
        return PyErr_Format(PyExc_TypeError, "_has_node(kind, x, *more) takes at least 2 "
                                             "arguments (%zd given)", nargs);
    const char *kind = PyUnicode_Check(PyTuple_GET_ITEM(args, 0))
                           ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, 0))
                           : NULL;
    PyObject *x = PyTuple_GET_ITEM(args, 1);
    if (!kind || !PyTensor_Check(x))
        return PyErr_Format(PyExc_TypeError, "_has_node: expected (kind: str, x: Tensor, ...)");
    int op = node_kind_named(kind);
    if (op < 0)
        return PyErr_Format(PyExc_ValueError, "_has_node: no node kind %s in the node table "
                                              "(csrc/core/pg_ops.def's PG_NODE rows)", kind);
    const pg_tensor *t = &((PyTensor *)x)->t;
    pg_node n;
    for (size_t i = 0; i < sizeof describers / sizeof *describers; i++)
        if (describers[i].op == op) {
            if (describers[i].describe(args, &n) < 0)
                return NULL;
            return PyBool_FromLong(pg_backend_has_node(pg_tensor_device(t), &n));
        }
    /* the other kinds: the operands in the node's first source slots, dst shaped as x */
    memset(&n, 0, sizeof n);
    n.op = op;
    n.name = kind;
    if (nargs - 1 > PG_NODE_MAX_SRC)
        return PyErr_Format(PyExc_TypeError, "_has_node: at most %d operands", PG_NODE_MAX_SRC);
    for (Py_ssize_t i = 1; i < nargs; i++) {
        PyObject *o = PyTuple_GET_ITEM(args, i);
        if (o != Py_None && !PyTensor_Check(o))
            return PyErr_Format(PyExc_TypeError, "_has_node: operand %zd must be a Tensor or None",
                                i);
        if (o != Py_None)
            n.src[i - 1] = ((PyTensor *)o)->t;
    }
    n.nsrc = (int)(nargs - 1);
    n.dst.dtype = t->dtype;
    n.dst.ndim = t->ndim;
    memcpy(n.dst.shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    return PyBool_FromLong(pg_backend_has_node(pg_tensor_device(t), &n));
}

/* _C._dtype_table(): (((name, code, itemsize, kind, legacy, alias), ...), "float32, ... and
 * bool"): pg_dtype.h's table (kind: "bool", "sint", "uint", "float", "half", "complex", "fp8"), and the list
 * messages name the dtypes by. */
static PyObject *f_dtype_table(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    char text[400];
    pg_dtype_list(text, sizeof text);
    static const char *const kinds[] = {[PG_KIND_BOOL] = "bool", [PG_KIND_SINT] = "sint",
                                        [PG_KIND_UINT] = "uint", [PG_KIND_FLOAT] = "float",
                                        [PG_KIND_HALF] = "half", [PG_KIND_COMPLEX] = "complex",
                                        [PG_KIND_FP8] = "fp8", [PG_KIND_SUBU] = "subu",
                                        [PG_KIND_SUBS] = "subs", [PG_KIND_BITS] = "bits",
                                        [PG_KIND_FP4] = "fp4"};
    return Py_BuildValue("(("
#define PG_DTYPE_FMT(...) "(sinsss)"
                         PG_DTYPES(PG_DTYPE_FMT)
#undef PG_DTYPE_FMT
                         ")s)"
#define PG_DTYPE_ARGS(ID, name, size, ctype, kind, calc, legacy, alias) \
    , name, (int)PG_##ID, (Py_ssize_t)size, kinds[PG_##kind], legacy, alias
                         PG_DTYPES(PG_DTYPE_ARGS)
#undef PG_DTYPE_ARGS
                         , text);
}

/* _C._promote_types(a, b): torch.promote_types over dtype codes (pg_dtype.c's table) */
static PyObject *f_promote_types(PyObject *mod, PyObject *args)
{
    (void)mod;
    int a, b;
    if (!PyArg_ParseTuple(args, "ii", &a, &b))
        return NULL;
    if (!pg_dtype_valid(a) || !pg_dtype_valid(b))
        return PyErr_Format(PyExc_ValueError, "_promote_types: no dtype codes %d, %d", a, b);
    pg_status st = (pg_status)pg_dtype_promote_check((pg_dtype)a, (pg_dtype)b);
    if (st != PG_OK)
        return pg_raise(st);
    return PyLong_FromLong(pg_dtype_promote((pg_dtype)a, (pg_dtype)b));
}

/* _C._result_type(((code, priority), ...)): torch.result_type's combination (pg_dtype.h's
 * pg_result_state) of operands with dimensions (priority 0), 0-d tensors (1) and Python
 * numbers (2, as their wrapped dtypes) */
static PyObject *f_result_type(PyObject *mod, PyObject *arg)
{
    (void)mod;
    PyObject *seq = PySequence_Fast(arg, "_result_type: a sequence of (code, priority)");
    if (!seq)
        return NULL;
    pg_result_state s = PG_RESULT_STATE_INIT;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        int code, prio;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ii", &code, &prio) ||
            !pg_dtype_valid(code) || prio < 0 || prio > 2) {
            Py_DECREF(seq);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "_result_type: a bad (code, priority)");
            return NULL;
        }
        pg_result_state_add(&s, (pg_dtype)code, prio);
    }
    Py_DECREF(seq);
    int r;
    pg_status st = (pg_status)pg_dtype_result_check(&s, &r);
    return st == PG_OK ? PyLong_FromLong(r) : pg_raise(st);
}

/* elementwise_methods.c: where (a copy and a SELECT node) and clamp's one-node calls */
PyObject *pg_f_where(PyObject *mod, PyObject *args, PyObject *kwargs);
PyObject *pg_f_clamp_node(PyObject *mod, PyObject *args);
PyObject *pg_f_hardtanh_backward(PyObject *mod, PyObject *args);
PyObject *pg_f_clamp_bound_(PyObject *mod, PyObject *args);
PyObject *pg_f_ternary(PyObject *mod, PyObject *args);

#define KW (PyCFunction)(void (*)(void))
PyMethodDef pg_math_functions[] = {
    {"matmul", KW f_matmul, METH_VARARGS | METH_KEYWORDS, "matmul(a, b, *, out=None): matrix product with NumPy's rules (1-D, 2-D, batched 3-D)"},
#define PG_BINARY(ID, name, gen, method, py, grad, doc, ...) GEN_##gen({#name, KW f_##name, METH_VARARGS | METH_KEYWORDS, doc},)
#define PG_UNARY(ID, name, gen, method, py, grad, doc, ...) GEN_##gen({#name, KW f_##name, METH_VARARGS | METH_KEYWORDS, doc},)
#define PG_REDUCE(ID, name, py, grad, doc, ...) {#name, KW f_##name, METH_VARARGS | METH_KEYWORDS, doc},
#include "../core/pg_ops.def"
    {"mean", KW f_mean, METH_VARARGS | METH_KEYWORDS, "mean(x, axis=None, keepdims=False)"},
    {"where", KW pg_f_where, METH_VARARGS | METH_KEYWORDS, "where(condition, input, other): input where condition (a bool tensor) is true, else other; broadcasting"},
    {"_hardtanh_backward", pg_f_hardtanh_backward, METH_VARARGS, "internal: _hardtanh_backward(dy, y, lo, hi): dy where lo < y < hi, else 0, one CLAMP node (pygpu/nn/_pointwise.py)"},
    {"_clamp", pg_f_clamp_node, METH_VARARGS, "internal: _clamp(x, lo, hi, inplace=False): one CLAMP node (pygpu/_ops/_clamp.py)"},
    {"_clamp_bound_", pg_f_clamp_bound_, METH_VARARGS, "internal: _clamp_bound_(x, bound, upper, name): clamp_'s one-sided step, one in-place maximum/minimum node"},
    {"_has_node", f_has_node, METH_VARARGS, "internal: _has_node(kind, x, *more): whether x's backend runs the node the op would launch (a PG_NODE row's ID; supports_op, then supports_node)"},
    {"_ternary", pg_f_ternary, METH_VARARGS, "internal: _ternary(op, a, b, c, value, inplace): addcmul/addcdiv/lerp as one node, op a TERNARY row's ID (pygpu/_tensor/math.py)"},
    {"_op_table", f_op_table, METH_NOARGS, "internal: the op table (csrc/core/pg_ops.def) as tuples"},
    {"_node_table", f_node_table, METH_NOARGS, "internal: the node kinds (csrc/core/pg_ops.def's PG_NODE rows) as text"},
    {"_act_table", f_act_table, METH_NOARGS, "internal: the fused layers' activations (pg_ops.def's PG_ACT rows)"},
    {"_promote_types", f_promote_types, METH_VARARGS, "internal: torch.promote_types over dtype codes"},
    {"_result_type", f_result_type, METH_O, "internal: torch.result_type over (code, priority) pairs"},
    {"_dtype_table", f_dtype_table, METH_NOARGS, "internal: the dtype table (csrc/core/pg_dtype.h) and the text messages list the dtypes by"},
    {NULL, NULL, 0, NULL},
};
