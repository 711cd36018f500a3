/* pg_ops_quantized.c - the generic layer of the int8 linear layer (PG_OP_QLINEAR).
 *
 *   QLINEAR  src: x (M,K) float32 | u8, packed (bytes), w_scale (N) float32, bias (N) | NULL
 *            dst: y (M,N) float32 | u8.  subop: the activation (PG_ACT_*)
 *            p.qlinear: a_scale, c_scale, a_zp, c_zp, a_max, c_max, a_dynamic
 *
 * u8 tensors are bool-typed storage holding bytes (pygpu's dtypes have no uint8; the
 * quantized modules in pygpu/nn/quantized own them and never hand them to other ops).
 * Checked here once; the CPU kernels (csrc/backends/cpu/cpu_gemm_int8*.c) run it on cpu
 * and sim, cuBLASLt's IMMA GEMM between two kernels of kernels/quant.cu on cuda
 * (csrc/backends/cuda/cuda_quant.c), with the same bits. The packed weight's layout is its
 * device's (pg_gemm.h); its size is the same on every device, which is what is checked. */
#include <math.h>
#include <string.h>

#include "pg_backend.h"
#include "pg_gemm.h"
#include "pg_ops.h"
#include "pg_ops_quantized.h"

static pg_status need_1d(const char *op, const char *what, const pg_tensor *t, int64_t n)
{
    if (t->dtype != PG_FLOAT32)
        return pg_error_set(PG_ERR_DTYPE, "%s: %s must be float32, got %s", op, what,
                            pg_dtype_name((pg_dtype)t->dtype));
    if (t->ndim != 1 || t->shape[0] != n)
        return pg_error_set(PG_ERR_SHAPE, "%s: %s must have shape (%lld,) (one per output "
                                          "feature)", op, what, (long long)n);
    return PG_OK;
}

static pg_status check_params(const char *op, bool u8_in, const pg_qlinear_params *q)
{
    if (q->a_max != 127 && q->a_max != 255)
        return pg_error_set(PG_ERR_VALUE, "%s: activations must be 7-bit (127) or 8-bit (255), "
                                          "got a top level of %d", op, q->a_max);
    if (q->a_dynamic && u8_in)
        return pg_error_set(PG_ERR_VALUE, "%s: a u8 input is already quantized; dynamic "
                                          "quantization takes a float32 input", op);
    if (!q->a_dynamic && (!(q->a_scale > 0) || !isfinite(q->a_scale) || q->a_zp < 0 ||
                          q->a_zp > q->a_max))
        return pg_error_set(PG_ERR_VALUE, "%s: the input's scale must be > 0 and finite and its "
                                          "zero point in [0, %d] (got %g, %d)",
                            op, q->a_max, q->a_scale, q->a_zp);
    if (q->out_u8 && (!(q->c_scale > 0) || !isfinite(q->c_scale) || q->c_max < 1 ||
                      q->c_max > 255 || q->c_zp < 0 || q->c_zp > q->c_max))
        return pg_error_set(PG_ERR_VALUE, "%s: the output's scale must be > 0 and finite, its "
                                          "top level in [1, 255] and its zero point in [0, top] "
                                          "(got %g, %d, %d)", op, q->c_scale, q->c_max, q->c_zp);
    return PG_OK;
}

pg_status pg_op_qlinear(const pg_tensor *x, const pg_tensor *packed, const pg_tensor *w_scale,
                        const pg_tensor *bias, int act, const pg_qlinear_params *q, pg_tensor *y)
{
    const char *op = "quantized linear";
    if (act < 0 || act >= PG_NUM_ACT)
        return pg_error_set(PG_ERR_VALUE, "%s: unknown activation code %d", op, act);
    if (x->dtype != PG_FLOAT32 && x->dtype != PG_BOOL)
        return pg_error_set(PG_ERR_DTYPE, "%s: the input must be float32 (or the u8 output of "
                                          "an int8 layer), got %s", op,
                            pg_dtype_name((pg_dtype)x->dtype));
    if (x->ndim != 2)
        return pg_error_set(PG_ERR_SHAPE, "%s: the input must be (batch, in_features), got %d-d",
                            op, x->ndim);
    PG_TRY(check_params(op, x->dtype == PG_BOOL, q));
    const int64_t M = x->shape[0], K = x->shape[1];
    if (w_scale->ndim != 1)
        return pg_error_set(PG_ERR_SHAPE, "%s: the weight scales must be 1-D", op);
    const int64_t N = w_scale->shape[0];
    if (K < 1 || N < 1)
        return pg_error_set(PG_ERR_SHAPE, "%s: in_features and out_features must be >= 1", op);
    if (K > PG_QGEMM_MAX_K)
        return pg_error_set(PG_ERR_VALUE, "%s: in_features above %d would overflow the int32 "
                                          "sums of u8 x s8 products; split the layer",
                            op, PG_QGEMM_MAX_K);
    PG_TRY(need_1d(op, "the weight scales", w_scale, N));
    if (packed->dtype != PG_BOOL || packed->ndim != 1 || packed->shape[0] != pg_qpack_bytes(N, K))
        return pg_error_set(PG_ERR_SHAPE, "%s: the packed weight must be %lld bytes for %lld "
                                          "outputs x %lld inputs (pack it with "
                                          "pygpu.quantization's pack_weight)",
                            op, (long long)pg_qpack_bytes(N, K), (long long)N, (long long)K);
    if (bias)
        PG_TRY(need_1d(op, "the bias", bias, N));
    PG_TRY(pg_check_same_device(op, x, packed));
    PG_TRY(pg_check_same_device(op, x, w_scale));
    if (bias)
        PG_TRY(pg_check_same_device(op, x, bias));
    if ((x->dtype == PG_BOOL && !pg_tensor_is_contiguous(x)) || !pg_tensor_is_contiguous(packed))
        return pg_error_set(PG_ERR_VALUE, "%s: u8 operands must be contiguous (they are the "
                                          "quantized layers' own buffers)", op);
    pg_device dev = pg_tensor_device(x);
    if (dev.type != PG_DEV_CPU && dev.type != PG_DEV_SIM && dev.type != PG_DEV_CUDA)
        return pg_error_set(PG_ERR_DEVICE, "%s: int8 layers run on cpu, sim and cuda devices; "
                                           "move the model there (model.to('cpu'))", op);
    pg_node n;
    pg_node_start(&n, PG_OP_QLINEAR, act, "qlinear");
    n.p.qlinear.a_scale = q->a_dynamic ? 1.0 : q->a_scale;
    n.p.qlinear.c_scale = q->out_u8 ? q->c_scale : 1.0;
    n.p.qlinear.a_zp = q->a_dynamic ? 0 : q->a_zp;
    n.p.qlinear.c_zp = q->out_u8 ? q->c_zp : 0;
    n.p.qlinear.a_max = q->a_max;
    n.p.qlinear.c_max = q->out_u8 ? q->c_max : 255;
    n.p.qlinear.a_dynamic = q->a_dynamic;
    const pg_tensor *in[4] = {x, packed, w_scale, bias};
    for (int i = 0; i < 4; i++) {
        if (!in[i])
            continue;
        pg_status st = pg_op_contiguous(in[i], &n.src[i]);
        if (st != PG_OK) {
            for (int k = 0; k < i; k++)
                if (n.src[k].storage)
                    pg_tensor_clear(&n.src[k]);
            return st;
        }
    }
    n.nsrc = 4;
    int64_t shape[2] = {M, N};
    pg_status st = pg_tensor_empty(dev, q->out_u8 ? PG_BOOL : PG_FLOAT32, 2, shape, &n.dst);
    if (st == PG_OK && M > 0)
        st = pg_launch(&n);
    for (int i = 0; i < 4; i++)
        if (n.src[i].storage)
            pg_tensor_clear(&n.src[i]);
    if (st != PG_OK) {
        if (n.dst.storage)
            pg_tensor_clear(&n.dst);
        return st;
    }
    *y = n.dst;
    return PG_OK;
}
