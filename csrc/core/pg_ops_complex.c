/* pg_ops_complex.c - complex tensors in the core: the views between a complex tensor and its
 * (real, imaginary) pairs, and the copies, casts and fills of complex tensors run on those
 * views (the copies' and fills' lowering onto them: pg_op_copy in pg_ops_elementwise.c,
 * pg_op_fill in pg_ops_create.c; this file only makes views, so it depends on neither).
 *
 * A complex64 element is two float32s (complex128: two float64s, complex32: two float16s), PyTorch's
 * layout, so a complex tensor of shape S, strides s and offset o is exactly the float
 * tensor of shape S + (2,), strides 2s + (1,) and offset 2o (PyTorch's view_as_real). The
 * backends keep no complex kernels: a cast or copy between complex tensors is a copy of
 * the real views (complex64 -> complex128 is float32 -> float64 pairs), real -> complex
 * writes the real part and zeroes the imaginary one, complex -> real reads the real part.
 * pygpu/_tensor/complex.py composes the arithmetic from real ops on the same views; the FFT node
 * (pg_ops_fft.c) is the one node kind that takes complex operands. */
#include "pg_ops.h"



pg_status pg_view_complex_as_real(const pg_tensor *t, pg_tensor *out)
{
    pg_tensor_out_init(out, t);
    if (!pg_dtype_is_complex((pg_dtype)t->dtype))
        return pg_error_set(PG_ERR_DTYPE, "view_as_real is only supported for complex tensors");
    if (t->ndim >= PG_MAX_DIMS)
        return pg_error_set(PG_ERR_SHAPE, "view_as_real: a tensor of %d dimensions has no room "
                                          "for the pair axis (pygpu's limit is %d)",
                            t->ndim, PG_MAX_DIMS);
    pg_tensor r = *t;
    r.dtype = pg_dtype_complex_part((pg_dtype)t->dtype);
    for (int d = 0; d < t->ndim; d++)
        r.strides[d] = 2 * t->strides[d];
    r.shape[t->ndim] = 2;
    r.strides[t->ndim] = 1;
    r.ndim = t->ndim + 1;
    r.offset = 2 * t->offset;
    pg_storage_retain(t->storage);
    *out = r;
    return PG_OK;
}

pg_status pg_view_complex_part(const pg_tensor *t, bool imag, pg_tensor *out)
{
    pg_tensor_out_init(out, t);
    if (!pg_dtype_is_complex((pg_dtype)t->dtype))
        return pg_error_set(PG_ERR_RUNTIME, "%s is not implemented for tensors with non-complex "
                                            "dtypes.", imag ? "imag" : "real");
    pg_tensor r = *t;
    r.dtype = pg_dtype_complex_part((pg_dtype)t->dtype);
    for (int d = 0; d < t->ndim; d++)
        r.strides[d] = 2 * t->strides[d];
    r.offset = 2 * t->offset + (imag ? 1 : 0);
    pg_storage_retain(t->storage);
    *out = r;
    return PG_OK;
}

pg_status pg_view_real_as_complex(const pg_tensor *t, pg_tensor *out)
{
    pg_tensor_out_init(out, t);
    if (t->dtype != PG_FLOAT32 && t->dtype != PG_FLOAT64 && t->dtype != PG_FLOAT16)
        return pg_error_set(PG_ERR_RUNTIME, "view_as_complex is only supported for half, float "
                                            "and double tensors, but got a tensor of scalar type: %s",
                            pg_dtype_legacy_name((pg_dtype)t->dtype));
    if (t->ndim == 0 || t->shape[t->ndim - 1] != 2)
        return pg_error_set(PG_ERR_RUNTIME, "Tensor must have a last dimension of size 2");
    if (t->strides[t->ndim - 1] != 1)
        return pg_error_set(PG_ERR_RUNTIME, "Tensor must have a last dimension with stride 1");
    for (int d = 0; d < t->ndim - 1; d++)
        if (t->strides[d] % 2 != 0)
            return pg_error_set(PG_ERR_RUNTIME, "Tensor must have a stride divisible by 2 for "
                                                "all but last dimension");
    if (t->offset % 2 != 0)
        return pg_error_set(PG_ERR_RUNTIME, "Tensor must have a storage_offset divisible by 2");
    pg_tensor r = *t;
    r.dtype = pg_dtype_to_complex((pg_dtype)t->dtype);
    r.ndim = t->ndim - 1;
    for (int d = 0; d < r.ndim; d++)
        r.strides[d] = t->strides[d] / 2;
    r.offset = t->offset / 2;
    pg_storage_retain(t->storage);
    *out = r;
    return PG_OK;
}

bool pg_node_has_complex(const pg_node *n)
{
    for (int i = 0; i < n->nsrc; i++)
        if (n->src[i].storage && pg_dtype_is_complex((pg_dtype)n->src[i].dtype))
            return true;
    const pg_tensor *outs[1 + PG_NODE_MAX_EXTRA];
    int nout = pg_node_outputs(n, outs);
    for (int i = 0; i < nout; i++)
        if (pg_dtype_is_complex((pg_dtype)outs[i]->dtype))
            return true;
    return false;
}
