/* pg_ops_index.c - the generic layer of the index family (pg_ops_index.h): checked once
 * here, then one PG_OP_INDEX node per op.
 *
 * What is checked here: index tensors are int64 or int32 (widened to int64 here) and on
 * the input's device; ranks and
 * sizes follow PyTorch's rules (gather's index may be smaller than the input on every
 * axis but `dim`; index_select's index is 1-D); outputs written in place are writable;
 * axes are in range. The index values themselves live on the device, so the kernels
 * check each one (pg_ops_index.h). Half dtypes, bool and the narrow integers take the
 * arithmetic subops and the sorts through a float32 / int64 copy (arith_dtype), so the
 * kernels see three dtypes; pure moves (gather,
 * scatter_, index_select, masked_fill_) run on every dtype as they are. */
#include "pg_ops_index.h"

#include <string.h>

#include "pg_backend.h"

/* ---- the checked strided view --------------------------------------------------------- */

pg_status pg_view_as_strided(const pg_tensor *t, int ndim, const int64_t *shape,
                             const int64_t *strides, int64_t offset, pg_tensor *out)
{
    pg_tensor_out_init(out, t);
    PG_TRY(pg_shape_check(ndim, shape, (pg_dtype)t->dtype));
    if (offset < 0)
        return pg_error_set(PG_ERR_VALUE, "as_strided: storage offset %lld is negative",
                            (long long)offset);
    int64_t size = (int64_t)pg_dtype_size((pg_dtype)t->dtype);
    int64_t capacity = (int64_t)t->storage->nbytes / size; /* elements the storage holds */
    int64_t lo = offset, hi = offset;
    bool empty = pg_shape_numel(ndim, shape) == 0;
    for (int d = 0; d < ndim && !empty; d++) {
        int64_t reach;
        if (__builtin_mul_overflow(shape[d] - 1, strides[d], &reach) ||
            __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi))
            return pg_error_set(PG_ERR_VALUE, "as_strided: stride %lld on an axis of %lld "
                                              "elements reaches past any storage",
                                (long long)strides[d], (long long)shape[d]);
    }
    if (!empty && (lo < 0 || hi >= capacity))
        return pg_error_set(PG_ERR_VALUE,
                            "as_strided: the view reaches elements %lld..%lld of a storage "
                            "of %lld elements; choose a shape, strides and offset inside it",
                            (long long)lo, (long long)hi, (long long)capacity);
    if (empty && offset > capacity)
        return pg_error_set(PG_ERR_VALUE, "as_strided: storage offset %lld is past the "
                                          "storage's %lld elements",
                            (long long)offset, (long long)capacity);
    pg_tensor r = *t;
    r.ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        r.shape[d] = shape[d];
        r.strides[d] = strides[d];
    }
    r.offset = offset;
    pg_storage_retain(t->storage);
    *out = r;
    return PG_OK;
}

static pg_status last_stride_error(const pg_tensor *t, const char *a, const char *b)
{
    return pg_error_set(PG_ERR_RUNTIME, "self.stride(-1) must be 1 to view %s as %s (different "
                                        "element sizes), but got %lld",
                        a, b, (long long)t->strides[t->ndim - 1]);
}

pg_status pg_view_dtype(const pg_tensor *t, pg_dtype dt, pg_tensor *out)
{
    pg_tensor_out_init(out, t);
    pg_tensor r = *t;
    r.dtype = dt;
    int64_t from = (int64_t)pg_dtype_size((pg_dtype)t->dtype), to = (int64_t)pg_dtype_size(dt);
    const char *a = pg_dtype_legacy_name((pg_dtype)t->dtype), *b = pg_dtype_legacy_name(dt);
    int last = t->ndim - 1;
    if (from != to && t->ndim == 0)
        return pg_error_set(PG_ERR_RUNTIME, "self.dim() cannot be 0 to view %s as %s (different "
                                            "element sizes)", a, b);
    if (from > to) { /* each element becomes `ratio` narrower ones along the last axis */
        int64_t ratio = from / to;
        if (t->strides[last] != 1)
            return last_stride_error(t, a, b);
        for (int d = 0; d < last; d++)
            r.strides[d] = t->strides[d] * ratio;
        r.shape[last] = t->shape[last] * ratio;
        r.offset = t->offset * ratio;
    } else if (from < to) { /* `ratio` elements of the last axis become one */
        int64_t ratio = to / from;
        if (t->shape[last] % ratio != 0)
            return pg_error_set(PG_ERR_RUNTIME, "self.size(-1) must be divisible by %lld to view "
                                                "%s as %s (different element sizes), but got %lld",
                                (long long)ratio, a, b, (long long)t->shape[last]);
        if (t->offset % ratio != 0)
            return pg_error_set(PG_ERR_RUNTIME, "self.storage_offset() must be divisible by %lld "
                                                "to view %s as %s (different element sizes), but "
                                                "got %lld",
                                (long long)ratio, a, b, (long long)t->offset);
        if (t->strides[last] != 1)
            return last_stride_error(t, a, b);
        for (int d = 0; d < last; d++) {
            if (t->strides[d] % ratio != 0)
                return pg_error_set(PG_ERR_RUNTIME, "self.stride(%d) must be divisible by %lld "
                                                    "to view %s as %s (different element sizes), "
                                                    "but got %lld",
                                    d, (long long)ratio, a, b, (long long)t->strides[d]);
            r.strides[d] = t->strides[d] / ratio;
        }
        r.shape[last] = t->shape[last] / ratio;
        r.offset = t->offset / ratio;
    }
    pg_storage_retain(t->storage);
    *out = r;
    return PG_OK;
}

/* ---- shared checks -------------------------------------------------------------------- */

static pg_status norm_axis(const char *op, int axis, int ndim, int *out)
{
    if (ndim == 0)
        return pg_error_set(PG_ERR_VALUE, "%s: the input is 0-d; it needs at least one axis", op);
    if (axis < -ndim || axis >= ndim)
        return pg_error_set(PG_ERR_AXIS, "%s: dimension out of range (expected to be in range "
                                         "of [%d, %d], but got %d)",
                            op, -ndim, ndim - 1, axis);
    *out = axis < 0 ? axis + ndim : axis;
    return PG_OK;
}

/* An index tensor is int64 or int32 (PyTorch's rule; the kernels read int64: an int32
 * index is widened by index_operand) */
static pg_status check_index(const char *op, const pg_tensor *t, const pg_tensor *idx)
{
    if (idx->dtype != PG_INT64 && idx->dtype != PG_INT32)
        return pg_error_set(PG_ERR_DTYPE, "%s: expected an int64 or int32 index tensor, got %s "
                                          "(convert it with .long())",
                            op, pg_dtype_name((pg_dtype)idx->dtype));
    return pg_check_same_device(op, t, idx);
}

/* the index as the kernels read it: int64 and contiguous (a reference when it is) */
static pg_status index_operand(const pg_tensor *idx, pg_tensor *out)
{
    if (idx->dtype == PG_INT64)
        return pg_op_contiguous(idx, out);
    return pg_op_astype(idx, PG_INT64, out); /* a new, contiguous tensor */
}

/* The dtype the arithmetic subops (scatter_add_, index_add_, cumsum, cumprod) and the sorts
 * compute in: the halves widen to float32, bool and the integers narrower than int64 to
 * int64 (exact; PyTorch's cumsum of an integer is int64 too), so the kernels see float32,
 * float64 and int64 only. */
static pg_dtype arith_dtype(int dt)
{
    if (pg_dtype_is_half((pg_dtype)dt))
        return PG_FLOAT32;
    return dt == PG_BOOL || pg_dtype_is_narrow_int((pg_dtype)dt) ? PG_INT64 : (pg_dtype)dt;
}

static pg_status check_writable(const char *op, const pg_tensor *t)
{
    if (t->storage->flags & PG_STORAGE_READONLY)
        return pg_error_set(PG_ERR_VALUE, "%s: the tensor written in place is read-only", op);
    return PG_OK;
}

static pg_status launch(int op, const pg_tensor *dst, int nsrc, const pg_tensor *srcs, int axis,
                        int flag)
{
    pg_node n;
    pg_node_start(&n, PG_OP_INDEX, op, pg_subop_name(op));
    n.nsrc = nsrc;
    for (int i = 0; i < nsrc; i++)
        n.src[i] = srcs[i];
    n.dst = *dst;
    n.p.index.axis = axis;
    n.p.index.flag = flag;
    return pg_launch(&n);
}

/* a 1-D contiguous copy (or reference) of a 0-d or 1-D index */
static pg_status index_vector(const char *op, const pg_tensor *idx, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    if (idx->ndim > 1)
        return pg_error_set(PG_ERR_SHAPE, "%s: the index must be 0-d or 1-D, got %d dimensions",
                            op, idx->ndim);
    pg_tensor c;
    PG_TRY(index_operand(idx, &c));
    int64_t n = pg_tensor_numel(&c);
    pg_status st = pg_view_reshape(&c, 1, &n, out);
    pg_tensor_clear(&c);
    return st;
}

/* ---- gather and index_select ---------------------------------------------------------- */

pg_status pg_op_gather(const pg_tensor *src, int axis, const pg_tensor *idx, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    const char *op = "gather";
    PG_TRY(check_index(op, src, idx));
    int ax;
    PG_TRY(norm_axis(op, axis, src->ndim, &ax));
    if (idx->ndim != src->ndim)
        return pg_error_set(PG_ERR_SHAPE, "%s: index and input must have the same number of "
                                          "dimensions, got %d and %d",
                            op, idx->ndim, src->ndim);
    for (int d = 0; d < src->ndim; d++)
        if (d != ax && idx->shape[d] > src->shape[d]) {
            char a[160], b[160];
            return pg_error_set(PG_ERR_SHAPE, "%s: size does not match at dimension %d: expected "
                                              "index %s to be no larger than input %s apart "
                                              "from dimension %d",
                                op, d, pg_shape_str(idx->ndim, idx->shape, a, sizeof a),
                                pg_shape_str(src->ndim, src->shape, b, sizeof b), ax);
        }
    PG_TRY(pg_backend_check_op(pg_tensor_device(src), PG_OP_INDEX, src->dtype, op));
    pg_tensor view = *src; /* the input cut to the index's extent on the other axes */
    for (int d = 0; d < src->ndim; d++)
        if (d != ax)
            view.shape[d] = idx->shape[d];
    pg_tensor ic;
    PG_TRY(index_operand(idx, &ic));
    pg_status st = pg_tensor_empty(pg_tensor_device(src), (pg_dtype)src->dtype, idx->ndim,
                                   idx->shape, out);
    if (st == PG_OK && pg_tensor_numel(out) > 0) {
        pg_tensor s[2] = {view, ic};
        st = launch(PG_INDEX_GATHER, out, 2, s, ax, 0);
    }
    pg_tensor_clear(&ic);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

pg_status pg_op_index_select(const pg_tensor *src, int axis, const pg_tensor *idx,
                             pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    const char *op = "index_select";
    PG_TRY(check_index(op, src, idx));
    int ax;
    PG_TRY(norm_axis(op, axis, src->ndim, &ax));
    PG_TRY(pg_backend_check_op(pg_tensor_device(src), PG_OP_INDEX, src->dtype, op));
    pg_tensor iv;
    PG_TRY(index_vector(op, idx, &iv));
    int64_t shape[PG_MAX_DIMS];
    memcpy(shape, src->shape, sizeof shape);
    shape[ax] = iv.shape[0];
    pg_status st = pg_tensor_empty(pg_tensor_device(src), (pg_dtype)src->dtype, src->ndim, shape,
                                   out);
    if (st == PG_OK && pg_tensor_numel(out) > 0) {
        pg_tensor s[2] = {*src, iv};
        st = launch(PG_INDEX_INDEX_SELECT, out, 2, s, ax, 0);
    }
    pg_tensor_clear(&iv);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

/* ---- scatter_, scatter_add_, index_copy_, index_add_ ---------------------------------- */

static pg_status scatter_shapes(const char *op, const pg_tensor *self, int ax,
                                const pg_tensor *idx, const pg_tensor *src)
{
    char a[160], b[160];
    if (idx->ndim != self->ndim || src->ndim != self->ndim)
        return pg_error_set(PG_ERR_SHAPE, "%s: index, source and self must have the same "
                                          "number of dimensions, got %d, %d and %d",
                            op, idx->ndim, src->ndim, self->ndim);
    for (int d = 0; d < self->ndim; d++) {
        if (idx->shape[d] > src->shape[d])
            return pg_error_set(PG_ERR_SHAPE, "%s: expected index %s to be no larger than "
                                              "source %s at dimension %d",
                                op, pg_shape_str(idx->ndim, idx->shape, a, sizeof a),
                                pg_shape_str(src->ndim, src->shape, b, sizeof b), d);
        if (d != ax && idx->shape[d] > self->shape[d])
            return pg_error_set(PG_ERR_SHAPE, "%s: expected index %s to be no larger than "
                                              "self %s apart from dimension %d",
                                op, pg_shape_str(idx->ndim, idx->shape, a, sizeof a),
                                pg_shape_str(self->ndim, self->shape, b, sizeof b), ax);
    }
    return PG_OK;
}

static pg_status index_copy_shapes(const char *op, const pg_tensor *self, int ax, int64_t n,
                                   const pg_tensor *src)
{
    bool ok = src->ndim == self->ndim;
    for (int d = 0; ok && d < self->ndim; d++)
        ok = src->shape[d] == (d == ax ? n : self->shape[d]);
    if (ok)
        return PG_OK;
    char a[160], b[160];
    return pg_error_set(PG_ERR_SHAPE, "%s: source %s must be self %s with dimension %d of "
                                      "length %lld (the index's length)",
                        op, pg_shape_str(src->ndim, src->shape, a, sizeof a),
                        pg_shape_str(self->ndim, self->shape, b, sizeof b), ax, (long long)n);
}

pg_status pg_op_scatter(int op, const pg_tensor *self, int axis, const pg_tensor *idx,
                        const pg_tensor *src)
{
    const char *name = pg_subop_name(op);
    unsigned flags = pg_subop_flags(op); /* the row's: a scatter, adding, a full index */
    if (pg_subop_node(op) != PG_OP_INDEX || !(flags & PG_SUBF_WRITE))
        return pg_error_set(PG_ERR_RUNTIME, "pg_op_scatter: %s is not a scatter", name);
    bool add = (flags & PG_SUBF_ADD) != 0;
    bool full = (flags & PG_SUBF_FULL) != 0;
    PG_TRY(check_index(name, self, idx));
    PG_TRY(pg_check_same_device(name, self, src));
    PG_TRY(check_writable(name, self));
    if (src->dtype != self->dtype)
        return pg_error_set(PG_ERR_DTYPE, "%s: expected the source's dtype (%s) to equal "
                                          "self's (%s)",
                            name, pg_dtype_name((pg_dtype)src->dtype),
                            pg_dtype_name((pg_dtype)self->dtype));
    if (add && self->dtype == PG_BOOL)
        return pg_error_set(PG_ERR_DTYPE, "%s: does not add bool tensors (convert to int64 "
                                          "with .long())",
                            name);
    int ax;
    PG_TRY(norm_axis(name, axis, self->ndim, &ax));
    pg_tensor iv, view = *src;
    if (full) {
        PG_TRY(scatter_shapes(name, self, ax, idx, src));
        for (int d = 0; d < src->ndim; d++)
            view.shape[d] = idx->shape[d]; /* the part of the source the index covers */
        PG_TRY(index_operand(idx, &iv));
    } else {
        PG_TRY(index_vector(name, idx, &iv));
        pg_status st = index_copy_shapes(name, self, ax, iv.shape[0], src);
        if (st != PG_OK) {
            pg_tensor_clear(&iv);
            return st;
        }
    }
    pg_status st = pg_backend_check_op(pg_tensor_device(self), PG_OP_INDEX, self->dtype, name);
    if (st != PG_OK || pg_tensor_numel(full ? &iv : &view) == 0) {
        pg_tensor_clear(&iv);
        return st;
    }
    if (add && (int)arith_dtype(self->dtype) != self->dtype) {
        /* add in float32 (halves: then rounded once into self) or int64 (narrow integers:
         * then wrapped into self, exactly what adding in self's dtype gives) */
        pg_tensor wide, wsrc;
        st = pg_op_astype(self, arith_dtype(self->dtype), &wide);
        if (st == PG_OK) {
            st = pg_op_astype(&view, arith_dtype(self->dtype), &wsrc);
            if (st == PG_OK) {
                pg_tensor s[3] = {wsrc, iv, wide};
                st = launch(op, &wide, 3, s, ax, 0);
                if (st == PG_OK)
                    st = pg_op_copy(self, &wide);
                pg_tensor_clear(&wsrc);
            }
            pg_tensor_clear(&wide);
        }
    } else {
        pg_tensor s[3] = {view, iv, *self};
        st = launch(op, self, 3, s, ax, 0);
    }
    pg_tensor_clear(&iv);
    return st;
}

/* ---- cumulative sums and products, argsort -------------------------------------------- */

pg_status pg_op_cumulative(int op, const pg_tensor *src, int axis, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    if (op != PG_INDEX_CUMSUM && op != PG_INDEX_CUMPROD)
        return pg_error_set(PG_ERR_RUNTIME, "pg_op_cumulative: %s is not cumsum/cumprod",
                            pg_subop_name(op));
    const char *name = pg_subop_name(op);
    int ax;
    PG_TRY(norm_axis(name, axis, src->ndim, &ax));
    PG_TRY(pg_backend_check_op(pg_tensor_device(src), PG_OP_INDEX, src->dtype, name));
    bool half = pg_dtype_is_half((pg_dtype)src->dtype);
    pg_dtype work = arith_dtype(src->dtype);
    pg_tensor w, c;
    if ((int)work != src->dtype)
        PG_TRY(pg_op_astype(src, work, &w));
    else
        pg_tensor_ref(src, &w);
    pg_status st = pg_op_contiguous(&w, &c);
    pg_tensor_clear(&w);
    if (st != PG_OK)
        return st;
    pg_tensor r;
    st = pg_tensor_empty(pg_tensor_device(src), work, c.ndim, c.shape, &r);
    if (st == PG_OK && pg_tensor_numel(&r) > 0)
        st = launch(op, &r, 1, &c, ax, 0);
    pg_tensor_clear(&c);
    if (st == PG_OK && half) {
        st = pg_op_astype(&r, (pg_dtype)src->dtype, out);
        pg_tensor_clear(&r);
    } else if (st == PG_OK) {
        *out = r;
    } else {
        pg_tensor_clear(&r);
    }
    return st;
}

/* argsort and topk: the input widened exactly (arith_dtype; an integer as its order key,
 * pg_op_order_key) and made contiguous, so the kernels compare three dtypes */
static pg_status sort_keys(const char *name, const pg_tensor *src, int axis, int *ax,
                           pg_tensor *c)
{
    PG_TRY(norm_axis(name, axis, src->ndim, ax));
    PG_TRY(pg_backend_check_op(pg_tensor_device(src), PG_OP_INDEX, src->dtype, name));
    pg_dtype work = arith_dtype(src->dtype);
    if (work == PG_INT64) /* uint64 sorts by its order key, not by int64's bits */
        return pg_op_order_key(src, c);
    pg_tensor w;
    if ((int)work != src->dtype)
        PG_TRY(pg_op_astype(src, work, &w));
    else
        pg_tensor_ref(src, &w);
    pg_status st = pg_op_contiguous(&w, c);
    pg_tensor_clear(&w);
    return st;
}

pg_status pg_op_argsort(const pg_tensor *src, int axis, bool descending, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    int ax;
    pg_tensor c;
    PG_TRY(sort_keys("argsort", src, axis, &ax, &c));
    pg_status st = pg_tensor_empty(pg_tensor_device(src), PG_INT64, c.ndim, c.shape, out);
    if (st == PG_OK && pg_tensor_numel(out) > 0)
        st = launch(PG_INDEX_ARGSORT, out, 1, &c, ax, descending);
    pg_tensor_clear(&c);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

pg_status pg_op_topk(const pg_tensor *src, int axis, int64_t k, bool largest, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    int ax;
    PG_TRY(norm_axis("topk", axis, src->ndim, &ax));
    if (k < 0 || k > src->shape[ax])
        return pg_error_set(PG_ERR_VALUE, "topk: k (%lld) is out of range for dimension %d of "
                                          "size %lld",
                            (long long)k, ax, (long long)src->shape[ax]);
    pg_tensor c;
    PG_TRY(sort_keys("topk", src, axis, &ax, &c));
    int64_t shape[PG_MAX_DIMS];
    memcpy(shape, c.shape, sizeof shape);
    shape[ax] = k;
    pg_status st = pg_tensor_empty(pg_tensor_device(src), PG_INT64, c.ndim, shape, out);
    if (st == PG_OK && pg_tensor_numel(out) > 0)
        st = launch(PG_INDEX_TOPK, out, 1, &c, ax, largest);
    pg_tensor_clear(&c);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

/* ---- masked_fill_ and nonzero --------------------------------------------------------- */

pg_status pg_op_masked_fill(const pg_tensor *self, const pg_tensor *mask, pg_scalar value)
{
    const char *name = "masked_fill_";
    if (mask->dtype != PG_BOOL)
        return pg_error_set(PG_ERR_DTYPE, "%s: expected a bool mask, got %s (compare to make "
                                          "one, or convert with .bool())",
                            name, pg_dtype_name((pg_dtype)mask->dtype));
    PG_TRY(pg_check_same_device(name, self, mask));
    PG_TRY(check_writable(name, self));
    bool fits = mask->ndim <= self->ndim;
    for (int i = 0; fits && i < mask->ndim; i++) {
        int64_t m = mask->shape[mask->ndim - 1 - i], s = self->shape[self->ndim - 1 - i];
        fits = m == s || m == 1;
    }
    if (!fits) {
        char a[160], b[160];
        return pg_error_set(PG_ERR_SHAPE, "%s: the mask's shape %s does not broadcast to the "
                                          "tensor's %s",
                            name, pg_shape_str(mask->ndim, mask->shape, a, sizeof a),
                            pg_shape_str(self->ndim, self->shape, b, sizeof b));
    }
    PG_TRY(pg_backend_check_op(pg_tensor_device(self), PG_OP_INDEX, self->dtype, name));
    if (pg_tensor_numel(self) == 0)
        return PG_OK;
    pg_tensor mb, v;
    PG_TRY(pg_view_broadcast(mask, self->ndim, self->shape, &mb));
    pg_status st = pg_op_full(pg_tensor_device(self), (pg_dtype)self->dtype, 0, NULL, value, &v);
    if (st == PG_OK) {
        pg_tensor s[3] = {mb, v, *self};
        st = launch(PG_INDEX_MASKED_FILL, self, 3, s, 0, 0);
        pg_tensor_clear(&v);
    }
    pg_tensor_clear(&mb);
    return st;
}

pg_status pg_op_nonzero(const pg_tensor *mask, int64_t count, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    const char *name = "nonzero";
    if (mask->dtype != PG_BOOL)
        return pg_error_set(PG_ERR_DTYPE, "%s: expected a bool mask, got %s", name,
                            pg_dtype_name((pg_dtype)mask->dtype));
    int64_t n = pg_tensor_numel(mask);
    if (count < 0 || count > n)
        return pg_error_set(PG_ERR_VALUE, "%s: count %lld is not in 0..%lld", name,
                            (long long)count, (long long)n);
    PG_TRY(pg_backend_check_op(pg_tensor_device(mask), PG_OP_INDEX, PG_BOOL, name));
    pg_tensor c, flat;
    PG_TRY(pg_op_contiguous(mask, &c));
    pg_status st = pg_view_reshape(&c, 1, &n, &flat);
    pg_tensor_clear(&c);
    if (st != PG_OK)
        return st;
    st = pg_tensor_empty(pg_tensor_device(mask), PG_INT64, 1, &count, out);
    if (st == PG_OK && n > 0)
        st = launch(PG_INDEX_NONZERO, out, 1, &flat, 0, 0);
    pg_tensor_clear(&flat);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}
