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
#include <string.h>

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

/* The window geometry of a convolution or a pooling node over (N, C, H, W): kernel
 * (kh, kw), stride, padding before each axis (the padding after it is implied by dst's
 * shape), dilation; groups (CONV); flags (PG_CONV_F_* / PG_POOL_F_*, pg_ops_conv.h).
 * int32: a node's parameters stay within the union's 64 bytes. */
typedef struct pg_conv_geom {
    int32_t kh, kw, sh, sw, ph, pw, dh, dw;
    int32_t groups, flags, divisor, spare;
} pg_conv_geom;

#define PG_NODE_MAX_SRC 7 /* attention backward: q, k, v, out, dout, logsumexp, mask */
#define PG_NODE_MAX_EXTRA 3 /* outputs besides dst */

/* A MULTI node's operands: `count` nodes of one elementwise kind (the MULTI node's subop),
 * each given by its operands in slot order, src[0..nsrc), dst, extra[0..nextra): `width`
 * tensors per entry, entry e's slot s at t[e * width + s]. Slots from nsrc on are written
 * (dst and the extras, as in a plain node); every operand of an entry is contiguous with
 * the entry's dst's element count, or has one element (a scalar broadcast to the entry),
 * so the entries are one flat range of `total` elements. A MULTI_NORM node lists its
 * tensors as entries of one source and no dst (a NULL storage): it writes none of them.
 * Made by the core (pg_node_list_new), shared with an asynchronous backend's queued task
 * by a reference count (pg_node_list_retain/release: the last release frees it). The
 * tensors are borrowed: whoever runs the node later holds their storages. */
typedef struct pg_node_list {
    int refs; /* atomic builtins only: the header is shared with C++ */
    int count, nsrc, nextra, width;
    int subop; /* the entries' own subop (a BINARY entry's op); 0 for the optimizers' */
    int64_t total;
    pg_tensor *t;
} pg_node_list;

typedef struct pg_node {
    int op;    /* pg_op */
    int subop; /* the row of the table its kind reads: pg_binary_op / pg_unary_op /
                * pg_reduce_op (BINARY, UNARY, REDUCE), pg_act (the linear layers), or a
                * pg_subop (the kinds with PG_SUBOP rows: pg_subops.def); else 0 */
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
        struct { uint64_t seed, offset; } random; /* subop: PG_RANDOM_UNIFORM or _NORMAL */
        /* CLAMP: the two number bounds; grad: hardtanh's gradient instead (src0 dy, src1
         * the forward's output y: dy where lo < y < hi, else 0) */
        struct { double lo, hi; int64_t grad; } clamp;
        struct { int64_t axis, flag; } index;     /* INDEX: what flag means per subop: pg_ops_index.h */
        /* LAYER_NORM (eps; operands: pg_ops_norm.c) and BATCH_NORM (pg_ops_conv.h) */
        struct { double eps, momentum; int64_t flags; } norm;
        struct { int64_t mean; } xent;            /* XENT_FWD/BWD: mean (1) or sum (0) over rows */
        struct { double inv_scale; } amp;         /* AMP_UNSCALE */
        /* SGD and the adaptive optimizers (pg_ops_train.c lists each kind's hyper and flags) */
        struct { double hyper[6]; int64_t flag[2]; } optim;
        /* QLINEAR: activation and output quantization (pg_ops_quantized.c) */
        struct { double a_scale, c_scale, a_zp, c_zp, a_max, c_max; int64_t a_dynamic; } qlinear;
        struct { double value; } ternary; /* TERNARY: addcmul/addcdiv's value, lerp's weight */
        pg_conv_geom conv;                           /* CONV, POOL (pg_ops_conv.h) */
        struct { double scale, dropout_p; uint64_t seed, offset; int causal; } sdpa; /* SDPA(_BWD) */
        /* LINALG: flag (cholesky/eigh: upper; qr: mode 0 reduced, 1 complete, 2 R only; svd:
         * 0 reduced, 1 full, 2 values only) and param (lstsq: rcond) */
        struct { int64_t flag; double param; } linalg;
        /* FFT: the transform's length, its direction (1 forward: exponent sign -1) and the
         * factor every output is multiplied by (the norm: 1, 1/n or 1/sqrt(n)) */
        struct { int64_t n, forward; double fct; } fft;
    } p;
    const char *name; /* the user-facing op name, for error messages ("add", "matmul") */
    pg_node_list *list; /* MULTI(_NORM): its entries (above); read for no other kind (unset there) */
} pg_node;

/* What a sub-op's row (pg_subops.def) says, by its code: the node kind it belongs to,
 * its ID (what Python names it by), its name and its flags (PG_SUBF_*). */
static inline int pg_subop_node(int s)
{
    static const unsigned char t[] = {
#define PG_SUBOP(NODE, ...) PG_OP_##NODE,
#include "pg_subops.def"
    };
    return s >= 0 && s < PG_NUM_SUBOPS ? t[s] : -1;
}
static inline unsigned pg_subop_flags(int s)
{
    static const unsigned t[] = {
#define PG_SUBOP(NODE, ID, name, flags, ...) flags,
#include "pg_subops.def"
    };
    return s >= 0 && s < PG_NUM_SUBOPS ? t[s] : 0u;
}
static inline const char *pg_subop_id(int s)
{
    static const char *const t[] = {
#define PG_SUBOP(NODE, ID, ...) #ID,
#include "pg_subops.def"
    };
    return s >= 0 && s < PG_NUM_SUBOPS ? t[s] : "?";
}
static inline const char *pg_subop_name(int s)
{
    static const char *const t[] = {
#define PG_SUBOP(NODE, ID, name, ...) name,
#include "pg_subops.def"
    };
    return s >= 0 && s < PG_NUM_SUBOPS ? t[s] : "?";
}
/* The code of node kind `node`'s sub-op whose row's ID is `id` ("SCATTER_ADD"), or -1. */
static inline int pg_subop_find(int node, const char *id)
{
    for (int s = 0; s < PG_NUM_SUBOPS; s++)
        if (pg_subop_node(s) == node && strcmp(pg_subop_id(s), id) == 0)
            return s;
    return -1;
}

#ifndef __cplusplus
/* An RNN_CELL row's columns (pg_subops.def): its gate blocks of H columns, the blocks a step
 * saves, and whether it carries a cell state besides h (read by the core's shapes, the CPU
 * cells and the CUDA launcher alike) */
typedef struct pg_rnn_cell_cols {
    int gates, saved, cell_state;
} pg_rnn_cell_cols;
static inline pg_rnn_cell_cols pg_rnn_cell(int s)
{
    static const pg_rnn_cell_cols t[PG_NUM_SUBOPS] = {
#define PG_SUBOP_RNN_CELL(ID, name, flags, family, gates, saved, cell_state)                       \
    [PG_RNN_CELL_##ID] = {gates, saved, cell_state},
#include "pg_subops.def"
    };
    const pg_rnn_cell_cols none = {1, 1, 0}; /* not a cell: never read (the core checks) */
    return s >= 0 && s < PG_NUM_SUBOPS && t[s].gates ? t[s] : none;
}
#endif

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

/* A node's listed operands (MULTI, MULTI_NORM; none for the others): how many, the i-th, and whether
 * the node writes it. Whoever tracks a node's storages (pg_launch, cpu's and sim's launch)
 * walks these besides src, dst and extra. */
static inline int pg_node_list_len(const pg_node *n)
{
    return (n->op == PG_OP_MULTI || n->op == PG_OP_MULTI_NORM) && n->list ? n->list->count * n->list->width : 0;
}
static inline const pg_tensor *pg_node_list_at(const pg_node *n, int i) { return &n->list->t[i]; }
static inline bool pg_node_list_writes(const pg_node *n, int i)
{
    return i % n->list->width >= n->list->nsrc;
}
/* Entry e of a MULTI node's list as a node of the list's kind (the MULTI node's subop), whole:
 * what that kind's own kernel is given for the one parameter. cpu runs it narrowed to a piece
 * of the flat range (cpu_multi.c); cuda asks the kind's graph rule of it (cuda_graph.c) and
 * lays its operands out as a kernel table (cuda_multi.c). */
static inline void pg_node_list_entry(const pg_node *n, int e, pg_node *sub)
{
    const pg_node_list *l = n->list;
    const pg_tensor *t = &l->t[(size_t)e * (size_t)l->width];
    memset(sub, 0, sizeof *sub);
    sub->op = n->subop;
    sub->subop = l->subop;
    sub->name = n->name;
    sub->p = n->p;
    sub->nsrc = l->nsrc;
    sub->nextra = l->nextra;
    for (int s = 0; s < l->nsrc; s++)
        sub->src[s] = t[s];
    sub->dst = t[l->nsrc];
    for (int s = 0; s < l->nextra; s++)
        sub->extra[s] = t[l->nsrc + 1 + s];
}
#ifndef __cplusplus
pg_status pg_node_list_new(int count, int nsrc, int nextra, pg_node_list **out);
void pg_node_list_retain(pg_node_list *l);
void pg_node_list_release(pg_node_list *l);
#endif

#endif
