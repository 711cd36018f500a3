/* cpu_loops.h - the loop generators of the CPU elementwise kernels: UN_LOOP (a unary
 * op: a contiguous vector kernel, strided runs gathered into a stack buffer) and
 * BIN_LOOP (a binary op: vector kernels for tensor-tensor, tensor-scalar and
 * scalar-tensor, a strided loop for the rest). Each expands to a pg_cpu_loop_fn
 * named NAME over one expression in x (and y), compiled for every instruction set
 * (PG_CPU_DISPATCH, cpu_vecmath.h). Shared by cpu_unary.c and cpu_elementwise.c
 * (the original ops) and cpu_math_unary.c / cpu_math_binary.c (the math functions). */
#ifndef PG_CPU_LOOPS_H
#define PG_CPU_LOOPS_H

#include <stdint.h>

#include "cpu_kernels.h"
#include "cpu_vecmath.h"

typedef uint8_t pg_bool_t;

/* The integer kernels are written once and instantiated for every row of pg_dtype.h's
 * PG_INT_DTYPES (X(ID, name, size, T, kind, U, ...): T the element type, U the unsigned
 * type arithmetic wraps in). Their sign tests go by the row's kind column, so that no
 * comparison of an unsigned value with 0 is compiled (-Wtype-limits): */
#define PG_INT_NEG(kind, x) PG_INT_NEG_##kind(x)         /* x < 0 */
#define PG_INT_NEG_KIND_SINT(x) ((x) < 0)
#define PG_INT_NEG_KIND_UINT(x) ((void)(x), 0)
#define PG_INT_MINUS_ONE(kind, x) PG_INT_MINUS_ONE_##kind(x) /* x == -1 */
#define PG_INT_MINUS_ONE_KIND_SINT(x) ((x) == -1)
#define PG_INT_MINUS_ONE_KIND_UINT(x) ((void)(x), 0)

#define GATHER 256 /* elements per gather/scatter block of a strided run */

#define UN_LOOP(NAME, T, EXPR) UN_LOOP_TO(NAME, T, T, EXPR)
/* OT: the result's element type (pg_bool_t for the ops whose `out` column is BOOL) */
#define UN_LOOP_TO(NAME, T, OT, EXPR)                                                     \
    PG_CPU_DISPATCH(void, NAME##_run, (int64_t n, OT *o, const T *a), (n, o, a))                    \
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
        T in[GATHER];                                                                     \
        OT out[GATHER];                                                                   \
        for (int64_t i0 = 0; i0 < n; i0 += GATHER) {                                      \
            int64_t w = n - i0 < GATHER ? n - i0 : GATHER;                                \
            for (int64_t i = 0; i < w; i++)                                               \
                in[i] = *(const T *)(p[1] + (i0 + i) * s[1]);                             \
            NAME##_run(w, out, in);                                                       \
            for (int64_t i = 0; i < w; i++)                                               \
                *(OT *)(p[0] + (i0 + i) * s[0]) = out[i];                                 \
        }                                                                                 \
    }

/* Three vector kernels per op: both operands unit-stride, the right one a
 * scalar (stride 0: x + 2.5, the bias add's broadcast row never needs it), the
 * left one a scalar; anything else (views, mixed broadcasts) is a strided loop. */
#define BIN_LOOP(NAME, T, OT, EXPR)                                                       \
    PG_CPU_DISPATCH(void, NAME##_vv, (int64_t n, OT *o, const T *a, const T *b), (n, o, a, b))         \
    {                                                                                     \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                               \
        {                                                                                 \
            T x = a[i], y = b[i];                                                         \
            o[i] = (OT)(EXPR);                                                            \
        }                                                                                 \
    }                                                                                     \
    PG_CPU_DISPATCH(void, NAME##_vs, (int64_t n, OT *o, const T *a, T y), (n, o, a, y))                \
    {                                                                                     \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                               \
        {                                                                                 \
            T x = a[i];                                                                   \
            o[i] = (OT)(EXPR);                                                            \
        }                                                                                 \
    }                                                                                     \
    PG_CPU_DISPATCH(void, NAME##_sv, (int64_t n, OT *o, T x, const T *b), (n, o, x, b))                \
    {                                                                                     \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                               \
        {                                                                                 \
            T y = b[i];                                                                   \
            o[i] = (OT)(EXPR);                                                            \
        }                                                                                 \
    }                                                                                     \
    static void NAME(int64_t n, char **p, const int64_t *s, const void *arg)              \
    {                                                                                     \
        (void)arg;                                                                        \
        if (s[0] == sizeof(OT) && s[1] == sizeof(T) && s[2] == sizeof(T)) {               \
            NAME##_vv(n, (OT *)p[0], (const T *)p[1], (const T *)p[2]);                   \
        } else if (s[0] == sizeof(OT) && s[1] == sizeof(T) && s[2] == 0) {                \
            NAME##_vs(n, (OT *)p[0], (const T *)p[1], *(const T *)p[2]);                  \
        } else if (s[0] == sizeof(OT) && s[1] == 0 && s[2] == sizeof(T)) {                \
            NAME##_sv(n, (OT *)p[0], *(const T *)p[1], (const T *)p[2]);                  \
        } else {                                                                          \
            for (int64_t i = 0; i < n; i++) {                                             \
                T x = *(const T *)(p[1] + i * s[1]), y = *(const T *)(p[2] + i * s[2]);   \
                *(OT *)(p[0] + i * s[0]) = (OT)(EXPR);                                    \
            }                                                                             \
        }                                                                                 \
    }

#endif
