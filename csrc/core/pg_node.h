/* pg_node.h - one unit of device work, as a backend receives it.
 *
 * The generic op layer (pg_ops_*.c) validates user input, allocates outputs,
 * broadcasts inputs to the output's shape (stride-0 axes) and casts them to a
 * common dtype; then it describes the work as a pg_node and hands it to the
 * device's backend: cpu runs it at once, sim queues it to a worker thread,
 * cuda launches a kernel on the device's stream. Backends trust a node: every
 * check has been made. Plain C data, shared with the CUDA plugin.
 * float16/bfloat16 operands are ordinary: a kernel loads each element,
 * computes in float32 and rounds once (to nearest even) at the store; a
 * binary node's scalar is applied as a float32. */
#ifndef PG_NODE_H
#define PG_NODE_H

#include <stdint.h>

#include "pg_tensor.h"

/* The node kinds, from the op table's PG_NODE rows (pg_ops.def says what each
 * carries). The fused training ops (pg_ops_train.c) take contiguous float operands;
 * REDUCE: the generic layer passes src0 and dst contiguous; dst keeps the reduced
 * axis as 1 and has src0's dtype, except argmax (int64) and the sum of
 * float16/bfloat16 (float32). MATMUL's dst and ARANGE/RANDOM's dst are contiguous. */
typedef enum pg_op {
#define PG_NODE(ID, ...) PG_OP_##ID,
#include "pg_ops.def"
    PG_NUM_OPS
} pg_op;

/* The subop enums (pg_binary_op, pg_unary_op, pg_reduce_op, the activations
 * PG_ACT_*) and each elementwise op's columns (in/out dtypes, cost), all from
 * pg_ops.def. */
#include "pg_op_props.h"

#define PG_NODE_MAX_SRC 5 /* linear backward: dy, x, W, y, W's mask */
#define PG_NODE_MAX_EXTRA 3 /* outputs besides dst */

typedef struct pg_node {
    int op;    /* pg_op */
    int subop; /* pg_binary_op / pg_unary_op / pg_reduce_op / random kind */
    int nsrc;
    pg_tensor src[PG_NODE_MAX_SRC]; /* borrowed; an async backend retains their storages */
    pg_tensor dst;
    /* Further outputs of a fused op (nextra of them): backends treat them as
     * written, exactly like dst (dependency tracking, retains, failures). A
     * tensor both read and written (an optimizer's parameter) appears in src
     * and among the outputs. An operand slot not used by an op has a NULL
     * storage (e.g. a linear layer without bias). */
    int nextra;
    pg_tensor extra[PG_NODE_MAX_EXTRA];
    union { /* the kind's parameters: its PG_NODE row's params column names the member */
        struct { int unused; } none; /* kinds that read only their operands and subop */
        struct { double f; int64_t i; int scalar_left; } scalar; /* FILL, BINARY with nsrc == 1 */
        struct { int axis; } reduce;
        struct { double start, step; } arange;
        struct { uint64_t seed, offset; } random; /* subop 0: uniform, 1: normal */
        struct { double f[6]; int64_t i[2]; } train; /* fused ops' hyper-parameters */
        struct { double value; } ternary; /* TERNARY: addcmul/addcdiv's value, lerp's weight */
    } p;
    const char *name; /* the user-facing op name, for error messages ("add", "matmul") */
} pg_node;

enum { PG_RANDOM_UNIFORM = 0, PG_RANDOM_NORMAL = 1 };

/* Every PG_NODE row's params column names a member of pg_node.p. */
#ifndef __cplusplus
#define PG_NODE(ID, params, ...)                                                                   \
    _Static_assert(sizeof(((pg_node *)0)->p.params) > 0,                                           \
                   "PG_NODE(" #ID "): pg_node.p has no member " #params);
#include "pg_ops.def"
#endif

/* The storages a node writes: dst, then each extra output (NULL-storage slots skipped). */
static inline int pg_node_outputs(const pg_node *n, const pg_tensor **out)
{
    int k = 0;
    out[k++] = &n->dst;
    for (int i = 0; i < n->nextra; i++)
        if (n->extra[i].storage)
            out[k++] = &n->extra[i];
    return k;
}

#endif
