/* pg_async_error.h - the pending asynchronous failure of each device, delivered once.
 *
 * A queued op that fails on a device's worker leaves its message in two places:
 * the storage it wrote (so the data's reader learns why it is bad) and here, as
 * the device's pending failure (so pygpu.synchronize() reports work nobody reads).
 * The failure is delivered once, to the first wait that observes it, as MXNet's
 * engine rethrows once and clears: a storage wait that raises it forgets it here,
 * and synchronize takes it. Reading the failed tensor again still raises (its
 * bytes are still bad); the device itself is clean and keeps working. */
#ifndef PG_ASYNC_ERROR_H
#define PG_ASYNC_ERROR_H

#include <stddef.h>

#include "pg_device.h"
#include "pg_status.h"

/* Record `msg`, with its root status `st`, as the pending failure of `dev` unless one is
 * pending already. */
void pg_async_error_record(pg_device dev, pg_status st, const char *msg);
/* Take the pending failure of `dev` into buf and return its root status (PG_OK when there
 * is none); it is cleared. */
pg_status pg_async_error_take(pg_device dev, char *buf, size_t len);
/* A wait has just raised `delivered`: every device's pending failure it reports
 * (the message itself, or one it quotes, as "input comes from a failed op: ...")
 * is cleared. */
void pg_async_error_forget(const char *delivered);

#endif
