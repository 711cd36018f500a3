/* graph.c - pygpu._C's entry points for the core's node graph (csrc/core/pg_graph.h),
 * behind pygpu.cpu.graph / pygpu.sim.graph (pygpu/_graphs.py). A graph is a capsule whose
 * destructor drops what it holds; replay runs the recorded nodes with the GIL released. */
#include "tensor_object.h"

#include "../core/pg_graph.h"

#define GRAPH_CAPSULE "pygpu._C.node_graph"

static void graph_capsule_free(PyObject *cap)
{
    pg_graph_free(PyCapsule_GetPointer(cap, GRAPH_CAPSULE));
}

static pg_graph *graph_arg(PyObject *o)
{
    return PyCapsule_GetPointer(o, GRAPH_CAPSULE); /* NULL with a TypeError/ValueError set */
}

static PyObject *f_graph_create(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    pg_graph *g;
    pg_status st = pg_graph_new(&g);
    if (st != PG_OK)
        return pg_raise(st);
    PyObject *cap = PyCapsule_New(g, GRAPH_CAPSULE, graph_capsule_free);
    if (cap == NULL)
        pg_graph_free(g);
    return cap;
}

static PyObject *f_graph_capture_begin(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *h;
    pg_device d;
    if (!PyArg_ParseTuple(args, "Oii", &h, &d.type, &d.index) || pg_check_device(d) < 0)
        return NULL;
    pg_graph *g = graph_arg(h);
    if (g == NULL)
        return NULL;
    pg_status st = pg_graph_capture_begin(g, d);
    return st == PG_OK ? Py_NewRef(Py_None) : pg_raise(st);
}

static PyObject *f_graph_capture_end(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *h;
    int keep;
    if (!PyArg_ParseTuple(args, "Op", &h, &keep))
        return NULL;
    pg_graph *g = graph_arg(h);
    if (g == NULL)
        return NULL;
    pg_status st = pg_graph_capture_end(g, keep);
    return st == PG_OK ? Py_NewRef(Py_None) : pg_raise(st);
}

static PyObject *f_graph_probe_begin(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *h;
    pg_device d;
    if (!PyArg_ParseTuple(args, "Oii", &h, &d.type, &d.index) || pg_check_device(d) < 0)
        return NULL;
    pg_graph *g = graph_arg(h);
    if (g == NULL)
        return NULL;
    pg_status st = pg_graph_probe_begin(g, d);
    return st == PG_OK ? Py_NewRef(Py_None) : pg_raise(st);
}

static PyObject *f_graph_probe_end(PyObject *mod, PyObject *h)
{
    (void)mod;
    pg_graph *g = graph_arg(h);
    if (g == NULL)
        return NULL;
    const char *why = pg_graph_probe_end(g);
    return why ? PyUnicode_FromString(why) : Py_NewRef(Py_None);
}

static PyObject *f_graph_replay(PyObject *mod, PyObject *h)
{
    (void)mod;
    pg_graph *g = graph_arg(h);
    if (g == NULL)
        return NULL;
    pg_status st;
    Py_BEGIN_ALLOW_THREADS st = pg_graph_replay(g);
    Py_END_ALLOW_THREADS
    return st == PG_OK ? Py_NewRef(Py_None) : pg_raise(st);
}

static PyObject *f_graph_reset(PyObject *mod, PyObject *h)
{
    (void)mod;
    pg_graph *g = graph_arg(h);
    if (g == NULL)
        return NULL;
    pg_status st = pg_graph_reset(g);
    return st == PG_OK ? Py_NewRef(Py_None) : pg_raise(st);
}

static PyObject *f_graph_ops(PyObject *mod, PyObject *h)
{
    (void)mod;
    pg_graph *g = graph_arg(h);
    return g == NULL ? NULL : PyLong_FromLong(pg_graph_node_count(g));
}

static PyObject *f_graph_capturing(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    return PyBool_FromLong(pg_graph_capturing());
}

PyMethodDef pg_graph_functions[] = {
    {"_graph_create", f_graph_create, METH_NOARGS, "internal: a new node graph (cpu, sim)"},
    {"_graph_capture_begin", f_graph_capture_begin, METH_VARARGS,
     "internal: (graph, device type, index): this thread's nodes go into the graph"},
    {"_graph_capture_end", f_graph_capture_end, METH_VARARGS,
     "internal: (graph, keep): end this thread's capture (keep False drops it)"},
    {"_graph_probe_begin", f_graph_probe_begin, METH_VARARGS,
     "internal: (graph, device type, index): this thread's nodes run, and what a capture "
     "would refuse is noted"},
    {"_graph_probe_end", f_graph_probe_end, METH_O,
     "internal: end the probe: the first reason a capture would fail, or None"},
    {"_graph_replay", f_graph_replay, METH_O, "internal: run the recorded nodes again"},
    {"_graph_reset", f_graph_reset, METH_O, "internal: drop the capture"},
    {"_graph_ops", f_graph_ops, METH_O, "internal: how many nodes the graph holds"},
    {"_graph_capturing", f_graph_capturing, METH_NOARGS,
     "internal: whether this thread is capturing into a node graph"},
    {NULL, NULL, 0, NULL},
};
