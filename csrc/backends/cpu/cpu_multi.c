/* cpu_multi.c - the MULTI node (pygpu.optim's multi-tensor step) on cpu and sim: one node
 * over a list of elementwise updates of one kind (pg_node.h pg_node_list).
 *
 * The entries are one flat range of the list's total element count, cut into near-equal
 * parts, one per thread of the device's pool, whatever the sizes of the tensors (a
 * ResNet's or a GPT's many small biases and norms would each be too small to split alone).
 * Each part walks the entries it overlaps and runs the kind's own CPU kernel (the table
 * pg_cpu_execute reads) on each piece, as a node of that kind narrowed to the piece: no
 * loop is written twice, and since every update is elementwise, the result is the
 * per-parameter nodes' bit for bit.
 *
 * MULTI_NORM (clip_grad_norm_'s total norm): the same cut of the flat range, each part
 * summing |x|^p (or taking the largest |x|) over its pieces in double, the parts then
 * combined in part order: one pass over every gradient, whatever their number. */
#include <math.h>

#include "../../core/pg_pool.h"
#include "cpu_kernels.h"
#include "cpu_part.h"

#define MULTI_GRAIN 32768 /* elements per part: an update is a few cheap operations each */
#define MULTI_ALIGN 64    /* part boundaries on whole vectors of the flat range */

typedef struct multi_job {
    const pg_node *n;
    int64_t ntasks;
} multi_job;

/* Entry e's operands narrowed to its elements [a, b), as a node of the list's kind. */
void pg_cpu_multi_entry(const pg_node *n, int e, int64_t a, int64_t b, pg_node *sub)
{
    pg_node_list_entry(n, e, sub);
    pg_tensor *slot[PG_NODE_MAX_SRC + 1 + PG_NODE_MAX_EXTRA];
    int k = 0;
    for (int s = 0; s < sub->nsrc; s++)
        slot[k++] = &sub->src[s];
    slot[k++] = &sub->dst;
    for (int s = 0; s < sub->nextra; s++)
        slot[k++] = &sub->extra[s];
    for (int s = 0; s < k; s++) {
        if (!slot[s]->storage)
            continue; /* an optional operand the kind does without */
        const bool scalar = pg_tensor_numel(slot[s]) == 1; /* broadcast to the entry */
        slot[s]->ndim = 1;
        slot[s]->shape[0] = b - a;
        slot[s]->strides[0] = scalar ? 0 : 1;
        slot[s]->offset += scalar ? 0 : a;
    }
}

static pg_status run_piece(const pg_node *n, int e, int64_t a, int64_t b)
{
    pg_node sub;
    pg_cpu_multi_entry(n, e, a, b, &sub);
    return pg_cpu_execute(&sub);
}

/* Part `task` of the flat range: every entry piece inside it, in list order. */
static pg_status multi_part(void *ctx, int64_t task)
{
    const multi_job *j = ctx;
    const pg_node_list *l = j->n->list;
    int64_t lo, hi, start = 0;
    pg_cpu_part_aligned(l->total, j->ntasks, task, MULTI_ALIGN, &lo, &hi);
    for (int e = 0; e < l->count && start < hi; e++) {
        int64_t len = pg_tensor_numel(&l->t[(size_t)e * (size_t)l->width + (size_t)l->nsrc]);
        int64_t a = lo > start ? lo - start : 0, b = hi < start + len ? hi - start : len;
        if (a < b)
            PG_TRY(run_piece(j->n, e, a, b));
        start += len;
    }
    return PG_OK;
}

pg_status pg_cpu_multi_on(pg_pool *pool, const pg_node *n)
{
    multi_job j = {.n = n, .ntasks = n->list->total / MULTI_GRAIN};
    int64_t threads = pool ? pg_pool_threads(pool) : 1;
    if (j.ntasks > threads)
        j.ntasks = threads;
    if (j.ntasks < 1)
        j.ntasks = 1;
    if (j.ntasks == 1 || !pool)
        return multi_part(&j, 0);
    return pg_pool_run(pool, j.ntasks, multi_part, &j);
}

pg_status pg_cpu_multi(const pg_node *n) { return pg_cpu_multi_on(NULL, n); }

/* ---- MULTI_NORM ------------------------------------------------------------------------ */

#define MULTI_NORM_MAX_PARTS 64

typedef struct norm_job {
    const pg_node *n;
    int64_t ntasks;
    double part[MULTI_NORM_MAX_PARTS];
} norm_job;

/* sum of |x|^p (p = 0: of x != 0; p = inf: the largest |x|, NaN if any is) of x[0..len) */
#define NORM_PIECE(T, ABS, POW)                                                                \
    static double norm_piece_##T(const T *restrict x, int64_t len, double p, double acc)       \
    {                                                                                          \
        if (isinf(p)) {                                                                        \
            for (int64_t k = 0; k < len; k++) {                                                \
                double a = ABS(x[k]);                                                          \
                acc = (a > acc || a != a) && acc == acc ? a : acc;                             \
            }                                                                                  \
            return acc;                                                                        \
        }                                                                                      \
        double s = 0;                                                                          \
        if (p == 2) {                                                                          \
            _Pragma("omp simd reduction(+:s)") for (int64_t k = 0; k < len; k++) s +=          \
                (double)x[k] * (double)x[k];                                                   \
        } else if (p == 1) {                                                                   \
            _Pragma("omp simd reduction(+:s)") for (int64_t k = 0; k < len; k++) s += ABS(x[k]); \
        } else if (p == 0) {                                                                   \
            for (int64_t k = 0; k < len; k++)                                                  \
                s += x[k] != 0;                                                                \
        } else {                                                                               \
            for (int64_t k = 0; k < len; k++)                                                  \
                s += POW((double)ABS(x[k]), p);                                                \
        }                                                                                      \
        return acc + s;                                                                        \
    }
NORM_PIECE(float, fabsf, pow)
NORM_PIECE(double, fabs, pow)

static pg_status norm_part(void *ctx, int64_t task)
{
    norm_job *j = ctx;
    const pg_node_list *l = j->n->list;
    const double p = j->n->p.scalar.f;
    int64_t lo, hi, start = 0;
    pg_cpu_part_aligned(l->total, j->ntasks, task, MULTI_ALIGN, &lo, &hi);
    double acc = 0;
    for (int e = 0; e < l->count && start < hi; e++) {
        const pg_tensor *x = &l->t[(size_t)e * (size_t)l->width];
        int64_t len = pg_tensor_numel(x);
        int64_t a = lo > start ? lo - start : 0, b = hi < start + len ? hi - start : len;
        if (a < b)
            acc = x->dtype == PG_FLOAT32
                      ? norm_piece_float((const float *)pg_tensor_data(x) + a, b - a, p, acc)
                      : norm_piece_double((const double *)pg_tensor_data(x) + a, b - a, p, acc);
        start += len;
    }
    j->part[task] = acc;
    return PG_OK;
}

pg_status pg_cpu_multi_norm_on(pg_pool *pool, const pg_node *n)
{
    norm_job j = {.n = n, .ntasks = n->list->total / MULTI_GRAIN};
    int64_t threads = pool ? pg_pool_threads(pool) : 1;
    if (j.ntasks > threads)
        j.ntasks = threads;
    if (j.ntasks > MULTI_NORM_MAX_PARTS)
        j.ntasks = MULTI_NORM_MAX_PARTS;
    if (j.ntasks < 1)
        j.ntasks = 1;
    if (j.ntasks == 1 || !pool)
        PG_TRY(norm_part(&j, 0));
    else
        PG_TRY(pg_pool_run(pool, j.ntasks, norm_part, &j));
    const double p = n->p.scalar.f;
    double r = j.part[0];
    for (int64_t t = 1; t < j.ntasks; t++) /* in part order: the same bits run to run */
        r = isinf(p) ? ((j.part[t] > r || j.part[t] != j.part[t]) && r == r ? j.part[t] : r)
                     : r + j.part[t];
    if (!isinf(p) && p != 0 && p != 1)
        r = p == 2 ? sqrt(r) : pow(r, 1.0 / p);
    if (n->dst.dtype == PG_FLOAT32)
        *(float *)pg_tensor_data(&n->dst) = (float)r;
    else
        *(double *)pg_tensor_data(&n->dst) = r;
    return PG_OK;
}

pg_status pg_cpu_multi_norm(const pg_node *n) { return pg_cpu_multi_norm_on(NULL, n); }
