/* transfer_trace.c - the per-transfer callback behind pygpu.track(call_sites=True).
 *
 * The always-on counters (pg_stats.c) say how much crossed the link; explain()
 * also needs *where* each transfer came from and *whether the same bytes crossed
 * before* (round trips). That costs a Python call per transfer, so it is off
 * unless asked for: _set_transfer_callback(cb) installs a C hook in the core
 * (pg_stats_set_transfer_hook), which takes the GIL, hashes the host-side bytes
 * and calls cb(src, dst, nbytes, seconds, link_seconds, pinned, async, trigger,
 * hash, ops) (ops: accelerator ops launched so far, which separates requests). The
 * Python side (pygpu/_trace.py) finds the call site from the calling frame. */
#include "tensor_object.h"

#include <string.h>

const char *pg_implicit_name(int reason);

static PyObject *g_callback; /* owned; touched only with the GIL held */

/* A content hash, not a cryptographic one: 64-bit words mixed with a multiply
 * and a rotate, ~several GB/s; equal bytes give equal hashes, which is all
 * round-trip detection needs (a collision would only flag a false round trip). */
static uint64_t content_hash(const void *p, uint64_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h = (h << 29) | (h >> 35);
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static void transfer_hook(const pg_transfer_event *ev)
{
    PyGILState_STATE gs = PyGILState_Ensure();
    PyObject *cb = g_callback ? Py_NewRef(g_callback) : NULL;
    if (cb) {
        char a[32], b[32];
        uint64_t h = 0;
        if (ev->host)
            h = content_hash(ev->host, ev->bytes);
        PyObject *hash = ev->host ? PyLong_FromUnsignedLongLong(h) : Py_NewRef(Py_None);
        PyObject *r = hash ? PyObject_CallFunction(
                                 cb, "ssKddOOsOK", pg_device_str(ev->src, a, sizeof a),
                                 pg_device_str(ev->dst, b, sizeof b), (unsigned long long)ev->bytes,
                                 ev->ns / 1e9, ev->link_ns / 1e9, ev->pinned ? Py_True : Py_False,
                                 ev->async ? Py_True : Py_False, pg_implicit_name(ev->implicit), hash,
                                 (unsigned long long)pg_stats_accel_ops())
                           : NULL;
        if (!r) /* a broken recorder must not turn a good transfer into a failure */
            PyErr_WriteUnraisable(cb);
        Py_XDECREF(r);
        Py_XDECREF(hash);
        Py_DECREF(cb);
    }
    PyGILState_Release(gs);
}

static PyObject *f_set_transfer_callback(PyObject *mod, PyObject *cb)
{
    (void)mod;
    if (cb != Py_None && !PyCallable_Check(cb)) {
        PyErr_SetString(PyExc_TypeError, "_set_transfer_callback: expected a callable or None");
        return NULL;
    }
    Py_XSETREF(g_callback, cb == Py_None ? NULL : Py_NewRef(cb));
    pg_stats_set_transfer_hook(g_callback ? transfer_hook : NULL);
    Py_RETURN_NONE;
}

PyMethodDef pg_trace_functions[] = {
    {"_set_transfer_callback", f_set_transfer_callback, METH_O,
     "internal: call cb(src, dst, nbytes, seconds, link_seconds, pinned, async, trigger, hash, "
     "ops) "
     "per transfer"},
    {NULL, NULL, 0, NULL},
};
