/* pg_cuda_ops.cuh - the op table's columns as constexpr data for the kernels'
 * templates: which dtypes an elementwise op's kernel is instantiated for and
 * whether it writes bool, read from csrc/core/pg_ops.def (the `in` and `out`
 * columns, pg_op_props.h says what each value means). The kernels' case lists
 * come from the same file, so csrc/backends/cuda/kernels/ restates no list of ops. */
#ifndef PG_CUDA_OPS_CUH
#define PG_CUDA_OPS_CUH

#include <stdint.h>

#include <type_traits>

#include "pg_cuda_kernels.h"

constexpr unsigned char pg_cuda_bin_in[] = {
#define PG_BINARY(ID, name, gen, method, py, grad, doc, in, ...) PG_IN_##in,
#include "pg_ops.def"
};
constexpr unsigned char pg_cuda_bin_out[] = {
#define PG_BINARY(ID, name, gen, method, py, grad, doc, in, out, ...) PG_OUT_##out,
#include "pg_ops.def"
};
constexpr unsigned char pg_cuda_un_in[] = {
#define PG_UNARY(ID, name, gen, method, py, grad, doc, in, ...) PG_IN_##in,
#include "pg_ops.def"
};
constexpr unsigned char pg_cuda_un_out[] = {
#define PG_UNARY(ID, name, gen, method, py, grad, doc, in, out, ...) PG_OUT_##out,
#include "pg_ops.def"
};

/* Whether the generic layer can send element type T (the computed dtype) to an op whose
 * `in` column is `in`: bool reaches ANY/BOOL/TOBOOL/INTBOOL ops, the integers
 * ANY/NUM/INTBOOL/INT ones; FLOAT/NUMF ops compute integers in a float type
 * (pg_ops_elementwise.c). */
template <typename T> constexpr bool pg_cuda_takes(int in)
{
    if (std::is_same<T, bool>::value)
        return in == PG_IN_ANY || in == PG_IN_BOOL || in == PG_IN_TOBOOL || in == PG_IN_INTBOOL;
    if (std::is_integral<T>::value)
        return in == PG_IN_ANY || in == PG_IN_NUM || in == PG_IN_INTBOOL || in == PG_IN_INT;
    return in == PG_IN_ANY || in == PG_IN_NUM || in == PG_IN_FLOAT || in == PG_IN_NUMF;
}

#endif
