/* errors.h - the one place where a pg_status becomes a Python exception. */
#ifndef PG_BINDINGS_ERRORS_H
#define PG_BINDINGS_ERRORS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../core/pg_status.h"

extern PyObject *pg_exc_device_mismatch;  /* pygpu.DeviceMismatchError (RuntimeError) */
extern PyObject *pg_exc_unavailable;      /* pygpu.DeviceUnavailableError (RuntimeError) */
extern PyObject *pg_exc_transfer_guard;   /* pygpu.TransferGuardError (RuntimeError) */
extern PyObject *pg_exc_accelerator;      /* pygpu.AcceleratorError (RuntimeError) */
extern PyObject *pg_exc_out_of_memory;    /* pygpu.OutOfMemoryError (RuntimeError, MemoryError) */
extern PyObject *pg_exc_async;            /* pygpu.AsyncOpError (RuntimeError) */
extern PyObject *pg_exc_async_index;      /* pygpu.AsyncIndexError (AsyncOpError, IndexError) */
extern PyObject *pg_exc_nccl;             /* pygpu.distributed.NcclError (RuntimeError) */
extern PyObject *pg_exc_axis;             /* pygpu.AxisError (IndexError, ValueError) */
extern PyObject *pg_exc_shape;            /* pygpu.ShapeError (ValueError, RuntimeError) */
extern PyObject *pg_exc_dtype;            /* pygpu.DTypeError (TypeError, RuntimeError) */
extern PyObject *pg_exc_value;            /* pygpu.InvalidValueError (ValueError, RuntimeError) */
extern PyObject *pg_exc_index;            /* pygpu.IndexOutOfRangeError (IndexError, RuntimeError) */
extern PyObject *pg_warn_transfer;        /* pygpu.TransferWarning (UserWarning) */

int pg_errors_init(PyObject *module);
/* Raise the exception for `st` with the thread's pg_error_message(); returns NULL. */
PyObject *pg_raise(pg_status st);
/* The same, for functions returning int: returns -1. */
int pg_raise_int(pg_status st);

#endif
