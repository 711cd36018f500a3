/* cpu_generate.c - tensors made from nothing: arange and Philox random numbers.
 * Both write a contiguous dst; element i depends only on i (and the seed), so
 * every backend produces the same values. */
#include <float.h>

#include "../../core/pg_philox.h"
#include "cpu_kernels.h"

pg_status pg_cpu_arange(const pg_node *node)
{
    const pg_tensor *d = &node->dst;
    int64_t n = pg_tensor_numel(d);
    double start = node->p.arange.start, step = node->p.arange.step;
    char *p = pg_tensor_data(d);
    switch (d->dtype) {
    case PG_INT64:
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)p)[i] = (int64_t)(start + (double)i * step);
        break;
    case PG_FLOAT32:
        for (int64_t i = 0; i < n; i++)
            ((float *)p)[i] = (float)(start + (double)i * step);
        break;
    case PG_FLOAT64:
        for (int64_t i = 0; i < n; i++)
            ((double *)p)[i] = start + (double)i * step;
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            ((uint8_t *)p)[i] = (start + (double)i * step) != 0;
        break;
    }
    return PG_OK;
}

pg_status pg_cpu_random(const pg_node *node)
{
    const pg_tensor *d = &node->dst;
    int64_t n = pg_tensor_numel(d);
    uint64_t seed = node->p.random.seed, off = node->p.random.offset;
    bool normal = node->subop == PG_RANDOM_NORMAL;
    char *p = pg_tensor_data(d);
    if (d->dtype == PG_FLOAT32) {
        const float below_one = 1.0f - FLT_EPSILON / 2;
        for (int64_t i = 0; i < n; i++) {
            double v = normal ? pg_philox_normal(seed, off + (uint64_t)i)
                              : pg_philox_uniform(seed, off + (uint64_t)i);
            float f = (float)v;
            ((float *)p)[i] = (!normal && f >= 1.0f) ? below_one : f;
        }
    } else {
        for (int64_t i = 0; i < n; i++)
            ((double *)p)[i] = normal ? pg_philox_normal(seed, off + (uint64_t)i)
                                      : pg_philox_uniform(seed, off + (uint64_t)i);
    }
    return PG_OK;
}
