/* subops.c - the sub-op rows (csrc/core/pg_subops.def) for Python: _C._subop_table(), and
 * the one parser of a sub-op named by its row's ID, which every binding taking a sub-op
 * uses (_C._scatter("SCATTER_ADD", ...), _C._linalg("CHOLESKY", ...)): Python never
 * passes a sub-op's number, and an ID that is not a row of the kind is a ValueError
 * naming the kind's rows. */
#include "tensor_object.h"

#include <string.h>

/* The rows as the text of their columns: node kind, ID, name, then the kind's own. */
static const struct {
    const char *node, *id, *name, *cols;
    int code;
    unsigned flags;
} g_rows[] = {
#define PG_SUBOP(NODE, ID, name, flags, ...) {#NODE, #ID, name, #__VA_ARGS__, PG_##NODE##_##ID, flags},
#include "../core/pg_subops.def"
};

static const char *const g_flag_ids[] = {
#define PG_SUBOP_FLAG(ID, doc) #ID,
#include "../core/pg_subops.def"
};

int pg_subop_arg(const char *fn, int node, unsigned need, const char *id)
{
    int s = pg_subop_find(node, id);
    if (s >= 0 && (pg_subop_flags(s) & need) == need)
        return s;
    char ids[512] = "";
    const char *kind = "?";
    for (size_t i = 0; i < sizeof g_rows / sizeof *g_rows; i++) {
        if (pg_subop_node(g_rows[i].code) != node)
            continue;
        kind = g_rows[i].node;
        if ((g_rows[i].flags & need) != need)
            continue;
        size_t len = strlen(ids);
        snprintf(ids + len, sizeof ids - len, "%s%s", len ? ", " : "", g_rows[i].id);
    }
    PyErr_Format(PyExc_ValueError, "%s: %s is not one of its %s sub-ops (%s; the rows of "
                                   "csrc/core/pg_subops.def)", fn, id, kind, ids);
    return -1;
}

/* One column's text: a string literal (or adjacent ones) unquoted, anything else as written. */
static PyObject *column(const char *p, size_t n)
{
    while (n && (*p == ' ' || *p == '\n' || *p == '\t'))
        p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\n' || p[n - 1] == '\t'))
        n--;
    if (n == 0 || *p != '"')
        return PyUnicode_FromStringAndSize(p, (Py_ssize_t)n);
    char *buf = PyMem_Malloc(n + 1);
    if (!buf)
        return PyErr_NoMemory();
    size_t k = 0;
    int in = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '"') {
            in = !in;
            continue;
        }
        if (!in)
            continue; /* the spaces between adjacent literals */
        if (p[i] == '\\' && i + 1 < n)
            i++;
        buf[k++] = p[i];
    }
    PyObject *r = PyUnicode_FromStringAndSize(buf, (Py_ssize_t)k);
    PyMem_Free(buf);
    return r;
}

/* A row's own columns: its text cut at the commas outside parentheses and strings. */
static PyObject *columns(const char *text)
{
    PyObject *out = PyList_New(0);
    size_t start = 0, len = strlen(text);
    int depth = 0, in = 0;
    for (size_t i = 0; out && i <= len; i++) {
        char c = i < len ? text[i] : ',';
        if (in) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in = 0;
            continue;
        }
        if (c == '"')
            in = 1;
        else if (c == '(')
            depth++;
        else if (c == ')')
            depth--;
        else if (c == ',' && depth == 0) {
            if (i > start || i < len) {
                PyObject *col = column(text + start, i - start);
                if (!col || PyList_Append(out, col) < 0)
                    Py_CLEAR(out);
                Py_XDECREF(col);
            }
            start = i + 1;
        }
    }
    if (!out)
        return NULL; /* (a kind without columns of its own gets an empty tuple) */
    PyObject *t = PyList_AsTuple(out);
    Py_DECREF(out);
    return t;
}

/* _C._subop_table(): ((node, ID, name, code, flags, columns), ...), every PG_SUBOP row in
 * code order: flags a tuple of PG_SUBOP_FLAG IDs, columns the kind's own columns as text
 * (string literals unquoted). */
static PyObject *f_subop_table(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    const Py_ssize_t n = (Py_ssize_t)(sizeof g_rows / sizeof *g_rows);
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t && i < n; i++) {
        PyObject *flags = PyList_New(0);
        for (int b = 0; flags && b < PG_NUM_SUBOP_FLAGS; b++) {
            if (!(g_rows[i].flags & (1u << b)))
                continue;
            PyObject *f = PyUnicode_FromString(g_flag_ids[b]);
            if (!f || PyList_Append(flags, f) < 0)
                Py_CLEAR(flags);
            Py_XDECREF(f);
        }
        PyObject *ftuple = flags ? PyList_AsTuple(flags) : NULL;
        Py_XDECREF(flags);
        PyObject *cols = ftuple ? columns(g_rows[i].cols) : NULL;
        if (!cols)
            Py_XDECREF(ftuple);
        /* "N" hands both over, also when the tuple cannot be built */
        PyObject *row = cols ? Py_BuildValue("(sssiNN)", g_rows[i].node, g_rows[i].id,
                                             g_rows[i].name, g_rows[i].code, ftuple, cols)
                             : NULL;
        if (!row) {
            Py_CLEAR(t);
        } else {
            PyTuple_SET_ITEM(t, i, row);
        }
    }
    return t;
}

PyMethodDef pg_subop_functions[] = {
    {"_subop_table", f_subop_table, METH_NOARGS, "internal: the sub-op rows (csrc/core/pg_subops.def): ((node, ID, name, code, flags, columns), ...)"},
    {NULL, NULL, 0, NULL},
};
