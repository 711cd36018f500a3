/* pg_ops_half.c - arithmetic on float16/bfloat16 tensors, computed in float32.
 *
 * The 16-bit float dtypes have no kernels of their own: an op that meets one
 * casts it to float32 (exact), runs the float32 op, and rounds the result
 * back once (round to nearest even) when the result dtype is 16-bit. That is
 * what NumPy's float16 loops do (each element through float), so results
 * match NumPy's float16 up to float32 libm differences. Promotion
 * (pg_dtype_promote): float16 op float16 -> float16, float16 op bfloat16 ->
 * float32 (as PyTorch), with bool -> the 16-bit dtype, with int64 -> float64
 * (as NumPy's float16), with float32/float64 -> those; a Python scalar keeps
 * the tensor's dtype (NEP 50). Comparisons give bool, argmax int64. The
 * entry points in pg_ops_*.c call these when an operand is 16-bit. */
#include "pg_ops.h"

/* `t` as float32 if it is 16-bit, else another reference to it. */
static pg_status widen(const pg_tensor *t, pg_tensor *out)
{
    if (pg_dtype_computes((pg_dtype)t->dtype)) {
        pg_tensor_ref(t, out);
        return PG_OK;
    }
    return pg_op_astype(t, PG_FLOAT32, out);
}

/* out = `wide` rounded to `dt` when `dt` is 16-bit (else `wide` itself); takes `wide`. */
static pg_status narrow(pg_status st, pg_tensor *wide, pg_dtype dt, pg_tensor *out)
{
    if (st != PG_OK)
        return st;
    if (pg_dtype_computes(dt) || wide->dtype == PG_BOOL || wide->dtype == PG_INT64) {
        *out = *wide;
        return PG_OK;
    }
    st = pg_op_astype(wide, dt, out);
    pg_tensor_clear(wide);
    return st;
}

bool pg_half_involved(const pg_tensor *a, const pg_tensor *b)
{
    return !pg_dtype_computes((pg_dtype)a->dtype) || (b && !pg_dtype_computes((pg_dtype)b->dtype));
}

pg_status pg_half_binary(int op, const pg_tensor *a, const pg_tensor *b, pg_tensor *out)
{
    pg_dtype rt = pg_dtype_promote((pg_dtype)a->dtype, (pg_dtype)b->dtype);
    pg_tensor wa, wb, wide;
    PG_TRY(widen(a, &wa));
    pg_status st = widen(b, &wb);
    if (st == PG_OK) {
        st = pg_op_binary(op, &wa, &wb, &wide);
        pg_tensor_clear(&wb);
    }
    pg_tensor_clear(&wa);
    return narrow(st, &wide, rt, out);
}

pg_status pg_half_binary_scalar(int op, const pg_tensor *a, pg_scalar s, bool scalar_left,
                                pg_tensor *out)
{
    pg_tensor wa, wide;
    PG_TRY(widen(a, &wa));
    pg_status st = pg_op_binary_scalar(op, &wa, s, scalar_left, &wide);
    pg_tensor_clear(&wa);
    return narrow(st, &wide, (pg_dtype)a->dtype, out);
}

pg_status pg_half_unary(int op, const pg_tensor *a, pg_tensor *out)
{
    pg_tensor wa, wide;
    PG_TRY(widen(a, &wa));
    pg_status st = pg_op_unary(op, &wa, &wide);
    pg_tensor_clear(&wa);
    return narrow(st, &wide, (pg_dtype)a->dtype, out);
}

pg_status pg_half_reduce(int op, const pg_tensor *a, int naxes, const int *axes, bool keepdims,
                         pg_tensor *out)
{
    pg_tensor wa, wide;
    PG_TRY(widen(a, &wa));
    pg_status st = pg_op_reduce(op, &wa, naxes, axes, keepdims, &wide);
    pg_tensor_clear(&wa);
    return narrow(st, &wide, (pg_dtype)a->dtype, out); /* argmax stays int64 */
}

pg_status pg_half_mean(const pg_tensor *a, int naxes, const int *axes, bool keepdims,
                       pg_tensor *out)
{
    pg_tensor wa, wide; /* sum and divide in float32, round once (NumPy's float16 mean) */
    PG_TRY(widen(a, &wa));
    pg_status st = pg_op_mean(&wa, naxes, axes, keepdims, &wide);
    pg_tensor_clear(&wa);
    return narrow(st, &wide, (pg_dtype)a->dtype, out);
}
