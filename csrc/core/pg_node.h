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

typedef enum pg_op {
    PG_OP_FILL,   /* dst[...] = scalar */
    PG_OP_COPY,   /* dst = (dst.dtype) src0, same shape, any strides */
    PG_OP_BINARY, /* dst = src0 <subop> src1 (or scalar); src dtypes equal */
    PG_OP_UNARY,  /* dst = <subop>(src0); same dtype */
    PG_OP_REDUCE, /* dst = <subop> of src0 over axis `reduce.axis`; dst keeps that axis as 1;
                     the generic layer passes src0 and dst contiguous; dst has src0's dtype,
                     except argmax (int64) and the sum of float16/bfloat16 (float32) */
    PG_OP_MATMUL, /* dst(B,M,N) = src0(B,M,K) @ src1(B,K,N); dst contiguous */
    PG_OP_ARANGE, /* dst[i] = start + i*step; dst contiguous 1-D */
    PG_OP_RANDOM, /* dst (contiguous, float) = Philox uniform [0,1) or standard normal */
    /* Fused training ops (pg_ops_train.c). Every operand is contiguous, float32/64;
     * see pg_ops_train.c for each one's sources and outputs. */
    PG_OP_LINEAR_FWD, /* y = act(x @ W^T + b) */
    PG_OP_LINEAR_BWD, /* dx, dW, db from dy and the saved activation output */
    PG_OP_XENT_FWD,   /* softmax-cross-entropy loss and the softmax */
    PG_OP_XENT_BWD,   /* d loss / d logits */
    PG_OP_SGD,        /* one in-place SGD update of a parameter (and its momentum) */
    PG_OP_ADAM,       /* one in-place Adam update of a parameter and its moments */
    PG_OP_AMP_UNSCALE, /* g *= inv_scale in place, raising a found-inf flag (pg_ops_amp.c) */
    PG_OP_QLINEAR,     /* int8 linear layer: y = act(dequant(q(x) @ Wq^T) + b) (pg_ops_quantized.c) */
    PG_NUM_OPS
} pg_op;

/* The subops, in the op table's order (pg_ops.def). */
typedef enum pg_binary_op {
#define PG_BINARY(ID, name, gen, py, grad, doc) PG_BIN_##ID,
#include "pg_ops.def"
    PG_NUM_BINARY
} pg_binary_op;
#define PG_BIN_IS_COMPARE(op) ((op) >= PG_BIN_EQ)

typedef enum pg_unary_op {
#define PG_UNARY(ID, name, gen, py, grad, doc) PG_UN_##ID,
#include "pg_ops.def"
    PG_NUM_UNARY
} pg_unary_op;

typedef enum pg_reduce_op {
#define PG_REDUCE(ID, name, py, grad, doc) PG_RED_##ID,
#include "pg_ops.def"
    PG_NUM_REDUCE
} pg_reduce_op;

/* Activations a fused linear layer applies (subop of PG_OP_LINEAR_*). */
enum { PG_ACT_NONE = 0, PG_ACT_RELU = 1, PG_ACT_TANH = 2, PG_ACT_SIGMOID = 3, PG_NUM_ACT };

#define PG_NODE_MAX_SRC 4
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
    union {
        struct { double f; int64_t i; int scalar_left; } scalar; /* FILL, BINARY with nsrc == 1 */
        struct { int axis; } reduce;
        struct { double start, step; } arange;
        struct { uint64_t seed, offset; } random; /* subop 0: uniform, 1: normal */
        struct { double f[6]; int64_t i[2]; } train; /* fused ops' hyper-parameters */
    } p;
    const char *name; /* the user-facing op name, for error messages ("add", "matmul") */
} pg_node;

enum { PG_RANDOM_UNIFORM = 0, PG_RANDOM_NORMAL = 1 };

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
