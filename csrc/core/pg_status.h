/* pg_status.h - status codes returned by every fallible function of the C core.
 *
 * The core never raises and never aborts on user input: it returns a pg_status
 * and leaves a human-readable message in a thread-local buffer (pg_error_set).
 * The bindings turn (status, message) into a Python exception in exactly one
 * place (csrc/bindings/errors.c). */
#ifndef PG_STATUS_H
#define PG_STATUS_H

typedef enum pg_status {
    PG_OK = 0,
    PG_ERR_VALUE,       /* bad argument value            -> pygpu.InvalidValueError (ValueError, RuntimeError) */
    PG_ERR_TYPE,        /* wrong kind of argument        -> TypeError */
    PG_ERR_INDEX,       /* index out of range            -> pygpu.IndexOutOfRangeError (IndexError, RuntimeError) */
    PG_ERR_SHAPE,       /* shapes do not fit together    -> pygpu.ShapeError (ValueError, RuntimeError) */
    PG_ERR_DTYPE,       /* dtype not supported by an op  -> pygpu.DTypeError (TypeError, RuntimeError) */
    PG_ERR_DEVICE,      /* tensors on different devices  -> pygpu.DeviceMismatchError */
    PG_ERR_NOMEM,       /* allocation failed             -> MemoryError */
    PG_ERR_UNAVAILABLE, /* device/backend not present    -> pygpu.DeviceUnavailableError */
    PG_ERR_TRANSFER,    /* transfer guard said no        -> pygpu.TransferGuardError */
    PG_ERR_ASYNC,       /* an asynchronous op failed     -> pygpu.AsyncOpError */
    PG_ERR_RUNTIME,     /* anything else                 -> RuntimeError */
    PG_ERR_AXIS,        /* axis out of range             -> pygpu.AxisError (IndexError, ValueError) */
    PG_ERR_OVERFLOW,    /* value does not fit the dtype  -> OverflowError */
    PG_ERR_COMM,        /* a collective failed/timed out -> pygpu.NcclError (RuntimeError) */
    PG_ERR_ASYNC_INDEX, /* an asynchronous op met an index out of range (its values live on the
                           device)                       -> pygpu.AsyncIndexError (AsyncOpError, IndexError) */
    PG_ERR_NOT_IMPLEMENTED, /* an op PyTorch has no kernel of for a dtype (its "add_stub" not
                               implemented for 'Float8_e4m3fn') -> NotImplementedError */
    PG_NUM_STATUS
} pg_status;

/* The status a wait reports for an asynchronous failure whose root status was `root`: an
 * index out of range stays an IndexError (PyTorch's type) when it surfaces later. */
static inline pg_status pg_async_status(pg_status root)
{
    return root == PG_ERR_INDEX || root == PG_ERR_ASYNC_INDEX ? PG_ERR_ASYNC_INDEX : PG_ERR_ASYNC;
}

#define PG_ERRMSG_LEN 2048

/* Store a formatted message for the calling thread and return `st`, so that
 * callers can write `return pg_error_set(PG_ERR_SHAPE, "...", ...);`. */
pg_status pg_error_set(pg_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The calling thread's last message ("" if none). */
const char *pg_error_message(void);

#define PG_TRY(expr)                          \
    do {                                      \
        pg_status pg_try_st_ = (expr);        \
        if (pg_try_st_ != PG_OK)              \
            return pg_try_st_;                \
    } while (0)

#endif
