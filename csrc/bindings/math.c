/* math.c - module-level math functions: pygpu.matmul, maximum, exp, sum, ...
 * Thin: each forwards to the same core op as the operator or method. */
#include "tensor_object.h"

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

static PyObject *f_matmul(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO:matmul", &a, &b) || want_tensor(a, "matmul") < 0 ||
        want_tensor(b, "matmul") < 0)
        return NULL;
    return PyNumber_MatrixMultiply(a, b);
}

#define BINARY_FN(NAME, OP)                                          \
    static PyObject *f_##NAME(PyObject *mod, PyObject *args)         \
    {                                                                \
        (void)mod;                                                   \
        PyObject *a, *b;                                             \
        if (!PyArg_ParseTuple(args, "OO:" #NAME, &a, &b))            \
            return NULL;                                             \
        return pg_py_binary(a, b, OP);                               \
    }
BINARY_FN(add, PG_BIN_ADD)
BINARY_FN(subtract, PG_BIN_SUB)
BINARY_FN(multiply, PG_BIN_MUL)
BINARY_FN(divide, PG_BIN_DIV)
BINARY_FN(maximum, PG_BIN_MAXIMUM)
BINARY_FN(minimum, PG_BIN_MINIMUM)

#define UNARY_FN(NAME, OP)                                           \
    static PyObject *f_##NAME(PyObject *mod, PyObject *x)            \
    {                                                                \
        (void)mod;                                                   \
        if (want_tensor(x, #NAME) < 0)                               \
            return NULL;                                             \
        return pg_unary_call(x, OP);                                 \
    }
UNARY_FN(exp, PG_UN_EXP)
UNARY_FN(log, PG_UN_LOG)
UNARY_FN(sqrt, PG_UN_SQRT)
UNARY_FN(tanh, PG_UN_TANH)
UNARY_FN(sigmoid, PG_UN_SIGMOID)
UNARY_FN(relu, PG_UN_RELU)
UNARY_FN(abs, PG_UN_ABS)
UNARY_FN(negative, PG_UN_NEG)
UNARY_FN(logical_not, PG_UN_NOT)

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
REDUCE_FN(sum, PG_RED_SUM)
REDUCE_FN(mean, -1)
REDUCE_FN(max, PG_RED_MAX)
REDUCE_FN(min, PG_RED_MIN)
REDUCE_FN(argmax, PG_RED_ARGMAX)

#define KW (PyCFunction)(void (*)(void))
PyMethodDef pg_math_functions[] = {
    {"matmul", f_matmul, METH_VARARGS, "matmul(a, b): matrix product with NumPy's rules (1-D, 2-D, batched 3-D)"},
    {"add", f_add, METH_VARARGS, "a + b with broadcasting"},
    {"subtract", f_subtract, METH_VARARGS, "a - b with broadcasting"},
    {"multiply", f_multiply, METH_VARARGS, "a * b with broadcasting"},
    {"divide", f_divide, METH_VARARGS, "a / b (true division) with broadcasting"},
    {"maximum", f_maximum, METH_VARARGS, "elementwise maximum (NaN propagates)"},
    {"minimum", f_minimum, METH_VARARGS, "elementwise minimum (NaN propagates)"},
    {"exp", f_exp, METH_O, "e**x"},
    {"log", f_log, METH_O, "natural logarithm"},
    {"sqrt", f_sqrt, METH_O, "square root"},
    {"tanh", f_tanh, METH_O, "hyperbolic tangent"},
    {"sigmoid", f_sigmoid, METH_O, "1 / (1 + exp(-x))"},
    {"relu", f_relu, METH_O, "max(x, 0)"},
    {"abs", f_abs, METH_O, "absolute value"},
    {"negative", f_negative, METH_O, "-x"},
    {"logical_not", f_logical_not, METH_O, "not x, for bool tensors"},
    {"sum", KW f_sum, METH_VARARGS | METH_KEYWORDS, "sum(x, axis=None, keepdims=False)"},
    {"mean", KW f_mean, METH_VARARGS | METH_KEYWORDS, "mean(x, axis=None, keepdims=False)"},
    {"max", KW f_max, METH_VARARGS | METH_KEYWORDS, "max(x, axis=None, keepdims=False)"},
    {"min", KW f_min, METH_VARARGS | METH_KEYWORDS, "min(x, axis=None, keepdims=False)"},
    {"argmax", KW f_argmax, METH_VARARGS | METH_KEYWORDS, "argmax(x, axis=None, keepdims=False)"},
    {NULL, NULL, 0, NULL},
};
