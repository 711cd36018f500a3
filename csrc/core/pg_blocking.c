/* pg_blocking.c - the hooks around a blocking call (pg_backend.h: pg_blocking_begin/end).
 *
 * The bindings install a GIL release here at module init; the allocator and
 * storage code call them around cudaMalloc/cudaFreeHost-like waits. A file of
 * its own, below the allocator, storage and backend registry that all use it,
 * so that none of them reaches back into another for it. */
#include "pg_backend.h"

static void *(*g_blocking_begin)(void);
static void (*g_blocking_end)(void *);

void pg_set_blocking_hooks(void *(*begin)(void), void (*end)(void *))
{
    g_blocking_begin = begin;
    g_blocking_end = end;
}

void *pg_blocking_begin(void) { return g_blocking_begin ? g_blocking_begin() : NULL; }

void pg_blocking_end(void *token)
{
    if (g_blocking_end)
        g_blocking_end(token);
}
