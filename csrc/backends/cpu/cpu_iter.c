/* cpu_iter.c - strided N-d iteration shared by the elementwise kernels.
 *
 * Adjacent axes that are contiguous with each other in every operand are
 * merged, so a contiguous tensor of any shape becomes one run of numel
 * elements and the inner loop vectorizes. */
#include <string.h>

#include "cpu_kernels.h"

#define MAX_OPS 4 /* dst and up to three sources (TERNARY) */

void pg_cpu_iterate(int nops, const pg_tensor *const *ops, char **ptrs_override,
                    pg_cpu_loop_fn loop, const void *arg)
{
    const pg_tensor *out = ops[0];
    int ndim = 0;
    int64_t shape[PG_MAX_DIMS];
    int64_t st[MAX_OPS][PG_MAX_DIMS];
    char *ptr[MAX_OPS];
    int64_t isz[MAX_OPS];

    if (pg_tensor_numel(out) == 0)
        return;
    for (int k = 0; k < nops; k++) {
        isz[k] = (int64_t)pg_dtype_size((pg_dtype)ops[k]->dtype);
        ptr[k] = ptrs_override && ptrs_override[k] ? ptrs_override[k] : pg_tensor_data(ops[k]);
    }
    /* drop size-1 axes and merge contiguous neighbours */
    for (int d = 0; d < out->ndim; d++) {
        if (out->shape[d] == 1)
            continue;
        bool merge = ndim > 0;
        for (int k = 0; k < nops && merge; k++)
            merge = st[k][ndim - 1] == ops[k]->strides[d] * out->shape[d];
        if (merge) {
            shape[ndim - 1] *= out->shape[d];
            for (int k = 0; k < nops; k++)
                st[k][ndim - 1] = ops[k]->strides[d];
        } else {
            shape[ndim] = out->shape[d];
            for (int k = 0; k < nops; k++)
                st[k][ndim] = ops[k]->strides[d];
            ndim++;
        }
    }
    if (ndim == 0) { /* a single element */
        int64_t zero[MAX_OPS] = {0};
        loop(1, ptr, zero, arg);
        return;
    }
    int64_t inner_stride[MAX_OPS];
    for (int k = 0; k < nops; k++)
        inner_stride[k] = st[k][ndim - 1] * isz[k];
    int64_t inner = shape[ndim - 1];
    int64_t idx[PG_MAX_DIMS] = {0};
    for (;;) {
        loop(inner, ptr, inner_stride, arg);
        int d = ndim - 2;
        for (; d >= 0; d--) { /* odometer over the outer axes */
            idx[d]++;
            for (int k = 0; k < nops; k++)
                ptr[k] += st[k][d] * isz[k];
            if (idx[d] < shape[d])
                break;
            for (int k = 0; k < nops; k++)
                ptr[k] -= st[k][d] * isz[k] * shape[d];
            idx[d] = 0;
        }
        if (d < 0)
            return;
    }
}
