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
 * B may also come pre-packed (b_packed, NULL otherwise): the whole op(B) (K, Nall) of a
 * batch-1 product with a bfloat16 dtype_ab and a float32 b (b_f32), in the layout of the
 * kernel that multiplies bfloat16 pairs (cpu_gemm_bf16.h; b_packed_np words per pair row),
 * this descriptor's columns starting at b_packed_col (a scheduler's column cut moves it).
 * It holds exactly b's values rounded as that kernel rounds them (a linear layer's weight,
 * written by the optimizer's step: cpu_bf16_panels.h), so a kernel may read either: one
 * with no such layout (the convert kernel, CUDA) reads b, which stays valid.
 *
 * B may also come with a mask (b_mask, NULL otherwise): float32 values (a pruned layer's
 * weight_mask: 1 keeps, 0 prunes) laid out exactly as a B stored as float32 (ldb, stride_b,
 * trans_b), so the product is that of B * mask, element by element, bit for bit (a pruned
 * linear layer's weight_orig * weight_mask, without the product in memory). Only for B
 * stored as float32 (dtype_ab float32, or b_f32); b_packed is then ignored (its panels hold
 * the unmasked B). The kernels that pack B themselves multiply each value by its mask as
 * they pack it (the CPU's own float32 AVX2 kernel and the AVX512_BF16 kernel); wherever
 * another kernel runs (OpenBLAS, the convert kernel), the CPU's scheduler or kernel writes
 * B * mask for the panel first (counted: pg_cpu_gemm_mask_counts, cpu_gemm.h).
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
    const void *b_packed;  /* optional pre-packed op(B) (see above), or NULL */
    int64_t b_packed_np, b_packed_col;
    const float *b_mask;   /* optional mask of B (see above), or NULL */
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

/* ---- the int8 extension: u8 activations x s8 weights -> s32, float or u8 out -----------
 *
 * Quantized linear layers (pygpu/nn/quantized) multiply u8 activations A (M,K) by the
 * int8 weight W (N,K) of a layer, W^T: the product of the float layer's x @ W^T, each side
 * scaled. For each output element (m, n):
 *     acc   = sum_k A[m,k] * W[n,k] - za_m * colsum[n]     (exact, in int32)
 *     y     = acc * sa_m * sw[n] + bias[n], then act (none, relu, tanh, sigmoid)
 * and y is stored as float32 (c_f32), or requantized to u8 (c_u8, the next int8 layer's
 * input: q = clamp(round(y / c_scale) + c_zp, 0, c_max), round half to even), or (c_s32,
 * the kernels' tests) acc itself, bit for bit. sa/za are the activation's scale and zero
 * point: per row, computed from each row's min and max when A comes as float32 and
 * a_dynamic (dynamic quantization: [min(0, min), max(0, max)] over a_max + 1 levels), or
 * fixed (a_scale, a_zp: static quantization's calibrated values). Weights are symmetric
 * (zero point 0, [-127, 127]), one scale per output channel, as fbgemm and oneDNN do.
 *
 * The weight is packed ONCE, when the layer is quantized (pygpu/quantization/_pack.py),
 * never per call (fbgemm's PackBMatrix): K is padded with zeros to K4 = ceil(K/4) groups of
 * 4 and N to Np = ceil(N/16)*16 columns; columns are cut into panels of 64 (the last one
 * Np - 64p wide: 16, 32, 48 or 64); panel p starts at byte 64p * K4 * 4 and holds, for each
 * k4 in [0, K4), its w columns' 4 bytes W[n, 4k4 .. 4k4+3] (the 32-bit word vpdpbusd and
 * vpmaddubsw+vpmaddwd multiply by 4 u8 activations). After the Np*K4*4 panel bytes:
 * colsum (Np int32, sum_k W[n,k], the zero-point correction, 0 in the padding). The same
 * layout serves every ISA's kernel (cpu_gemm_int8*.c), so a packed model is portable.
 * On cuda the packed weight is cuBLASLt's operand instead, made when the layer moves there
 * (pygpu/quantization/_pack.py's pack_weight_rows, never per call): W as Np rows of K4*4
 * bytes (row n holds W[n, 0..K), zeros after; rows N..Np all zero), then the same colsum --
 * the same byte count, pg_qpack_bytes. cuBLASLt's IMMA multiplies s8 by s8 only: a 7-bit
 * level is its own s8, and with a_max 255 the cuda path shifts the u8 activations to s8
 * (level - 128) and adds 128 * colsum back in its epilogue: the int32 sums are exactly the
 * ones below (csrc/backends/cuda/cuda_quant.c).
 *
 * Activations are 7-bit by default (a_max = 127; pygpu's quantizers give [0, 127], as
 * PyTorch's fbgemm path does with reduce_range): AVX2's vpmaddubsw adds two u8 x s8
 * products into a SATURATING int16, and 2 * 127 * 127 = 32258 cannot saturate, where
 * 2 * 255 * 127 could. With a_max = 255 the AVX2 kernel is not used (on such a CPU the
 * portable one is; the VNNI kernels take 8-bit activations as they are). */
/* K at most PG_QGEMM_MAX_K: 255 * 127 * K (and the zero point times a column sum) must fit
 * the int32 accumulators (checked where descriptors are made). */
enum { PG_QGEMM_PANEL = 64, PG_QGEMM_MAX_K = 65536 };

static inline int64_t pg_qpack_k4(int64_t K) { return (K + 3) / 4; }
static inline int64_t pg_qpack_np(int64_t N) { return (N + 15) / 16 * 16; }
/* bytes of a packed weight: panels, then colsum */
static inline int64_t pg_qpack_bytes(int64_t N, int64_t K)
{
    return pg_qpack_np(N) * pg_qpack_k4(K) * 4 + pg_qpack_np(N) * 4;
}

static inline const int32_t *pg_qpack_colsum(const void *packed, int64_t N, int64_t K)
{
    return (const int32_t *)((const char *)packed + pg_qpack_np(N) * pg_qpack_k4(K) * 4);
}

typedef struct pg_qgemm {
    int64_t M, N, K;
    /* A (M,K), leading dimension lda (elements): u8, or float32 quantized by the kernel */
    const uint8_t *a_u8;
    const float *a_f32;
    int64_t lda;
    bool a_dynamic;  /* a_f32 only: per-row scale and zero point from each row's range */
    float a_scale;   /* otherwise: A's scale and zero point (per tensor) */
    int32_t a_zp;
    int a_max;       /* 127 (7-bit activations) or 255 */
    const uint8_t *b_packed; /* the packed weight (layout above) of W (N,K) */
    const int32_t *b_colsum; /* its colsum (pg_qpack_colsum); a column panel's descriptor
                                points both at its first column */
    const float *b_scale;    /* (N) per-output-channel weight scales */
    const float *bias;       /* (N) or NULL */
    int act;                 /* PG_ACT_* (pg_node.h) */
    /* C (M,N), leading dimension ldc: exactly one of */
    float *c_f32;
    uint8_t *c_u8;
    int32_t *c_s32;
    int64_t ldc;
    float c_scale;  /* c_u8: the output's scale, zero point and top level */
    int32_t c_zp;
    int c_max;
} pg_qgemm;

/* An int8 kernel runs one whole descriptor on the calling thread (a scheduler hands it
 * row panels, or column panels cut at 64-column panel boundaries). cpu_gemm_int8.h picks
 * one per ISA. */
typedef pg_status (*pg_qgemm_kernel_fn)(const pg_qgemm *g);

#endif
