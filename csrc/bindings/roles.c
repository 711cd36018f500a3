/* roles.c - Python access to the per-role transfer counters (csrc/core/pg_stats_roles.h):
 * pygpu._stats.role("scatter") sets the calling thread's role around a block, and
 * stats().by_role reads the totals. */
#include "tensor_object.h"

#include "../core/pg_stats_roles.h"

static PyObject *f_role_set(PyObject *mod, PyObject *arg)
{
    (void)mod;
    long role = PyLong_AsLong(arg);
    if (role == -1 && PyErr_Occurred())
        return NULL;
    if (role < 0 || role >= PG_NUM_XFER_ROLES)
        return PyErr_Format(PyExc_ValueError, "transfer role %ld is out of range [0, %d)", role,
                            (int)PG_NUM_XFER_ROLES);
    return PyLong_FromLong(pg_stats_role_set((int)role));
}

/* (name, ...) of every role, in enum order. */
static PyObject *f_role_names(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    PyObject *t = PyTuple_New(PG_NUM_XFER_ROLES);
    for (int r = 0; t && r < PG_NUM_XFER_ROLES; r++) {
        PyObject *s = PyUnicode_FromString(pg_role_name(r));
        if (!s) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, r, s);
    }
    return t;
}

/* {role name: [(src, dst, count, bytes), ...]} for roles that moved anything. */
static PyObject *f_role_stats(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    pg_xfer_role_stats *s = PyMem_RawMalloc(sizeof *s);
    if (!s)
        return PyErr_NoMemory();
    pg_stats_role_snapshot(s);
    PyObject *out = PyDict_New();
    char a[24], b[24];
    for (int r = 1; out && r < PG_NUM_XFER_ROLES; r++) {
        PyObject *rows = PyList_New(0);
        if (!rows) {
            Py_CLEAR(out);
            break;
        }
        for (int i = 0; i < PG_NUM_SLOTS && rows; i++)
            for (int j = 0; j < PG_NUM_SLOTS; j++) {
                if (!s->count[r][i][j])
                    continue;
                PyObject *t = Py_BuildValue("(ssKK)", pg_device_str(pg_device_from_slot(i), a, sizeof a),
                                            pg_device_str(pg_device_from_slot(j), b, sizeof b),
                                            s->count[r][i][j], s->bytes[r][i][j]);
                if (!t || PyList_Append(rows, t) < 0) {
                    Py_XDECREF(t);
                    Py_CLEAR(rows);
                    break;
                }
                Py_DECREF(t);
            }
        if (!rows || PyDict_SetItemString(out, pg_role_name(r), rows) < 0)
            Py_CLEAR(out);
        Py_XDECREF(rows);
    }
    PyMem_RawFree(s);
    return out;
}

PyMethodDef pg_role_functions[] = {
    {"_role_set", f_role_set, METH_O, "internal: set this thread's transfer role, return the previous"},
    {"_role_names", f_role_names, METH_NOARGS, "internal: the transfer roles, in order"},
    {"_role_stats", f_role_stats, METH_NOARGS, "internal: per-role transfer counters"},
    {NULL, NULL, 0, NULL},
};
