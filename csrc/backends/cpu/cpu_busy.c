/* cpu_busy.c - the busy-cores instrument (issue 45): which node kinds leave a thread of the
 * cpu device's pool idle. Run a program with PYGPU_NODE_BUSY=1 and, at exit, stderr gets a
 * line per node name (conv2d_weight_backward, batch_norm, ...), most idle core time first:
 *
 *   calls      nodes run, and how many of them ran no pool job (on the calling thread only)
 *   cpu ms     the node's CPU time: its pool tasks' (thread CPU time, whichever thread ran
 *              them) plus the caller's outside its pool jobs (set-up, serial passes, a
 *              node not split at all), plus, while it calls into a library with threads
 *              of its own (oneDNN's OpenMP team), the CPU the process's other threads spend
 *              meanwhile (pg_cpu_busy_foreign_begin/end); pygpu's spinning and waiting are
 *              not counted
 *   crit ms    its critical path: the caller's serial time plus, per pool job, the longest
 *              task or the tasks' time over the threads, whichever is more: what the node
 *              would take on idle cores
 *   cores      cpu / crit, the busy cores the node's split allows (at most the threads)
 *   idle ms    threads * crit - cpu: the core time a thread would sit idle, the defect
 *              issue 45 counts
 *   serial ms  the caller's CPU outside pool jobs
 *   wall ms    the node's wall time (on a loaded machine, not a figure)
 *
 * CPU times, not wall times, so the figures mean the same on a loaded machine: a split
 * that leaves a thread idle shows whatever else runs on the cores. Only the cpu device is
 * timed (a sim device runs its nodes on its own pool); the counters are process-wide, so
 * time one Python thread's ops at a time. Off, it costs one flag test per node.
 * PYGPU_NODE_BUSY=2 keys the lines by node name and output shape (a layer at a time).
 * pg_cpu_busy_reset (pygpu._C._node_busy_reset) drops the counts so far, so one process can
 * warm up and then time its steps alone (benchmarks/_step_profile.py). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/pg_stats.h"
#include "cpu_busy.h"

#define MAX_KINDS 256

typedef struct busy_row {
    char name[64]; /* the node's name, and with PYGPU_NODE_BUSY=2 its output's shape */
    uint64_t calls, serial_calls, cpu_ns, crit_ns, serial_ns, wall_ns;
} busy_row;

static busy_row g_rows[MAX_KINDS];
static int g_nrows;
static int g_on; /* 0: off; 1: by node name; 2: by name and output shape */
static int g_threads;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* the rows (Python threads) */
static __thread uint64_t t_foreign_ns; /* this thread's foreign CPU so far (its nodes') */

static double idle_ns(const busy_row *r)
{
    return (double)g_threads * (double)r->crit_ns - (double)r->cpu_ns;
}

static int by_idle(const void *a, const void *b)
{
    double x = idle_ns(a), y = idle_ns(b);
    return x < y ? 1 : x > y ? -1 : 0;
}

static void print_row(const busy_row *r, int width)
{
    fprintf(stderr, "%-*s %6llu %6llu %9.1f %9.1f %5.2f %9.1f %9.1f %9.1f\n",
            width, r->name, (unsigned long long)r->calls, (unsigned long long)r->serial_calls,
            r->cpu_ns / 1e6,
            r->crit_ns / 1e6, r->crit_ns ? (double)r->cpu_ns / (double)r->crit_ns : 0.0,
            idle_ns(r) / 1e6, r->serial_ns / 1e6, r->wall_ns / 1e6);
}

static void print_table(void)
{
    if (g_nrows == 0)
        return;
    qsort(g_rows, (size_t)g_nrows, sizeof g_rows[0], by_idle);
    busy_row all = {.name = "all nodes"};
    int width = g_on == 2 ? 48 : 30;
    fprintf(stderr, "pygpu busy cores per node kind (cpu device, %d threads, CPU time)\n"
                    "%-*s %6s %6s %9s %9s %5s %9s %9s %9s\n", g_threads, width, "node", "calls",
            "serial", "cpu ms", "crit ms", "cores", "idle ms", "serial ms", "wall ms");
    for (int i = 0; i < g_nrows; i++) {
        const busy_row *r = &g_rows[i];
        print_row(r, width);
        all.calls += r->calls;
        all.serial_calls += r->serial_calls;
        all.cpu_ns += r->cpu_ns;
        all.crit_ns += r->crit_ns;
        all.serial_ns += r->serial_ns;
        all.wall_ns += r->wall_ns;
    }
    print_row(&all, width);
}

static void read_env(void)
{
    const char *e = getenv("PYGPU_NODE_BUSY");
    g_on = e && *e && strcmp(e, "0") != 0 ? (atoi(e) == 2 ? 2 : 1) : 0;
    if (g_on) {
        pg_pool_timing(true);
        atexit(print_table);
    }
}

static busy_row *row_of(const pg_node *node)
{
    char key[sizeof g_rows[0].name];
    int len = snprintf(key, sizeof key, "%s", node->name ? node->name : "?");
    for (int d = 0; g_on == 2 && d < node->dst.ndim && len < (int)sizeof key; d++)
        len += snprintf(key + len, sizeof key - (size_t)len, "%s%lld", d ? "x" : " ",
                        (long long)node->dst.shape[d]);
    for (int i = 0; i < g_nrows; i++)
        if (strcmp(g_rows[i].name, key) == 0)
            return &g_rows[i];
    if (g_nrows == MAX_KINDS)
        return NULL;
    memcpy(g_rows[g_nrows].name, key, sizeof key);
    return &g_rows[g_nrows++];
}

static uint64_t process_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Without this, a oneDNN node counted its calling thread alone: the OpenMP team's other
 * threads' CPU read as "outside nodes", and a convolution as 150% of the FMA peak. The
 * process clock also counts whatever else runs meanwhile (a pygpu worker's last spin, another
 * Python thread's ops): time one Python thread's ops at a time, as for the rest. */
bool pg_cpu_busy_foreign_begin(pg_cpu_busy_mark *m)
{
    pthread_once(&g_once, read_env);
    m->on = g_on != 0;
    if (m->on) {
        m->thread_ns = pg_thread_cpu_ns();
        m->process_ns = process_cpu_ns();
    }
    return m->on;
}

void pg_cpu_busy_foreign_end(const pg_cpu_busy_mark *m)
{
    if (!m->on)
        return;
    uint64_t process = process_cpu_ns() - m->process_ns, thread = pg_thread_cpu_ns() - m->thread_ns;
    t_foreign_ns += process > thread ? process - thread : 0;
}

pg_status pg_cpu_run_timed(pg_pool *pool, const pg_node *node)
{
    pthread_once(&g_once, read_env);
    if (!g_on)
        return pg_cpu_run(pool, node);
    pg_pool_times t0, t1;
    pg_pool_times_read(pool, &t0);
    uint64_t w0 = pg_now_ns(), c0 = pg_thread_cpu_ns(), f0 = t_foreign_ns;
    pg_status st = pg_cpu_run(pool, node);
    uint64_t caller = pg_thread_cpu_ns() - c0, wall = pg_now_ns() - w0;
    uint64_t foreign = t_foreign_ns - f0; /* the caller's share is in `caller`, its crit */
    pg_pool_times_read(pool, &t1);
    uint64_t in_jobs = t1.caller_cpu_ns - t0.caller_cpu_ns;
    uint64_t serial = caller > in_jobs ? caller - in_jobs : 0;
    pthread_mutex_lock(&g_lock);
    busy_row *r = row_of(node);
    if (r) {
        g_threads = pg_pool_threads(pool);
        r->calls++;
        r->serial_calls += t1.jobs == t0.jobs;
        r->cpu_ns += serial + foreign + (t1.task_cpu_ns - t0.task_cpu_ns);
        r->crit_ns += serial + (t1.crit_ns - t0.crit_ns);
        r->serial_ns += serial;
        r->wall_ns += wall;
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

void pg_cpu_busy_reset(void)
{
    pthread_once(&g_once, read_env);
    pthread_mutex_lock(&g_lock);
    memset(g_rows, 0, sizeof g_rows);
    g_nrows = 0;
    pthread_mutex_unlock(&g_lock);
}
