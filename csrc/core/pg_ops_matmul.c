/* pg_ops_matmul.c - checked matrix multiply with NumPy's matmul shape rules.
 *
 * 1-D operands are promoted to a row (left) or a column (right) and the extra
 * axis is dropped from the result; 2-D and 3-D operands become (batch, rows,
 * cols) with a broadcast batch. Each operand is then put in a layout BLAS
 * (and cuBLAS) takes directly: row-major, or a transposed view, else a
 * contiguous copy. Backends receive (B,M,K) @ (B,K,N) -> (B,M,N). */
#include "pg_ops.h"
#include "pg_backend.h"

#include <string.h>

#define BLAS_MAX 2147483647LL /* the BLAS index type is a 32-bit int */

static pg_status as_3d(const pg_tensor *t, bool left, pg_tensor *out)
{
    pg_tensor tmp;
    switch (t->ndim) {
    case 1: /* left: (1, 1, K); right: (1, K, 1) */
        PG_TRY(pg_view_unsqueeze(t, left ? 0 : 1, &tmp));
        break;
    case 2: pg_tensor_ref(t, &tmp); break;
    case 3: pg_tensor_ref(t, out); return PG_OK;
    default:
        return pg_error_set(PG_ERR_VALUE,
                            "matmul supports 1-D, 2-D and 3-D (batched) operands, got a %d-d one; "
                            "reshape it to (batch, rows, cols) first",
                            t->ndim);
    }
    pg_status st = pg_view_unsqueeze(&tmp, 0, out);
    pg_tensor_clear(&tmp);
    return st;
}

/* Give `t` (B, rows, cols) strides BLAS accepts, copying if it has none. */
static pg_status blas_layout(pg_tensor *t)
{
    int64_t rows = t->shape[1], cols = t->shape[2];
    if (t->shape[0] == 1)
        t->strides[0] = 0;
    int64_t ld = rows > 1 ? t->strides[1] : cols;
    if ((t->strides[2] == 1 || cols == 1) && ld >= (cols > 1 ? cols : 1) && ld <= BLAS_MAX) {
        t->strides[2] = 1;
        t->strides[1] = ld;
        return PG_OK;
    }
    ld = cols > 1 ? t->strides[2] : rows;
    if ((t->strides[1] == 1 || rows == 1) && ld >= (rows > 1 ? rows : 1) && ld <= BLAS_MAX) {
        t->strides[1] = 1;
        t->strides[2] = ld;
        return PG_OK;
    }
    pg_tensor c;
    PG_TRY(pg_op_astype(t, (pg_dtype)t->dtype, &c));
    pg_tensor_clear(t);
    *t = c;
    if (t->shape[0] == 1)
        t->strides[0] = 0;
    t->strides[1] = cols > 0 ? cols : 1;
    t->strides[2] = 1;
    return PG_OK;
}

static pg_status prepare(const pg_tensor *t, bool left, int dt, pg_tensor *out)
{
    pg_tensor cast;
    if (t->dtype != dt)
        PG_TRY(pg_op_astype(t, (pg_dtype)dt, &cast));
    else
        pg_tensor_ref(t, &cast);
    pg_status st = as_3d(&cast, left, out);
    pg_tensor_clear(&cast);
    return st;
}

pg_status pg_op_matmul(const pg_tensor *a, const pg_tensor *b, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    char sa[160], sb[160];
    pg_device dev = pg_tensor_device(a);
    PG_TRY(pg_check_same_device("matmul", a, b));
    if (a->ndim == 0 || b->ndim == 0)
        return pg_error_set(PG_ERR_VALUE, "matmul: operands must have at least 1 dimension, got "
                                          "a 0-d tensor; use * to multiply by a scalar");
    /* float16/bfloat16 run the half GEMM (fp32 accumulation), result in the half dtype; the
     * integers narrower than int64 run the int64 product and wrap back to their dtype (exact:
     * wrapping commutes with sums and products), as PyTorch's integer matmul on the CPU */
    int out_dt = pg_dtype_promote((pg_dtype)a->dtype, (pg_dtype)b->dtype);
    int dt = pg_dtype_is_narrow_int((pg_dtype)out_dt) ? PG_INT64 : out_dt;
    PG_TRY(pg_backend_check_op(dev, PG_OP_MATMUL, dt, "matmul"));
    if (dt == PG_BOOL)
        return pg_error_set(PG_ERR_DTYPE, "matmul: bool operands are not supported; use "
                                          ".astype(pygpu.int64) or a float dtype");
    int64_t ka = a->shape[a->ndim - 1], kb = b->shape[b->ndim > 1 ? b->ndim - 2 : 0];
    if (ka != kb)
        return pg_error_set(PG_ERR_SHAPE,
                            "matmul: inner dimensions do not match: %s @ %s (%lld != %lld); the "
                            "last axis of a must equal the %s axis of b",
                            pg_shape_str(a->ndim, a->shape, sa, sizeof sa),
                            pg_shape_str(b->ndim, b->shape, sb, sizeof sb), (long long)ka,
                            (long long)kb, b->ndim > 1 ? "second-to-last" : "only");
    pg_tensor A, B;
    memset(&A, 0, sizeof A);
    memset(&B, 0, sizeof B);
    pg_status st = prepare(a, true, dt, &A);
    if (st == PG_OK)
        st = prepare(b, false, dt, &B);
    int64_t batch = 1;
    if (st == PG_OK) {
        if (A.shape[0] != B.shape[0] && A.shape[0] != 1 && B.shape[0] != 1)
            st = pg_error_set(PG_ERR_SHAPE, "matmul: batch sizes do not match: %s @ %s",
                              pg_shape_str(a->ndim, a->shape, sa, sizeof sa),
                              pg_shape_str(b->ndim, b->shape, sb, sizeof sb));
        batch = A.shape[0] > B.shape[0] ? A.shape[0] : B.shape[0];
    }
    int64_t M = A.storage ? A.shape[1] : 0, K = A.storage ? A.shape[2] : 0,
            N = B.storage ? B.shape[2] : 0;
    if (st == PG_OK && (M > BLAS_MAX || N > BLAS_MAX || K > BLAS_MAX))
        st = pg_error_set(PG_ERR_VALUE, "matmul: dimensions above 2^31-1 are not supported");
    if (st == PG_OK)
        st = blas_layout(&A);
    if (st == PG_OK)
        st = blas_layout(&B);
    pg_tensor C;
    memset(&C, 0, sizeof C);
    if (st == PG_OK) {
        int64_t shape3[3] = {batch, M, N};
        st = pg_tensor_empty(dev, (pg_dtype)dt, 3, shape3, &C);
    }
    if (st == PG_OK && pg_tensor_numel(&C) > 0) {
        if (K == 0) {
            pg_scalar zero = {PG_SCALAR_INT, 0.0, 0};
            st = pg_op_fill(&C, zero);
        } else {
            pg_node n;
            n.nextra = 0;
            n.op = PG_OP_MATMUL;
            n.subop = 0;
            n.nsrc = 2;
            n.src[0] = A;
            n.src[1] = B;
            n.dst = C;
            n.name = "matmul";
            st = pg_launch(&n);
        }
    }
    if (st == PG_OK) { /* drop the axes NumPy drops */
        int64_t shape[3];
        int nd = 0;
        if (a->ndim == 3 || b->ndim == 3)
            shape[nd++] = batch;
        if (a->ndim > 1)
            shape[nd++] = M;
        if (b->ndim > 1)
            shape[nd++] = N;
        st = pg_view_reshape(&C, nd, shape, out);
    }
    if (st == PG_OK && out_dt != dt) {
        pg_tensor wide = *out;
        st = pg_op_astype(&wide, (pg_dtype)out_dt, out);
        pg_tensor_clear(&wide);
    }
    pg_tensor_clear(&A);
    pg_tensor_clear(&B);
    pg_tensor_clear(&C);
    return st;
}
