/* train.c - pygpu._C's fused training ops: _linear_fwd, _linear_bwd,
 * _softmax_xent_fwd, _softmax_xent_bwd, _layer_norm_rows,
 * _layer_norm_backward, _sgd_update, _adam_update, _optim_update.
 *
 * Internal entry points for pygpu/_ops/_train.py and pygpu/optim (which check
 * user-facing arguments and wire autograd); the core (pg_ops_train.c) still
 * validates everything. The GIL is released around each op on the cpu device
 * (large matmuls run there); on a device the call only queues work. */
#include "../core/pg_backend.h"
#include "tensor_object.h"

#define T(o) (&((PyTensor *)(o))->t)

static int opt_tensor(PyObject *o, const char *fn, const char *what, const pg_tensor **out)
{
    if (o == Py_None) {
        *out = NULL;
        return 0;
    }
    if (!PyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a pygpu.Tensor or None, got %.80s", fn,
                     what, Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = T(o);
    return 0;
}

static bool on_cpu(const pg_tensor *t) { return t->storage->device.type == PG_DEV_CPU; }

/* _linear_fwd(x, weight, bias | None, act[, mask | None]) -> y; mask: a pruned layer's,
 * multiplied in as the GEMM packs the weight (pg_op_linear_fwd_masked) */
static PyObject *f_linear_fwd(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *x, *w, *bo, *mo = Py_None;
    int act;
    const pg_tensor *b, *m;
    if (!PyArg_ParseTuple(args, "O!O!Oi|O:_linear_fwd", &PyTensor_Type, &x, &PyTensor_Type, &w,
                          &bo, &act, &mo) ||
        opt_tensor(bo, "linear", "bias", &b) < 0 || opt_tensor(mo, "linear", "mask", &m) < 0)
        return NULL;
    pg_tensor y;
    pg_status st = PG_CALL(on_cpu(T(x)), pg_op_linear_fwd_masked(T(x), T(w), m, b, act, &y));
    return pg_wrap_result(st, &y);
}

static PyObject *wrap_or_none(pg_tensor *t)
{
    if (!t->storage)
        Py_RETURN_NONE;
    return pg_wrap(t);
}

/* _linear_bwd(dy, x, weight, y | None, act, want_db, want_dx[, wgrad_f32[, mask | None]])
 * -> (dx | None, dW, db | None)
 * wgrad_f32: dW and db in float32 for half operands (autocast's linear); mask: a pruned
 * layer's (pg_op_linear_bwd_masked: dx through the masked weight, dW times the mask) */
static PyObject *f_linear_bwd(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *dy, *x, *w, *yo, *mo = Py_None;
    int act, want_db, want_dx, wgrad_f32 = 0;
    const pg_tensor *y, *m;
    if (!PyArg_ParseTuple(args, "O!O!O!Oipp|pO:_linear_bwd", &PyTensor_Type, &dy, &PyTensor_Type,
                          &x, &PyTensor_Type, &w, &yo, &act, &want_db, &want_dx, &wgrad_f32,
                          &mo) ||
        opt_tensor(yo, "linear_backward", "output", &y) < 0 ||
        opt_tensor(mo, "linear_backward", "mask", &m) < 0)
        return NULL;
    pg_tensor dx, dw, db;
    pg_status st = PG_CALL(on_cpu(T(dy)),
                           pg_op_linear_bwd_masked(T(dy), T(x), T(w), m, y, act, want_dx, want_db,
                                                   wgrad_f32, &dx, &dw, &db));
    if (st != PG_OK)
        return pg_raise(st);
    PyObject *a = wrap_or_none(&dx), *b = pg_wrap(&dw), *c = wrap_or_none(&db);
    if (!a || !b || !c) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(c);
        return NULL;
    }
    return Py_BuildValue("(NNN)", a, b, c);
}

/* _linear_mask_runs(t) -> whether linear's fused weight mask runs on t's device (pg_ops.h) */
static PyObject *f_linear_mask_runs(PyObject *mod, PyObject *t)
{
    (void)mod;
    if (!PyTensor_Check(t))
        return PyErr_Format(PyExc_TypeError, "_linear_mask_runs expects a pygpu.Tensor, got %.80s",
                            Py_TYPE(t)->tp_name);
    return PyBool_FromLong(pg_linear_mask_runs_on(pg_tensor_device(T(t))));
}

/* _softmax_rows(x, log=False) -> softmax (log: log_softmax) over x's last axis in one node;
 * pygpu/_ops/_softmax.py calls it where x's backend has the SOFTMAX node (_C._has_node) */
static PyObject *f_softmax_rows(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *x;
    int log = 0;
    if (!PyArg_ParseTuple(args, "O|p:_softmax_rows", &x, &log))
        return NULL;
    if (!PyTensor_Check(x))
        return PyErr_Format(PyExc_TypeError, "_softmax_rows expects a pygpu.Tensor, got %.80s",
                            Py_TYPE(x)->tp_name);
    pg_tensor y;
    pg_status st = pg_backend_check_op(pg_tensor_device(T(x)), PG_OP_SOFTMAX, T(x)->dtype,
                                       log ? "log_softmax" : "softmax");
    if (st == PG_OK)
        st = PG_CALL(on_cpu(T(x)), pg_op_softmax_rows(T(x), log != 0, &y));
    return pg_wrap_result(st, &y);
}

/* A tuple of n tensors, None for each empty one; each is wrapped or cleared. */
static PyObject *tensors_or_none(int n, pg_tensor *ts)
{
    PyObject *out = PyTuple_New(n);
    for (int i = 0; i < n; i++) {
        PyObject *o = NULL;
        if (out && ts[i].storage)
            o = pg_wrap(&ts[i]); /* clears ts[i] on failure */
        else if (ts[i].storage)
            pg_tensor_clear(&ts[i]);
        else if (out)
            o = (Py_INCREF(Py_None), Py_None);
        if (out && !o)
            Py_CLEAR(out);
        if (out)
            PyTuple_SET_ITEM(out, i, o);
    }
    return out;
}

/* _layer_norm_rows(x, weight | None, bias | None, eps[, save]) -> layer_norm over x's last
 * axis in one node; save: -> (y, the rows' mean and rstd (R, 2)) for _layer_norm_backward.
 * pygpu/_ops/_layer_norm.py calls it where x's backend has the LAYER_NORM node */
static PyObject *f_layer_norm_rows(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *x, *wo, *bo;
    double eps;
    int want_save = 0;
    const pg_tensor *w, *b;
    if (!PyArg_ParseTuple(args, "O!OOd|p:_layer_norm_rows", &PyTensor_Type, &x, &wo, &bo, &eps,
                          &want_save) ||
        opt_tensor(wo, "layer_norm", "weight", &w) < 0 ||
        opt_tensor(bo, "layer_norm", "bias", &b) < 0)
        return NULL;
    pg_tensor out[2];
    pg_status st = pg_backend_check_op(pg_tensor_device(T(x)), PG_OP_LAYER_NORM, T(x)->dtype,
                                       "layer_norm");
    if (st == PG_OK)
        st = PG_CALL(on_cpu(T(x)), pg_op_layer_norm_rows(T(x), w, b, eps, &out[0],
                                                         want_save ? &out[1] : NULL));
    if (!want_save || st != PG_OK)
        return pg_wrap_result(st, &out[0]);
    return tensors_or_none(2, out);
}

/* _layer_norm_backward(dy, x, weight | None, save, want_dw, want_db) -> (dx, dw | None,
 * db | None): one node, from _layer_norm_rows(..., save=True)'s statistics */
static PyObject *f_layer_norm_backward(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *dy, *x, *wo, *save;
    int want_dw, want_db;
    const pg_tensor *w;
    if (!PyArg_ParseTuple(args, "O!O!OO!pp:_layer_norm_backward", &PyTensor_Type, &dy,
                          &PyTensor_Type, &x, &wo, &PyTensor_Type, &save, &want_dw, &want_db) ||
        opt_tensor(wo, "layer_norm_backward", "weight", &w) < 0)
        return NULL;
    pg_tensor out[3];
    pg_status st = PG_CALL(on_cpu(T(x)),
                           pg_op_layer_norm_backward(T(dy), T(x), w, T(save), want_dw != 0,
                                                     want_db != 0, &out[0], &out[1], &out[2]));
    if (st != PG_OK)
        return pg_raise(st);
    return tensors_or_none(3, out);
}

/* _softmax_xent_fwd(logits, labels, mean) -> (loss, probs) */
static PyObject *f_xent_fwd(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *x, *l;
    int mean;
    if (!PyArg_ParseTuple(args, "O!O!p:_softmax_xent_fwd", &PyTensor_Type, &x, &PyTensor_Type, &l,
                          &mean))
        return NULL;
    pg_tensor loss, probs;
    pg_status st = PG_CALL(on_cpu(T(x)), pg_op_xent_fwd(T(x), T(l), mean, &loss, &probs));
    if (st != PG_OK)
        return pg_raise(st);
    PyObject *a = pg_wrap(&loss), *b = pg_wrap(&probs);
    if (!a || !b) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
}

/* _softmax_xent_bwd(probs, labels, gloss, mean) -> dlogits */
static PyObject *f_xent_bwd(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *p, *l, *g;
    int mean;
    if (!PyArg_ParseTuple(args, "O!O!O!p:_softmax_xent_bwd", &PyTensor_Type, &p, &PyTensor_Type,
                          &l, &PyTensor_Type, &g, &mean))
        return NULL;
    pg_tensor out;
    pg_status st = PG_CALL(on_cpu(T(p)), pg_op_xent_bwd(T(p), T(l), T(g), mean, &out));
    return pg_wrap_result(st, &out);
}

/* _sgd_update(p, grad, buf | None, lr, momentum, dampening, weight_decay, nesterov, first) */
static PyObject *f_sgd(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *p, *g, *bo;
    double lr, mom, damp, wd;
    int nesterov, first;
    const pg_tensor *buf;
    if (!PyArg_ParseTuple(args, "O!O!Oddddpp:_sgd_update", &PyTensor_Type, &p, &PyTensor_Type, &g,
                          &bo, &lr, &mom, &damp, &wd, &nesterov, &first) ||
        opt_tensor(bo, "sgd", "momentum buffer", &buf) < 0)
        return NULL;
    pg_status st = PG_CALL(on_cpu(T(p)) && pg_heavy(T(p)),
                           pg_op_sgd(T(p), T(g), buf, lr, mom, damp, wd, nesterov, first));
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

/* _adam_update(p, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step) */
static PyObject *f_adam(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *p, *g, *m, *v;
    double lr, b1, b2, eps, wd;
    long long step;
    if (!PyArg_ParseTuple(args, "O!O!O!O!dddddL:_adam_update", &PyTensor_Type, &p, &PyTensor_Type,
                          &g, &PyTensor_Type, &m, &PyTensor_Type, &v, &lr, &b1, &b2, &eps, &wd,
                          &step))
        return NULL;
    pg_status st = PG_CALL(on_cpu(T(p)) && pg_heavy(T(p)),
                           pg_op_adam(T(p), T(g), T(m), T(v), lr, b1, b2, eps, wd, step));
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

/* _optim_update(kind, p, grad, s0 | None, s1 | None, s2 | None, (h0..h4), step, flag0, flag1):
 * one in-place step of an adaptive optimizer (pg_op_optim; kind: a PG_OPTIM row's name) */
static PyObject *f_optim(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *p, *g, *so[3];
    const char *kind;
    int flag0, flag1;
    double h[5];
    long long step;
    const pg_tensor *s[3];
    if (!PyArg_ParseTuple(args, "sO!O!OOO(ddddd)Lpp:_optim_update", &kind, &PyTensor_Type, &p,
                          &PyTensor_Type, &g, &so[0], &so[1], &so[2], &h[0], &h[1], &h[2], &h[3],
                          &h[4], &step, &flag0, &flag1))
        return NULL;
    for (int k = 0; k < 3; k++)
        if (opt_tensor(so[k], "optimizer update", "state", &s[k]) < 0)
            return NULL;
    pg_status st = PG_CALL(on_cpu(T(p)) && pg_heavy(T(p)),
                           pg_op_optim(kind, T(p), T(g), s, h, step, flag0, flag1));
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

/* _optim_multi(kind, params, grads, s0, s1, s2, (h0..h4), step, flag0, flag1): the updates of
 * a list of parameters of one device and dtype as ONE node (pg_op_optim_multi; kind "sgd" or
 * a PG_OPTIM row's name); params and grads: equal-length sequences of Tensors; s0..s2: None
 * or a sequence of the same length of Tensors or None (parameter i's state slots). */
static PyObject *f_optim_multi(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *po, *go, *so[3];
    const char *kind;
    int flag0, flag1;
    double h[5];
    long long step;
    if (!PyArg_ParseTuple(args, "sOOOOO(ddddd)Lpp:_optim_multi", &kind, &po, &go, &so[0], &so[1],
                          &so[2], &h[0], &h[1], &h[2], &h[3], &h[4], &step, &flag0, &flag1))
        return NULL;
    PyObject *ps = PySequence_Fast(po, "_optim_multi: params must be a sequence of Tensors");
    PyObject *gs = ps ? PySequence_Fast(go, "_optim_multi: grads must be a sequence of Tensors") : NULL;
    PyObject *ss[3] = {NULL, NULL, NULL};
    const pg_tensor **t = NULL;
    PyObject *ret = NULL;
    if (!gs)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(ps);
    if (PySequence_Fast_GET_SIZE(gs) != n || n > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "_optim_multi: %zd params but %zd grads", n,
                     PySequence_Fast_GET_SIZE(gs));
        goto done;
    }
    for (int k = 0; k < 3; k++) {
        if (so[k] == Py_None)
            continue;
        ss[k] = PySequence_Fast(so[k], "_optim_multi: a state must be None or a sequence");
        if (!ss[k])
            goto done;
        if (PySequence_Fast_GET_SIZE(ss[k]) != n) {
            PyErr_Format(PyExc_ValueError, "_optim_multi: %zd params but %zd states in slot %d",
                         n, PySequence_Fast_GET_SIZE(ss[k]), k);
            goto done;
        }
    }
    /* p[0..n), g[0..n), then state[3i + k] */
    t = PyMem_Calloc((size_t)(5 * n + 1), sizeof *t);
    if (!t) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PySequence_Fast_GET_ITEM(ps, i), *g = PySequence_Fast_GET_ITEM(gs, i);
        if (!PyTensor_Check(p) || !PyTensor_Check(g)) {
            PyErr_Format(PyExc_TypeError, "_optim_multi: params and grads must be Tensors");
            goto done;
        }
        t[i] = T(p);
        t[n + i] = T(g);
        for (int k = 0; k < 3; k++)
            if (ss[k] && opt_tensor(PySequence_Fast_GET_ITEM(ss[k], i), "optimizer update",
                                    "state", &t[2 * n + 3 * i + k]) < 0)
                goto done;
    }
    pg_status st = n == 0 ? PG_OK
                          : PG_CALL(on_cpu(t[0]), pg_op_optim_multi(kind, (int)n, t, t + n, t + 2 * n,
                                                                    h, step, flag0, flag1));
    if (st != PG_OK)
        pg_raise(st);
    else
        ret = Py_NewRef(Py_None);
done:
    PyMem_Free(t);
    for (int k = 0; k < 3; k++)
        Py_XDECREF(ss[k]);
    Py_XDECREF(gs);
    Py_XDECREF(ps);
    return ret;
}

/* The Tensors of a sequence, as a new PyMem array of n (the sequence object kept in *fast). */
static const pg_tensor **tensor_array(PyObject *seq, const char *fn, PyObject **fast, Py_ssize_t *n)
{
    *fast = PySequence_Fast(seq, "expected a sequence of Tensors");
    if (!*fast)
        return NULL;
    *n = PySequence_Fast_GET_SIZE(*fast);
    const pg_tensor **t = PyMem_Calloc((size_t)*n + 1, sizeof *t);
    if (!t) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(*fast, i);
        if (!PyTensor_Check(o)) {
            PyErr_Format(PyExc_TypeError, "%s: expected a sequence of Tensors, item %zd is %s", fn,
                         i, Py_TYPE(o)->tp_name);
            PyMem_Free(t);
            return NULL;
        }
        t[i] = T(o);
    }
    return t;
}

/* _multi_norm(tensors, norm_type) -> 0-d Tensor: the norm of them all, ONE node */
static PyObject *f_multi_norm(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *seq, *fast = NULL;
    double p;
    Py_ssize_t n = 0;
    if (!PyArg_ParseTuple(args, "Od:_multi_norm", &seq, &p))
        return NULL;
    const pg_tensor **t = tensor_array(seq, "_multi_norm", &fast, &n);
    PyObject *ret = NULL;
    if (t) {
        pg_tensor out;
        pg_status st = PG_CALL(n > 0 && on_cpu(t[0]), pg_op_multi_norm((int)n, t, p, &out));
        ret = pg_wrap_result(st, &out);
    }
    PyMem_Free(t);
    Py_XDECREF(fast);
    return ret;
}

/* _foreach_binary_(name, tensors, s): x = x <name> s in place for each x (a PG_BINARY row's
 * name: "multiply", "add", ...), s a one-element Tensor; ONE node */
static PyObject *f_foreach_binary(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *name;
    PyObject *seq, *s, *fast = NULL;
    Py_ssize_t n = 0;
    if (!PyArg_ParseTuple(args, "sOO!:_foreach_binary_", &name, &seq, &PyTensor_Type, &s))
        return NULL;
    int bop = -1;
    for (int k = 0; k < PG_NUM_BINARY && bop < 0; k++)
        if (strcmp(pg_binary_name(k), name) == 0)
            bop = k;
    if (bop < 0)
        return PyErr_Format(PyExc_ValueError, "_foreach_binary_: no binary op named %s", name);
    const pg_tensor **t = tensor_array(seq, "_foreach_binary_", &fast, &n);
    PyObject *ret = NULL;
    if (t) {
        pg_status st = PG_CALL(n > 0 && on_cpu(t[0]), pg_op_foreach_binary_(bop, (int)n, t, T(s)));
        ret = st == PG_OK ? Py_NewRef(Py_None) : pg_raise(st);
    }
    PyMem_Free(t);
    Py_XDECREF(fast);
    return ret;
}

PyMethodDef pg_train_functions[] = {
    {"_linear_fwd", f_linear_fwd, METH_VARARGS, "internal: fused act(x @ W.T + b)"},
    {"_linear_bwd", f_linear_bwd, METH_VARARGS, "internal: fused linear backward -> (dx, dW, db)"},
    {"_softmax_rows", f_softmax_rows, METH_VARARGS, "internal: softmax (log=True: log_softmax) over the last axis in one node"},
    {"_linear_mask_runs", f_linear_mask_runs, METH_O, "internal: whether linear's fused weight mask runs on the tensor's device"},
    {"_layer_norm_rows", f_layer_norm_rows, METH_VARARGS, "internal: layer_norm over the last axis in one node (save: -> (y, mean and rstd per row))"},
    {"_layer_norm_backward", f_layer_norm_backward, METH_VARARGS, "internal: layer_norm's gradients from the saved statistics -> (dx, dw, db)"},
    {"_softmax_xent_fwd", f_xent_fwd, METH_VARARGS, "internal: fused softmax cross-entropy -> (loss, probs)"},
    {"_softmax_xent_bwd", f_xent_bwd, METH_VARARGS, "internal: fused softmax cross-entropy backward"},
    {"_sgd_update", f_sgd, METH_VARARGS, "internal: one fused in-place SGD step of a parameter"},
    {"_adam_update", f_adam, METH_VARARGS, "internal: one fused in-place Adam step of a parameter"},
    {"_optim_update", f_optim, METH_VARARGS, "internal: one fused in-place step of Adam(W), RMSprop, Adagrad or Adadelta"},
    {"_multi_norm", f_multi_norm, METH_VARARGS, "internal: the norm of a list of tensors together (one MULTI_NORM node)"},
    {"_foreach_binary_", f_foreach_binary, METH_VARARGS, "internal: x = x <op> s in place for a list of tensors (one MULTI node)"},
    {"_optim_multi", f_optim_multi, METH_VARARGS, "internal: the multi-tensor step of a list of parameters (one MULTI node)"},
    {NULL, NULL, 0, NULL},
};
