/* cpu_map_loop.h - the one elementwise map loop, o[i] = (OT)(EXPR of x = a[i]), that the
 * unary ops (cpu_unary.c) and the casts (cpu_elementwise.c) are both made of.
 *
 * PG_CPU_MAP_LOOP(NAME, T, OT, EXPR) defines NAME, a pg_cpu_loop_fn over one input of
 * element type T and one output of OT: a contiguous run goes straight to NAME##_run, one
 * `#pragma omp simd` kernel compiled per instruction set (PG_CPU_DISPATCH); a strided run
 * (a transpose, a step slice, the pool's column splits) is gathered into stack blocks,
 * computed by the same vector kernel and scattered back, so views get the vector code
 * (libmvec's transcendentals) too. */
#ifndef PG_CPU_MAP_LOOP_H
#define PG_CPU_MAP_LOOP_H

#include <stdint.h>

#include "cpu_vecmath.h"

#define PG_CPU_MAP_GATHER 256 /* elements per gather/scatter block of a strided run */

#define PG_CPU_MAP_LOOP(NAME, T, OT, EXPR)                                                \
    PG_CPU_DISPATCH(void, NAME##_run, (int64_t n, OT *o, const T *a), (n, o, a))          \
    {                                                                                     \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                               \
        {                                                                                 \
            T x = a[i];                                                                   \
            o[i] = (OT)(EXPR);                                                            \
        }                                                                                 \
    }                                                                                     \
    static void NAME(int64_t n, char **p, const int64_t *s, const void *arg)              \
    {                                                                                     \
        (void)arg;                                                                        \
        if (s[0] == sizeof(OT) && s[1] == sizeof(T)) {                                    \
            NAME##_run(n, (OT *)p[0], (const T *)p[1]);                                   \
            return;                                                                       \
        }                                                                                 \
        T in[PG_CPU_MAP_GATHER];                                                          \
        OT out[PG_CPU_MAP_GATHER];                                                        \
        for (int64_t i0 = 0; i0 < n; i0 += PG_CPU_MAP_GATHER) {                           \
            int64_t w = n - i0 < PG_CPU_MAP_GATHER ? n - i0 : PG_CPU_MAP_GATHER;          \
            for (int64_t i = 0; i < w; i++)                                               \
                in[i] = *(const T *)(p[1] + (i0 + i) * s[1]);                             \
            NAME##_run(w, out, in);                                                       \
            for (int64_t i = 0; i < w; i++)                                               \
                *(OT *)(p[0] + (i0 + i) * s[0]) = out[i];                                 \
        }                                                                                 \
    }

#endif
