/* conv.c - pygpu._C's entry points of the convolutional layers: _conv2d and its two
 * gradients, _pool2d and its gradient, _batch_norm_train and its gradient.
 *
 * Internal: pygpu/_ops/_conv.py checks the user's arguments with PyTorch's messages, wires
 * autograd and composes the ops from gathers and matmuls where a device's backend does not
 * run the CONV, POOL or BATCH_NORM node (_C._has_node asks first, with the convolution's
 * geometry: cuDNN's rules are the cuda backend's supports_node). The core (pg_ops_conv.c,
 * pg_ops_pool.c, pg_ops_norm.c) validates everything again.
 *
 * _cpu_dnnl_offer/_cpu_dnnl_info/_cpu_conv_mode/_cpu_conv_path: the CPU's oneDNN path
 * (csrc/backends/cpu/cpu_conv_dnnl.c), for pygpu/backends/mkldnn.py. */
#include "../backends/cpu/cpu_conv.h"
#include "../backends/cpu/cpu_dnnl.h"
#include "../core/pg_backend.h"
#include "../core/pg_ops_conv.h"
#include "tensor_object.h"

#define T(o) (&((PyTensor *)(o))->t)

static bool on_cpu(const pg_tensor *t) { return t->storage->device.type == PG_DEV_CPU; }

static int opt(PyObject *o, const char *what, const pg_tensor **out)
{
    if (o == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a pygpu.Tensor or None, got %.80s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = T(o);
    return 0;
}

static PyObject *pair(pg_tensor *a, pg_tensor *b)
{
    PyObject *x = a->storage ? pg_wrap(a) : (Py_INCREF(Py_None), Py_None);
    PyObject *y = b->storage ? pg_wrap(b) : (Py_INCREF(Py_None), Py_None);
    if (!x || !y) {
        Py_XDECREF(x);
        Py_XDECREF(y);
        return NULL;
    }
    return Py_BuildValue("(NN)", x, y);
}

/* the geometry tuple (sh, sw, dh, dw, pad_top, pad_bottom, pad_left, pad_right, groups) */
#define GEOM_FMT "(LLLLLLLLL)"
#define GEOM_ARGS(a)                                                                         \
    &(a).stride[0], &(a).stride[1], &(a).dilation[0], &(a).dilation[1], &(a).pad_before[0], \
        &(a).pad_after[0], &(a).pad_before[1], &(a).pad_after[1], &(a).groups

/* _conv2d(x, w, b | None, geom) -> y */
static PyObject *f_conv2d(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *x, *w, *bo;
    pg_conv_args a;
    const pg_tensor *b;
    if (!PyArg_ParseTuple(args, "O!O!O" GEOM_FMT ":_conv2d", &PyTensor_Type, &x, &PyTensor_Type,
                          &w, &bo, GEOM_ARGS(a)) ||
        opt(bo, "bias", &b) < 0)
        return NULL;
    pg_tensor y;
    pg_status st = PG_CALL(on_cpu(T(x)), pg_op_conv2d(T(x), T(w), b, &a, &y));
    return pg_wrap_result(st, &y);
}

/* _conv2d_input_backward(dy, w, b | None, x_shape, geom) -> dx */
static PyObject *f_conv2d_input_backward(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *dy, *w, *bo;
    pg_conv_args a;
    int64_t xs[4];
    const pg_tensor *b;
    if (!PyArg_ParseTuple(args, "O!O!O(LLLL)" GEOM_FMT ":_conv2d_input_backward", &PyTensor_Type,
                          &dy, &PyTensor_Type, &w, &bo, &xs[0], &xs[1], &xs[2], &xs[3],
                          GEOM_ARGS(a)) ||
        opt(bo, "bias", &b) < 0)
        return NULL;
    pg_tensor dx;
    pg_status st = PG_CALL(on_cpu(T(dy)), pg_op_conv2d_input_backward(T(dy), T(w), b, xs, &a, &dx));
    return pg_wrap_result(st, &dx);
}

/* _conv2d_weight_backward(dy, x, w_shape, geom, want_db) -> (dW, db | None) */
static PyObject *f_conv2d_weight_backward(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *dy, *x;
    pg_conv_args a;
    int64_t ws[4];
    int want_db;
    if (!PyArg_ParseTuple(args, "O!O!(LLLL)" GEOM_FMT "p:_conv2d_weight_backward",
                          &PyTensor_Type, &dy, &PyTensor_Type, &x, &ws[0], &ws[1], &ws[2], &ws[3],
                          GEOM_ARGS(a), &want_db))
        return NULL;
    pg_tensor dw, db;
    pg_status st = PG_CALL(on_cpu(T(dy)),
                           pg_op_conv2d_weight_backward(T(dy), T(x), ws, &a, want_db, &dw, &db));
    if (st != PG_OK)
        return pg_raise(st);
    return pair(&dw, &db);
}

/* _pool2d(kind, x, (kh, kw), (sh, sw), (ph, pw), (dh, dw), (oh, ow), count_include_pad,
 *         divisor, want_idx) -> (y, idx | None); kind a forward POOL row's ID ("MAX_FWD") */
static PyObject *f_pool2d(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *x;
    const char *id;
    int kind, cip, want_idx;
    int64_t k[2], s[2], p[2], d[2], o[2], div;
    if (!PyArg_ParseTuple(args, "sO!(LL)(LL)(LL)(LL)(LL)pLp:_pool2d", &id, &PyTensor_Type, &x,
                          &k[0], &k[1], &s[0], &s[1], &p[0], &p[1], &d[0], &d[1], &o[0], &o[1],
                          &cip, &div, &want_idx) ||
        (kind = pg_subop_arg("_pool2d", PG_OP_POOL, 0, id)) < 0)
        return NULL;
    pg_tensor y, idx;
    pg_status st = PG_CALL(on_cpu(T(x)),
                           pg_op_pool2d(kind, T(x), k, s, p, d, o, cip, div, want_idx, &y, &idx));
    if (st != PG_OK)
        return pg_raise(st);
    return pair(&y, &idx);
}

/* _pool2d_backward(kind, dy, idx | None, x_shape, (kh, kw), (sh, sw), (ph, pw),
 *                  count_include_pad, divisor) -> dx; kind a POOL gradient row's ID ("MAX_BWD") */
static PyObject *f_pool2d_backward(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *dy, *io;
    const char *id;
    int kind, cip;
    int64_t xs[4], k[2], s[2], p[2], div;
    const pg_tensor *idx;
    if (!PyArg_ParseTuple(args, "sO!O(LLLL)(LL)(LL)(LL)pL:_pool2d_backward", &id,
                          &PyTensor_Type, &dy, &io, &xs[0], &xs[1], &xs[2], &xs[3], &k[0], &k[1],
                          &s[0], &s[1], &p[0], &p[1], &cip, &div) ||
        opt(io, "indices", &idx) < 0 ||
        (kind = pg_subop_arg("_pool2d_backward", PG_OP_POOL, PG_SUBF_BWD, id)) < 0)
        return NULL;
    pg_tensor dx;
    pg_status st = PG_CALL(on_cpu(T(dy)),
                           pg_op_pool2d_backward(kind, T(dy), idx, xs, k, s, p, cip, div, &dx));
    return pg_wrap_result(st, &dx);
}

/* _batch_norm_train(x, w | None, b | None, running_mean | None, running_var | None,
 *                   momentum, eps[, relu]) -> (y, save) */
static PyObject *f_batch_norm_train(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *x, *wo, *bo, *mo, *vo;
    double momentum, eps;
    int relu = 0;
    const pg_tensor *w, *b, *rm, *rv;
    if (!PyArg_ParseTuple(args, "O!OOOOdd|p:_batch_norm_train", &PyTensor_Type, &x, &wo, &bo, &mo,
                          &vo, &momentum, &eps, &relu) ||
        opt(wo, "weight", &w) < 0 || opt(bo, "bias", &b) < 0 || opt(mo, "running_mean", &rm) < 0 ||
        opt(vo, "running_var", &rv) < 0)
        return NULL;
    pg_tensor y, save;
    pg_status st = PG_CALL(on_cpu(T(x)),
                           pg_op_batch_norm_train(T(x), w, b, rm, rv, momentum, eps, relu, &y,
                                                  &save));
    if (st != PG_OK)
        return pg_raise(st);
    return pair(&y, &save);
}

/* _batch_norm_eval(x, w | None, b | None, running_mean, running_var, eps, act) -> y; act: 0,
 * 1 (ReLU) or 2 (ReLU6) fused after it (pg_ops_conv.h's PG_BN_F_*); no gradient */
static PyObject *f_batch_norm_eval(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *x, *wo, *bo, *mo, *vo;
    double eps;
    int act;
    const pg_tensor *w, *b, *rm, *rv;
    if (!PyArg_ParseTuple(args, "O!OOOOdi:_batch_norm_eval", &PyTensor_Type, &x, &wo, &bo, &mo,
                          &vo, &eps, &act) ||
        opt(wo, "weight", &w) < 0 || opt(bo, "bias", &b) < 0 || opt(mo, "running_mean", &rm) < 0 ||
        opt(vo, "running_var", &rv) < 0)
        return NULL;
    pg_tensor y;
    pg_status st = PG_CALL(on_cpu(T(x)), pg_op_batch_norm_eval(T(x), w, b, rm, rv, eps, act, &y));
    return pg_wrap_result(st, &y);
}

/* _batch_norm_backward(dy, x, w | None, save, want_dw, want_db[, y | None]) -> (dx, dw | None,
 * db | None); y: the output of a forward with a fused ReLU */
static PyObject *f_batch_norm_backward(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *dy, *x, *wo, *save, *yo = Py_None;
    int want_dw, want_db;
    const pg_tensor *w, *y;
    if (!PyArg_ParseTuple(args, "O!O!OO!pp|O:_batch_norm_backward", &PyTensor_Type, &dy,
                          &PyTensor_Type, &x, &wo, &PyTensor_Type, &save, &want_dw, &want_db,
                          &yo) ||
        opt(wo, "weight", &w) < 0 || opt(yo, "output", &y) < 0)
        return NULL;
    pg_tensor dx, dw, db;
    pg_status st = PG_CALL(on_cpu(T(x)), pg_op_batch_norm_backward(T(dy), T(x), w, T(save), y,
                                                                   want_dw, want_db, &dx, &dw, &db));
    if (st != PG_OK)
        return pg_raise(st);
    PyObject *a = pg_wrap(&dx), *rest = a ? pair(&dw, &db) : NULL;
    if (!rest) {
        Py_XDECREF(a);
        if (!a) {
            if (dw.storage)
                pg_tensor_clear(&dw);
            if (db.storage)
                pg_tensor_clear(&db);
        }
        return NULL;
    }
    PyObject *out = Py_BuildValue("(NOO)", a, PyTuple_GET_ITEM(rest, 0), PyTuple_GET_ITEM(rest, 1));
    Py_DECREF(rest);
    return out;
}

/* _cpu_dnnl_offer(paths): the libdnnl paths ("\n"-separated) the first CONV node tries */
static PyObject *f_cpu_dnnl_offer(PyObject *mod, PyObject *paths)
{
    (void)mod;
    const char *s = PyUnicode_AsUTF8(paths);
    if (!s)
        return NULL;
    pg_cpu_dnnl_offer(s);
    Py_RETURN_NONE;
}

/* _cpu_dnnl_info() -> (version | None, why not | None, CONV nodes it ran); loads oneDNN if not
 * tried yet */
static PyObject *f_cpu_dnnl_info(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    char buf[32];
    const char *v, *why;
    Py_BEGIN_ALLOW_THREADS v = pg_cpu_dnnl_version(buf, sizeof buf);
    why = pg_cpu_dnnl_why();
    Py_END_ALLOW_THREADS return Py_BuildValue("(zzK)", v, why,
                                              (unsigned long long)pg_cpu_dnnl_calls());
}

/* _cpu_conv_mode(name | None) -> the mode before ("auto", "own", "dnnl") */
static PyObject *f_cpu_conv_mode(PyObject *mod, PyObject *name)
{
    (void)mod;
    PyObject *before = PyUnicode_FromString(pg_cpu_conv_mode_name(pg_cpu_conv_mode()));
    if (!before || name == Py_None)
        return before;
    const char *s = PyUnicode_AsUTF8(name);
    if (!s || pg_cpu_conv_set_mode(s) < 0) {
        if (s)
            PyErr_Format(PyExc_ValueError, "conv path must be 'auto', 'own' or 'dnnl', got '%s'", s);
        Py_DECREF(before);
        return NULL;
    }
    return before;
}

/* _cpu_conv_path(which, C, H*W, kh, kw, geom, float32, bias) -> ("dnnl" | "own", why); which:
 * 0 forward, 1 input gradient, 2 weight gradient; C and H*W: x's channels and plane */
static PyObject *f_cpu_conv_path(PyObject *mod, PyObject *args)
{
    (void)mod;
    static const int subops[3] = {PG_CONV_FWD, PG_CONV_BWD_DATA, PG_CONV_BWD_WEIGHT};
    int which, f32, bias;
    long long C, HW, kh, kw;
    pg_conv_args a;
    if (!PyArg_ParseTuple(args, "iLLLL" GEOM_FMT "pp", &which, &C, &HW, &kh, &kw, GEOM_ARGS(a),
                          &f32, &bias))
        return NULL;
    if (which < 0 || which > 2) {
        PyErr_SetString(PyExc_ValueError, "which must be 0, 1 or 2");
        return NULL;
    }
    pg_conv_geom g = {.kh = (int32_t)kh, .kw = (int32_t)kw, .sh = (int32_t)a.stride[0],
                      .sw = (int32_t)a.stride[1], .ph = (int32_t)a.pad_before[0],
                      .pw = (int32_t)a.pad_before[1], .dh = (int32_t)a.dilation[0],
                      .dw = (int32_t)a.dilation[1], .groups = (int32_t)a.groups};
    const char *why;
    bool dnnl;
    Py_BEGIN_ALLOW_THREADS dnnl = pg_cpu_conv_path(subops[which], C, HW, &g,
                                                   f32 ? PG_FLOAT32 : PG_FLOAT64, bias, &why);
    Py_END_ALLOW_THREADS return Py_BuildValue("(ss)", dnnl ? "dnnl" : "own", why);
}

PyMethodDef pg_conv_functions[] = {
    {"_cpu_dnnl_offer", f_cpu_dnnl_offer, METH_O, "internal: the libdnnl paths the first CPU convolution tries"},
    {"_cpu_dnnl_info", f_cpu_dnnl_info, METH_NOARGS, "internal: (oneDNN's version | None, why not | None, CONV nodes it ran)"},
    {"_cpu_conv_mode", f_cpu_conv_mode, METH_O, "internal: set the CPU convolutions' path (auto, own, dnnl; None: keep) -> the one before"},
    {"_cpu_conv_path", f_cpu_conv_path, METH_VARARGS, "internal: (path, why) of a CPU convolution's shape"},
    {"_conv2d", f_conv2d, METH_VARARGS, "internal: 2-d convolution in one node"},
    {"_conv2d_input_backward", f_conv2d_input_backward, METH_VARARGS, "internal: conv2d's input gradient (and ConvTranspose's forward)"},
    {"_conv2d_weight_backward", f_conv2d_weight_backward, METH_VARARGS, "internal: conv2d's weight and bias gradients"},
    {"_pool2d", f_pool2d, METH_VARARGS, "internal: 2-d max/average/adaptive pooling -> (y, indices)"},
    {"_pool2d_backward", f_pool2d_backward, METH_VARARGS, "internal: 2-d pooling's input gradient"},
    {"_batch_norm_train", f_batch_norm_train, METH_VARARGS, "internal: batch norm with the batch's statistics -> (y, saved mean and rstd)"},
    {"_batch_norm_eval", f_batch_norm_eval, METH_VARARGS, "internal: batch norm with the running statistics, no gradient, a ReLU (1) or ReLU6 (2) fused -> y"},
    {"_batch_norm_backward", f_batch_norm_backward, METH_VARARGS, "internal: batch norm's gradients -> (dx, dw, db)"},
    {NULL, NULL, 0, NULL},
};
