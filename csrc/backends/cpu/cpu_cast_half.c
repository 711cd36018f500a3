/* cpu_cast_half.c - copy/cast loops for float16 and bfloat16.
 *
 * Unit-stride float32 <-> half runs use the vector converters
 * (cpu_half_convert.c); every other cast goes through a double with the
 * bit-level helpers of pg_half.h (round to nearest even, NaN and inf kept),
 * so one loop serves all six dtypes in both directions. Kept apart from
 * cpu_elementwise.c, whose cast table is indexed by the four wide dtypes;
 * half arithmetic is in the op families' files (cpu_elementwise.c,
 * cpu_unary.c, cpu_reduce.c). */
#include <stdint.h>

#include "../../core/pg_half.h"
#include "cpu_half_convert.h"
#include "cpu_kernels.h"

/* One element of dtype `dt` at p, as a double (bool and int64 exactly where they can be). */
static inline double load(int dt, const char *p)
{
    switch (dt) {
    case PG_BOOL: return *(const uint8_t *)p;
    case PG_INT64: return (double)*(const int64_t *)p;
    case PG_FLOAT32: return *(const float *)p;
    case PG_FLOAT64: return *(const double *)p;
    case PG_FLOAT16: return pg_f16_to_double(*(const uint16_t *)p);
    default: return pg_bf16_to_double(*(const uint16_t *)p);
    }
}

static inline void store(int dt, char *p, double x)
{
    switch (dt) {
    case PG_BOOL: *(uint8_t *)p = x != 0; break; /* NaN is true, as in NumPy */
    case PG_INT64: /* out of range and NaN give INT64_MIN, as x86 and NumPy do */
        *(int64_t *)p = (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x
                                                                                   : INT64_MIN;
        break;
    case PG_FLOAT32: *(float *)p = (float)x; break;
    case PG_FLOAT64: *(double *)p = x; break;
    case PG_FLOAT16: *(uint16_t *)p = pg_f16_from_double(x); break;
    default: *(uint16_t *)p = pg_bf16_from_double(x); break;
    }
}

typedef struct {
    int src, dst;
} cast_arg;

static void cast_loop(int64_t n, char **p, const int64_t *s, const void *arg)
{
    const cast_arg *a = arg;
    if (a->src == a->dst) { /* a plain 2-byte copy: bits (NaN payloads) unchanged */
        for (int64_t i = 0; i < n; i++)
            *(uint16_t *)(p[0] + i * s[0]) = *(const uint16_t *)(p[1] + i * s[1]);
        return;
    }
    /* unit-stride float32 <-> half (autocast's casts): the vector converters */
    if (a->src == PG_FLOAT32 && s[1] == 4 && s[0] == 2 &&
        (a->dst == PG_FLOAT16 || a->dst == PG_BFLOAT16)) {
        pg_cpu_f32_to_half(a->dst, n, (const float *)p[1], (uint16_t *)p[0]);
        return;
    }
    if (a->dst == PG_FLOAT32 && s[0] == 4 && s[1] == 2 &&
        (a->src == PG_FLOAT16 || a->src == PG_BFLOAT16)) {
        pg_cpu_half_to_f32(a->src, n, (const uint16_t *)p[1], (float *)p[0]);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        store(a->dst, p[0] + i * s[0], load(a->src, p[1] + i * s[1]));
}

pg_status pg_cpu_copy_half(const pg_node *node)
{
    cast_arg a = {node->src[0].dtype, node->dst.dtype};
    const pg_tensor *ops[2] = {&node->dst, &node->src[0]};
    pg_cpu_iterate(2, ops, NULL, cast_loop, &a);
    return PG_OK;
}

uint16_t pg_cpu_half_bits(int dtype, double x)
{
    return dtype == PG_FLOAT16 ? pg_f16_from_double(x) : pg_bf16_from_double(x);
}
