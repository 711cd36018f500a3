/* profile.c - pygpu._C's entry points for pygpu.profiler: start and stop the core's
 * recorder (csrc/core/pg_profile.h) and hand its events to Python as plain tuples,
 * which pygpu/profiler/ turns into torch.profiler's event objects. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>

#include "../core/pg_profile.h"
#include "../core/pg_stats.h"

static PyObject *f_profile_start(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    pg_profile_start();
    Py_RETURN_NONE;
}

static PyObject *f_profile_stop(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    pg_profile_stop();
    Py_RETURN_NONE;
}

static PyObject *operand(const pg_profile_operand *o)
{
    if (o->ndim < 0)
        Py_RETURN_NONE;
    PyObject *shape = PyTuple_New(o->ndim);
    if (!shape)
        return NULL;
    for (int d = 0; d < o->ndim; d++)
        PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(o->shape[d]));
    return Py_BuildValue("(iN)", (int)o->dtype, shape);
}

/* (id, kind, name, device type, device index, operands, host start, host end, device
 * start, device ns, h2d bytes, d2h bytes, thread, kernels launched, kernels) with each
 * operand (dtype code, shape) or None and each kernel (name, in type, out type, compute
 * type, start ns from the op's device start, ns, epilogue); times in ns, -1 where unknown */
static PyObject *event(const pg_profile_event *e)
{
    PyObject *ops = PyList_New(e->nops), *ks = PyList_New(e->nkernels);
    if (!ops || !ks)
        goto fail;
    for (int i = 0; i < e->nops; i++) {
        PyObject *o = operand(&e->ops[i]);
        if (!o)
            goto fail;
        PyList_SET_ITEM(ops, i, o);
    }
    for (int i = 0; i < e->nkernels; i++) {
        const pg_profile_kernel *k = &e->kernels[i];
        PyObject *t = Py_BuildValue("(siiiLLi)", k->name, k->in_type, k->out_type,
                                    k->compute_type, (long long)k->start_ns,
                                    (long long)k->dur_ns, k->epilogue);
        if (!t)
            goto fail;
        PyList_SET_ITEM(ks, i, t);
    }
    return Py_BuildValue("(KisiiNKKLLKKKiN)", (unsigned long long)e->id, e->kind, e->name,
                         e->dev.type, e->dev.index, ops, (unsigned long long)e->host_start_ns,
                         (unsigned long long)e->host_end_ns, (long long)e->device_start_ns,
                         (long long)e->device_ns, (unsigned long long)e->h2d_bytes,
                         (unsigned long long)e->d2h_bytes, (unsigned long long)e->thread,
                         e->kernels_seen, ks);
fail:
    Py_XDECREF(ops);
    Py_XDECREF(ks);
    return NULL;
}

static PyObject *f_profile_events(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    pg_profile_event *ev;
    int64_t n;
    uint64_t dropped;
    if (pg_profile_events(&ev, &n, &dropped) != 0)
        return PyErr_NoMemory();
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; list && i < n; i++) {
        PyObject *e = event(&ev[i]);
        if (!e) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, e);
    }
    free(ev);
    if (!list)
        return NULL;
    return Py_BuildValue("(NK)", list, (unsigned long long)dropped);
}

static PyObject *f_profile_now(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    return PyLong_FromUnsignedLongLong(pg_now_ns());
}

PyMethodDef pg_profile_functions[] = {
    {"_profile_start", f_profile_start, METH_NOARGS,
     "internal: start recording op, copy and kernel events (pygpu.profiler)"},
    {"_profile_stop", f_profile_stop, METH_NOARGS, "internal: stop recording"},
    {"_profile_events", f_profile_events, METH_NOARGS,
     "internal: (events, dropped) of the last recording, as tuples"},
    {"_profile_now", f_profile_now, METH_NOARGS,
     "internal: the recorder's clock (CLOCK_MONOTONIC ns)"},
    {NULL, NULL, 0, NULL},
};
