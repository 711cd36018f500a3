/* cpu_parallel.c - split a node over a pool: elementwise, random, matmul
 * (reductions: cpu_parallel_reduce.c), and the cpu device's own pool. Which
 * policy cuts which node kind is its PG_NODE row's split column (pg_ops.def),
 * turned into the split table at the end of this file.
 *
 * Grain sizes: a job on the pool costs a few microseconds when the workers
 * are awake (spinning) and tens of microseconds when they sleep (a futex
 * wake), so a slice must carry more work than that. A cheap elementwise op
 * (add, copy, compare) runs ~1 element/ns, an exp or tanh a few ns, a Philox
 * draw ~10 ns; the grains below give each slice >= ~10 us of work, so 100
 * elements or a 64x512 add are never split. benchmarks/bench_pools.py's
 * "grain" group times sizes around them with 1 thread and with all; on the
 * (heavily loaded) 2-core machine, best of each: add 32K elements 14.4 us
 * split vs 13.8 us whole, 64K 28.9 vs 31.4, 256K 59 vs 111; exp 16K 54.6 vs
 * 51.4, 32K 71 vs 97. So a slice is >= 32K cheap elements (split from 64K)
 * or >= 16K transcendental ones (split from 32K).
 *
 * Matmul and the fused linear layers: OpenBLAS is set to ONE thread
 * (pg_cpu_blas_init) and the GEMM scheduler (cpu_gemm_schedule.c) cuts each
 * product into panels by its FLOPs, one single-threaded BLAS call per panel
 * on the device's own pool. OpenBLAS's thread count is one global for the whole library, not
 * per calling thread, so letting OpenBLAS thread itself would make every
 * device share (and fight over) one pool; one-thread BLAS calls from each
 * device's threads keep each device on its own cores. pygpu links its own
 * scipy-openblas32 copy, separate from NumPy's, so NumPy is unaffected. */
#include "cpu_blas.h"
#include "cpu_conv.h" /* the convolutional kinds' <cpu>_on (OWN) */
#include "cpu_parallel.h"
#include "cpu_gemm_int8.h"
#include "../../core/pg_ops_index.h"

#include <pthread.h>
#include <string.h>

#define GRAIN_CHEAP 32768     /* add, mul, copy, compare, fill: elements per slice */
#define GRAIN_TRANSCEND 16384 /* ops whose cost column is TRANSC: exp, log, tanh, ... */
#define GRAIN_RANDOM 2048     /* a Philox draw (and Box-Muller) per element */
#define MM_GRAIN (1 << 18)    /* multiply-adds per panel: ~64^3 */

enum { CUT_ELEM, CUT_MM_BATCH, CUT_MM_ROWS, CUT_MM_COLS, CUT_ROWS };

typedef struct split_job {
    pg_node base; /* the node, operands coalesced (elementwise) */
    int kind;       /* CUT_* */
    bool random;    /* a Philox draw: each slice moves the counter offset */
    int64_t len;    /* extent being cut */
    int64_t ntasks;
    int64_t align;  /* slice starts rounded down to a multiple of this */
} split_job;

/* ---- elementwise ---------------------------------------------------------------------- */

/* Merge adjacent axes that are contiguous with each other in every operand and drop
 * length-1 axes, as the iterator does, so a contiguous tensor of any shape becomes one
 * axis that can be cut anywhere. All operands share dst's shape. */
static void coalesce(int nops, pg_tensor **ops)
{
    const pg_tensor *out = ops[0];
    int nd = 0;
    int64_t shape[PG_MAX_DIMS], st[PG_NODE_MAX_SRC + 1][PG_MAX_DIMS];
    for (int d = 0; d < out->ndim; d++) {
        if (out->shape[d] == 1)
            continue;
        bool merge = nd > 0;
        for (int k = 0; k < nops && merge; k++)
            merge = st[k][nd - 1] == ops[k]->strides[d] * out->shape[d];
        if (merge) {
            shape[nd - 1] *= out->shape[d];
            for (int k = 0; k < nops; k++)
                st[k][nd - 1] = ops[k]->strides[d];
        } else {
            shape[nd] = out->shape[d];
            for (int k = 0; k < nops; k++)
                st[k][nd] = ops[k]->strides[d];
            nd++;
        }
    }
    if (nd == 0) { /* one element */
        nd = 1;
        shape[0] = 1;
        for (int k = 0; k < nops; k++)
            st[k][0] = 1;
    }
    for (int k = 0; k < nops; k++) {
        ops[k]->ndim = nd;
        memcpy(ops[k]->shape, shape, sizeof(int64_t) * (size_t)nd);
        memcpy(ops[k]->strides, st[k], sizeof(int64_t) * (size_t)nd);
    }
}

/* The node's operands, dst first. */
static int node_operands(pg_node *n, pg_tensor **ops)
{
    ops[0] = &n->dst;
    for (int i = 0; i < n->nsrc; i++)
        ops[1 + i] = &n->src[i];
    return 1 + n->nsrc;
}

static void cut(pg_tensor *t, int axis, int64_t lo, int64_t hi)
{
    t->offset += lo * t->strides[axis];
    t->shape[axis] = hi - lo;
}

static pg_status run_slice(void *ctx, int64_t task)
{
    split_job *j = ctx;
    pg_node sub = j->base;
    int64_t lo, hi;
    pg_cpu_part_aligned(j->len, j->ntasks, task, j->align, &lo, &hi);
    if (hi <= lo)
        return PG_OK;
    switch (j->kind) {
    case CUT_ELEM: {
        pg_tensor *ops[PG_NODE_MAX_SRC + 1];
        int nops = node_operands(&sub, ops);
        for (int k = 0; k < nops; k++)
            cut(ops[k], 0, lo, hi);
        if (j->random)
            sub.p.random.offset += (uint64_t)lo; /* element i draws counter offset + i */
        break;
    }
    case CUT_ROWS: /* src0 and dst cut along dim 0; other operands whole */
        cut(&sub.src[0], 0, lo, hi);
        cut(&sub.dst, 0, lo, hi);
        break;
    case CUT_MM_BATCH:
        cut(&sub.src[0], 0, lo, hi);
        cut(&sub.src[1], 0, lo, hi);
        cut(&sub.dst, 0, lo, hi);
        break;
    case CUT_MM_ROWS:
        cut(&sub.src[0], 1, lo, hi);
        cut(&sub.dst, 1, lo, hi);
        break;
    default: /* CUT_MM_COLS */
        cut(&sub.src[1], 2, lo, hi);
        cut(&sub.dst, 2, lo, hi);
        break;
    }
    return pg_cpu_execute(&sub);
}

/* grain: elements per slice; random: a Philox draw (slices move its counter offset) */
static pg_status run_elementwise(pg_pool *pool, const pg_node *node, int64_t grain, bool random)
{
    int64_t numel = pg_tensor_numel(&node->dst);
    int threads = pg_pool_threads(pool);
    int64_t ntasks = numel / grain;
    if (ntasks > threads)
        ntasks = threads;
    if (ntasks < 2)
        return pg_cpu_execute(node);
    split_job j = {.base = *node};
    pg_tensor *ops[PG_NODE_MAX_SRC + 1];
    coalesce(node_operands(&j.base, ops), ops);
    if (random && (j.base.dst.ndim != 1 || j.base.dst.strides[0] != 1))
        return pg_cpu_execute(node); /* the generic layer hands random a contiguous dst */
    j.kind = CUT_ELEM;
    j.random = random;
    j.len = j.base.dst.shape[0];
    j.align = j.base.dst.ndim == 1 ? 64 : 1; /* whole cache lines per slice */
    j.ntasks = ntasks < j.len ? ntasks : j.len;
    if (j.ntasks < 2)
        return pg_cpu_execute(node);
    return pg_pool_run(pool, j.ntasks, run_slice, &j);
}

/* whole slices of dim 0 per task for a node whose src0 and dst share dim 0 and whose lines
 * are independent: `work` elements in all, GRAIN_TRANSCEND-sized or more per task */
static pg_status run_dim0_slices(pg_pool *pool, const pg_node *node, int64_t work)
{
    int64_t R = node->dst.shape[0];
    int64_t ntasks = work / GRAIN_TRANSCEND, threads = pg_pool_threads(pool);
    if (ntasks > threads)
        ntasks = threads;
    if (ntasks > R)
        ntasks = R;
    if (ntasks < 2)
        return pg_cpu_execute(node);
    split_job j = {.base = *node, .kind = CUT_ROWS, .len = R, .ntasks = ntasks, .align = 1};
    return pg_pool_run(pool, ntasks, run_slice, &j);
}

/* softmax: whole rows of (R, C) per slice (each row has its own statistics);
 * only src0 and dst are (R, C), so only they are cut */
static pg_status run_rows(pg_pool *pool, const pg_node *node)
{
    return run_dim0_slices(pool, node, pg_tensor_numel(&node->dst));
}

/* topk along an axis other than 0: each line is independent; the work is the input's size,
 * not the (k-wide) output's. Other index ops run on the calling thread. */
static pg_status run_index(pg_pool *pool, const pg_node *node)
{
    if (node->subop != PG_INDEX_TOPK || node->p.index.axis == 0 || node->src[0].ndim < 2)
        return pg_cpu_execute(node);
    return run_dim0_slices(pool, node, pg_tensor_numel(&node->src[0]));
}

/* ---- optimizer updates ------------------------------------------------------------------ */

/* SGD and Adam update each element from the same element of every operand (all contiguous,
 * checked by pg_ops_train.c), so the flat range is cut like an elementwise op. */
static pg_status run_update_slice(void *ctx, int64_t task)
{
    split_job *j = ctx;
    pg_node sub = j->base;
    int64_t lo, hi;
    pg_cpu_part_aligned(j->len, j->ntasks, task, j->align, &lo, &hi);
    if (hi <= lo)
        return PG_OK;
    pg_tensor *ops[2 * PG_NODE_MAX_SRC + 1];
    int nops = node_operands(&sub, ops);
    for (int i = 0; i < sub.nextra; i++)
        ops[nops++] = &sub.extra[i];
    for (int k = 0; k < nops; k++) {
        if (!ops[k]->storage)
            continue;
        ops[k]->ndim = 1;
        ops[k]->strides[0] = 1;
        ops[k]->shape[0] = hi - lo;
        ops[k]->offset += lo;
    }
    return pg_cpu_execute(&sub);
}

static pg_status run_update(pg_pool *pool, const pg_node *node)
{
    int64_t numel = pg_tensor_numel(&node->dst);
    int64_t ntasks = numel / GRAIN_CHEAP, threads = pg_pool_threads(pool);
    if (ntasks > threads)
        ntasks = threads;
    if (ntasks < 2)
        return pg_cpu_execute(node);
    split_job j = {.base = *node, .kind = CUT_ELEM, .len = numel, .ntasks = ntasks, .align = 64};
    return pg_pool_run(pool, ntasks, run_update_slice, &j);
}

/* ---- int64 matmul (float32/float64 go through the GEMM scheduler, cpu_gemm_schedule.c) -- */

static pg_status run_matmul(pg_pool *pool, const pg_node *node)
{
    int64_t B = node->dst.shape[0], M = node->dst.shape[1], N = node->dst.shape[2];
    int64_t K = node->src[0].shape[2];
    int64_t work = B * M * N * (K ? K : 1);
    int64_t nt = work / MM_GRAIN;
    int threads = pg_pool_threads(pool);
    if (nt > threads)
        nt = threads;
    if (nt < 2 || B * M * N == 0)
        return pg_cpu_execute(node);
    split_job j = {.base = *node, .align = 1};
    if (B >= nt) {
        j.kind = CUT_MM_BATCH;
        j.len = B;
    } else if (M >= 8 * nt || (M >= nt && N < 8 * nt)) {
        j.kind = CUT_MM_ROWS;
        j.len = M;
        j.align = M >= 64 * nt ? 8 : 1; /* whole register tiles */
    } else if (N >= nt) {
        j.kind = CUT_MM_COLS;
        j.len = N;
        j.align = N >= 64 * nt ? 16 : 1;
    } else {
        return pg_cpu_execute(node);
    }
    j.ntasks = nt;
    return pg_pool_run(pool, j.ntasks, run_slice, &j);
}

/* ---- the split table: one policy per node kind, from the PG_NODE rows' split column --- */

static pg_status split_serial(pg_pool *pool, const pg_node *node)
{
    (void)pool;
    return pg_cpu_execute(node);
}

static pg_status split_elem(pg_pool *pool, const pg_node *node)
{
    return run_elementwise(pool, node, GRAIN_CHEAP, false);
}

static pg_status split_unary(pg_pool *pool, const pg_node *node)
{
    bool transc = pg_unary_cost(node->subop) == PG_COST_TRANSC; /* pg_ops.def's cost column */
    return run_elementwise(pool, node, transc ? GRAIN_TRANSCEND : GRAIN_CHEAP, false);
}

static pg_status split_random(pg_pool *pool, const pg_node *node)
{
    return run_elementwise(pool, node, GRAIN_RANDOM, true);
}

static pg_status split_matmul(pg_pool *pool, const pg_node *node)
{
    return node->dst.dtype == PG_INT64 ? run_matmul(pool, node) : pg_cpu_matmul_on(pool, node);
}

typedef struct split_policy {
    pg_status (*run)(pg_pool *pool, const pg_node *node);
    bool one_thread_too; /* run through the policy even on a one-thread pool */
} split_policy;

#define PG_CPU_SPLIT_SERIAL(cpu) {split_serial, false}
#define PG_CPU_SPLIT_ELEM(cpu) {split_elem, false}
#define PG_CPU_SPLIT_UNARY(cpu) {split_unary, false}
#define PG_CPU_SPLIT_RANDOM(cpu) {split_random, false}
#define PG_CPU_SPLIT_ROWS(cpu) {run_rows, false}
#define PG_CPU_SPLIT_UPDATE(cpu) {run_update, false}
#define PG_CPU_SPLIT_TOPK(cpu) {run_index, false}
#define PG_CPU_SPLIT_MATMUL(cpu) {split_matmul, false}
#define PG_CPU_SPLIT_OWN(cpu) {cpu##_on, false}
#define PG_CPU_SPLIT_REDUCE(cpu) {pg_cpu_run_reduce, true} /* shape-fixed blocks on 1 thread too */
static const split_policy split_table[PG_NUM_OPS] = {
#define PG_NODE(ID, params, cpu, split, ...) [PG_OP_##ID] = PG_CPU_SPLIT_##split(cpu),
#include "../../core/pg_ops.def"
};

pg_status pg_cpu_run(pg_pool *pool, const pg_node *node)
{
    if ((unsigned)node->op >= (unsigned)PG_NUM_OPS)
        return pg_cpu_execute(node); /* which says so */
    const split_policy *s = &split_table[node->op];
    if (pg_pool_threads(pool) < 2 && !s->one_thread_too)
        return pg_cpu_execute(node);
    return s->run(pool, node);
}

/* ---- the cpu device's pool ------------------------------------------------------------ */

static pthread_mutex_t g_cpu_lock = PTHREAD_MUTEX_INITIALIZER;
static pg_pool *_Atomic g_cpu_pool;
static _Atomic int g_cpu_threads; /* 0: not chosen yet (one per core) */

pg_pool *pg_cpu_pool(void)
{
    pg_pool *p = atomic_load_explicit(&g_cpu_pool, memory_order_acquire);
    if (p)
        return p;
    pthread_mutex_lock(&g_cpu_lock);
    p = g_cpu_pool;
    if (!p) {
        pg_cpu_blas_init();
        int n = g_cpu_threads ? g_cpu_threads : pg_host_cores();
        if (pg_pool_create("pygpu-cpu", n, &p) != PG_OK)
            p = NULL; /* no threads to be had: ops run on the caller */
        atomic_store_explicit(&g_cpu_pool, p, memory_order_release);
        g_cpu_threads = n;
    }
    pthread_mutex_unlock(&g_cpu_lock);
    return p;
}

/* The child of fork(): the pool's threads are not there; make a new pool on first use
 * (pg_fork.h). The old one is left as it is (its memory is the parent's copy). */
void pg_cpu_after_fork(void)
{
    pthread_mutex_init(&g_cpu_lock, NULL);
    atomic_store(&g_cpu_pool, NULL);
}

pg_status pg_cpu_set_threads(int n)
{
    if (n < 1)
        return pg_error_set(PG_ERR_VALUE, "set_num_threads: need at least 1 thread, got %d", n);
    pthread_mutex_lock(&g_cpu_lock);
    pg_status st = PG_OK;
    if (g_cpu_pool)
        st = pg_pool_resize(g_cpu_pool, n);
    if (st == PG_OK)
        g_cpu_threads = n;
    pthread_mutex_unlock(&g_cpu_lock);
    return st;
}

int pg_cpu_get_threads(void)
{
    int n = g_cpu_threads;
    return n ? n : pg_host_cores();
}

