/* pg_cuda_act.cuh - the fused layers' activations on one element, generated from the
 * op table's PG_ACT rows (csrc/core/pg_ops.def): f(x) and g * f'(x) through y = f(x).
 * train.cu's linear epilogue and backward prologue and quant.cu's int8 epilogue expand
 * the same rows, so a new activation is a row, not a case in either file; the CPU twins
 * expand them in csrc/backends/cpu/cpu_act.h. */
#ifndef PG_CUDA_ACT_CUH
#define PG_CUDA_ACT_CUH

#include <math.h>

#include "pg_cuda_kernels.h"

#define PG_ACTF_EXP(v) exp(v)
#define PG_ACTF_TANH(v) tanh(v)

/* f(x) of activation `act` (PG_CUDA_ACT_*; 0, none: x itself) */
template <typename T> __device__ __forceinline__ T pg_act(int act, T x)
{
    switch (act) {
#define PG_ACT(ID, name, module, F, GDF) \
    case PG_CUDA_ACT_##ID: return (T)(F);
#include "pg_ops.def"
    default: return x;
    }
}

/* g * f'(x), written through the output y = f(x) (none: g itself) */
template <typename T> __device__ __forceinline__ T pg_act_grad(int act, T g, T y)
{
    switch (act) {
#define PG_ACT(ID, name, module, F, GDF) \
    case PG_CUDA_ACT_##ID: return (T)(GDF);
#include "pg_ops.def"
    default: return g;
    }
}

#endif
