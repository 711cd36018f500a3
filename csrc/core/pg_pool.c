/* pg_pool.c - a device's compute threads (see pg_pool.h).
 *
 * One job at a time. The job's fields are written only while the pool is
 * closed (`gen` even) and no worker is inside a job (`active` == 0); a worker
 * that sees a new odd `gen` registers in `active` and then checks `gen` again
 * before reading them (the Dekker pattern, with seq_cst atomics), so a worker
 * that wakes late can never read a half-written job. */
#include "pg_pool.h"
#include "pg_fork.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_stats.h"

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define PG_MXCSR_FTZ_DAZ 0x8040u /* MXCSR bit 15 flush-to-zero, bit 6 denormals-are-zero */
#endif

/* Idle workers' spin before sleeping (only an idle thread may give its core away:
 * see pg_pool_run's wait for stragglers). A job follows the last one within a few
 * microseconds when ops are queued back to back (a sim device's chain, a
 * Python loop on the cpu device), and a sleeping worker costs ~30-60 us to
 * wake, so workers spin a little; after the first microseconds each round
 * yields, so a thread that needs the core (NumPy's, another device's) gets it. */
#define POOL_SPIN_NS 50000ull /* the default; PYGPU_POOL_SPIN_US sets it (pool_spin_ns) */
#define POOL_SPIN_MAX_NS 10000000ull /* PYGPU_POOL_SPIN_US's ceiling: 10 ms */
#define POOL_PAUSE_NS 2000ull
/* A yield that took this long: another thread ran on this core meanwhile, so it is
 * wanted; stop spinning and sleep (the same rule as pg_stream.c). */
#define POOL_YIELD_BUSY_NS 20000ull
/* The caller's wait for tasks the workers are finishing: `pause` only, then sleep. The
 * spin lasts at least this, and as long as the caller's own share of the job took (a
 * worker that woke late is running a task of about that length; sleeping on it would add
 * a second wake-up, ~30-60 us, to the job), up to POOL_STRAGGLER_MAX_NS. */
#define POOL_STRAGGLER_SPIN_NS 20000ull
#define POOL_STRAGGLER_MAX_NS 1000000ull

/* Idle workers' spin window: PYGPU_POOL_SPIN_US (microseconds, 0 to 10000) when set to a
 * number, else POOL_SPIN_NS; read once. */
static uint64_t pool_spin_ns(void)
{
    static _Atomic int64_t cached = -1;
    int64_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v >= 0)
        return (uint64_t)v;
    v = (int64_t)POOL_SPIN_NS;
    const char *env = getenv("PYGPU_POOL_SPIN_US");
    if (env && *env) {
        char *end;
        unsigned long long us = strtoull(env, &end, 10);
        if (*end == '\0' && env[0] != '-')
            v = (int64_t)(us < POOL_SPIN_MAX_NS / 1000 ? us * 1000ull : POOL_SPIN_MAX_NS);
    }
    atomic_store_explicit(&cached, v, memory_order_relaxed);
    return (uint64_t)v;
}

/* Yield the core; true if another thread wanted it (the yield took long). */
static bool yield_was_busy(void)
{
    uint64_t t0 = pg_now_ns();
    sched_yield();
    return pg_now_ns() - t0 > POOL_YIELD_BUSY_NS;
}

struct pg_pool {
    char prefix[16];
    pthread_mutex_t run_lock; /* held by the caller of the job in progress, and by resize */
    _Atomic int nthreads;     /* including the caller; read by splitters without a lock */
    _Atomic int nworkers;     /* read without run_lock by pg_pool_run's fast path */
    pthread_t *workers;

    /* the job (see the file comment for when these may be written) */
    pg_pool_task_fn fn;
    void *ctx;
    int64_t ntasks;
    _Atomic int64_t next; /* next task to claim */
    _Atomic int64_t done; /* tasks finished */
    _Atomic uint64_t gen; /* odd while a job is open */
    _Atomic int active;   /* workers inside the current job */

    pthread_mutex_t err_lock;
    int64_t err_task; /* lowest failed task, INT64_MAX if none */
    pg_status err_st;
    char err_msg[PG_ERRMSG_LEN];

    pthread_mutex_t lock;
    pthread_cond_t work_cv; /* idle workers */
    pthread_cond_t done_cv; /* the caller, waiting for stragglers */
    _Atomic int sleepers;
    _Atomic int caller_sleeping;
    _Atomic bool stop;
    _Atomic uint64_t job_cpu_ns, job_max_ns; /* timing: this job's tasks, its longest task */
    pg_pool_times times;                       /* timing: totals, written by jobs' callers */
    struct pg_pool *next_made; /* every pool made, for the fork()ed child's reset */
};

/* Every pool made and not destroyed (pg_pool_destroy unlinks it), for pg_pool_after_fork. */
static pthread_mutex_t g_pools_lock = PTHREAD_MUTEX_INITIALIZER;
static pg_pool *g_pools;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

int pg_host_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return n;
    }
    return 1;
}

static void record_failure(pg_pool *p, int64_t task, pg_status st)
{
    pthread_mutex_lock(&p->err_lock);
    if (task < p->err_task) {
        p->err_task = task;
        p->err_st = st;
        snprintf(p->err_msg, sizeof p->err_msg, "%s", pg_error_message());
    }
    pthread_mutex_unlock(&p->err_lock);
}

/* The process's flush-denormal mode (0 or 1), and the mode this thread last applied (-1:
 * none yet, so a thread that never computed never touches its MXCSR). */
static _Atomic int g_flush_denormal;
static _Thread_local int t_flush_denormal = -1;

static void fpu_apply(int on)
{
#ifdef PG_MXCSR_FTZ_DAZ
    unsigned csr = _mm_getcsr();
    _mm_setcsr(on ? csr | PG_MXCSR_FTZ_DAZ : csr & ~PG_MXCSR_FTZ_DAZ);
#endif
    t_flush_denormal = on;
}

void pg_fpu_sync(void)
{
    int on = atomic_load_explicit(&g_flush_denormal, memory_order_relaxed);
    if (on != t_flush_denormal && (on || t_flush_denormal == 1))
        fpu_apply(on);
}

bool pg_set_flush_denormal(bool on)
{
#ifdef PG_MXCSR_FTZ_DAZ
    atomic_store(&g_flush_denormal, on ? 1 : 0);
    fpu_apply(on ? 1 : 0);
    return true;
#else
    (void)on;
    return false;
#endif
}

static _Atomic bool g_timing;

void pg_pool_timing(bool on) { atomic_store(&g_timing, on); }

uint64_t pg_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void pg_pool_times_read(const pg_pool *p, pg_pool_times *out)
{
    if (p)
        *out = p->times;
    else
        memset(out, 0, sizeof *out);
}

/* One task; timed while timing is on (before the task counts as done, so its caller sees
 * the time when it sees the job finished). */
static pg_status run_task(pg_pool *p, int64_t t)
{
    if (!atomic_load_explicit(&g_timing, memory_order_relaxed))
        return p->fn(p->ctx, t);
    uint64_t c0 = pg_thread_cpu_ns();
    pg_status st = p->fn(p->ctx, t);
    uint64_t c = pg_thread_cpu_ns() - c0, m = atomic_load(&p->job_max_ns);
    atomic_fetch_add(&p->job_cpu_ns, c);
    while (c > m && !atomic_compare_exchange_weak(&p->job_max_ns, &m, c))
        ;
    return st;
}

/* Claim and run tasks until none is left. */
static void work(pg_pool *p)
{
    for (;;) {
        int64_t t = atomic_fetch_add(&p->next, 1);
        if (t >= p->ntasks)
            return;
        pg_status st = run_task(p, t);
        if (st != PG_OK)
            record_failure(p, t, st);
        if (atomic_fetch_add(&p->done, 1) + 1 == p->ntasks && atomic_load(&p->caller_sleeping)) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_broadcast(&p->done_cv);
            pthread_mutex_unlock(&p->lock);
        }
    }
}

static inline bool job_open(uint64_t g, uint64_t seen) { return g != seen && (g & 1); }

/* Wait for a job newer than `seen`; returns its gen, or 0 when told to stop. */
static uint64_t wait_for_job(pg_pool *p, uint64_t seen)
{
    uint64_t t0 = pg_now_ns(), spin = pool_spin_ns();
    for (unsigned i = 0;; i++) {
        uint64_t g = atomic_load(&p->gen);
        if (job_open(g, seen))
            return g;
        if (atomic_load(&p->stop))
            return 0;
        if ((i & 63) == 63) {
            uint64_t el = pg_now_ns() - t0;
            if (el > spin || (el > POOL_PAUSE_NS && yield_was_busy()))
                break;
        } else {
            cpu_relax();
        }
    }
    uint64_t g;
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add(&p->sleepers, 1);
    while (!job_open(g = atomic_load(&p->gen), seen) && !atomic_load(&p->stop))
        pthread_cond_wait(&p->work_cv, &p->lock);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->lock);
    return atomic_load(&p->stop) ? 0 : g;
}

static void *worker_main(void *arg)
{
    pg_pool *p = arg;
    uint64_t seen = atomic_load(&p->gen);
    for (;;) {
        uint64_t g = wait_for_job(p, seen);
        if (!g)
            return NULL;
        seen = g;
        atomic_fetch_add(&p->active, 1);
        pg_fpu_sync();
        if (atomic_load(&p->gen) == g)
            work(p);
        atomic_fetch_sub(&p->active, 1);
    }
}

static void stop_workers(pg_pool *p)
{
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nworkers; i++)
        pthread_join(p->workers[i], NULL);
    free(p->workers);
    p->workers = NULL;
    p->nworkers = 0;
    atomic_store(&p->stop, false);
}

/* Under run_lock, with no workers running. */
static pg_status start_workers(pg_pool *p, int nthreads)
{
    p->nthreads = 1;
    if (nthreads <= 1)
        return PG_OK;
    p->workers = calloc((size_t)nthreads - 1, sizeof(pthread_t));
    if (!p->workers)
        return pg_error_set(PG_ERR_NOMEM, "out of host memory starting %d threads", nthreads);
    for (int i = 0; i < nthreads - 1; i++) {
        if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) {
            pg_status st = pg_error_set(PG_ERR_RUNTIME,
                                        "cannot start compute thread %d of %d for %s (the host "
                                        "refused a new thread); ask for fewer threads",
                                        i + 1, nthreads, p->prefix);
            stop_workers(p);
            return st;
        }
        p->nworkers++;
        char name[32]; /* the kernel keeps 15 characters: "pygpu-sim0-w1" fits */
        snprintf(name, sizeof name, "%.10s-w%d", p->prefix, i + 1);
        name[15] = 0;
        pthread_setname_np(p->workers[i], name);
    }
    p->nthreads = nthreads;
    return PG_OK;
}

pg_status pg_pool_create(const char *prefix, int nthreads, pg_pool **out)
{
    pg_pool *p = calloc(1, sizeof *p);
    if (!p)
        return pg_error_set(PG_ERR_NOMEM, "out of host memory creating a thread pool");
    snprintf(p->prefix, sizeof p->prefix, "%s", prefix);
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_mutex_init(&p->err_lock, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    pg_status st = start_workers(p, nthreads);
    if (st != PG_OK) {
        pg_pool_destroy(p);
        return st;
    }
    pthread_mutex_lock(&g_pools_lock);
    p->next_made = g_pools;
    g_pools = p;
    pthread_mutex_unlock(&g_pools_lock);
    *out = p;
    return PG_OK;
}

void pg_pool_destroy(pg_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&g_pools_lock);
    for (pg_pool **at = &g_pools; *at; at = &(*at)->next_made)
        if (*at == p) {
            *at = p->next_made;
            break;
        }
    pthread_mutex_unlock(&g_pools_lock);
    pthread_mutex_lock(&p->run_lock);
    stop_workers(p);
    pthread_mutex_unlock(&p->run_lock);
    pthread_mutex_destroy(&p->run_lock);
    pthread_mutex_destroy(&p->err_lock);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    free(p);
}

int pg_pool_threads(const pg_pool *p) { return p ? p->nthreads : 1; }

/* The child of fork() has none of a pool's workers: each pool runs its jobs on the
 * caller from now on, as one thread (pg_fork.h); pg_pool_resize can start new ones. */
void pg_pool_after_fork(void)
{
    pthread_mutex_init(&g_pools_lock, NULL);
    for (pg_pool *p = g_pools; p; p = p->next_made) {
        pthread_mutex_init(&p->run_lock, NULL);
        pthread_mutex_init(&p->err_lock, NULL);
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->work_cv, NULL);
        pthread_cond_init(&p->done_cv, NULL);
        p->workers = NULL; /* the parent's threads: none of them is here to join */
        atomic_store(&p->nworkers, 0);
        atomic_store(&p->nthreads, 1);
        atomic_store(&p->active, 0);
        atomic_store(&p->sleepers, 0);
        atomic_store(&p->caller_sleeping, 0);
        atomic_store(&p->stop, false);
        uint64_t g = atomic_load(&p->gen);
        atomic_store(&p->gen, g + (g & 1)); /* a job open at the fork: closed */
    }
}

pg_status pg_pool_resize(pg_pool *p, int nthreads)
{
    pthread_mutex_lock(&p->run_lock);
    pg_status st = PG_OK;
    if (nthreads != p->nthreads) {
        stop_workers(p);
        st = start_workers(p, nthreads);
    }
    pthread_mutex_unlock(&p->run_lock);
    return st;
}

static pg_status run_inline(int64_t ntasks, pg_pool_task_fn fn, void *ctx)
{
    for (int64_t t = 0; t < ntasks; t++)
        PG_TRY(fn(ctx, t));
    return PG_OK;
}

pg_status pg_pool_run(pg_pool *p, int64_t ntasks, pg_pool_task_fn fn, void *ctx)
{
    pg_fpu_sync(); /* the caller: a sim device's stream worker, or any thread running cpu ops */
    if (ntasks <= 1 || !p || p->nworkers == 0)
        return run_inline(ntasks, fn, ctx);
    if (pthread_mutex_trylock(&p->run_lock) != 0) /* another thread's job: run ours here */
        return run_inline(ntasks, fn, ctx);
    if (p->nworkers == 0) { /* resized to one thread meanwhile */
        pthread_mutex_unlock(&p->run_lock);
        return run_inline(ntasks, fn, ctx);
    }
    bool timing = atomic_load_explicit(&g_timing, memory_order_relaxed);
    uint64_t caller_c0 = timing ? pg_thread_cpu_ns() : 0;
    atomic_store(&p->job_cpu_ns, 0);
    atomic_store(&p->job_max_ns, 0);
    p->fn = fn;
    p->ctx = ctx;
    p->ntasks = ntasks;
    p->err_task = INT64_MAX;
    atomic_store(&p->next, 0);
    atomic_store(&p->done, 0);
    uint64_t g = atomic_load(&p->gen) + 1;
    atomic_store(&p->gen, g); /* open */
    if (atomic_load(&p->sleepers)) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->work_cv);
        pthread_mutex_unlock(&p->lock);
    }
    uint64_t w0 = pg_now_ns();
    work(p);
    /* stragglers: spin while they are likely mid-task (see POOL_STRAGGLER_SPIN_NS), then
     * sleep. Never yield here: a yield hands the core to any runnable thread, another
     * process's included, which keeps it until the next scheduler tick (4 ms) while the
     * job is already done. */
    uint64_t t0 = pg_now_ns(), own = t0 - w0;
    uint64_t bound = own > POOL_STRAGGLER_SPIN_NS ? own : POOL_STRAGGLER_SPIN_NS;
    if (bound > POOL_STRAGGLER_MAX_NS)
        bound = POOL_STRAGGLER_MAX_NS;
    for (unsigned i = 0; atomic_load(&p->done) < ntasks; i++) {
        if ((i & 63) != 63) {
            cpu_relax();
            continue;
        }
        if (pg_now_ns() - t0 > bound) {
            pthread_mutex_lock(&p->lock);
            atomic_store(&p->caller_sleeping, 1);
            while (atomic_load(&p->done) < ntasks)
                pthread_cond_wait(&p->done_cv, &p->lock);
            atomic_store(&p->caller_sleeping, 0);
            pthread_mutex_unlock(&p->lock);
            break;
        }
    }
    atomic_store(&p->gen, g + 1); /* closed */
    while (atomic_load(&p->active))
        sched_yield(); /* a late worker leaving; it runs no task */
    if (timing) {
        uint64_t sum = atomic_load(&p->job_cpu_ns), longest = atomic_load(&p->job_max_ns);
        int64_t share = ntasks < p->nthreads ? ntasks : p->nthreads;
        uint64_t even = sum / (uint64_t)share;
        p->times.jobs++;
        p->times.task_cpu_ns += sum;
        p->times.crit_ns += longest > even ? longest : even;
        p->times.caller_cpu_ns += pg_thread_cpu_ns() - caller_c0;
    }
    pg_status st = PG_OK;
    if (p->err_task != INT64_MAX) {
        st = p->err_st;
        pg_error_set(st, "%s", p->err_msg);
    }
    pthread_mutex_unlock(&p->run_lock);
    return st;
}
