/* pg_ops_index.h - the index family: a strided view with checked bounds, and the ops
 * that move elements by an index tensor or along one axis (gather, scatter, index_select,
 * index_add_, cumulative sums and products, argsort, masked_fill_, nonzero).
 *
 * All of them are one pg_node op, PG_OP_INDEX, told apart by `subop` (an INDEX row of
 * pg_subops.def, whose flags say what each does: PG_SUBF_READ, _WRITE, _FULL, _ADD, _PROD,
 * and whose family column names the kernel that runs it on every backend); the generic
 * layer (pg_ops_index.c) checks shapes, dtypes and devices once and hands the
 * backends operands they can trust, except the index VALUES, which live on the device:
 * the kernel checks each one and fails the node with an IndexError naming it (on sim the
 * failure surfaces, as every asynchronous one does, at the next read). */
#ifndef PG_OPS_INDEX_H
#define PG_OPS_INDEX_H

#include "pg_ops.h"

/* Node layout of each sub-op (p.index: the axis, and the flag some subops read):
 *   GATHER        dst (new, contiguous, shape of idx) = src[0] taken along axis by idx
 *                 src[1] (int64, contiguous, same ndim): dst[..i..] = src0[.. idx[..i..] ..]
 *   INDEX_SELECT  dst (new, contiguous) = src[0] taken along axis by the 1-D idx src[1]
 *   SCATTER       dst (self, in place, any strides; also src[2]) [.. idx[..i..] ..] = src0[..i..]
 *   SCATTER_ADD   the same with +=
 *   INDEX_COPY    dst[.., idx[j], ..] = src0[.., j, ..] (idx 1-D)
 *   INDEX_ADD     the same with +=
 *   CUMSUM/CUMPROD dst (new, contiguous) = running sum/product of src[0] (contiguous) along axis
 *   ARGSORT       dst (new, int64) = stable sorting permutation of src[0] (contiguous) along
 *                 axis; flag: descending. NaN sorts as the largest value (PyTorch's order)
 *   MASKED_FILL   dst (self, in place; also src[2])[mask] = value: src[0] the bool mask
 *                 broadcast to dst's shape, src[1] a 0-d tensor of dst's dtype
 *   NONZERO       dst (int64, 1-D, n) = flat positions of the n true elements of src[0]
 *                 (bool, contiguous); n must be the mask's count
 *   TOPK          dst (new, int64, src's shape with k = dst.shape[axis] on axis) = the
 *                 positions of the k largest (flag 1) or smallest elements of each line
 *                 of src[0] (contiguous), in sorted order; ties keep their input order,
 *                 so it is the first k of ARGSORT's answer
 * Arithmetic subops (SCATTER_ADD, INDEX_ADD, CUMSUM, CUMPROD) run on float32, float64 and
 * int64; the generic layer widens half dtypes and bool first. Moves run on every dtype. */

/* A view of t's storage with the given shape, strides (elements, >= 0 or negative) and
 * offset (elements from the storage's start); refused unless every element it can reach
 * lies inside the storage (PyTorch's as_strided). */
pg_status pg_view_as_strided(const pg_tensor *t, int ndim, const int64_t *shape,
                             const int64_t *strides, int64_t offset, pg_tensor *out);
/* The same bytes as dtype `dt` (PyTorch's Tensor.view(dtype)): the same shape and strides
 * when the element sizes agree; else the last axis (stride 1) splits or merges elements and
 * the other strides and the offset scale, with PyTorch's checks and RuntimeError texts (a
 * 0-d tensor, a last stride other than 1, a size, offset or stride not divisible). */
pg_status pg_view_dtype(const pg_tensor *t, pg_dtype dt, pg_tensor *out);

/* gather / index_select: a new tensor. */
pg_status pg_op_gather(const pg_tensor *src, int axis, const pg_tensor *idx, pg_tensor *out);
pg_status pg_op_index_select(const pg_tensor *src, int axis, const pg_tensor *idx,
                             pg_tensor *out);
/* scatter_ / scatter_add_ (op PG_INDEX_SCATTER[_ADD]) and index_copy_ / index_add_
 * (PG_INDEX_INDEX_COPY / _ADD), the rows flagged PG_SUBF_WRITE: write into `self`, in
 * place. */
pg_status pg_op_scatter(int op, const pg_tensor *self, int axis, const pg_tensor *idx,
                        const pg_tensor *src);
pg_status pg_op_cumulative(int op, const pg_tensor *src, int axis, pg_tensor *out);
pg_status pg_op_argsort(const pg_tensor *src, int axis, bool descending, pg_tensor *out);
/* the sorted positions of the k largest (or smallest) elements along axis */
pg_status pg_op_topk(const pg_tensor *src, int axis, int64_t k, bool largest, pg_tensor *out);
pg_status pg_op_masked_fill(const pg_tensor *self, const pg_tensor *mask, pg_scalar value);
/* the flat positions of the true elements of a bool tensor; `count` is how many there are
 * (the caller has read it); a different count fails the node */
pg_status pg_op_nonzero(const pg_tensor *mask, int64_t count, pg_tensor *out);

#endif
