/* cpu_act.h - the fused linear layers' activations on one row, generated from
 * the op table's PG_ACT rows (core/pg_ops.def), so the GEMM epilogues
 * (cpu_gemm.c, cpu_gemm_half.c) and the backward prologue (cpu_train.c) keep
 * no switch of their own: a new activation is a row, nothing here.
 *
 *   pg_act_fwd_<T>(act, n, row)          row[j] = f(row[j])
 *   pg_act_bwd_<T>(act, n, out, g, y)    out[j] = g[j] * f'(x[j]), through y = f(x)
 *                                        (out may be g itself)
 * T is float or double. PG_ACT_NONE (0) has no row: both leave the data alone,
 * and callers skip the pass. always_inline, so each ISA variant of a
 * PG_CPU_DISPATCH kernel (cpu_vecmath.h) gets its own vector loop, with
 * libmvec's expf/tanhf where a row calls them. */
#ifndef PG_CPU_ACT_H
#define PG_CPU_ACT_H

#include <math.h>
#include <stdint.h>

#include "../../core/pg_op_props.h"
#include "cpu_vecmath.h"

/* a row's f and g * f' call these on their element type */
#define PG_ACTF_EXP(v) _Generic((v), float: expf, default: exp)(v)
#define PG_ACTF_TANH(v) _Generic((v), float: tanhf, default: tanh)(v)

#define PG_CPU_ACT_INLINE static inline __attribute__((always_inline))

PG_CPU_ACT_INLINE void pg_act_fwd_float(int act, int64_t n, float *row)
{
    switch (act) {
#define PG_ACT(ID, name, module, F, GDF)                                             \
    case PG_ACT_##ID:                                                                \
        _Pragma("omp simd") for (int64_t j = 0; j < n; j++)                          \
        {                                                                            \
            float x = row[j];                                                        \
            row[j] = (float)(F);                                                     \
        }                                                                            \
        break;
#include "../../core/pg_ops.def"
    default: break;
    }
}

PG_CPU_ACT_INLINE void pg_act_fwd_double(int act, int64_t n, double *row)
{
    switch (act) {
#define PG_ACT(ID, name, module, F, GDF)                                             \
    case PG_ACT_##ID:                                                                \
        _Pragma("omp simd") for (int64_t j = 0; j < n; j++)                          \
        {                                                                            \
            double x = row[j];                                                       \
            row[j] = (double)(F);                                                    \
        }                                                                            \
        break;
#include "../../core/pg_ops.def"
    default: break;
    }
}

PG_CPU_ACT_INLINE void pg_act_bwd_float(int act, int64_t n, float *out, const float *gv,
                                        const float *yv)
{
    switch (act) {
#define PG_ACT(ID, name, module, F, GDF)                                             \
    case PG_ACT_##ID:                                                                \
        _Pragma("omp simd") for (int64_t j = 0; j < n; j++)                          \
        {                                                                            \
            float g = gv[j], y = yv[j];                                              \
            out[j] = (float)(GDF);                                                   \
        }                                                                            \
        break;
#include "../../core/pg_ops.def"
    default: break;
    }
}

PG_CPU_ACT_INLINE void pg_act_bwd_double(int act, int64_t n, double *out, const double *gv,
                                         const double *yv)
{
    switch (act) {
#define PG_ACT(ID, name, module, F, GDF)                                             \
    case PG_ACT_##ID:                                                                \
        _Pragma("omp simd") for (int64_t j = 0; j < n; j++)                          \
        {                                                                            \
            double g = gv[j], y = yv[j];                                             \
            out[j] = (double)(GDF);                                                  \
        }                                                                            \
        break;
#include "../../core/pg_ops.def"
    default: break;
    }
}

#endif
