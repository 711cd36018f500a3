/* pg_ops_quantized.h - the generic layer of the int8 linear layer (pg_ops_quantized.c). */
#ifndef PG_OPS_QUANTIZED_H
#define PG_OPS_QUANTIZED_H

#include <stdbool.h>

#include "pg_node.h"

/* How a quantized linear layer quantizes its input and stores its output. */
typedef struct pg_qlinear_params {
    bool a_dynamic; /* float input: per-row scale and zero point, computed per call */
    double a_scale; /* otherwise: the input's scale and zero point */
    int a_zp;
    int a_max;      /* the activations' top level: 127 (7-bit) or 255 */
    bool out_u8;    /* requantize the output to u8 (the next int8 layer's input) */
    double c_scale; /* with out_u8: the output's scale, zero point and top level */
    int c_zp;
    int c_max;
} pg_qlinear_params;

/* y (M,N) = act(dequant(q(x) (M,K) @ Wq^T) + bias). x: float32, or u8 (M,K) held in a
 * bool-typed tensor (pygpu has no uint8 dtype: the quantized layers keep their bytes in one);
 * packed: the weight packed by pygpu/quantization/_pack.py (pg_gemm.h's layout), bool-typed,
 * 1-D, pg_qpack_bytes(N, K) bytes; w_scale (N) float32; bias (N) float32 or NULL. y is
 * float32, or u8 (bool-typed) with out_u8. Every operand on one device (cpu, sim or cuda). */
pg_status pg_op_qlinear(const pg_tensor *x, const pg_tensor *packed, const pg_tensor *w_scale,
                        const pg_tensor *bias, int act, const pg_qlinear_params *q, pg_tensor *y);

#endif
