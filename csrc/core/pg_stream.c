/* pg_stream.c - the worker thread behind a pg_stream (see pg_stream.h).
 *
 * Who runs a task: whoever claims it first, the worker or a thread waiting for it.
 * Tasks run one at a time, in order: `claimed` counts the tasks someone has started,
 * `completed` those finished, and a task is claimed (claimed: n -> n + 1 by CAS) only
 * while none is in flight (claimed == completed == n). A waiter that finds the next
 * task unclaimed runs it itself instead of waiting for the worker to be scheduled:
 * on a loaded 2-core host the worker may sit behind another process's thread for a
 * whole scheduler tick (4 ms), and synchronize() waited that out (issue 30).
 *
 * Only host threads help, and only on a stream that allows it (pg_stream_create's
 * `waiters_run`): sim's compute stream does; its copy stream does not, as a DMA engine's
 * transfers are not the host's to run. A host thread that ran a copy itself (issue 39)
 * spent the link model's whole transfer time in it, and the copy worker, parked meanwhile,
 * then woke behind the busy cores: the host became the copy engine, and copies stopped
 * while it did host work (the DataLoader's gather), so transfer and compute no longer
 * overlapped. A stream's worker never runs another stream's tasks either (the copy engine
 * waiting for compute does not compute): it waits.
 *
 * Waiting never yields the core to another thread: a sched_yield hands the core to
 * any runnable thread (another process's, NumPy's), which keeps it until the next
 * tick, since a thread that yielded is runnable, not woken, and gets no wakeup
 * preemption. Waiters spin with `pause` only, briefly, then sleep on a condition
 * variable; the futex wake is what brings a sleeper back promptly. */
#include "pg_stream.h"
#include "pg_fork.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pg_pool.h"
#include "pg_stats.h"

#define QUEUE_CAP 1024       /* tasks in flight before enqueue blocks */
#define SPIN_NS 200000ull    /* how long to spin before sleeping: 200 us */
#define SPIN_PAUSE_NS 5000ull /* pure busy-wait for the first 5 us, then yield */
/* A sched_yield that took this long means another thread was waiting for this core
 * and ran: stop spinning and sleep, so pygpu never holds a core someone else needs
 * (NumPy's threads, another device's, another process's). */
#define YIELD_BUSY_NS 20000ull

struct pg_stream {
    pg_stream_exec_fn exec;
    void *ctx;
    pg_task *ring;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work_cv; /* worker sleeps here when idle */
    pthread_cond_t done_cv; /* waiters, and producers facing a full ring, sleep here */
    _Atomic uint64_t submitted; /* tasks enqueued */
    _Atomic uint64_t claimed;   /* tasks someone has started: completed or completed + 1 */
    _Atomic uint64_t completed; /* tasks finished */
    _Atomic uint64_t executing; /* the task whose dependencies were met and which runs now */
    _Atomic uint64_t help_until; /* the last task some waiter will run itself */
    _Atomic int worker_sleeping;
    _Atomic int waiters_sleeping;
    _Atomic uint64_t wake_at; /* the least task count a sleeping waiter waits for: a task's
                               * completion wakes the sleepers only from there (UINT64_MAX:
                               * none), not at each task (a copy engine waiting for the
                               * compute stream's task n+20 slept and woke 20 times) */
    bool stop;
    _Atomic int closed;      /* pg_stream_close began: enqueuers run tasks themselves */
    _Atomic int worker_gone; /* the worker has been joined */
    pthread_mutex_t inline_lock; /* one caller at a time runs tasks of a closed stream */
    bool waiters_run; /* a host thread waiting for a task may run it (see the file comment) */
    struct pg_stream *next_made; /* every stream made, for the fork()ed child's reset */
};

/* Every stream ever made (they are never freed): a fork()ed child closes them all. */
static pg_stream *_Atomic g_streams;

/* Set on a stream's worker thread: it waits for other streams, never runs their tasks. */
static _Thread_local bool t_is_worker;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Spin until cond() or the budget runs out, or until a yield shows that another
 * thread wants the core; returns whether cond() held (else the caller sleeps). */
#define SPIN_UNTIL_YIELDING(cond)                                     \
    ({                                                                \
        bool ok_ = false;                                             \
        uint64_t t0_ = pg_now_ns();                                   \
        for (unsigned i_ = 0;; i_++) {                                \
            if (cond) { ok_ = true; break; }                          \
            if ((i_ & 63) == 63) {                                    \
                uint64_t el_ = pg_now_ns() - t0_;                     \
                if (el_ > SPIN_NS) break;                             \
                if (el_ > SPIN_PAUSE_NS) {                            \
                    sched_yield();                                    \
                    if (pg_now_ns() - t0_ - el_ > YIELD_BUSY_NS)      \
                        break; /* the core is wanted */              \
                }                                                     \
            } else {                                                  \
                cpu_relax();                                          \
            }                                                         \
        }                                                             \
        ok_;                                                          \
    })

/* A waiter's spin: `pause` only, for WAIT_SPIN_NS, never giving the core away (see
 * the file comment); returns whether cond() held (else the caller sleeps). */
#define WAIT_SPIN_NS 30000ull
#define SPIN_UNTIL_PAUSING(cond)                                      \
    ({                                                                \
        bool ok_ = false;                                             \
        uint64_t t0_ = pg_now_ns();                                   \
        for (unsigned i_ = 0;; i_++) {                                \
            if (cond) { ok_ = true; break; }                          \
            if ((i_ & 63) == 63 && pg_now_ns() - t0_ > WAIT_SPIN_NS)  \
                break;                                                \
            cpu_relax();                                              \
        }                                                             \
        ok_;                                                          \
    })

/* Claim task number n + 1 (index n), if it is queued and nothing is in flight. */
static bool claim(pg_stream *s, uint64_t n)
{
    if (atomic_load_explicit(&s->submitted, memory_order_acquire) <= n)
        return false;
    uint64_t expect = n;
    return atomic_compare_exchange_strong(&s->claimed, &expect, n + 1);
}

/* Run task number done + 1 and publish its completion. */
static void run_task(pg_stream *s, pg_task *t, uint64_t done)
{
    pg_fpu_sync(); /* torch.set_flush_denormal reaches the device's own thread too */
    for (int i = 0; i < t->ndeps; i++)
        pg_stream_wait_event(t->deps[i]);
    atomic_store_explicit(&s->executing, done + 1, memory_order_relaxed);
    s->exec(s->ctx, t);
    for (int i = 0; i < t->nhold; i++)
        pg_storage_unhold(t->hold[i]);
    atomic_store(&s->completed, done + 1); /* seq_cst: pairs with waiters_sleeping */
    if (atomic_load(&s->waiters_sleeping) && done + 1 >= atomic_load(&s->wake_at)) {
        pthread_mutex_lock(&s->lock);
        atomic_store(&s->wake_at, UINT64_MAX); /* each sleeper not yet done sets it again */
        pthread_cond_broadcast(&s->done_cv);
        pthread_mutex_unlock(&s->lock);
    }
}

/* Sleep on done_cv until `completed` reaches target. Lock held. A sleeper registers its
 * target in wake_at before it checks `completed` (seq_cst both), and run_task stores
 * `completed` before it reads wake_at: one of them sees the other. */
static void sleep_until_completed(pg_stream *s, uint64_t target)
{
    atomic_fetch_add(&s->waiters_sleeping, 1); /* seq_cst: pairs with run_task's store */
    for (;;) {
        uint64_t w = atomic_load(&s->wake_at);
        if (target < w)
            atomic_store(&s->wake_at, target); /* under the lock: run_task resets it there */
        if (atomic_load(&s->completed) >= target)
            break;
        pthread_cond_wait(&s->done_cv, &s->lock);
    }
    atomic_fetch_sub(&s->waiters_sleeping, 1);
}

/* Until `completed` reaches target. A waiter spins first when the task it waits for is
 * running (its dependencies met: it may take microseconds), then sleeps until the target,
 * not until each task before it: a stream's worker waiting for another stream's task many
 * tasks ahead (sim's copy engine waiting for the gradient a backward makes) sleeps once,
 * and spends no CPU on the tasks before it, nor spinning on a task that is itself still
 * waiting for another device (issue 47). */
static void wait_completed(pg_stream *s, uint64_t target)
{
    if (atomic_load_explicit(&s->executing, memory_order_relaxed) >= target &&
        SPIN_UNTIL_PAUSING(atomic_load(&s->completed) >= target))
        return;
    pthread_mutex_lock(&s->lock);
    sleep_until_completed(s, target);
    pthread_mutex_unlock(&s->lock);
}

/* The worker, while waiters run the queue's tasks up to help_until themselves: asleep,
 * not woken by each of their tasks (the device's pool threads want the cores). The last
 * waiter to leave wakes it (pg_stream_wait), as does an enqueue or the close. */
static void park(pg_stream *s)
{
    pthread_mutex_lock(&s->lock);
    atomic_store(&s->worker_sleeping, 1); /* seq_cst: pairs with the waiter's leaving */
    while (atomic_load(&s->completed) < atomic_load(&s->help_until) && !s->stop)
        pthread_cond_wait(&s->work_cv, &s->lock);
    atomic_store(&s->worker_sleeping, 0);
    pthread_mutex_unlock(&s->lock);
}

static void *worker_main(void *arg)
{
    pg_stream *s = arg;
    t_is_worker = true;
    for (;;) {
        uint64_t done = atomic_load_explicit(&s->completed, memory_order_relaxed);
        /* idle: yielding is right here (a waiter runs what this worker has not claimed) */
        if (!SPIN_UNTIL_YIELDING(atomic_load_explicit(&s->submitted, memory_order_acquire) > done)) {
            pthread_mutex_lock(&s->lock);
            atomic_store(&s->worker_sleeping, 1);
            while (atomic_load(&s->submitted) == done && !s->stop)
                pthread_cond_wait(&s->work_cv, &s->lock);
            atomic_store(&s->worker_sleeping, 0);
            bool stop = s->stop && atomic_load(&s->submitted) == done;
            pthread_mutex_unlock(&s->lock);
            if (stop)
                return NULL;
            continue;
        }
        if (claim(s, done))
            run_task(s, &s->ring[done % QUEUE_CAP], done);
        else /* a waiter is running the tasks: leave them, and the cores, to it */
            park(s);
    }
}

/* Tasks a closed stream's worker did not see, run by the caller (once the
 * worker is joined, so that no task runs twice). */
static void drain_inline(pg_stream *s)
{
    while (!atomic_load(&s->worker_gone))
        sched_yield(); /* pg_stream_close is joining it: a few microseconds */
    pthread_mutex_lock(&s->inline_lock);
    for (;;) {
        uint64_t done = atomic_load(&s->completed);
        if (done >= atomic_load(&s->submitted))
            break;
        if (claim(s, done))
            run_task(s, &s->ring[done % QUEUE_CAP], done);
        else /* a waiter is running it */
            wait_completed(s, done + 1);
    }
    pthread_mutex_unlock(&s->inline_lock);
}

pg_status pg_stream_create(pg_stream_exec_fn exec, void *ctx, const char *name, bool waiters_run,
                           pg_stream **out)
{
    pg_stream *s = calloc(1, sizeof *s);
    if (!s || !(s->ring = calloc(QUEUE_CAP, sizeof(pg_task)))) {
        free(s);
        return pg_error_set(PG_ERR_NOMEM, "out of host memory creating a stream");
    }
    s->exec = exec;
    s->ctx = ctx;
    s->waiters_run = waiters_run;
    atomic_store(&s->wake_at, UINT64_MAX);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->inline_lock, NULL);
    pthread_cond_init(&s->work_cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    if (pthread_create(&s->thread, NULL, worker_main, s) != 0) {
        free(s->ring);
        free(s);
        return pg_error_set(PG_ERR_RUNTIME, "cannot start the worker thread of %s", name);
    }
    pthread_setname_np(s->thread, name);
    s->next_made = atomic_load(&g_streams);
    while (!atomic_compare_exchange_weak(&g_streams, &s->next_made, s)) {
    }
    *out = s;
    return PG_OK;
}

/* The child of fork() has no worker threads: each stream becomes a closed one, whose
 * queued and later tasks its callers run themselves, in order (pg_fork.h). A task the
 * worker had started when the process forked is run again from the start (its thread
 * stopped somewhere in it, in the parent's copy of the memory). */
void pg_stream_after_fork(void)
{
    for (pg_stream *s = atomic_load(&g_streams); s; s = s->next_made) {
        pthread_mutex_init(&s->lock, NULL);
        pthread_mutex_init(&s->inline_lock, NULL);
        pthread_cond_init(&s->work_cv, NULL);
        pthread_cond_init(&s->done_cv, NULL);
        atomic_store(&s->claimed, atomic_load(&s->completed));
        atomic_store(&s->worker_sleeping, 0);
        atomic_store(&s->waiters_sleeping, 0);
        atomic_store(&s->wake_at, UINT64_MAX);
        atomic_store(&s->help_until, 0);
        s->stop = true;
        s->waiters_run = true;
        atomic_store(&s->closed, 1);
        atomic_store(&s->worker_gone, 1);
    }
    t_is_worker = false;
}

void pg_stream_close(pg_stream *s)
{
    if (!s || atomic_exchange(&s->closed, 1))
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->work_cv);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    atomic_store(&s->worker_gone, 1);
    drain_inline(s); /* an enqueue that raced with the close */
}

uint64_t pg_stream_enqueue(pg_stream *s, const pg_task *task)
{
    uint64_t n = atomic_load_explicit(&s->submitted, memory_order_relaxed);
    if (n - atomic_load_explicit(&s->completed, memory_order_acquire) >= QUEUE_CAP) {
        /* the ring is full. Sleep, not help: the caller holds the storages' events lock,
         * which a task may take */
        pthread_mutex_lock(&s->lock);
        sleep_until_completed(s, n - QUEUE_CAP + 1);
        pthread_mutex_unlock(&s->lock);
    }
    if (atomic_load(&s->closed)) { /* after shutdown: run it here, in order */
        pthread_mutex_lock(&s->inline_lock);
        n = atomic_load(&s->submitted);
        pg_task *slot = &s->ring[n % QUEUE_CAP];
        memcpy(slot, task, sizeof *task);
        slot->seq = n + 1;
        atomic_store(&s->submitted, n + 1);
        pthread_mutex_unlock(&s->inline_lock);
        drain_inline(s);
        return n + 1;
    }
    pg_task *slot = &s->ring[n % QUEUE_CAP];
    memcpy(slot, task, sizeof *task);
    slot->seq = n + 1;
    atomic_store(&s->submitted, n + 1); /* seq_cst: pairs with worker_sleeping */
    if (atomic_load(&s->closed))
        drain_inline(s); /* closed while we queued: the worker may be gone */
    else if (atomic_load(&s->worker_sleeping)) {
        pthread_mutex_lock(&s->lock);
        pthread_cond_signal(&s->work_cv);
        pthread_mutex_unlock(&s->lock);
    }
    return n + 1;
}

uint64_t pg_stream_last(pg_stream *s) { return atomic_load(&s->submitted); }

bool pg_stream_done(pg_stream *s, uint64_t seq)
{
    return atomic_load_explicit(&s->completed, memory_order_acquire) >= seq;
}

/* Until task `seq` is done: run each next task nobody has started here, and wait (spin
 * briefly, then sleep) only for a task another thread is running. */
void pg_stream_wait(pg_stream *s, uint64_t seq)
{
    if (pg_stream_done(s, seq))
        return;
    if (!s->waiters_run || t_is_worker) { /* the stream's own worker runs it: wait */
        wait_completed(s, seq);
        return;
    }
    uint64_t h = atomic_load(&s->help_until);
    while (h < seq && !atomic_compare_exchange_weak(&s->help_until, &h, seq)) {
    }
    for (;;) {
        uint64_t done = atomic_load(&s->completed);
        if (done >= seq)
            break;
        if (claim(s, done))
            run_task(s, &s->ring[done % QUEUE_CAP], done);
        else
            wait_completed(s, done + 1);
    }
    if (atomic_load(&s->worker_sleeping)) { /* parked (or idle): its turn again */
        pthread_mutex_lock(&s->lock);
        pthread_cond_signal(&s->work_cv);
        pthread_mutex_unlock(&s->lock);
    }
}

void pg_stream_wait_event(pg_event e)
{
    if (e.queue)
        pg_stream_wait((pg_stream *)e.queue, e.seq);
}
