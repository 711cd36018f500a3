/* pg_gemm.h - THE GEMM CONTRACT: one descriptor for every matrix product.
 *
 * matmul, batched matmul and the fused linear layers (forward and backward)
 * all describe their products as a pg_gemm; each backend runs one with its
 * own kernels (cpu/sim: OpenBLAS per panel or pygpu's microkernels; cuda:
 * cuBLAS, cublasLt where an epilogue fuses). As cublasLt's matmul descriptor
 * and BLIS's objects do, the descriptor carries the types, so a new dtype or
 * epilogue adds a kernel, not a code path.
 *
 * For z in [0, batch):
 *     C_z (M,N) = epilogue( alpha * op(A_z) (M,K) @ op(B_z) (K,N) + beta * C_z )
 * op(X) is X or X^T (trans_*). Matrices are row-major with leading dimension
 * ld* (elements between rows of the stored matrix, before op()); batch
 * strides in elements (0 broadcasts one matrix over the batch).
 *
 * Types: a and b share one input dtype (float32, float64, float16, bfloat16);
 * c may be wider (half inputs, float32 output); `compute` is the accumulation
 * dtype (float32 for float32 and half inputs, float64 for float64). With b_f32
 * and half inputs, B is stored as float32 and each value is rounded to dtype_ab
 * as it is read (autocast's float32 weights: the product is exactly the one of
 * B cast to dtype_ab, without a cast pass or a half copy); with b_exact too, a
 * kernel that multiplies in float32 anyway uses B's float32 values as they are (the
 * backward's dX: no rounding pass, and float32 accuracy for free), while one that
 * multiplies bfloat16 pairs (AVX512_BF16) rounds them as without b_exact, keeping
 * dX at its speed: PyTorch's autocast backward multiplies by the bf16 weight too.
 *
 * Epilogue, applied to each output tile while it is still in cache:
 *   PG_EPI_BIAS       C += bias (N) broadcast over rows
 *   act (PG_ACT_*)    C = act(C)                      (after the bias)
 *   PG_EPI_DACT       C *= act'(aux), aux (M,N) the saved activation OUTPUT y
 *                     (leading dimension ldaux; batch stride stride_c)
 *                     (relu: y > 0; tanh: 1 - y^2; sigmoid: y (1 - y)) --
 *                     the backward of the next layer's input gradient
 *   PG_EPI_BGRAD      bias_grad (N) = column sums of the final C over every row of
 *                     every batch entry, in row order (the CPU accumulates in
 *                     double), as cublasLt's *_BGRAD
 * Flags combine: forward is BIAS|act, backward's dX of layer l+1 is DACT|BGRAD
 * with layer l's activation. */
#ifndef PG_GEMM_H
#define PG_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "pg_status.h"
#include "pg_tensor.h"

enum { PG_EPI_NONE = 0, PG_EPI_BIAS = 1, PG_EPI_DACT = 2, PG_EPI_BGRAD = 4 };

typedef struct pg_gemm {
    int64_t M, N, K, batch;
    bool trans_a, trans_b;
    int dtype_ab; /* pg_dtype of A and B */
    bool b_f32;   /* half dtype_ab only: B stored as float32, rounded to dtype_ab when read */
    bool b_exact; /* with b_f32: B's float32 values used as they are, not rounded */
    int dtype_c;  /* pg_dtype of C (and of bias, aux, bias_grad) */
    int compute;  /* pg_dtype accumulated in: PG_FLOAT32 or PG_FLOAT64 */
    const void *a;
    int64_t lda, stride_a;
    const void *b;
    int64_t ldb, stride_b;
    void *c;
    int64_t ldc, stride_c;
    double alpha, beta;
    int epilogue; /* PG_EPI_* flags */
    int act;      /* PG_ACT_* (pg_node.h), applied after the bias; or the DACT's activation */
    const void *bias;      /* (N) with PG_EPI_BIAS */
    const void *aux;       /* (M,N), leading dimension ldaux, with PG_EPI_DACT */
    int64_t ldaux;
    void *bias_grad;       /* (N) with PG_EPI_BGRAD, written (not accumulated) */
} pg_gemm;

/* A kernel runs one whole descriptor on the calling thread; a scheduler hands it
 * panels (the same descriptor with pointers and M, N or batch narrowed; never M
 * or batch under BGRAD). Kernels are chosen by (dtype_ab, dtype_c) and the CPU's
 * ISA (csrc/backends/cpu/cpu_isa.h); the CPU's table is cpu_gemm.h's
 * pg_cpu_gemm_kernel / pg_cpu_gemm_register. The descriptor is checked before a
 * kernel sees it (shapes, lds >= the stored rows' lengths, dtypes). */
typedef pg_status (*pg_gemm_kernel_fn)(const pg_gemm *g);

/* The accumulation dtype for products of `dtype`: float64 for float64, else float32
 * (float32 itself and the half dtypes). */
static inline int pg_gemm_compute_of(int dtype)
{
    return dtype == PG_FLOAT64 ? PG_FLOAT64 : PG_FLOAT32;
}

/* The descriptor of a checked matmul node's (B,M,K) @ (B,K,N) -> (B,M,N) (pg_ops_matmul.c
 * gives each operand unit stride on its last axis, or on its middle axis: a transposed
 * view), with the operands' data pointers (a backend's own: a plugin cannot call
 * pg_tensor_data). Static inline so that every backend, plugins included, shares it. */
static inline void pg_gemm_of_matmul(const pg_tensor *a, const pg_tensor *b, const pg_tensor *c,
                                     const void *pa, const void *pb, void *pc, pg_gemm *g)
{
    pg_gemm z = {0};
    *g = z;
    g->batch = c->shape[0];
    g->M = c->shape[1];
    g->N = c->shape[2];
    g->K = a->shape[2];
    g->trans_a = a->strides[2] != 1;
    g->lda = g->trans_a ? a->strides[2] : a->strides[1];
    g->trans_b = b->strides[2] != 1;
    g->ldb = g->trans_b ? b->strides[2] : b->strides[1];
    g->ldc = c->strides[1] > g->N ? c->strides[1] : g->N;
    g->stride_a = a->strides[0];
    g->stride_b = b->strides[0];
    g->stride_c = c->strides[0];
    g->dtype_ab = a->dtype; /* the generic layer gives a, b and c one dtype */
    g->dtype_c = c->dtype;
    g->compute = pg_gemm_compute_of(c->dtype);
    g->a = pa;
    g->b = pb;
    g->c = pc;
    g->alpha = 1.0;
}

#endif
