/* sim_backend.c - the simulated accelerator's backend table (see sim_backend.h).
 *
 * Ops are queued to the device's compute stream and run there by the CPU
 * kernels; copies marked non_blocking go to the device's copy stream, which
 * waits only for the work that produced its source, so copies overlap with
 * compute they do not depend on. Every storage touched by queued work records
 * (sim, stream, seq) events; pg_storage_wait() comes back here (sim_wait_event)
 * to wait on them. Work of another sim stream becomes a task dependency; work
 * another backend (cuda) queued on the same host buffer is waited for on the
 * host before the task is queued, since a sim worker cannot wait on it. */
#include "sim_backend.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/pg_async_error.h"
#include "../../core/pg_ops.h"
#include "../../core/pg_profile.h"
#include "../../core/pg_stats.h"
#include "../../core/pg_stream.h"
#include "../cpu/cpu_blas.h"
#include "../cpu/cpu_parallel.h"
#include "sim_timeline.h"

enum { ROLE_COMPUTE = PG_ROLE_COMPUTE, ROLE_COPY = PG_ROLE_COPY };

typedef struct sim_device {
    int index;
    pg_stream *stream[2];     /* compute, copy; created on first use */
    pg_pool *pool;            /* compute threads besides the compute stream's worker */
    pthread_mutex_t lock;     /* guards the fields below */
    char fault_op[64];        /* inject_fault: the op name to fail next */
    size_t used;              /* raw bytes allocated */
} sim_device;

static sim_device g_dev[PG_MAX_DEVICES_PER_TYPE];
static _Atomic int g_count = -1;
static size_t g_mem_limit;
static int g_threads; /* per device */
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { double latency_us, h2d_gbps, d2h_gbps; } g_link;
static _Atomic bool g_shut_down; /* pg_sim_shutdown ran: streams run work inline */

static void sim_init(void)
{
    if (atomic_load_explicit(&g_count, memory_order_acquire) >= 0)
        return; /* the common case, on every op: no lock */
    pthread_mutex_lock(&g_init_lock);
    if (g_count < 0) {
        const char *env = getenv("PYGPU_SIM_DEVICES");
        int n = env ? atoi(env) : 2;
        const char *mem = getenv("PYGPU_SIM_MEMORY_MB");
        long mb = mem ? atol(mem) : 8192;
        g_mem_limit = (size_t)(mb > 0 ? mb : 8192) << 20;
        int count = n < 0 ? 0 : n > PG_MAX_DEVICES_PER_TYPE ? PG_MAX_DEVICES_PER_TYPE : n;
        const char *thr = getenv("PYGPU_SIM_THREADS");
        char *end = NULL;
        long t = thr ? strtol(thr, &end, 10) : 0;
        if (!thr || end == thr || *end || t < 1 || t > 1024) /* unset or invalid: the default */
            t = pg_host_cores() / (count > 0 ? count : 1);
        g_threads = t < 1 ? 1 : (int)t;
        pg_cpu_blas_init();
        for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++) {
            g_dev[i].index = i;
            pthread_mutex_init(&g_dev[i].lock, NULL);
        }
        /* published last: a reader that sees the count sees everything above */
        atomic_store_explicit(&g_count, count, memory_order_release);
    }
    pthread_mutex_unlock(&g_init_lock);
}

void pg_sim_after_fork(void)
{
    pthread_mutex_init(&g_init_lock, NULL);
    for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++)
        pthread_mutex_init(&g_dev[i].lock, NULL);
}

int pg_sim_threads(void)
{
    sim_init();
    return g_threads;
}

size_t pg_sim_memory_limit(void)
{
    sim_init();
    return g_mem_limit;
}

/* ---- the link model ------------------------------------------------------------------- */

void pg_sim_configure_link(double latency_us, double h2d_gbps, double d2h_gbps)
{
    g_link.latency_us = latency_us;
    g_link.h2d_gbps = h2d_gbps;
    g_link.d2h_gbps = d2h_gbps;
}

void pg_sim_link(double *latency_us, double *h2d_gbps, double *d2h_gbps)
{
    *latency_us = g_link.latency_us;
    *h2d_gbps = g_link.h2d_gbps;
    *d2h_gbps = g_link.d2h_gbps;
}

static uint64_t link_ns(int kind, size_t bytes)
{
    double gbps = kind == PG_COPY_H2D ? g_link.h2d_gbps : kind == PG_COPY_D2H ? g_link.d2h_gbps : 0;
    double ns = g_link.latency_us * 1e3;
    if (gbps > 0)
        ns += (double)bytes / gbps; /* bytes / (GB/s) = ns */
    return (uint64_t)ns;
}

/* Wait until t_end. A modelled transfer is a DMA engine's time, not the
 * CPU's, so most of it is slept: on a 2-core machine a copy spinning for its
 * whole duration would steal the core the compute it overlaps with needs.
 * A sleep overshoots by tens of microseconds on these VMs, though, so the
 * last stretch is a spin, keeping the model close to its figure: with `pause`,
 * not sched_yield, which would hand the core to any other runnable thread
 * (another process's) until the next scheduler tick, 4 ms (pg_stream.c). */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void wait_until(uint64_t t_end)
{
    const uint64_t spin_ns = 80000;
    uint64_t now = pg_now_ns();
    if (t_end > now + spin_ns) {
        uint64_t wake = t_end - spin_ns;
        struct timespec ts = {(time_t)(wake / 1000000000ull), (long)(wake % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
        }
    }
    while (pg_now_ns() < t_end)
        for (int i = 0; i < 64; i++)
            cpu_relax();
}

/* ---- the worker side ------------------------------------------------------------------ */

static void record_failure(sim_device *d, pg_storage *dst, pg_status st, const char *msg)
{
    pg_storage_set_error(dst, st, msg);
    pg_async_error_record((pg_device){PG_DEV_SIM, d->index}, st, msg); /* delivered once */
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The link-busy time recorded is the modelled DMA time, or the memcpy's own
 * time when the bytes take longer than that: measured as this thread's CPU
 * time, so that neither the wait in the queue (the task's dependencies were
 * met before this runs) nor a preemption or a late wake-up on a loaded host
 * is charged to the link. The caller's wall time minus this is its waiting. */
static void run_copy(const pg_copy *c)
{
    uint64_t t0 = pg_now_ns(), cpu0 = thread_cpu_ns();
    uint64_t model = link_ns(c->kind, c->nbytes);
    if (c->nbytes)
        memcpy((char *)c->dst->data + c->dst_offset, (const char *)c->src->data + c->src_offset,
               c->nbytes);
    uint64_t moved = thread_cpu_ns() - cpu0;
    if (model)
        wait_until(t0 + model);
    pg_stats_transfer_time(c->src->device, c->dst->device, moved > model ? moved : model);
    if (c->dst_offset == 0 && c->nbytes == c->dst->nbytes)
        pg_storage_clear_error(c->dst); /* every byte rewritten from good data */
}

static void run_one(sim_device *d, pg_task *t)
{
    char msg[PG_ERRMSG_LEN + 128];
    char err[PG_ERRMSG_LEN];
    if (t->kind == 1) {
        pg_status est = pg_storage_error_copy(t->u.copy.src, err, sizeof err);
        if (est != PG_OK)
            pg_storage_set_error(t->u.copy.dst, est, err);
        else
            run_copy(&t->u.copy);
        return;
    }
    const pg_node *n = &t->u.node;
    const pg_tensor *outs[1 + PG_NODE_MAX_EXTRA];
    int nout = pg_node_outputs(n, outs);
    const int nlist = pg_node_list_len(n); /* a MULTI node's entries */
    for (int i = 0; i < n->nsrc + nlist; i++) {
        const pg_tensor *in = i < n->nsrc ? &n->src[i] : pg_node_list_at(n, i - n->nsrc);
        if (i >= n->nsrc && pg_node_list_writes(n, i - n->nsrc))
            continue;
        pg_status est = in->storage ? pg_storage_error_copy(in->storage, err, sizeof err) : PG_OK;
        if (est != PG_OK) {
            snprintf(msg, sizeof msg, "'%s' on sim:%d was skipped: its input comes from a failed op: %s",
                     n->name, d->index, err);
            for (int k = 0; k < nout; k++)
                if (outs[k]->storage != in->storage)
                    pg_storage_set_error(outs[k]->storage, est, msg);
            for (int k = 0; k < nlist; k++) {
                const pg_tensor *o = pg_node_list_at(n, k);
                if (pg_node_list_writes(n, k) && o->storage && o->storage != in->storage)
                    pg_storage_set_error(o->storage, est, msg);
            }
            return; /* the root cause is already the device's pending failure */
        }
    }
    bool fault = false;
    pthread_mutex_lock(&d->lock);
    if (d->fault_op[0] && strcmp(d->fault_op, n->name) == 0) {
        fault = true;
        d->fault_op[0] = 0;
    }
    pthread_mutex_unlock(&d->lock);
    uint64_t t0 = t->prof_id ? pg_now_ns() : 0;
    pg_status st = fault ? pg_error_set(PG_ERR_RUNTIME, "simulated device fault "
                                                        "(pygpu.sim.inject_fault)")
                         : pg_cpu_run(d->pool, n);
    if (t->prof_id) /* pygpu.profiler: the node's time on the device's worker */
        pg_profile_device(t->prof_id, (int64_t)t0, (int64_t)(pg_now_ns() - t0), NULL, 0, 0);
    if (st != PG_OK) {
        snprintf(msg, sizeof msg, "op '%s' failed on sim:%d: %s", n->name, d->index,
                 pg_error_message());
        record_failure(d, n->dst.storage, st, msg);
        for (int k = 1; k < nout; k++)
            pg_storage_set_error(outs[k]->storage, st, msg);
        for (int k = 0; k < nlist; k++)
            if (pg_node_list_writes(n, k) && pg_node_list_at(n, k)->storage)
                pg_storage_set_error(pg_node_list_at(n, k)->storage, st, msg);
    } else {
        for (int k = 0; k < nout; k++) /* every byte rewritten by a good op */
            if (pg_tensor_covers_storage(outs[k]))
                pg_storage_clear_error(outs[k]->storage);
    }
}

/* A MULTI node's task, done: the hold on each listed storage and its share of the list. */
static void release_list(const pg_node *n)
{
    for (int i = 0, len = pg_node_list_len(n); i < len; i++)
        if (pg_node_list_at(n, i)->storage)
            pg_storage_unhold(pg_node_list_at(n, i)->storage);
    pg_node_list_release(n->list);
}

/* Which sim queue `q` is: bit 2 * device + role (0 for another backend's). */
static uint32_t queue_bit(const void *q)
{
    _Static_assert(2 * PG_MAX_DEVICES_PER_TYPE <= 32, "a bit per queue in a span's `after`");
    for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++)
        for (int role = 0; role < 2; role++)
            if (q && q == g_dev[i].stream[role])
                return 1u << (2 * i + role);
    return 0;
}

static const char *const g_copy_names[] = {"copy h2d", "copy d2h", "copy d2d"};

/* Run a task, and when sim:index records a timeline (sim_timeline.h), its span. */
static void exec_task(void *ctx, pg_task *t)
{
    sim_device *d = ctx;
    if (!pg_sim_timeline_on(d->index) || !t->queued_ns) {
        run_one(d, t);
        if (t->kind == 0 && pg_node_list_len(&t->u.node) > 0)
            release_list(&t->u.node);
        return;
    }
    uint64_t start = pg_now_ns(), cpu0 = thread_cpu_ns();
    run_one(d, t);
    if (t->kind == 0 && pg_node_list_len(&t->u.node) > 0)
        release_list(&t->u.node);
    uint64_t cpu = thread_cpu_ns() - cpu0;
    uint64_t end = pg_now_ns(), origin = pg_sim_timeline_origin(d->index);
    pg_sim_span span = {.role = t->kind == 1 ? ROLE_COPY : ROLE_COMPUTE};
    snprintf(span.name, sizeof span.name, "%s",
             t->kind == 1 ? g_copy_names[t->u.copy.kind] : t->u.node.name);
    pthread_getname_np(pthread_self(), span.thread, sizeof span.thread);
    span.queued_ns = t->queued_ns > origin ? t->queued_ns - origin : 0;
    span.start_ns = start > origin ? start - origin : 0;
    span.end_ns = end > origin ? end - origin : 0;
    span.cpu_ns = cpu;
    span.seq = t->seq;
    span.bytes = t->kind == 1 ? t->u.copy.nbytes : 0;
    for (int i = 0; i < t->ndeps && span.nafter < PG_SIM_SPAN_AFTER; i++) {
        span.after_queue[span.nafter] = queue_bit(t->deps[i].queue);
        span.after_seq[span.nafter++] = t->deps[i].seq;
    }
    pg_sim_timeline_add(d->index, &span);
}

static pg_status get_stream(sim_device *d, int role, pg_stream **out)
{
    pthread_mutex_lock(&d->lock);
    pg_status st = PG_OK;
    if (role == ROLE_COMPUTE && !d->pool && g_threads > 1) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "pygpu-sim%d", d->index);
        st = pg_pool_create(prefix, g_threads, &d->pool);
    }
    if (st == PG_OK && !d->stream[role]) {
        char name[16];
        snprintf(name, sizeof name, "pygpu-sim%d-%s", d->index, role ? "cp" : "op");
        /* a waiting host thread may run compute, never the copy engine's transfers */
        st = pg_stream_create(exec_task, d, name, role == ROLE_COMPUTE, &d->stream[role]);
        if (st == PG_OK && atomic_load(&g_shut_down)) /* first use after shutdown */
            pg_stream_close(d->stream[role]);
    }
    *out = d->stream[role];
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* ---- the enqueue side ----------------------------------------------------------------- */

static void add_dep(pg_task *t, pg_event e, pg_stream *self)
{
    /* another backend's events were waited for before the lock was taken */
    if (e.backend != &pg_sim_backend || !e.queue || e.queue == self || pg_stream_done(e.queue, e.seq))
        return;
    for (int i = 0; i < t->ndeps; i++)
        if (t->deps[i].queue == e.queue) { /* one event per queue: its newest implies the rest */
            if (e.seq > t->deps[i].seq)
                t->deps[i] = e;
            return;
        }
    t->deps[t->ndeps++] = e;
}

/* Before queuing: wait on the host for work other backends queued on these
 * storages (reads too: their events would be overwritten below, and a later
 * writer must still see them). Only a host buffer can carry such events. */
static pg_status wait_foreign_one(pg_storage *st)
{
    if (st->device.type != PG_DEV_CPU) /* sim memory: only sim queues touch it (hot path) */
        return PG_OK;
    return pg_storage_wait_others(st, true, &pg_sim_backend, NULL);
}

static pg_status wait_foreign(pg_storage **reads, int nreads, pg_storage **writes, int nwrites)
{
    for (int i = 0; i < nreads; i++)
        PG_TRY(wait_foreign_one(reads[i]));
    for (int i = 0; i < nwrites; i++)
        PG_TRY(wait_foreign_one(writes[i]));
    return PG_OK;
}

/* The role of the sim stream an event names (the copy stream of some device, or
 * compute). Streams are made once, before any event names them, and never change. */
static int stream_role(const void *q)
{
    for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++)
        if (q == g_dev[i].stream[ROLE_COPY])
            return ROLE_COPY;
    return ROLE_COMPUTE;
}

/* Under the events lock: the newest read of `st` by a sim stream of `role`, or none. */
static pg_event newest_read(const pg_storage *st, int role)
{
    for (int i = PG_READ_SLOTS - 1; i >= 0; i--) {
        pg_event e = st->last_read[i];
        if (e.backend == &pg_sim_backend && stream_role(e.queue) == role)
            return e;
    }
    return (pg_event){0};
}

/* Under the events lock: gather the events `t` must wait for, then stamp
 * the storages with the new task's event. A read also depends on the newest
 * read of its role when that one is on another stream, so the new event
 * implies every older read of the role, and a write's dependence on the newest
 * read of each role covers them all. */
static void enqueue_with_events(pg_stream *s, int role, pg_task *t, pg_storage **reads, int nreads,
                                pg_storage **writes, int nwrites)
{
    pg_storage_events_lock();
    for (int i = 0; i < nreads; i++) {
        add_dep(t, reads[i]->last_write, s);
        add_dep(t, newest_read(reads[i], role), s);
    }
    for (int i = 0; i < nwrites; i++) {
        add_dep(t, writes[i]->last_write, s);
        add_dep(t, newest_read(writes[i], ROLE_COMPUTE), s);
        add_dep(t, newest_read(writes[i], ROLE_COPY), s);
    }
    uint64_t seq = pg_stream_enqueue(s, t);
    pg_event e = {&pg_sim_backend, s, seq};
    for (int i = 0; i < nreads; i++)
        pg_storage_mark_locked(reads[i], e, role, false);
    for (int i = 0; i < nwrites; i++)
        pg_storage_mark_locked(writes[i], e, role, true);
    pg_storage_events_unlock();
}

static pg_status sim_launch(const pg_backend *be, int index, const pg_node *node)
{
    (void)be;
    pg_stream *s;
    PG_TRY(get_stream(&g_dev[index], ROLE_COMPUTE, &s));
    pg_task t;
    t.kind = 0;
    t.u.node = *node;
    t.prof_id = pg_profile_current();
    t.ndeps = 0;
    t.nhold = 0;
    t.queued_ns = pg_sim_timeline_on(index) ? pg_now_ns() : 0;
    /* a MULTI node's entries read and write many storages: arrays of their size, and the
     * task holds those itself (release_list), beyond its fixed hold slots */
    const int nlist = pg_node_list_len(node);
    pg_storage *fixed[PG_NODE_MAX_SRC + 1 + PG_NODE_MAX_EXTRA];
    pg_storage **ops = nlist ? malloc(sizeof *ops * (size_t)(nlist + PG_TASK_MAX_HOLD)) : fixed;
    if (!ops)
        return pg_error_set(PG_ERR_NOMEM, "%s: out of host memory queuing a list of %d operands",
                            node->name, nlist);
    int nreads = 0, nwrites = 0;
    for (int i = 0; i < node->nsrc; i++) {
        if (!node->src[i].storage)
            continue; /* an optional operand the op does without */
        ops[nreads++] = node->src[i].storage;
        t.hold[t.nhold++] = node->src[i].storage;
    }
    for (int i = 0; i < nlist; i++)
        if (!pg_node_list_writes(node, i) && pg_node_list_at(node, i)->storage)
            ops[nreads++] = pg_node_list_at(node, i)->storage;
    pg_storage **writes = ops + nreads;
    const pg_tensor *outs[1 + PG_NODE_MAX_EXTRA];
    int nout = pg_node_outputs(node, outs);
    for (int i = 0; i < nout; i++) {
        writes[nwrites++] = outs[i]->storage;
        t.hold[t.nhold++] = outs[i]->storage;
    }
    for (int i = 0; i < nlist; i++)
        if (pg_node_list_writes(node, i) && pg_node_list_at(node, i)->storage)
            writes[nwrites++] = pg_node_list_at(node, i)->storage;
    pg_status st = wait_foreign(ops, nreads, writes, nwrites);
    if (st == PG_OK) {
        for (int i = 0; i < t.nhold; i++)
            pg_storage_hold(t.hold[i]);
        if (nlist) {
            for (int i = 0; i < nlist; i++)
                if (pg_node_list_at(node, i)->storage)
                    pg_storage_hold(pg_node_list_at(node, i)->storage);
            pg_node_list_retain(node->list);
        }
        enqueue_with_events(s, ROLE_COMPUTE, &t, ops, nreads, writes, nwrites);
    }
    if (ops != fixed)
        free(ops);
    return st;
}

static pg_status sim_copy(const pg_backend *be, int index, const pg_copy *c)
{
    (void)be;
    if (!c->async) { /* blocking: the calling thread moves the bytes once the source is ready */
        PG_TRY(pg_storage_wait(c->src));
        PG_TRY(pg_storage_wait_idle(c->dst));
        run_copy(c);
        return PG_OK;
    }
    pg_stream *s;
    PG_TRY(get_stream(&g_dev[index], ROLE_COPY, &s));
    pg_storage *reads[1] = {c->src}, *dsts[1] = {c->dst};
    PG_TRY(wait_foreign(reads, 1, dsts, 1));
    pg_task t;
    t.kind = 1;
    t.u.copy = *c;
    t.prof_id = 0;
    t.ndeps = 0;
    t.queued_ns = pg_sim_timeline_on(index) ? pg_now_ns() : 0;
    t.nhold = 2;
    t.hold[0] = c->src;
    t.hold[1] = c->dst;
    pg_storage_hold(c->src);
    pg_storage_hold(c->dst);
    enqueue_with_events(s, ROLE_COPY, &t, reads, 1, dsts, 1);
    return PG_OK;
}

static pg_status sim_wait_event(const pg_backend *be, pg_event ev)
{
    (void)be;
    pg_stream_wait_event(ev);
    return PG_OK; /* a failed op leaves its message in the storage it wrote */
}

static pg_status sim_synchronize(const pg_backend *be, int index)
{
    (void)be;
    sim_device *d = &g_dev[index];
    for (int role = 0; role < 2; role++) {
        pthread_mutex_lock(&d->lock);
        pg_stream *s = d->stream[role];
        pthread_mutex_unlock(&d->lock);
        if (s)
            pg_stream_wait(s, pg_stream_last(s));
    }
    char err[PG_ERRMSG_LEN];
    pg_status root = pg_async_error_take((pg_device){PG_DEV_SIM, index}, err, sizeof err);
    if (root != PG_OK) /* and cleared: delivered once */
        return pg_error_set(pg_async_status(root), "%s", err);
    return PG_OK;
}

/* The names pg_node.name takes (what inject_fault can match), from the op
 * table (core/pg_ops.def); a name not there would arm a fault that never fires. */
static const char *const g_node_names[] = {
#define PG_BINARY(ID, name, ...) #name,
#define PG_UNARY(ID, name, ...) #name,
#define PG_REDUCE(ID, name, ...) #name,
#define PG_OTHER(name, node, ...) node,
#include "../../core/pg_ops.def"
};

static bool fault_op_known(const char *op, char *list, size_t len)
{
    bool found = false;
    size_t n = 0;
    list[0] = 0;
    for (size_t i = 0; i < sizeof g_node_names / sizeof *g_node_names; i++) {
        const char *name = g_node_names[i];
        bool again = !name; /* a view: no node */
        for (size_t j = 0; j < i && !again; j++)
            again = g_node_names[j] && strcmp(g_node_names[j], name) == 0;
        if (again)
            continue;
        found = found || strcmp(name, op) == 0;
        if (n < len)
            n += (size_t)snprintf(list + n, len - n, "%s%s", n ? ", " : "", name);
    }
    return found;
}

pg_status pg_sim_inject_fault(int index, const char *op)
{
    sim_init();
    if (index < 0 || index >= g_count)
        return pg_error_set(PG_ERR_UNAVAILABLE, "sim:%d does not exist", index);
    char names[1536]; /* every node name of the op table (it grows with the table) */
    if (!fault_op_known(op, names, sizeof names))
        return pg_error_set(PG_ERR_VALUE, "inject_fault: unknown op name '%s'; the ops that can "
                                          "fail are: %s", op, names);
    sim_device *d = &g_dev[index];
    pthread_mutex_lock(&d->lock);
    snprintf(d->fault_op, sizeof d->fault_op, "%s", op);
    pthread_mutex_unlock(&d->lock);
    return PG_OK;
}

/* Streams are closed, never freed: storages alive after this (module globals,
 * objects freed during finalisation) still hold events pointing at them, and
 * a later op runs synchronously on its caller's thread (pg_stream_close). */
void pg_sim_shutdown(void)
{
    atomic_store(&g_shut_down, true);
    for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++) {
        for (int role = 0; role < 2; role++) {
            pthread_mutex_lock(&g_dev[i].lock);
            pg_stream *s = g_dev[i].stream[role];
            pthread_mutex_unlock(&g_dev[i].lock);
            pg_stream_close(s);
        }
        /* the pool stays, like the closed streams: a later op runs inline and may use it */
    }
}

/* ---- memory and identity -------------------------------------------------------------- */

static int sim_device_count(const pg_backend *be)
{
    (void)be;
    sim_init();
    return g_count;
}

static pg_status sim_device_name(const pg_backend *be, int index, char *buf, size_t len)
{
    (void)be;
    snprintf(buf, len, "pygpu simulated accelerator %d", index);
    return PG_OK;
}

static size_t sim_total_memory(const pg_backend *be, int index)
{
    (void)be;
    (void)index;
    return pg_sim_memory_limit();
}

static pg_status sim_raw_alloc(const pg_backend *be, int index, size_t nbytes, void **ptr)
{
    (void)be;
    sim_device *d = &g_dev[index];
    pthread_mutex_lock(&d->lock);
    bool fits = nbytes <= g_mem_limit - d->used && nbytes < SIZE_MAX - 64;
    if (fits)
        d->used += nbytes;
    pthread_mutex_unlock(&d->lock);
    if (!fits)
        return pg_error_set(PG_ERR_NOMEM, "sim:%d has %zu bytes of memory", index, g_mem_limit);
    char *raw;
    if (posix_memalign((void **)&raw, 64, nbytes + 64) != 0) {
        pthread_mutex_lock(&d->lock);
        d->used -= nbytes;
        pthread_mutex_unlock(&d->lock);
        return pg_error_set(PG_ERR_NOMEM, "host memory backing sim:%d is exhausted", index);
    }
    *(size_t *)raw = nbytes; /* a 64-byte header remembers the size for sim_raw_free */
    *ptr = raw + 64;
    pg_host_advise_hugepages(*ptr, nbytes);
    return PG_OK;
}

static void sim_raw_free(const pg_backend *be, int index, void *ptr)
{
    (void)be;
    char *raw = (char *)ptr - 64;
    sim_device *d = &g_dev[index];
    pthread_mutex_lock(&d->lock);
    d->used -= *(size_t *)raw;
    pthread_mutex_unlock(&d->lock);
    free(raw);
}

static pg_status sim_host_alloc(const pg_backend *be, size_t nbytes, void **ptr)
{
    (void)be;
    if (posix_memalign(ptr, 64, nbytes ? nbytes : 64) != 0)
        return pg_error_set(PG_ERR_NOMEM, "cannot allocate %zu bytes of pinned host memory", nbytes);
    pg_host_advise_hugepages(*ptr, nbytes);
    return PG_OK;
}

static void sim_host_free(const pg_backend *be, void *ptr)
{
    (void)be;
    free(ptr);
}

const pg_backend pg_sim_backend = {
    .name = "sim",
    .type = PG_DEV_SIM,
    .device_count = sim_device_count,
    .device_name = sim_device_name,
    .total_memory = sim_total_memory,
    .raw_alloc = sim_raw_alloc,
    .raw_free = sim_raw_free,
    .host_alloc_pinned = sim_host_alloc,
    .host_free_pinned = sim_host_free,
    .launch = sim_launch,
    .copy = sim_copy,
    .wait_event = sim_wait_event,
    .synchronize = sim_synchronize,
};
