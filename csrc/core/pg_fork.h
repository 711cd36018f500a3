/* pg_fork.h - what a process made by fork() resets before it runs any pygpu code.
 *
 * fork() copies the memory of the calling thread's process but only that thread: the
 * devices' worker threads (the cpu pool, sim's streams and pools) are gone in the child,
 * and a lock one of them held at that instant stays locked there for good. DataLoader
 * workers and torch.multiprocessing's fork start method make such children, as PyTorch's
 * do. So the child, before anything else, (1) re-initialises every global lock a worker
 * takes, (2) turns each sim stream into a closed one whose work runs on the calling
 * thread (its tasks queued before the fork included: none is lost, none waits for a
 * thread that does not exist), (3) makes each pool run its jobs on the caller, (4) drops
 * the cpu pool (a new one, with new threads, is made on first use), and (5) refuses cuda
 * when its plugin was loaded: a CUDA context does not survive fork (PyTorch's "Cannot
 * re-initialize CUDA in forked subprocess"). Each file that owns such state has its hook;
 * pg_after_fork_child (pg_fork.c) calls the core's, the bindings add the backends' and
 * register the whole with pthread_atfork. */
#ifndef PG_FORK_H
#define PG_FORK_H

void pg_after_fork_child(void); /* the core's hooks below, in order */

void pg_storage_after_fork(void);     /* pg_storage.c: the events and error locks */
void pg_rng_after_fork(void);         /* pg_ops_create.c: the generators' lock */
void pg_allocator_after_fork(void);   /* pg_allocator.c: each device cache's lock */
void pg_pinned_after_fork(void);      /* pg_pinned.c: the pinned cache's lock */
void pg_async_error_after_fork(void); /* pg_async_error.c */
void pg_stream_after_fork(void);      /* pg_stream.c: every stream runs inline */
void pg_pool_after_fork(void);        /* pg_pool.c: every pool runs on its caller */
/* and cuda, once loaded, is marked lost (pg_backend_mark_forked, pg_backend.h) */

#endif
