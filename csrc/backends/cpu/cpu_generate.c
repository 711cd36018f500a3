/* cpu_generate.c - tensors made from nothing: arange and Philox random numbers.
 * Both write a contiguous dst; element i depends only on i (and the seed), so
 * every backend produces the same values (uniforms bit for bit; normals up to
 * the last bits of each platform's log and cos: here libmvec's, which may
 * differ by an ulp between AVX-512 and AVX2 machines). */
#include <float.h>
#include <string.h>

#include "../../core/pg_philox.h"
#include "cpu_half_convert.h"
#include "cpu_kernels.h"
#include "cpu_vecmath.h"

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
    case PG_FLOAT16:
    case PG_BFLOAT16: { /* counted as float32 (as the float32 arange), rounded once per block */
        float buf[PG_CPU_HALF_BLOCK];
        for (int64_t i0 = 0; i0 < n; i0 += PG_CPU_HALF_BLOCK) {
            int64_t w = n - i0 < PG_CPU_HALF_BLOCK ? n - i0 : PG_CPU_HALF_BLOCK;
            for (int64_t i = 0; i < w; i++)
                buf[i] = (float)(start + (double)(i0 + i) * step);
            pg_cpu_f32_to_half(d->dtype, w, buf, (uint16_t *)p + i0);
        }
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++)
            ((uint8_t *)p)[i] = (start + (double)i * step) != 0;
        break;
    }
    return PG_OK;
}

/* One vector loop per (distribution, dtype): Philox is integer arithmetic the
 * compiler vectorizes across elements, and the normal's log and cos come from
 * libmvec (cpu_vecmath.h). */
#define RANDOM_LOOP(NAME, T, EXPR)                                                      \
    PG_CPU_DISPATCH(void, NAME, (int64_t n, T *o, uint64_t seed, uint64_t off), (n, o, seed, off))        \
    {                                                                                   \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = (EXPR);              \
    }

/* pg_philox_uniform, bit for bit, with the 53-bit integer converted in two 32-bit
 * halves: uint64 -> double has no vector instruction before AVX-512DQ. */
static inline double philox_uniform(uint64_t seed, uint64_t index)
{
    pg_philox_out o = pg_philox4x32_10(index, seed);
    uint64_t bits = (((uint64_t)o.v[0] << 21) ^ (uint64_t)o.v[1]) & ((1ull << 53) - 1);
    double hi = (double)(int32_t)(uint32_t)(bits >> 32); /* < 2^21 */
    double lo = (double)(int32_t)((uint32_t)bits ^ 0x80000000u) + 2147483648.0; /* signed only */
    return (hi * 4294967296.0 + lo) * (1.0 / 9007199254740992.0);
}

/* (float)v, except where that rounds up to 1.0f (v >= 1 - 2^-25): then the largest
 * float below 1, so the result stays in [0, 1). Selected in double, then converted once. */
static inline float uniform_below_one(double v)
{
    return (float)(v < 1.0 - 0x1p-25 ? v : 1.0 - 0x1p-24);
}

RANDOM_LOOP(uniform_f64, double, philox_uniform(seed, off + (uint64_t)i))

PG_CPU_DISPATCH(void, below_one_f32, (int64_t n, float *o, const double *v), (n, o, v))
{
    _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = uniform_below_one(v[i]);
}

/* GCC does not vectorize Philox with a float32 store in the same loop: draw
 * float64 uniforms into a stack block, then narrow them. */
static void uniform_f32(int64_t n, float *o, uint64_t seed, uint64_t off)
{
    double block[256];
    for (int64_t i0 = 0; i0 < n; i0 += 256) {
        int64_t w = n - i0 < 256 ? n - i0 : 256;
        uniform_f64(w, block, seed, off + (uint64_t)i0);
        below_one_f32(w, o + i0, block);
    }
}
RANDOM_LOOP(normal_block_f32, float, (float)pg_philox_normal(seed, off + (uint64_t)i))
RANDOM_LOOP(normal_block_f64, double, pg_philox_normal(seed, off + (uint64_t)i))

/* The normal's log and cos differ in the last bits between libmvec and scalar
 * glibc, so element i must never fall in a loop's scalar tail, or its value
 * would depend on n: blocks of a multiple of 16 elements (every vector width)
 * are computed into a stack buffer and the wanted part copied out. */
#define NORMAL(SUF, T)                                                              \
    static void normal_##SUF(int64_t n, T *o, uint64_t seed, uint64_t off)          \
    {                                                                               \
        T block[256];                                                               \
        for (int64_t i0 = 0; i0 < n; i0 += 256) {                                   \
            int64_t w = n - i0 < 256 ? n - i0 : 256;                                \
            normal_block_##SUF((w + 15) / 16 * 16, block, seed, off + (uint64_t)i0); \
            memcpy(o + i0, block, (size_t)w * sizeof(T));                           \
        }                                                                           \
    }
NORMAL(f32, float)
NORMAL(f64, double)

pg_status pg_cpu_random(const pg_node *node)
{
    const pg_tensor *d = &node->dst;
    int64_t n = pg_tensor_numel(d);
    uint64_t seed = node->p.random.seed, off = node->p.random.offset;
    bool normal = node->subop == PG_RANDOM_NORMAL;
    char *p = pg_tensor_data(d);
    if (d->dtype == PG_FLOAT32)
        (normal ? normal_f32 : uniform_f32)(n, (float *)p, seed, off);
    else
        (normal ? normal_f64 : uniform_f64)(n, (double *)p, seed, off);
    return PG_OK;
}
