/* pg_ops_conv.h - the convolutional layers' generic ops: convolution (pg_ops_conv.c),
 * pooling (pg_ops_pool.c) and batch normalization (pg_ops_norm.c), checked once.
 *
 * Every operand is 4-d (N, C, H, W) (1-d layers pass H = 1), float32 or float64, one
 * dtype, one device. The ops make their inputs contiguous, allocate outputs and launch
 * ONE node (CONV, POOL or BATCH_NORM; pg_ops.def) whose subop (a row of pg_subops.def)
 * says which computation it is. Operands, in slot order:
 *
 *   CONV  PG_CONV_FWD         src: x (N,C,H,W), w (O,C/g,KH,KW), b (O) | NULL
 *                             dst: y (N,O,OH,OW)
 *         PG_CONV_BWD_DATA    src: dy (N,O,OH,OW), w, b (C) | NULL   dst: dx (N,C,H,W)
 *                             (dx = the transposed convolution of dy, plus b per channel:
 *                             also ConvTranspose's forward)
 *         PG_CONV_BWD_WEIGHT  src: dy, x                dst: dW (O,C/g,KH,KW)
 *                             extra: db (O) | NULL (the sums of dy per channel)
 *   POOL  PG_POOL_MAX_FWD     src: x                    dst: y; extra: idx int64 | NULL
 *                             (idx: the flat index in its (H, W) plane of each maximum)
 *         PG_POOL_AVG_FWD     src: x                    dst: y
 *         PG_POOL_ADAPTIVE_AVG_FWD / _MAX_FWD: windows [floor(i*H/OH), ceil((i+1)*H/OH))
 *         PG_POOL_MAX_BWD     src: dy, idx              dst: dx (zeros, then dy added
 *                             at each index: every max pooling, adaptive or not)
 *         PG_POOL_AVG_BWD / PG_POOL_ADAPTIVE_AVG_BWD   src: dy   dst: dx
 *   BATCH_NORM (x seen as (N, C, L))
 *         PG_BATCH_NORM_TRAIN_FWD  src: x, w | NULL, b | NULL, running_mean | NULL,
 *                                  running_var | NULL
 *                             dst: y; extra: save (2, C) (the batch mean and 1/sqrt(var+eps)),
 *                                  running_mean, running_var (updated in place)
 *         PG_BATCH_NORM_TRAIN_BWD  src: dy, x, w | NULL, save, y | NULL (PG_BN_F_RELU)
 *                             dst: dx; extra: dw | NULL, db | NULL
 *         PG_BATCH_NORM_EVAL_FWD   src: x, w | NULL, b | NULL, running_mean, running_var
 *                             dst: y = x * scale + shift per channel (scale = w/sqrt(var+eps),
 *                                  shift = b - mean*scale, from the running statistics, in
 *                                  double), then the fused ReLU or ReLU6 (p.norm.flags); one
 *                                  pass, no gradient (evaluation under no_grad)
 *
 * The geometry (pg_conv_geom, pg_node.h) carries the padding before each axis; the
 * padding after it is implied by the output's shape (PyTorch's 'same' pads less before
 * than after for an even kernel). Bad input gets PyTorch's messages, before any node. */
#ifndef PG_OPS_CONV_H
#define PG_OPS_CONV_H

#include "pg_node.h"

/* The sub-ops are the CONV, POOL and BATCH_NORM rows of pg_subops.def (PG_CONV_FWD,
 * PG_POOL_MAX_FWD, PG_BATCH_NORM_TRAIN_BWD, ...): a pooling row's flags say max or average,
 * adaptive, gradient; a convolution row's columns say which slot holds x, w and y. */
typedef enum pg_conv_slot { PG_CONV_SLOT_DST = -1, PG_CONV_SLOT_SRC0, PG_CONV_SLOT_SRC1 } pg_conv_slot;
typedef enum pg_conv_role { PG_CONV_X, PG_CONV_W, PG_CONV_Y } pg_conv_role;
/* The slot of a CONV node's x, w or y (`role`), from its sub-op's row */
static inline int pg_conv_slot_of(int subop, int role)
{
    static const signed char t[PG_NUM_SUBOPS][3] = {
#define PG_SUBOP_CONV(ID, name, flags, x, w, y, ...)                                               \
    [PG_CONV_##ID] = {PG_CONV_SLOT_##x, PG_CONV_SLOT_##w, PG_CONV_SLOT_##y},
#include "pg_subops.def"
    };
    return t[subop][role];
}
/* the role a CONV sub-op computes: the one its row puts in dst (y forward, x or w backward) */
static inline int pg_conv_computes(int subop)
{
    return pg_conv_slot_of(subop, PG_CONV_X) == PG_CONV_SLOT_DST   ? PG_CONV_X
           : pg_conv_slot_of(subop, PG_CONV_W) == PG_CONV_SLOT_DST ? PG_CONV_W
                                                                    : PG_CONV_Y;
}
/* a CONV node's x, w or y: the tensor in that role's slot */
static inline const pg_tensor *pg_conv_operand(const pg_node *n, int role)
{
    int slot = pg_conv_slot_of(n->subop, role);
    return slot == PG_CONV_SLOT_DST ? &n->dst : &n->src[slot];
}
/* p.norm.flags of BATCH_NORM: a ReLU fused after the normalization (forward writes
 * max(y, 0); backward takes that output as src[4] and passes dy where it is positive);
 * PG_BN_F_RELU6: min(max(y, 0), 6) (EVAL_FWD only) */
enum { PG_BN_F_RELU = 1, PG_BN_F_RELU6 = 2 };
/* pg_conv_geom.flags of POOL: average pooling counts the padding in its divisor
 * (count_include_pad) */
enum { PG_POOL_F_COUNT_PAD = 1 };

/* The convolution's geometry as the user gives it (2-d; 1-d layers use h = 1). */
typedef struct pg_conv_args {
    int64_t stride[2], dilation[2];
    int64_t pad_before[2], pad_after[2];
    int64_t groups;
} pg_conv_args;

/* The forward's and the input gradient's nodes, checked as the ops check them, described
 * but not launched: sources borrowed, dst's dtype and shape without storage. What
 * _C._has_node("CONV", ...) asks the backend about (pg_backend_has_node: cuDNN's rules). */
pg_status pg_conv2d_node(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b,
                         const pg_conv_args *a, pg_node *n);
pg_status pg_conv2d_input_backward_node(const pg_tensor *dy, const pg_tensor *w,
                                        const pg_tensor *b, const int64_t x_shape[4],
                                        const pg_conv_args *a, pg_node *n);
/* y = conv(x, w) + b (b NULL or (O,)); "conv2d" in messages */
pg_status pg_op_conv2d(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b,
                       const pg_conv_args *a, pg_tensor *y);
/* dx (shape x_shape) = conv2d's input gradient from dy, plus b (C,) per channel when given */
pg_status pg_op_conv2d_input_backward(const pg_tensor *dy, const pg_tensor *w,
                                      const pg_tensor *b, const int64_t x_shape[4],
                                      const pg_conv_args *a, pg_tensor *dx);
/* dW (shape w_shape) and, when want_db, db (O,) from dy and x */
pg_status pg_op_conv2d_weight_backward(const pg_tensor *dy, const pg_tensor *x,
                                       const int64_t w_shape[4], const pg_conv_args *a,
                                       bool want_db, pg_tensor *dw, pg_tensor *db);

/* Pooling of x (N,C,H,W) (pg_ops_pool.c). kind: PG_POOL_*_FWD. For the windowed kinds
 * kernel/stride/pad/dilation apply and out_hw (the output's (OH, OW), ceil_mode already
 * applied by the caller) is checked against them; for the adaptive kinds out_hw alone.
 * idx: the max kinds' indices, when want_idx. */
pg_status pg_op_pool2d(int kind, const pg_tensor *x, const int64_t kernel[2],
                       const int64_t stride[2], const int64_t pad[2], const int64_t dilation[2],
                       const int64_t out_hw[2], bool count_include_pad, int64_t divisor,
                       bool want_idx, pg_tensor *y, pg_tensor *idx);
/* dx (shape x_shape) from dy: kind PG_POOL_*_BWD; idx for PG_POOL_MAX_BWD */
pg_status pg_op_pool2d_backward(int kind, const pg_tensor *dy, const pg_tensor *idx,
                                const int64_t x_shape[4], const int64_t kernel[2],
                                const int64_t stride[2], const int64_t pad[2],
                                bool count_include_pad, int64_t divisor, pg_tensor *dx);

/* Batch normalization in training of x (N, C, ...) (pg_ops_norm.c): y, save (2, C), and
 * running_mean/running_var (C) updated in place with momentum when given (running_var
 * takes the unbiased variance) */
pg_status pg_op_batch_norm_train(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b,
                                 const pg_tensor *running_mean, const pg_tensor *running_var,
                                 double momentum, double eps, bool relu, pg_tensor *y,
                                 pg_tensor *save);
/* Batch normalization in evaluation of x (N, C, ...) with the running statistics (C), one
 * EVAL_FWD node; act: 0, PG_BN_F_RELU or PG_BN_F_RELU6 fused after it */
pg_status pg_op_batch_norm_eval(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b,
                                const pg_tensor *running_mean, const pg_tensor *running_var,
                                double eps, int act, pg_tensor *y);
/* y: the forward's output when a ReLU was fused (relu), else NULL */
pg_status pg_op_batch_norm_backward(const pg_tensor *dy, const pg_tensor *x, const pg_tensor *w,
                                    const pg_tensor *save, const pg_tensor *y, bool want_dw,
                                    bool want_db, pg_tensor *dx, pg_tensor *dw, pg_tensor *db);

/* Shared by the three files: t float32/float64, of like's dtype and device (like may be
 * NULL), ndim dimensions (-1: any); and launching a node whose dst and extras are
 * allocated, its `in` sources made contiguous (released again after), outputs released
 * on failure. */
pg_status pg_conv_check_operand(const char *op, const char *what, const pg_tensor *t,
                                const pg_tensor *like, int ndim);
pg_status pg_conv_launch(pg_node *n, int nin, const pg_tensor *const *in);

#endif
