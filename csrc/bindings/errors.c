/* errors.c - status codes to exceptions, and pygpu's own exception classes.
 *
 * The C core reports (status, message); this table decides the Python type.
 * Our classes subclass the builtin a user would already catch (RuntimeError
 * for device problems, as PyTorch raises; UserWarning for the guard's log). */
#include "errors.h"

PyObject *pg_exc_device_mismatch, *pg_exc_unavailable, *pg_exc_transfer_guard, *pg_exc_async,
    *pg_exc_axis, *pg_exc_nccl, *pg_warn_transfer;

static int add_exc(PyObject *m, PyObject **slot, const char *name, PyObject *base, const char *doc)
{
    char full[96];
    snprintf(full, sizeof full, "pygpu.%s", name);
    *slot = PyErr_NewExceptionWithDoc(full, doc, base, NULL);
    if (!*slot)
        return -1;
    Py_INCREF(*slot);
    return PyModule_AddObject(m, name, *slot);
}

/* AxisError is an IndexError and a ValueError, as NumPy's is, so code that
 * catches either (or numpy.exceptions.AxisError's bases) keeps working. */
static int add_axis_error(PyObject *m)
{
    PyObject *bases = PyTuple_Pack(2, PyExc_IndexError, PyExc_ValueError);
    if (!bases)
        return -1;
    int r = add_exc(m, &pg_exc_axis, "AxisError", bases,
                    "An axis number is out of range for the tensor's dimensions.");
    Py_DECREF(bases);
    return r;
}

int pg_errors_init(PyObject *m)
{
    if (add_exc(m, &pg_exc_device_mismatch, "DeviceMismatchError", PyExc_RuntimeError,
                "An op got tensors on different devices; move one with .to(device).") < 0 ||
        add_exc(m, &pg_exc_unavailable, "DeviceUnavailableError", PyExc_RuntimeError,
                "The device does not exist here or its backend cannot be used.") < 0 ||
        add_exc(m, &pg_exc_transfer_guard, "TransferGuardError", PyExc_RuntimeError,
                "An implicit host<->device transfer happened under transfer_guard('disallow').") < 0 ||
        add_exc(m, &pg_exc_async, "AsyncOpError", PyExc_RuntimeError,
                "An asynchronously executed op failed; raised at the next synchronization.") < 0 ||
        add_exc(m, &pg_exc_nccl, "NcclError", PyExc_RuntimeError,
                "An NCCL call failed or timed out; the communicator was aborted.") < 0 ||
        add_axis_error(m) < 0 ||
        add_exc(m, &pg_warn_transfer, "TransferWarning", PyExc_UserWarning,
                "An implicit host<->device transfer happened under transfer_guard('log').") < 0)
        return -1;
    return 0;
}

PyObject *pg_raise(pg_status st)
{
    PyObject *type;
    switch (st) {
    case PG_ERR_VALUE:
    case PG_ERR_SHAPE: type = PyExc_ValueError; break;
    case PG_ERR_TYPE:
    case PG_ERR_DTYPE: type = PyExc_TypeError; break;
    case PG_ERR_INDEX: type = PyExc_IndexError; break;
    case PG_ERR_DEVICE: type = pg_exc_device_mismatch; break;
    case PG_ERR_NOMEM: type = PyExc_MemoryError; break;
    case PG_ERR_UNAVAILABLE: type = pg_exc_unavailable; break;
    case PG_ERR_TRANSFER: type = pg_exc_transfer_guard; break;
    case PG_ERR_ASYNC: type = pg_exc_async; break;
    case PG_ERR_AXIS: type = pg_exc_axis; break;
    case PG_ERR_OVERFLOW: type = PyExc_OverflowError; break;
    case PG_ERR_COMM: type = pg_exc_nccl; break;
    default: type = PyExc_RuntimeError; break;
    }
    const char *msg = pg_error_message();
    PyErr_SetString(type, msg[0] ? msg : "pygpu: unknown error");
    return NULL;
}

int pg_raise_int(pg_status st)
{
    pg_raise(st);
    return -1;
}
