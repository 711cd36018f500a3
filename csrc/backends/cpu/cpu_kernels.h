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

/* Each node kind's kernel, named by its PG_NODE row's cpu column (pg_ops.def):
 * pg_cpu_fill, pg_cpu_copy, pg_cpu_binary, ... One file per family: fill, copy, binary,
 * select in cpu_elementwise.c; unary and clamp in cpu_unary.c; reductions in cpu_reduce.c;
 * matmul in cpu_matmul.c; arange and random in cpu_generate.c; the fused training ops,
 * softmax in cpu_train.c; layer_norm (forward and backward) in cpu_layer_norm.c; the softmax cross-entropy in cpu_xent.c; unscale in cpu_amp.c; the index family in
 * cpu_index.c; the int8 linear layer in cpu_gemm_int8.c. */
#define PG_NODE(ID, params, cpu, ...) pg_status cpu(const pg_node *node);
#include "../../core/pg_ops.def"

/* a scalar (the double f for a float dtype, else the int64 i) stored as one element of
 * `dtype` at out, rounded or wrapped as a cast would (cpu_cast.c) */
void pg_cpu_scalar_store(int dtype, double f, int64_t i, void *out);

/* The same ops split over a device's pool (NULL: on the caller) through the GEMM
 * scheduler (cpu_gemm.h); pg_cpu_matmul(n) is pg_cpu_matmul_on(NULL, n). A row whose
 * split column is OWN names such a function: <cpu>_on (cpu_parallel.c's table). */
struct pg_pool;
pg_status pg_cpu_matmul_on(struct pg_pool *pool, const pg_node *node);
pg_status pg_cpu_linear_fwd_on(struct pg_pool *pool, const pg_node *node);
pg_status pg_cpu_linear_bwd_on(struct pg_pool *pool, const pg_node *node);
pg_status pg_cpu_rnn_cell_on(struct pg_pool *pool, const pg_node *node);
pg_status pg_cpu_attention_on(struct pg_pool *pool, const pg_node *node);
pg_status pg_cpu_xent_fwd_on(struct pg_pool *pool, const pg_node *node); /* cpu_xent.c */
pg_status pg_cpu_xent_bwd_on(struct pg_pool *pool, const pg_node *node);
pg_status pg_cpu_multi_on(struct pg_pool *pool, const pg_node *node); /* cpu_multi.c */
pg_status pg_cpu_multi_norm_on(struct pg_pool *pool, const pg_node *node);
pg_status pg_cpu_layer_norm_on(struct pg_pool *pool, const pg_node *node); /* cpu_layer_norm.c */
/* A MULTI node's entry e as a node of its kind, its operands narrowed to elements [a, b) */
void pg_cpu_multi_entry(const pg_node *n, int e, int64_t a, int64_t b, pg_node *sub);
/* The same with the weight's pre-packed bfloat16 panels (cpu_bf16_panels.h; NULL: none) */
pg_status pg_cpu_linear_fwd_packed(struct pg_pool *pool, const pg_node *node, const void *w_panels);
pg_status pg_cpu_linear_bwd_packed(struct pg_pool *pool, const pg_node *node, const void *w_panels);

/* Walk up to three same-shape strided operands (operand 0 is the output) and
 * call `loop` on runs along the innermost (coalesced) axis. Strides passed to
 * `loop` are in bytes. */
typedef void (*pg_cpu_loop_fn)(int64_t n, char **ptrs, const int64_t *strides, const void *arg);
/* the math functions' kernels, [dtype][subop] (cpu_math_unary.c, cpu_math_binary.c); a
 * NULL row or entry where the op is another file's or takes no such dtype */
extern const pg_cpu_loop_fn *const pg_cpu_math_unary[PG_NUM_DTYPES];
extern const pg_cpu_loop_fn *const pg_cpu_math_binary[PG_NUM_DTYPES];
void pg_cpu_iterate(int nops, const pg_tensor *const *ops, char **ptrs_override,
                    pg_cpu_loop_fn loop, const void *arg);

#endif
