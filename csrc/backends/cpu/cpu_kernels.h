/* cpu_kernels.h - the CPU backend's kernels: the reference implementation.
 *
 * pg_cpu_execute runs one pg_node synchronously on the calling thread. The
 * cpu backend calls it directly; the sim backend calls it from its device
 * worker threads; the CUDA kernels are tested against it. One file per op
 * family: cpu_elementwise.c (fill, copy/cast, binary, unary), cpu_reduce.c,
 * cpu_matmul.c (cblas), cpu_generate.c (arange, random). float16/bfloat16
 * are handled in each family's file: the float32 loops run on blocks widened
 * on the stack and rounded once at the store (cpu_half_convert.h). */
#ifndef PG_CPU_KERNELS_H
#define PG_CPU_KERNELS_H

#include "../../core/pg_node.h"

pg_status pg_cpu_execute(const pg_node *node);

pg_status pg_cpu_fill(const pg_node *node);
pg_status pg_cpu_copy(const pg_node *node);
pg_status pg_cpu_binary(const pg_node *node);
pg_status pg_cpu_select(const pg_node *node); /* where: dst = cond ? a : dst */
pg_status pg_cpu_unary(const pg_node *node);
pg_status pg_cpu_clamp(const pg_node *node);
pg_status pg_cpu_softmax(const pg_node *node);
pg_status pg_cpu_layer_norm(const pg_node *node); /* LAYER_NORM: rows of (R, C) (cpu_train.c) */ /* SOFTMAX: rows of (R, C) (cpu_train.c) */ /* CLAMP: clamp_ with number bounds (cpu_unary.c) */
pg_status pg_cpu_reduce(const pg_node *node);
pg_status pg_cpu_matmul(const pg_node *node);
pg_status pg_cpu_arange(const pg_node *node);
pg_status pg_cpu_random(const pg_node *node);
/* casts where either side is float16/bfloat16 (cpu_cast_half.c) */
pg_status pg_cpu_copy_half(const pg_node *node);
uint16_t pg_cpu_half_bits(int dtype, double x); /* a fill value in float16/bfloat16 */
/* fused training ops (cpu_train.c) */
pg_status pg_cpu_linear_fwd(const pg_node *node);
pg_status pg_cpu_linear_bwd(const pg_node *node);
pg_status pg_cpu_xent_fwd(const pg_node *node);
pg_status pg_cpu_xent_bwd(const pg_node *node);
pg_status pg_cpu_sgd(const pg_node *node);
pg_status pg_cpu_adam(const pg_node *node);
/* the loss scaler's unscale-and-check (cpu_amp.c) */
pg_status pg_cpu_amp_unscale(const pg_node *node);
/* the index family: gather, scatter, cumsum, argsort, ... (cpu_index.c) */
pg_status pg_cpu_index(const pg_node *node);
/* the recurrent cells, RNN_CELL and RNN_CELL_BWD (cpu_rnn.c) */
pg_status pg_cpu_rnn_cell(const pg_node *node);
/* scaled-dot-product attention, SDPA and SDPA_BWD (cpu_attention.c) */
pg_status pg_cpu_attention(const pg_node *node);

/* The same ops split over a device's pool (NULL: on the caller) through the GEMM
 * scheduler (cpu_gemm.h); pg_cpu_matmul(n) is pg_cpu_matmul_on(NULL, n). */
struct pg_pool;
pg_status pg_cpu_matmul_on(struct pg_pool *pool, const pg_node *node);
pg_status pg_cpu_linear_fwd_on(struct pg_pool *pool, const pg_node *node);
pg_status pg_cpu_linear_bwd_on(struct pg_pool *pool, const pg_node *node);
pg_status pg_cpu_rnn_cell_on(struct pg_pool *pool, const pg_node *node);
pg_status pg_cpu_attention_on(struct pg_pool *pool, const pg_node *node);
/* The same with the weight's pre-packed bfloat16 panels (cpu_bf16_panels.h; NULL: none) */
pg_status pg_cpu_linear_fwd_packed(struct pg_pool *pool, const pg_node *node, const void *w_panels);
pg_status pg_cpu_linear_bwd_packed(struct pg_pool *pool, const pg_node *node, const void *w_panels);

/* Walk up to three same-shape strided operands (operand 0 is the output) and
 * call `loop` on runs along the innermost (coalesced) axis. Strides passed to
 * `loop` are in bytes. */
typedef void (*pg_cpu_loop_fn)(int64_t n, char **ptrs, const int64_t *strides, const void *arg);
void pg_cpu_iterate(int nops, const pg_tensor *const *ops, char **ptrs_override,
                    pg_cpu_loop_fn loop, const void *arg);

#endif
