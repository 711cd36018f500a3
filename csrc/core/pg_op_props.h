/* pg_op_props.h - the subop enums and each elementwise op's properties, read
 * from the op table's columns (pg_ops.def), so no `op == ...` list restates them;
 * and the codes and flags of the other node kinds' sub-ops (pg_subops.def's rows).
 *
 * Plain C and C++ (no <stdatomic.h>): the core (through pg_node.h), the CPU
 * kernels, the CUDA plugin's glue and the CUDA kernels (csrc/backends/cuda/kernels/pg_cuda_kernels.h,
 * whose PG_CUDA_* codes are these) include it. */
#ifndef PG_OP_PROPS_H
#define PG_OP_PROPS_H

#include <stddef.h> /* NULL: a row's grad */

/* What an op's `in` column says (pg_ops.def explains each). */
enum pg_op_in { PG_IN_ANY, PG_IN_NUM, PG_IN_FLOAT, PG_IN_NUMF, PG_IN_BOOL, PG_IN_TOBOOL, PG_IN_INTBOOL };
/* `out`: the result dtype is the computed one, or bool */
enum pg_op_out { PG_OUT_SAME, PG_OUT_BOOL };
/* `cost`: what an element costs, for the thread pool's grain */
enum pg_op_cost { PG_COST_CHEAP, PG_COST_TRANSC };

/* The subops, in the op table's order. */
typedef enum pg_binary_op {
#define PG_BINARY(ID, ...) PG_BIN_##ID,
#include "pg_ops.def"
    PG_NUM_BINARY
} pg_binary_op;

typedef enum pg_unary_op {
#define PG_UNARY(ID, ...) PG_UN_##ID,
#include "pg_ops.def"
    PG_NUM_UNARY
} pg_unary_op;

typedef enum pg_reduce_op {
#define PG_REDUCE(ID, ...) PG_RED_##ID,
#include "pg_ops.def"
    PG_NUM_REDUCE
} pg_reduce_op;

/* The sub-op rows' flags column (pg_subops.def's PG_SUBOP_FLAG rows): PG_SUBF_<ID>. */
enum pg_subop_flag_bit {
#define PG_SUBOP_FLAG(ID, doc) PG_SUBF_BIT_##ID,
#include "pg_subops.def"
    PG_NUM_SUBOP_FLAGS
};
enum pg_subop_flag {
#define PG_SUBOP_FLAG(ID, doc) PG_SUBF_##ID = 1 << PG_SUBF_BIT_##ID,
#include "pg_subops.def"
};

/* The sub-ops of the node kinds that have them (INDEX, POOL, CONV, ..., LINALG), one
 * numbering over every PG_SUBOP row of pg_subops.def: PG_<NODE>_<ID> (PG_INDEX_GATHER,
 * PG_TERNARY_LERP). What a code's row says: pg_subop_node/_flags/_name (pg_node.h). */
typedef enum pg_subop {
#define PG_SUBOP(NODE, ID, ...) PG_##NODE##_##ID,
#include "pg_subops.def"
    PG_NUM_SUBOPS
} pg_subop;

/* Activations a fused linear layer applies (the subop of PG_OP_LINEAR_*); 0 is none. */
enum pg_act {
    PG_ACT_NONE = 0,
#define PG_ACT(ID, ...) PG_ACT_##ID,
#include "pg_ops.def"
    PG_NUM_ACT
};

/* Each op's columns as a function of its subop (host code: the CUDA kernels keep
 * constexpr copies, csrc/backends/cuda/kernels/pg_cuda_ops.cuh). */
#ifndef __CUDACC__
static inline int pg_binary_in(int op)
{
    static const unsigned char t[] = {
#define PG_BINARY(ID, name, gen, method, py, grad, doc, in, ...) PG_IN_##in,
#include "pg_ops.def"
    };
    return t[op];
}
static inline int pg_binary_out(int op)
{
    static const unsigned char t[] = {
#define PG_BINARY(ID, name, gen, method, py, grad, doc, in, out, ...) PG_OUT_##out,
#include "pg_ops.def"
    };
    return t[op];
}
/* differentiable: the row names a grad_fn (a backward rule) */
static inline int pg_binary_differentiable(int op)
{
    static const char *const t[] = {
#define PG_BINARY(ID, name, gen, method, py, grad, ...) grad,
#include "pg_ops.def"
    };
    return t[op] != 0;
}
static inline int pg_unary_in(int op)
{
    static const unsigned char t[] = {
#define PG_UNARY(ID, name, gen, method, py, grad, doc, in, ...) PG_IN_##in,
#include "pg_ops.def"
    };
    return t[op];
}
static inline int pg_unary_out(int op)
{
    static const unsigned char t[] = {
#define PG_UNARY(ID, name, gen, method, py, grad, doc, in, out, ...) PG_OUT_##out,
#include "pg_ops.def"
    };
    return t[op];
}
static inline int pg_unary_cost(int op)
{
    static const unsigned char t[] = {
#define PG_UNARY(ID, name, gen, method, py, grad, doc, in, out, cost, ...) PG_COST_##cost,
#include "pg_ops.def"
    };
    return t[op];
}
static inline int pg_unary_differentiable(int op)
{
    static const char *const t[] = {
#define PG_UNARY(ID, name, gen, method, py, grad, ...) grad,
#include "pg_ops.def"
    };
    return t[op] != 0;
}
#endif

#endif
