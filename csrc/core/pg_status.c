/* pg_status.c - the thread-local error message behind pg_error_set. */
#include "pg_status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char pg_errbuf[PG_ERRMSG_LEN];

pg_status pg_error_set(pg_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pg_errbuf, sizeof pg_errbuf, fmt, ap);
    va_end(ap);
    return st;
}

const char *pg_error_message(void) { return pg_errbuf; }
