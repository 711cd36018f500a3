/* pg_fp8_ops.h - the ops PyTorch runs on its float8 dtypes, as a table.
 *
 * PyTorch 2.13's CPU computes a handful of ops on float8 (==, != with tensors and numbers, *
 * of two float8 tensors, abs, isnan, isinf and isfinite on some formats, and a matrix
 * product whose right operand is a matrix) and refuses the rest with NotImplementedError
 * ("add_stub" not implemented for 'Float8_e4m3fn'). Each of those is a row below, with the
 * formats it runs on (a bit per float8 row of pg_dtype.h, from FLOAT8_E4M3FN on) and the name
 * PyTorch's refusal gives where a format or an operand is not taken. The core runs a row as
 * PyTorch does: its operands widened to float32 (exact: every float8 value is a float32),
 * the op computed once in float32 by the ordinary kernels, and a float8 result rounded back
 * once (pg_ops_elementwise.c, pg_ops_matmul.c); a Python number beside a float8 tensor is
 * first rounded to the format, as PyTorch wraps it into a tensor of that dtype. So no backend
 * has a float8 kernel: float8 is a column here, not a loop. The table was read off PyTorch
 * 2.13 by tests/test_bare_dtypes.py's op table, which checks it both ways. */
#ifndef PG_FP8_OPS_H
#define PG_FP8_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include "pg_dtype.h"
#include "pg_fp8.h"
#include "pg_node.h"
#include "pg_op_props.h"

/* the formats as bits of a mask */
#define PG_FP8_BIT(ID) (1u << (PG_##ID - PG_FLOAT8_E4M3FN))
#define PG_FP8_EVERY                                                                       \
    (PG_FP8_BIT(FLOAT8_E4M3FN) | PG_FP8_BIT(FLOAT8_E5M2) | PG_FP8_BIT(FLOAT8_E4M3FNUZ) |    \
     PG_FP8_BIT(FLOAT8_E5M2FNUZ) | PG_FP8_BIT(FLOAT8_E8M0FNU))
#define PG_FP8_SIGNED (PG_FP8_EVERY & ~PG_FP8_BIT(FLOAT8_E8M0FNU)) /* e8m0fnu has no sign */

/* X(node kind, subop, formats it runs on, takes a Python number or a 0-d operand, PyTorch's
 * name for the kernel it refuses) */
#define PG_FP8_OPS(X)                                                                      \
    X(PG_OP_BINARY, PG_BIN_EQ, PG_FP8_EVERY, true, "eq_cpu")                               \
    X(PG_OP_BINARY, PG_BIN_NE, PG_FP8_EVERY, true, "ne_cpu")                               \
    X(PG_OP_BINARY, PG_BIN_MUL, PG_FP8_EVERY, false, "mul_cpu_reduced_float")              \
    X(PG_OP_UNARY, PG_UN_ABS, PG_FP8_SIGNED, true, "abs_cpu")                              \
    X(PG_OP_UNARY, PG_UN_ISNAN, PG_FP8_EVERY, true, "isnan")                               \
    X(PG_OP_UNARY, PG_UN_ISINF, PG_FP8_BIT(FLOAT8_E5M2), true, "isinf")                    \
    X(PG_OP_UNARY, PG_UN_ISFINITE, PG_FP8_BIT(FLOAT8_E5M2) | PG_FP8_BIT(FLOAT8_E8M0FNU),    \
      true, "isfinite")                                                                    \
    X(PG_OP_MATMUL, 0, PG_FP8_SIGNED, true, "addmm_impl_cpu_")

typedef struct pg_fp8_op {
    int kind, subop;
    unsigned formats;
    bool numbers;
    const char *kernel;
} pg_fp8_op;

/* The row of (kind, subop), or NULL: PyTorch runs no such op on any float8 format. */
static inline const pg_fp8_op *pg_fp8_op_find(int kind, int subop)
{
#define PG_FP8_OP_ROW(k, s, f, n, name) {k, s, f, n, name},
    static const pg_fp8_op rows[] = {PG_FP8_OPS(PG_FP8_OP_ROW)};
#undef PG_FP8_OP_ROW
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].kind == kind && rows[i].subop == subop)
            return &rows[i];
    return NULL;
}

/* whether PyTorch runs (kind, subop) on float8 dtype dt (with a number or 0-d operand:
 * `number`); where it does not, *kernel is the name its refusal gives (or NULL: the op's own) */
static inline bool pg_fp8_op_runs(int kind, int subop, pg_dtype dt, bool number,
                                  const char **kernel)
{
    const pg_fp8_op *row = pg_fp8_op_find(kind, subop);
    *kernel = row ? row->kernel : NULL;
    return row && (row->formats & (1u << (dt - PG_FLOAT8_E4M3FN))) && (row->numbers || !number);
}

/* x rounded to float8 dtype dt and back (a Python number beside a float8 tensor) */
static inline double pg_fp8_round(pg_dtype dt, double x)
{
#define PG_FP8_ROUND_ROW(ID, ...)                                                          \
    if (dt == PG_##ID)                                                                     \
        return pg_fp8_to_double_##ID(pg_fp8_from_double_##ID(x));
    PG_FP8_FORMATS(PG_FP8_ROUND_ROW)
#undef PG_FP8_ROUND_ROW
    return pg_fp8_to_double_FLOAT8_E8M0FNU(pg_fp8_from_double_FLOAT8_E8M0FNU(x));
}

/* The name PyTorch's refusal gives for a float8 matmul of these ranks, or NULL where it folds
 * them into one mm (a right operand that is a matrix): mv and dot, and bmm for a batch. */
static inline const char *pg_fp8_matmul_refusal(int a_ndim, int b_ndim)
{
    if (b_ndim == 2)
        return NULL;
    if (b_ndim > 2)
        return "bmm";
    return a_ndim == 1 ? "dot" : "addmv_impl_cpu";
}

#endif
