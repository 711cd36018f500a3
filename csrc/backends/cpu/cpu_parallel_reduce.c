/* cpu_parallel_reduce.c - a reduction node split over a pool (see cpu_parallel.h).
 *
 * The generic layer hands a contiguous src seen as (outer, R, inner), reduced
 * over R into dst (outer, inner).
 *   - outer >= 2: slices of the outer rows, each reduced whole by the serial
 *     kernel: the result is bit-for-bit the serial one.
 *   - outer == 1 (the first axis, or everything flattened): R is cut into
 *     blocks of rb rows, rb fixed by the shape alone (never by the thread
 *     count or by timing); the serial kernel reduces each block into a row of
 *     partials, and the partials are combined in block order. max, min and
 *     argmax (first index on ties, first NaN wins) are exactly the serial
 *     result; sum differs from the serial one only by rounding, the same on
 *     every run and for every thread count.
 * The combine step is itself split over the inner columns. float16/bfloat16
 * split the same way: a sum's partials are float32 (its node's dst dtype),
 * max/min partials half values, compared as float32. */
#include <stdlib.h>
#include <string.h>

#include "cpu_half_convert.h"
#include "cpu_parallel.h"

typedef struct red_job {
    pg_node base; /* src (outer, R, inner), dst (outer, 1, inner), axis 1 */
    int64_t outer, R, inner;
    int64_t ntasks;
    int64_t rb, nblocks; /* block path */
    pg_storage part_store;
    char *part; /* (nblocks, inner) partials, dst's dtype */
} red_job;

static void set3(pg_tensor *t, int64_t a, int64_t b, int64_t c)
{
    t->ndim = 3;
    t->shape[0] = a;
    t->shape[1] = b;
    t->shape[2] = c;
    t->strides[2] = 1;
    t->strides[1] = c;
    t->strides[0] = b * c;
}

static pg_status run_outer(void *ctx, int64_t task)
{
    red_job *j = ctx;
    int64_t lo, hi;
    pg_cpu_part(j->outer, j->ntasks, task, &lo, &hi);
    if (hi <= lo)
        return PG_OK;
    pg_node sub = j->base;
    sub.src[0].shape[0] = sub.dst.shape[0] = hi - lo;
    sub.src[0].offset += lo * j->R * j->inner;
    sub.dst.offset += lo * j->inner;
    return pg_cpu_execute(&sub);
}

static pg_status run_block(void *ctx, int64_t b)
{
    red_job *j = ctx;
    int64_t r0 = b * j->rb, r1 = r0 + j->rb < j->R ? r0 + j->rb : j->R;
    pg_node sub = j->base;
    sub.src[0].shape[1] = r1 - r0;
    sub.src[0].offset += r0 * j->inner;
    sub.dst.storage = &j->part_store;
    sub.dst.offset = b * j->inner;
    return pg_cpu_execute(&sub);
}

/* Fold the partials of columns [lo, hi) in block order, with the serial kernel's rules. */
#define COMBINE_IMPL(SUF, T, ACC)                                                             \
    static void combine_##SUF(const red_job *j, int op, int64_t lo, int64_t hi)             \
    {                                                                                       \
        int64_t inner = j->inner, nb = j->nblocks;                                          \
        const T *part = (const T *)j->part;                                                 \
        const int64_t *pidx = (const int64_t *)j->part;                                     \
        const T *src = (const T *)pg_tensor_data(&j->base.src[0]);                          \
        char *dst = pg_tensor_data(&j->base.dst);                                           \
        for (int64_t i = lo; i < hi; i++) {                                                 \
            if (op == PG_RED_SUM) {                                                         \
                ACC acc = 0;                                                                \
                for (int64_t b = 0; b < nb; b++)                                            \
                    acc += (ACC)part[b * inner + i];                                        \
                ((T *)dst)[i] = (T)acc;                                                     \
            } else if (op == PG_RED_ARGMAX) {                                               \
                int64_t best = pidx[i];                                                     \
                T bv = src[best * inner + i];                                               \
                for (int64_t b = 1; b < nb; b++) {                                          \
                    int64_t k = b * j->rb + pidx[b * inner + i];                            \
                    T v = src[k * inner + i];                                               \
                    if (bv == bv && (v > bv || v != v)) {                                   \
                        bv = v;                                                             \
                        best = k;                                                           \
                    }                                                                       \
                }                                                                           \
                ((int64_t *)dst)[i] = best;                                                 \
            } else {                                                                        \
                T acc = part[i];                                                            \
                for (int64_t b = 1; b < nb; b++) {                                          \
                    T v = part[b * inner + i];                                              \
                    bool better = op == PG_RED_MAX ? v > acc : v < acc;                     \
                    if (better || v != v)                                                   \
                        acc = acc != acc ? acc : v;                                         \
                }                                                                           \
                ((T *)dst)[i] = acc;                                                        \
            }                                                                               \
        }                                                                                   \
    }

COMBINE_IMPL(i64, int64_t, uint64_t) /* unsigned: wraps on overflow as NumPy does, without UB */
COMBINE_IMPL(f32, float, double)
COMBINE_IMPL(f64, double, double)

/* float16/bfloat16 src: the sum's partials and dst are float32 (or float64), the others' half */
static double wide_at(int dt, const char *p, int64_t i)
{
    switch (dt) {
    case PG_FLOAT32: return ((const float *)p)[i];
    case PG_FLOAT64: return ((const double *)p)[i];
    default: return pg_cpu_half_load(dt, p + 2 * i);
    }
}

static void combine_half(const red_job *j, int op, int64_t lo, int64_t hi)
{
    int64_t inner = j->inner, nb = j->nblocks;
    int sdt = j->base.src[0].dtype, ddt = j->base.dst.dtype;
    const int64_t *pidx = (const int64_t *)j->part;
    const char *src = pg_tensor_data(&j->base.src[0]);
    char *dst = pg_tensor_data(&j->base.dst);
    for (int64_t i = lo; i < hi; i++) {
        if (op == PG_RED_SUM) {
            double acc = 0;
            for (int64_t b = 0; b < nb; b++)
                acc += wide_at(ddt, j->part, b * inner + i);
            if (ddt == PG_FLOAT32)
                ((float *)dst)[i] = (float)acc;
            else if (ddt == PG_FLOAT64)
                ((double *)dst)[i] = acc;
            else
                pg_cpu_half_store(ddt, dst + 2 * i, (float)acc);
        } else if (op == PG_RED_ARGMAX) {
            int64_t best = pidx[i];
            float bv = pg_cpu_half_load(sdt, src + 2 * (best * inner + i));
            for (int64_t b = 1; b < nb; b++) {
                int64_t k = b * j->rb + pidx[b * inner + i];
                float v = pg_cpu_half_load(sdt, src + 2 * (k * inner + i));
                if (bv == bv && (v > bv || v != v)) {
                    bv = v;
                    best = k;
                }
            }
            ((int64_t *)dst)[i] = best;
        } else { /* max/min of half partials: exact, stored back unchanged */
            int64_t at = i;
            float acc = pg_cpu_half_load(ddt, j->part + 2 * i);
            for (int64_t b = 1; b < nb; b++) {
                float v = pg_cpu_half_load(ddt, j->part + 2 * (b * inner + i));
                bool better = op == PG_RED_MAX ? v > acc : v < acc;
                if ((better || v != v) && acc == acc) {
                    acc = v;
                    at = b * inner + i;
                }
            }
            memcpy(dst + 2 * i, j->part + 2 * at, 2);
        }
    }
}

static pg_status run_combine(void *ctx, int64_t task)
{
    red_job *j = ctx;
    int64_t lo, hi;
    pg_cpu_part(j->inner, j->ntasks, task, &lo, &hi);
    int op = j->base.subop;
    switch (j->base.src[0].dtype) {
    case PG_FLOAT16:
    case PG_BFLOAT16: combine_half(j, op, lo, hi); break;
    case PG_INT64: combine_i64(j, op, lo, hi); break;
    case PG_FLOAT32: combine_f32(j, op, lo, hi); break;
    default: combine_f64(j, op, lo, hi); break;
    }
    return PG_OK;
}

pg_status pg_cpu_run_reduce(pg_pool *pool, const pg_node *node)
{
    const pg_tensor *s = &node->src[0];
    int axis = node->p.reduce.axis;
    red_job j;
    j.outer = 1;
    j.inner = 1;
    j.R = s->shape[axis];
    for (int d = 0; d < axis; d++)
        j.outer *= s->shape[d];
    for (int d = axis + 1; d < s->ndim; d++)
        j.inner *= s->shape[d];
    int64_t total = j.outer * j.R * j.inner;
    int dt = s->dtype;
    bool splittable = dt == PG_INT64 || dt == PG_FLOAT32 || dt == PG_FLOAT64 ||
                      pg_dtype_is_half((pg_dtype)dt);
    if (!splittable || total < 2 * PG_RED_BLOCK || j.R < 2)
        return pg_cpu_execute(node);
    int threads = pg_pool_threads(pool);
    j.base = *node;
    set3(&j.base.src[0], j.outer, j.R, j.inner);
    set3(&j.base.dst, j.outer, 1, j.inner);
    j.base.p.reduce.axis = 1;

    if (j.outer >= 2) { /* exact: whole rows per slice */
        j.ntasks = total / PG_RED_BLOCK;
        if (j.ntasks > threads)
            j.ntasks = threads;
        if (j.ntasks > j.outer)
            j.ntasks = j.outer;
        if (j.ntasks < 2)
            return pg_cpu_execute(node);
        return pg_pool_run(pool, j.ntasks, run_outer, &j);
    }

    /* outer == 1: blocks of rows fixed by the shape */
    j.rb = PG_RED_BLOCK / j.inner;
    if (j.rb < 1)
        j.rb = 1;
    j.nblocks = (j.R + j.rb - 1) / j.rb;
    if (j.nblocks < 2)
        return pg_cpu_execute(node);
    size_t esz = pg_dtype_size((pg_dtype)node->dst.dtype);
    j.part = malloc(esz * (size_t)(j.nblocks * j.inner));
    if (!j.part)
        return pg_error_set(PG_ERR_NOMEM, "%s: out of host memory for %lld partial results",
                            node->name, (long long)(j.nblocks * j.inner));
    memset(&j.part_store, 0, sizeof j.part_store);
    j.part_store.device = node->dst.storage->device;
    j.part_store.data = j.part;
    j.part_store.nbytes = j.part_store.capacity = esz * (size_t)(j.nblocks * j.inner);
    pg_status st = pg_pool_run(pool, j.nblocks, run_block, &j);
    if (st == PG_OK) {
        j.ntasks = j.inner * j.nblocks / PG_RED_BLOCK;
        if (j.ntasks > threads)
            j.ntasks = threads;
        if (j.ntasks > j.inner)
            j.ntasks = j.inner;
        if (j.ntasks < 1)
            j.ntasks = 1;
        st = pg_pool_run(pool, j.ntasks, run_combine, &j);
    }
    free(j.part);
    return st;
}
