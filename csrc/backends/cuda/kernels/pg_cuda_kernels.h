/* pg_cuda_kernels.h - the C interface of the CUDA kernels, shared by the
 * kernel files (nvcc, C++) and the plugin glue in csrc/backends/cuda (gcc, C11).
 *
 * Kernels never see a pg_node, a pg_tensor or a pg_storage: pg_node.h pulls in
 * <stdatomic.h>, which is not C++. The glue turns a node into plain pointers
 * plus a pg_cuda_iter (shape and strides by value) and calls a launcher here.
 * Every launcher takes the stream, computes its grid, launches and returns
 * cudaGetLastError(); the glue passes that through its one check function.
 * Zero-element work returns cudaSuccess without launching anything.
 *
 * The sub-op codes below are the op table's (csrc/core/pg_ops.def, through
 * pg_op_props.h, which is C++-safe): no list is kept here, so a node's subop
 * goes through unchanged. Dtype codes are pg_dtype.h's (plain C, C++-safe). */
#ifndef PG_CUDA_KERNELS_H
#define PG_CUDA_KERNELS_H

#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "pg_op_props.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PG_CUDA_MAX_DIMS 8
#define PG_CUDA_MAX_OPERANDS 4 /* dst and up to three sources (TERNARY) */

enum {
#define PG_BINARY(ID, ...) PG_CUDA_BIN_##ID = PG_BIN_##ID,
#include "pg_ops.def"
    PG_CUDA_NUM_BINARY = PG_NUM_BINARY
};
enum {
#define PG_UNARY(ID, ...) PG_CUDA_UN_##ID = PG_UN_##ID,
#include "pg_ops.def"
    PG_CUDA_NUM_UNARY = PG_NUM_UNARY
};
enum {
#define PG_REDUCE(ID, ...) PG_CUDA_RED_##ID = PG_RED_##ID,
#include "pg_ops.def"
    PG_CUDA_NUM_REDUCE = PG_NUM_REDUCE
};

/* Where and how wide to launch: the device's stream and its SM count, and
 * the device's error-flag word (PG_CUDA_EFLAG_*, set with atomicOr by a
 * kernel that finds bad data; NULL when the flags could not be set up). */
/* Device-side error flags: a kernel that finds bad data (a label outside
 * [0, C)) sets a bit in mapped pinned memory instead of writing a silent
 * NaN, and the first one to claim the record writes its details (label,
 * row, classes); the host reads it after each successful wait and raises
 * AsyncOpError, as sim does (csrc/backends/cuda/cuda_queue.c). */
enum { PG_CUDA_EFLAG_LABEL = 1u << 0 };
typedef struct pg_cuda_eflags {
    unsigned bits;    /* PG_CUDA_EFLAG_*, atomicOr */
    unsigned claimed; /* atomicCAS 0 -> 1 by the kernel that writes a, b, c */
    long long a, b, c;
} pg_cuda_eflags;

/* pygpu.profiler's view of a launch (csrc/backends/cuda/cuda_profile.c): while a profile
 * records, the glue hands each op a log, and every launcher notes each kernel it launches
 * and each library call it makes, just before it, on the launch's stream (the log records
 * a CUDA event there, so each kernel's device time is known). A GEMM's note carries the
 * library's input, output and compute types (cudaDataType_t, cublasComputeType_t) and, for a
 * cublasLtMatmul, its epilogue (cublasLtEpilogue_t); -1 elsewhere. A NULL log (not recording)
 * costs a compare. */
typedef struct pg_cuda_kernel_log pg_cuda_kernel_log;
struct pg_cuda_kernel_log {
    void (*note)(pg_cuda_kernel_log *log, cudaStream_t stream, const char *name, int in_type,
                 int out_type, int compute_type, int epilogue);
};

typedef struct pg_cuda_ctx {
    cudaStream_t stream;
    int sm_count;
    pg_cuda_eflags *eflags;
    pg_cuda_kernel_log *log; /* NULL unless pygpu.profiler records */
    int tf32;                /* cuBLAS may use TF32 for float32 (option allow_tf32) */
} pg_cuda_ctx;

static inline void pg_cuda_note_kernel(const pg_cuda_ctx *ctx, const char *name)
{
    if (ctx->log)
        ctx->log->note(ctx->log, ctx->stream, name, -1, -1, -1, -1);
}

/* The launch configuration's stream argument, noting the kernel first:
 * `k<<<grid, block, 0, pg_cuda_noted(ctx, "k")>>>(...)`, so no launch site needs a
 * statement of its own (the configuration is evaluated before the launch). */
static inline cudaStream_t pg_cuda_noted(const pg_cuda_ctx *ctx, const char *name)
{
    pg_cuda_note_kernel(ctx, name);
    return ctx->stream;
}

static inline void pg_cuda_note_gemm(const pg_cuda_ctx *ctx, const char *call, int in_type,
                                     int out_type, int compute_type)
{
    if (ctx->log)
        ctx->log->note(ctx->log, ctx->stream, call, in_type, out_type, compute_type, -1);
}

static inline void pg_cuda_note_gemm_epilogue(const pg_cuda_ctx *ctx, const char *call,
                                              int in_type, int out_type, int compute_type,
                                              int epilogue)
{
    if (ctx->log)
        ctx->log->note(ctx->log, ctx->stream, call, in_type, out_type, compute_type, epilogue);
}

/* An N-d iteration space walked in C order, shared by `nops` operands
 * (operand 0 is the destination). Strides are in elements and may be 0 or
 * negative. pg_cuda_iter_init (glue) drops length-1 axes and merges axes
 * that are contiguous for every operand, so a contiguous tensor of any
 * shape arrives as ndim == 1 with unit strides (the fast path). */
typedef struct pg_cuda_iter {
    int ndim;
    int nops;
    int64_t numel;
    int64_t shape[PG_CUDA_MAX_DIMS];
    int64_t strides[PG_CUDA_MAX_OPERANDS][PG_CUDA_MAX_DIMS];
} pg_cuda_iter;

/* True when every operand is walked with unit stride (or there is one element). */
static inline int pg_cuda_iter_contiguous(const pg_cuda_iter *it)
{
    if (it->ndim == 0)
        return 1;
    if (it->ndim > 1)
        return 0;
    for (int op = 0; op < it->nops; op++)
        if (it->strides[op][0] != 1)
            return 0;
    return 1;
}

/* elementwise_fill_copy.cu. fill: `f` for float32/float64, `i` for bool/int64, and for
 * float16/bfloat16 the value's 16 bits (rounded by the glue, csrc/core/pg_half.h).
 * copy: any of the six dtypes to any. */
cudaError_t pg_kernel_fill(const pg_cuda_ctx *ctx, int dtype, void *dst, const pg_cuda_iter *it,
                         double f, int64_t i);
cudaError_t pg_kernel_copy(const pg_cuda_ctx *ctx, int dst_dtype, void *dst, int src_dtype,
                         const void *src, const pg_cuda_iter *it);

/* elementwise_binary.cu: dst = a OP b; b == NULL means b is the scalar
 * (scalar_f for float dtypes, applied as a float32 to float16/bfloat16;
 * scalar_i otherwise), on the left if scalar_left. Half operands compute in
 * float32 and round once at the store; compares give bool. */
typedef struct pg_cuda_scalar {
    double f;
    int64_t i;
    int left;
} pg_cuda_scalar;
cudaError_t pg_kernel_binary(const pg_cuda_ctx *ctx, int op, int dtype, void *dst, const void *a,
                           const void *b, const pg_cuda_scalar *scalar, const pg_cuda_iter *it);

/* elementwise_unary.cu (float16/bfloat16: computed in float32, rounded once) */
cudaError_t pg_kernel_unary(const pg_cuda_ctx *ctx, int op, int dtype, void *dst, const void *src,
                          const pg_cuda_iter *it);

/* ternary.cu: addcmul / addcdiv / lerp in one pass (op: pg_ternary_op; c NULL for LERP),
 * float32 and float64 */
cudaError_t pg_kernel_ternary(const pg_cuda_ctx *ctx, int op, int dtype, void *dst, const void *a,
                              const void *b, const void *c, double value, const pg_cuda_iter *it);

/* elementwise_select.cu: dst = cond ? a : dst (where), elements moved by their size
 * (1, 2, 4 or 8 bytes); cond bool, a of dst's dtype, all walked by `it`. */
cudaError_t pg_kernel_select(const pg_cuda_ctx *ctx, int itemsize, void *dst, const void *cond,
                             const void *a, const pg_cuda_iter *it);

/* reduce.cu: `outer` walks the output (operand 0) and the matching start of
 * each source row (operand 1); a row is `len` elements `axis_stride` apart.
 * dst has src's dtype, except ARGMAX (int64) and the SUM of float16/bfloat16
 * (float32, accumulated in float32). */
cudaError_t pg_kernel_reduce(const pg_cuda_ctx *ctx, int op, int src_dtype, void *dst,
                           const void *src, const pg_cuda_iter *outer, int64_t len,
                           int64_t axis_stride);

/* matmul.cu: c(B,M,N) = a(B,M,K) @ b(B,K,N); c contiguous. Floats go to
 * cuBLAS when the layout allows it, everything else to a tiled kernel. A
 * failing cuBLAS call leaves its status in *blas_status (else SUCCESS). */
typedef struct pg_cuda_matmul_args {
    int dtype;
    int64_t batch, m, k, n;
    const void *a;
    int64_t a_strides[3]; /* (B,M,K), elements */
    const void *b;
    int64_t b_strides[3]; /* (B,K,N), elements */
    void *c;              /* (B,M,N) contiguous */
} pg_cuda_matmul_args;
cudaError_t pg_kernel_matmul(const pg_cuda_ctx *ctx, cublasHandle_t blas, int allow_tf32,
                           const pg_cuda_matmul_args *args, cublasStatus_t *blas_status);

/* random_arange.cu: contiguous 1-D destinations of n elements. */
cudaError_t pg_kernel_arange(const pg_cuda_ctx *ctx, int dtype, void *dst, int64_t n, double start,
                           double step);
cudaError_t pg_kernel_random(const pg_cuda_ctx *ctx, int kind, int dtype, void *dst, int64_t n,
                           uint64_t seed, uint64_t offset);

/* train.cu: the fused training ops (operands contiguous; see csrc/core/pg_ops_train.c). */
enum {
    PG_CUDA_ACT_NONE = PG_ACT_NONE,
#define PG_ACT(ID, ...) PG_CUDA_ACT_##ID = PG_ACT_##ID,
#include "pg_ops.def"
    PG_CUDA_NUM_ACT = PG_NUM_ACT
};
typedef struct pg_cuda_linear_args {
    int dtype, act;
    int gdtype;          /* backward: dW's and db's dtype, dtype or (16-bit dtype) float32 */
    int64_t n, in, out;  /* batch, in_features, out_features */
    const void *x;       /* (n, in) */
    const void *w;       /* (out, in) */
    const void *b;       /* (out) or NULL; forward */
    void *y;             /* (n, out): forward output; backward: the saved output (read) */
    const void *dy;      /* (n, out); backward */
    void *dz, *dw, *dx, *db; /* backward: scratch (n, out) when act, (out, in), (n, in) | NULL, (out) | NULL */
} pg_cuda_linear_args;
cudaError_t pg_kernel_linear_fwd(const pg_cuda_ctx *ctx, cublasHandle_t blas,
                                 const pg_cuda_linear_args *a, cublasStatus_t *blas_status);
cudaError_t pg_kernel_linear_bwd(const pg_cuda_ctx *ctx, cublasHandle_t blas,
                                 const pg_cuda_linear_args *a, cublasStatus_t *blas_status);
/* y = act(y) in place on n contiguous elements of dtype (float32, float16, bfloat16): the
 * activations the cuBLASLt path (csrc/backends/cuda/cuda_lt_gemm.c) has no fused epilogue
 * for, applied after the GEMM wrote y with its bias; 16-byte packs, no index arithmetic. */
cudaError_t pg_kernel_act_inplace(const pg_cuda_ctx *ctx, int dtype, void *y, int64_t n, int act);
cudaError_t pg_kernel_xent_fwd(const pg_cuda_ctx *ctx, int dtype, const void *x,
                               const int64_t *labels, void *probs, void *loss, int64_t N,
                               int64_t C, int mean);
cudaError_t pg_kernel_xent_bwd(const pg_cuda_ctx *ctx, int dtype, const void *probs,
                               const int64_t *labels, const void *gloss, void *dlogits, int64_t N,
                               int64_t C, int mean);
/* f: lr, momentum, dampening, weight_decay */
cudaError_t pg_kernel_sgd(const pg_cuda_ctx *ctx, int dtype, void *p, const void *g, void *buf,
                          int64_t n, const double *f, int nesterov, int first);
/* The adaptive optimizers, one node kind each (the op table's PG_OPTIM rows): s0..s2 the
 * kind's state slots (NULL where unused), f and i as pg_ops_train.c lists them. */
#define PG_CUDA_OPTIM_ARGS                                                                         \
    const pg_cuda_ctx *ctx, int dtype, void *p, const void *g, void *s0, void *s1, void *s2,       \
        int64_t n, const double *f, const int64_t *i
#define PG_OPTIM(ID, name, ...) cudaError_t pg_kernel_##name(PG_CUDA_OPTIM_ARGS);
#include "pg_ops.def"

/* The list nodes (optim.cu, elementwise_binary.cu, multi_norm.cu): MULTI runs one kind's
 * update over every entry of a list, MULTI_NORM the norm of them all, in a few launches
 * whatever the list's length (kernels/pg_multi_tensor.cuh: PyTorch's multi_tensor_apply).
 * An entry's operands in the slot order of its kind's single-tensor launcher: 0 the tensor
 * updated (the node's dst; MULTI_NORM: the tensor read), 1 the grad (BINARY: its first
 * source, the tensor itself), then the kind's states (SGD: the momentum buffer; the
 * adaptive kinds: s0, s1, s2) or BINARY's other operand; NULL where the kind does without.
 * Every operand holds `numel` contiguous elements, or one element (its bit of `bcast` set)
 * read for every element of the entry. */
#define PG_CUDA_MT_SLOTS 5
#define PG_CUDA_MT_CHUNK 65536 /* elements per block, as PyTorch's kChunkSize */
typedef struct pg_cuda_mt_entry {
    void *ptr[PG_CUDA_MT_SLOTS];
    int64_t numel;
    unsigned bcast;
} pg_cuda_mt_entry;
/* subop: BINARY's op (the others: unused); f, i: the kind's scalars and flags, as its
 * single-tensor launcher takes them (SGD's i: nesterov, first) */
#define PG_CUDA_MULTI_ARGS                                                                         \
    const pg_cuda_ctx *ctx, int subop, int dtype, const pg_cuda_mt_entry *e, int count,           \
        const double *f, const int64_t *i
cudaError_t pg_kernel_multi_sgd(PG_CUDA_MULTI_ARGS);
#define PG_OPTIM(ID, name, ...) cudaError_t pg_kernel_multi_##name(PG_CUDA_MULTI_ARGS);
#include "pg_ops.def"
cudaError_t pg_kernel_multi_binary(PG_CUDA_MULTI_ARGS);
/* dst (one element of dtype, float32/float64) = the p-norm of every entry's slot 0 together
 * (p: 0 counts nonzeros, inf: the largest |x|, NaN if any is), in two passes: each chunk's
 * sum of |x|^p (or its largest |x|) into partials (one double per chunk of the list, stream-
 * ordered scratch the caller frees after), then one block combines them in chunk order, so
 * the result is the same bits run to run. */
cudaError_t pg_kernel_multi_norm(const pg_cuda_ctx *ctx, int dtype, const pg_cuda_mt_entry *e,
                                 int count, double p, double *partials, void *dst);

/* rows.cu: the row ops in one kernel each. softmax (log: log_softmax) and layer_norm over
 * the rows of contiguous (R, C) x into y; w and b (C,) or NULL; save (R, 2) or NULL: each
 * row's mean and rstd. layer_norm's backward: dx (R, C) from dy, x, w | NULL and save, and
 * dw, db (C,) (either NULL: not wanted). clamp: dst = min(max(src, lo), hi) over `it`
 * (operand 0 dst, 1 src). float32 and float64. */
cudaError_t pg_kernel_softmax_rows(const pg_cuda_ctx *ctx, int dtype, int log, const void *x,
                                   void *y, int64_t R, int64_t C);
cudaError_t pg_kernel_layer_norm_rows(const pg_cuda_ctx *ctx, int dtype, const void *x, void *y,
                                      const void *w, const void *b, void *save, int64_t R,
                                      int64_t C, double eps);
cudaError_t pg_kernel_layer_norm_bwd_rows(const pg_cuda_ctx *ctx, int dtype, const void *dy,
                                          const void *x, const void *w, const void *save,
                                          void *dx, void *dw, void *db, int64_t R, int64_t C);
cudaError_t pg_kernel_clamp(const pg_cuda_ctx *ctx, int dtype, void *dst, const void *src,
                            const pg_cuda_iter *it, double lo, double hi);

/* conv_layers.cu: the POOL and BATCH_NORM nodes (csrc/core/pg_ops_conv.h), float32 and
 * float64, contiguous (N, C, H, W) / (N, C, L) operands. A pooling is what its sub-op's
 * row's flags say (csrc/core/pg_subops.def): max (through the indices backward) or
 * average, windowed or adaptive, forward or backward. */
typedef struct pg_cuda_pool_args {
    int max, backward, dtype, adaptive, count_pad;
    const void *src;       /* x (forward) or dy (backward) */
    const int64_t *idx_in; /* max backward: each maximum's flat index in its plane */
    void *dst;             /* y (forward) or dx (backward) */
    int64_t *idx_out;      /* max forward: the indices, or NULL */
    int64_t planes, H, W, OH, OW;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw, divisor;
} pg_cuda_pool_args;
cudaError_t pg_kernel_pool(const pg_cuda_ctx *ctx, const pg_cuda_pool_args *a);

typedef struct pg_cuda_bn_args {
    int dtype, backward, relu;
    int64_t N, C, L;
    double eps, momentum;
    const void *x, *w, *b; /* w, b (C) or NULL */
    void *y;               /* forward: the output; backward: the forward's output (relu) */
    void *save;            /* (2, C): the batch mean and 1/sqrt(var + eps) */
    void *running_mean, *running_var; /* forward, updated in place, or NULL */
    const void *dy;
    void *dx, *dw, *db;    /* backward; dw, db or NULL */
} pg_cuda_bn_args;
cudaError_t pg_kernel_batch_norm(const pg_cuda_ctx *ctx, const pg_cuda_bn_args *a);

/* amp.cu: g (n,) contiguous *= inv_scale in place; *found = 1.0f if any element was
 * inf or NaN (else untouched). float32, float64, float16, bfloat16. */
cudaError_t pg_kernel_amp_unscale(const pg_cuda_ctx *ctx, int dtype, void *g, int64_t n,
                                  double inv_scale, float *found);

/* fft.cu: x (n,) float32 or float64 parts, contiguous, *= even at even indices and odd at
 * odd ones in place (the FFT node's factor and conjugations around cuFFT, cuda_cufft.c) */
cudaError_t pg_kernel_fft_scale(const pg_cuda_ctx *ctx, int dtype, void *x, int64_t n,
                                double even, double odd);

/* index.cu: the index family (node layouts: csrc/core/pg_ops_index.h; CPU twin:
 * csrc/backends/cpu/cpu_index.c), one launcher per kernel family: an INDEX row's family
 * column (csrc/core/pg_subops.def) names the one that runs it, and its flags reach the
 * kernels in `flags` (PG_SUBF_READ / _FULL / _ADD / _PROD). An index outside its
 * axis sets PG_CUDA_EFLAG_INDEX with (index, axis, size) in the record, raised at
 * the next wait; unlike the CPU, elements with valid indices may have been written. */
enum { PG_CUDA_EFLAG_INDEX = 1u << 1 };
typedef struct pg_cuda_index_args {
    int dtype, axis, flag;
    unsigned flags; /* the sub-op's row's (PG_SUBF_*) */
    /* moves and masked_fill: the iteration space (operand P's shape) and the strides
     * (elements) of P and M (pg_ops_index.h names them; masked_fill: P = dst, M = mask) */
    int ndim;
    int64_t numel;
    int64_t shape[PG_CUDA_MAX_DIMS];
    int64_t p_strides[PG_CUDA_MAX_DIMS], m_strides[PG_CUDA_MAX_DIMS];
    char *p, *m;
    const int64_t *idx; /* int64, contiguous */
    int64_t bound;      /* M's length on axis */
    const void *value;  /* masked_fill: one element of dtype */
    /* cumulative, argsort, topk (contiguous src -> dst; topk: k = bound), nonzero (len =
     * mask length, bound = the count) */
    int64_t outer, len, inner;
    const void *src;
    void *dst;
} pg_cuda_index_args;
/* pg_kernel_index_<family>, declared once per INDEX row (a repeated declaration is the same) */
#define PG_SUBOP_INDEX(ID, name, flags, family)                                                    \
    cudaError_t pg_kernel_index_##family(const pg_cuda_ctx *ctx, const pg_cuda_index_args *a);
#include "pg_subops.def"

/* rnn.cu: the recurrent cells, RNN_CELL (bwd 0) and RNN_CELL_BWD (bwd 1), float32/float64;
 * operands as csrc/core/pg_ops_rnn.c lays them out, rows of each with the row strides given
 * (hw, the state rows, save and dhw contiguous). cell: the RNN_CELL row's code
 * (csrc/core/pg_subops.def: PG_RNN_CELL_LSTM, ...); saved: its saved column (the blocks of H
 * activated gates a step saves). */
typedef struct pg_cuda_rnn_args {
    int dtype, cell, bwd, saved;
    int64_t rows, H, P, KG, S;
    const void *g;   /* forward: (rows, KG), row stride ldg */
    int64_t ldg;
    const void *hw;  /* (rows, KG) */
    const void *b;   /* (KG) */
    const void *hp;  /* (rows, P): h_prev */
    void *c;         /* (rows, H): c (forward, in place) or dc (backward, in place); LSTM */
    void *y;         /* (rows, H), row stride ldy */
    int64_t ldy;
    void *hn;        /* (rows, P) the carried h, or NULL */
    void *save;      /* (rows, S) or NULL (forward); read by the backward */
    const void *dy;  /* backward: (rows, H) row stride lddy, or NULL */
    int64_t lddy;
    const void *dh;  /* (rows, P) or NULL */
    void *dg;        /* (rows, KG), row stride lddg */
    int64_t lddg;
    void *dhw;       /* GRU: (rows, KG) */
    void *dhout;     /* GRU: (rows, P), written dy * z */
} pg_cuda_rnn_args;
cudaError_t pg_kernel_rnn_cell(const pg_cuda_ctx *ctx, const pg_cuda_rnn_args *a);

/* attention.cu: scaled-dot-product attention, SDPA (bwd 0) and SDPA_BWD (bwd 1), float32 and
 * float64, head dimensions up to 128 (larger: cudaErrorInvalidValue); shapes and parameters
 * as csrc/core/pg_ops_attention.c gives them. Strides in elements: (batch, head, row) of each
 * operand (unit stride on the last axis), the mask's four (0 where it broadcasts). */
/* the largest head dimension (E, Ev) the attention kernels take: the cuda backend's
 * supports_node declines a larger one (cuda_sequence.c), which is composed instead */
#define PG_CUDA_SDPA_MAX_HEAD 128
typedef struct pg_cuda_sdpa_args {
    int dtype;
    int64_t Bt, Hq, Hk, L, S, E, Ev;
    const void *q, *k, *v;
    int64_t qs[3], ks[3], vs[3];
    const void *mask; /* NULL, bool (uint8) or dtype */
    int mask_bool;
    int64_t ms[4];
    void *o, *lse; /* forward's outputs; the backward reads lse */
    int64_t os[3], ls[3];
    const void *out, *dout; /* backward */
    int64_t outs[3], douts[3];
    void *dq, *dk, *dv;
    int64_t dqs[3], dks[3], dvs[3];
    void *delta; /* backward scratch: (Bt, Hq, L) contiguous */
    double scale;
    int causal;
    uint32_t thresh; /* dropout: keep when the Philox word >= thresh (0: no dropout) */
    double inv_keep; /* 1 / (1 - p) */
    uint64_t seed, offset;
} pg_cuda_sdpa_args;
cudaError_t pg_kernel_sdpa(const pg_cuda_ctx *ctx, const pg_cuda_sdpa_args *a, int bwd);

/* quant.cu: the int8 linear layer (PG_OP_QLINEAR) around cuBLASLt's s8 x s8 IMMA GEMM
 * (csrc/backends/cuda/cuda_quant.c runs them in order on one stream). All contiguous.
 * quantize: a_f32 or a_u8 (M,K) -> a_s8 (M,kp) (u8 level - a_shift, K zero-padded to kp),
 * and for a dynamic input sa/za (M), the rows' scales and zero points. epilogue: acc (M,np)
 * s32 (sum of (level - a_shift) * W) -> c_f32 or c_u8 (M,N), the CPU's epilogue (pg_gemm.h),
 * bit for bit. fold: the per-channel alpha and bias with which cuBLASLt's own epilogue
 * requantizes a static layer's u8 output (quant.cu's header says when, and which bits). */
typedef struct pg_cuda_qlinear_args {
    int64_t M, N, K, kp, np;
    const float *a_f32;   /* (M,K) or NULL */
    const uint8_t *a_u8;  /* (M,K) or NULL */
    int a_dynamic, a_max; /* a_f32: per-row range; a_max 127 or 255 */
    int a_shift;          /* 0 (a_max 127: a level is an s8 as it is) or 128 (a_max 255) */
    float a_scale;        /* a static input's scale and zero point (sa/za unused) */
    int32_t a_zp;
    int8_t *a_s8;         /* (M,kp) scratch */
    float *sa;            /* (M) scratch, dynamic input only */
    int32_t *za;          /* (M) scratch, dynamic input only */
    const int32_t *acc;   /* (M,np) from the GEMM */
    const int32_t *colsum; /* (np) the packed weight's column sums */
    const float *w_scale; /* (N) */
    const float *bias;    /* (N) or NULL */
    int act;              /* PG_CUDA_ACT_* */
    float *c_f32;         /* (M,N), or */
    uint8_t *c_u8;        /* (M,N) requantized: c_scale, c_zp, c_max */
    float c_scale;
    int32_t c_zp;
    int c_max;
    int out_vec;          /* c's rows may be stored 4 elements at a time (N % 4 == 0, aligned) */
    float *fold_alpha;    /* (N) fold's output: cuBLASLt's per-row alpha */
    float *fold_bias;     /* (N) fold's output: cuBLASLt's bias */
} pg_cuda_qlinear_args;
cudaError_t pg_kernel_qquantize(const pg_cuda_ctx *ctx, const pg_cuda_qlinear_args *a);
cudaError_t pg_kernel_qfold(const pg_cuda_ctx *ctx, const pg_cuda_qlinear_args *a);
cudaError_t pg_kernel_qepilogue(const pg_cuda_ctx *ctx, const pg_cuda_qlinear_args *a);

/* linalg.cu: the LINALG node's layout work around cuSOLVER (csrc/backends/cuda/cuda_linalg.c):
 * pygpu's matrices are row-major, cuSOLVER's column-major, so a matrix crosses as its
 * transpose, and a factor's unused triangle is zeroed. band_copy writes dst (batch, rows,
 * cols), row i at dst + b*db + i*di (unit column stride), element (i, j) read from
 * src[b*sb + i*si + j*sj] (src == NULL: the identity) where lo <= j - i <= hi, else 0.
 * src may be dst with the same strides (a triangle zeroed in place), never an overlapping
 * transpose. float32 and float64. widen_int32: dst[i] = src[i] (cuSOLVER's int32 pivots and
 * infos into pygpu's int64). */
typedef struct pg_cuda_band_copy {
    int dtype;
    int64_t batch, rows, cols;
    const void *src; /* or NULL: the identity */
    int64_t sb, si, sj;
    void *dst;
    int64_t db, di;
    int64_t lo, hi; /* the band kept: lo <= j - i <= hi (INT64_MIN/INT64_MAX: all) */
} pg_cuda_band_copy;
cudaError_t pg_kernel_band_copy(const pg_cuda_ctx *ctx, const pg_cuda_band_copy *a);
cudaError_t pg_kernel_widen_int32(const pg_cuda_ctx *ctx, const int32_t *src, int64_t *dst,
                                  int64_t n);

#ifdef __cplusplus
}
#endif

#endif
