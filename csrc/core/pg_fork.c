/* pg_fork.c - the core's side of a fork()ed child (see pg_fork.h). */
#include "pg_fork.h"

#include "pg_backend.h"
#include "pg_device.h"

void pg_after_fork_child(void)
{
    pg_storage_after_fork();
    pg_rng_after_fork();
    pg_allocator_after_fork();
    pg_pinned_after_fork();
    pg_async_error_after_fork();
    pg_stream_after_fork();
    pg_pool_after_fork();
    if (pg_backend_get(PG_DEV_CUDA))
        pg_backend_mark_forked(PG_DEV_CUDA);
}
