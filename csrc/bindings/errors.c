/* errors.c - status codes to exceptions, and pygpu's own exception classes.
 *
 * The C core reports (status, message); the table below decides the Python type, the one
 * place this happens. PyTorch raises RuntimeError for shape, dtype, device and view errors,
 * IndexError for indices out of range and TypeError for arguments of the wrong kind;
 * pygpu's classes for the first two subclass both the builtin pygpu raised before and
 * PyTorch's, so that `except ValueError:` written for pygpu and `except RuntimeError:`
 * written for PyTorch both catch them (as NumPy's AxisError is an IndexError and a
 * ValueError). Device problems are RuntimeErrors, as PyTorch's are; UserWarning for the
 * guard's log. */
#include "errors.h"

PyObject *pg_exc_device_mismatch, *pg_exc_unavailable, *pg_exc_transfer_guard, *pg_exc_async,
    *pg_exc_accelerator, *pg_exc_out_of_memory,
    *pg_exc_async_index, *pg_exc_axis, *pg_exc_nccl, *pg_exc_shape, *pg_exc_dtype, *pg_exc_value,
    *pg_exc_index, *pg_warn_transfer;

/* One class per row: its slot, name, bases and what it means. */
typedef struct exc_row {
    PyObject **slot;
    const char *name;
    PyObject **bases[2]; /* the second may be NULL */
    const char *doc;
} exc_row;

static const exc_row g_classes[] = {
    {&pg_exc_device_mismatch, "DeviceMismatchError", {&PyExc_RuntimeError, NULL},
     "An op got tensors on different devices; move one with .to(device)."},
    {&pg_exc_unavailable, "DeviceUnavailableError", {&PyExc_RuntimeError, NULL},
     "The device does not exist here or its backend cannot be used."},
    {&pg_exc_transfer_guard, "TransferGuardError", {&PyExc_RuntimeError, NULL},
     "An implicit host<->device transfer happened under transfer_guard('disallow')."},
    {&pg_exc_accelerator, "AcceleratorError", {&PyExc_RuntimeError, NULL},
     "The accelerator reported an error (torch.AcceleratorError); pygpu's AsyncOpError, a "
     "fault of work already queued, is one."},
    {&pg_exc_out_of_memory, "OutOfMemoryError", {&PyExc_RuntimeError, &PyExc_MemoryError},
     "An allocation failed for want of memory (torch.OutOfMemoryError, a RuntimeError; a "
     "MemoryError too, as pygpu raised before)."},
    {&pg_exc_async, "AsyncOpError", {&pg_exc_accelerator, NULL},
     "An asynchronously executed op failed; raised at the next synchronization."},
    {&pg_exc_async_index, "AsyncIndexError", {&pg_exc_async, &PyExc_IndexError},
     "An asynchronously executed op met an index out of range (an index tensor's values live "
     "on the device); raised at the next synchronization. An AsyncOpError and an IndexError."},
    {&pg_exc_nccl, "NcclError", {&PyExc_RuntimeError, NULL},
     "An NCCL call failed or timed out; the communicator was aborted."},
    {&pg_exc_axis, "AxisError", {&PyExc_IndexError, &PyExc_ValueError},
     "An axis number is out of range for the tensor's dimensions."},
    {&pg_exc_shape, "ShapeError", {&PyExc_ValueError, &PyExc_RuntimeError},
     "Shapes that do not fit together (PyTorch's RuntimeError; a ValueError too, as pygpu "
     "raised before)."},
    {&pg_exc_dtype, "DTypeError", {&PyExc_TypeError, &PyExc_RuntimeError},
     "A dtype an op does not take (PyTorch's RuntimeError; a TypeError too, as pygpu raised "
     "before)."},
    {&pg_exc_value, "InvalidValueError", {&PyExc_ValueError, &PyExc_RuntimeError},
     "An argument's value an op refuses (PyTorch's RuntimeError; a ValueError too, as pygpu "
     "raised before)."},
    {&pg_exc_index, "IndexOutOfRangeError", {&PyExc_IndexError, &PyExc_RuntimeError},
     "An index value out of range (PyTorch's IndexError; gather and scatter raise "
     "RuntimeError in PyTorch, so a RuntimeError too)."},
    {&pg_warn_transfer, "TransferWarning", {&PyExc_UserWarning, NULL},
     "An implicit host<->device transfer happened under transfer_guard('log')."},
};

/* The exception of each status (PG_OK and unlisted ones: RuntimeError). */
static PyObject **const g_exc_of_status[PG_NUM_STATUS] = {
    [PG_ERR_VALUE] = &pg_exc_value,
    [PG_ERR_TYPE] = &PyExc_TypeError,
    [PG_ERR_INDEX] = &pg_exc_index,
    [PG_ERR_SHAPE] = &pg_exc_shape,
    [PG_ERR_DTYPE] = &pg_exc_dtype,
    [PG_ERR_DEVICE] = &pg_exc_device_mismatch,
    [PG_ERR_NOMEM] = &pg_exc_out_of_memory,
    [PG_ERR_UNAVAILABLE] = &pg_exc_unavailable,
    [PG_ERR_TRANSFER] = &pg_exc_transfer_guard,
    [PG_ERR_ASYNC] = &pg_exc_async,
    [PG_ERR_RUNTIME] = &PyExc_RuntimeError,
    [PG_ERR_AXIS] = &pg_exc_axis,
    [PG_ERR_OVERFLOW] = &PyExc_OverflowError,
    [PG_ERR_COMM] = &pg_exc_nccl,
    [PG_ERR_ASYNC_INDEX] = &pg_exc_async_index,
    [PG_ERR_NOT_IMPLEMENTED] = &PyExc_NotImplementedError,
};

int pg_errors_init(PyObject *m)
{
    for (size_t i = 0; i < sizeof g_classes / sizeof g_classes[0]; i++) {
        const exc_row *r = &g_classes[i];
        PyObject *bases = r->bases[1] ? PyTuple_Pack(2, *r->bases[0], *r->bases[1])
                                      : PyTuple_Pack(1, *r->bases[0]);
        if (!bases)
            return -1;
        char full[96];
        snprintf(full, sizeof full, "pygpu.%s", r->name);
        *r->slot = PyErr_NewExceptionWithDoc(full, r->doc, bases, NULL);
        Py_DECREF(bases);
        if (!*r->slot)
            return -1;
        Py_INCREF(*r->slot);
        if (PyModule_AddObject(m, r->name, *r->slot) < 0)
            return -1;
    }
    return 0;
}

PyObject *pg_raise(pg_status st)
{
    PyObject **slot = st > PG_OK && st < PG_NUM_STATUS ? g_exc_of_status[st] : NULL;
    PyObject *type = slot && *slot ? *slot : PyExc_RuntimeError;
    const char *msg = pg_error_message();
    PyErr_SetString(type, msg[0] ? msg : "pygpu: unknown error");
    return NULL;
}

int pg_raise_int(pg_status st)
{
    pg_raise(st);
    return -1;
}
