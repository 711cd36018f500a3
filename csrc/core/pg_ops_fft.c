/* pg_ops_fft.c - the FFT node: one 1-D discrete Fourier transform of every line along the
 * last axis, checked and shaped here, run by the backend (the CPU's pocketfft,
 * csrc/backends/cpu/cpu_fft.c, on cpu and on sim's worker).
 *
 * Each sub-op is an FFT row of pg_subops.def, whose in/out columns say what the last axis
 * holds: C2C n complex values to n; R2C n real values to the n/2+1 non-negative
 * frequencies; C2R those n/2+1 back to n real values. pygpu/fft/__init__.py composes torch.fft's
 * functions from these: it pads or trims the transformed axes (n=, s=), moves each to the
 * last place, applies one node per axis and computes the norm's factor. */
#include "pg_ops.h"

#include <string.h>

#include "pg_backend.h"

enum fft_axis { FFT_COMPLEX, FFT_REAL, FFT_HALF };
typedef struct fft_row {
    int in, out;
} fft_row;
static const fft_row fft_rows[PG_NUM_SUBOPS] = {
#define PG_SUBOP_FFT(ID, name, flags, in, out, ...) [PG_FFT_##ID] = {FFT_##in, FFT_##out},
#include "pg_subops.def"
};

/* the length of the last axis that `what` holds for a transform of length n */
static int64_t axis_len(int what, int64_t n) { return what == FFT_HALF ? n / 2 + 1 : n; }

pg_status pg_op_fft(int op, const pg_tensor *src, int64_t n, bool forward, double fct,
                    pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    if (pg_subop_node(op) != PG_OP_FFT)
        return pg_error_set(PG_ERR_VALUE, "fft: %s is not an FFT sub-op", pg_subop_id(op));
    const char *name = pg_subop_name(op);
    fft_row row = fft_rows[op];
    if (n < 1)
        return pg_error_set(PG_ERR_RUNTIME, "Invalid number of data points (%lld) specified",
                            (long long)n);
    if (src->ndim < 1)
        return pg_error_set(PG_ERR_SHAPE, "%s: the operand needs an axis to transform", name);
    bool complex_in = pg_dtype_is_complex((pg_dtype)src->dtype);
    if (src->dtype == PG_COMPLEX32) /* PyTorch's CPU FFT has no half kernel either */
        return pg_error_set(PG_ERR_RUNTIME, "Unsupported dtype ComplexHalf");
    if (row.in == FFT_REAL ? (src->dtype != PG_FLOAT32 && src->dtype != PG_FLOAT64) : !complex_in)
        return pg_error_set(PG_ERR_DTYPE, "%s: internal: a %s operand expected, got %s", name,
                            row.in == FFT_REAL ? "float32/float64" : "complex",
                            pg_dtype_name((pg_dtype)src->dtype));
    if (src->shape[src->ndim - 1] != axis_len(row.in, n))
        return pg_error_set(PG_ERR_SHAPE, "%s: internal: the last axis holds %lld values, a "
                                          "transform of %lld reads %lld",
                            name, (long long)src->shape[src->ndim - 1], (long long)n,
                            (long long)axis_len(row.in, n));
    pg_dtype part = complex_in ? pg_dtype_complex_part((pg_dtype)src->dtype) : (pg_dtype)src->dtype;
    pg_dtype odt = row.out == FFT_REAL ? part : pg_dtype_to_complex(part);
    int64_t shape[PG_MAX_DIMS];
    memcpy(shape, src->shape, sizeof(int64_t) * (size_t)src->ndim);
    shape[src->ndim - 1] = axis_len(row.out, n);
    pg_device dev = pg_tensor_device(src);
    PG_TRY(pg_backend_check_op(dev, PG_OP_FFT, src->dtype, name));

    pg_node node;
    pg_node_start(&node, PG_OP_FFT, op, name);
    node.p.fft.n = n;
    node.p.fft.forward = forward;
    node.p.fft.fct = fct;
    pg_status st = pg_op_contiguous(src, &node.src[0]);
    if (st == PG_OK)
        st = pg_tensor_empty(dev, odt, src->ndim, shape, out);
    return pg_launch_and_clear(&node, 1, out, out, st);
}
