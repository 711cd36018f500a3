/* pg_tensor.h - a tensor is a strided view onto a storage.
 *
 * Layout only: dtype, shape, strides (in elements; 0 for a broadcast axis,
 * negative for a reversed slice) and an offset (in elements) from the start
 * of the storage. Views (slicing, transpose, reshape of contiguous data) make
 * a new pg_tensor on the same storage; nothing is copied. All checks on user
 * input happen here and in the pg_ops_* files, never in a backend. */
#ifndef PG_TENSOR_H
#define PG_TENSOR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "pg_dtype.h"
#include "pg_storage.h"

#define PG_MAX_DIMS 8

typedef struct pg_tensor {
    pg_storage *storage; /* one reference, owned by whoever owns the pg_tensor */
    int dtype;           /* pg_dtype */
    int ndim;
    int64_t shape[PG_MAX_DIMS];
    int64_t strides[PG_MAX_DIMS]; /* elements */
    int64_t offset;               /* elements */
} pg_tensor;

static inline pg_device pg_tensor_device(const pg_tensor *t) { return t->storage->device; }
static inline char *pg_tensor_data(const pg_tensor *t)
{
    return (char *)t->storage->data + t->offset * (int64_t)pg_dtype_size((pg_dtype)t->dtype);
}

int64_t pg_shape_numel(int ndim, const int64_t *shape);
static inline int64_t pg_tensor_numel(const pg_tensor *t) { return pg_shape_numel(t->ndim, t->shape); }
bool pg_tensor_is_contiguous(const pg_tensor *t);
/* True when `t` is not contiguous and its strides order its dims otherwise than their
 * order (a channels_last tensor, a transpose, a slice of one): perm (t->ndim) gets the order
 * of its memory, outermost first, as PyTorch's TensorIterator sorts it (by stride; equal
 * strides: the larger size outer; a stride-0 dim stays where it is), so an op's output laid
 * out in perm keeps t's layout. */
bool pg_tensor_memory_order(const pg_tensor *t, int *perm);
/* True when writing every element of `t` writes every byte of its storage. */
bool pg_tensor_covers_storage(const pg_tensor *t);
/* Strides of a C-contiguous array of this shape. */
void pg_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);

/* Validate a user-supplied shape (non-negative, ndim <= PG_MAX_DIMS, and the
 * byte size fits in memory at all). */
pg_status pg_shape_check(int ndim, const int64_t *shape, pg_dtype dt);

/* Every function with a pg_tensor out-parameter calls this first, so `out`
 * holds no storage after a failure and pg_tensor_clear(out) is always safe
 * (the caller's error path must never release a stale pointer). Skipped when
 * `out` aliases the input `in`, which the views allow. */
static inline void pg_tensor_out_init(pg_tensor *out, const pg_tensor *in)
{
    if (out != in)
        memset(out, 0, sizeof *out);
}

/* New contiguous tensor with fresh storage (uninitialised). */
pg_status pg_tensor_empty(pg_device dev, pg_dtype dt, int ndim, const int64_t *shape,
                          pg_tensor *out);
/* `out` becomes another reference to `t`'s layout and storage. */
void pg_tensor_ref(const pg_tensor *t, pg_tensor *out);
/* Drop the storage reference held by `t` (safe on a zeroed pg_tensor). */
void pg_tensor_clear(pg_tensor *t);

/* Views (no copy). */
pg_status pg_view_transpose(const pg_tensor *t, int ndim, const int *perm, pg_tensor *out);
pg_status pg_view_reshape(const pg_tensor *t, int ndim, const int64_t *shape, pg_tensor *out);
/* Select index `i` along `axis` (drops the axis). */
pg_status pg_view_select(const pg_tensor *t, int axis, int64_t i, pg_tensor *out);
/* Python-style slice start:stop:step (already normalised by the caller). */
pg_status pg_view_slice(const pg_tensor *t, int axis, int64_t start, int64_t len, int64_t step,
                        pg_tensor *out);
/* Insert a length-1 axis at `axis`. */
pg_status pg_view_unsqueeze(const pg_tensor *t, int axis, pg_tensor *out);
/* Broadcast `t` to `ndim`/`shape` with stride-0 axes (NumPy rules). */
pg_status pg_view_broadcast(const pg_tensor *t, int ndim, const int64_t *shape, pg_tensor *out);

/* NumPy broadcasting of two shapes; the message names both shapes. */
pg_status pg_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                              int64_t *out, const char *opname);

/* "(2, 3)" into buf, for error messages. */
const char *pg_shape_str(int ndim, const int64_t *shape, char *buf, int len);
/* "[2, 3]" into buf: PyTorch's spelling of a shape in its messages. */
const char *pg_shape_list_str(int ndim, const int64_t *shape, char *buf, int len);

#endif
