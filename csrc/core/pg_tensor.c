/* pg_tensor.c - tensor layouts: contiguity, views and broadcasting.
 * Everything here is metadata; no byte of data is touched. */
#include "pg_tensor.h"

#include <stdio.h>
#include <string.h>

int64_t pg_shape_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

void pg_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

bool pg_tensor_is_contiguous(const pg_tensor *t)
{
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 0)
            return true;
        if (t->shape[i] != 1 && t->strides[i] != expected)
            return false;
        expected *= t->shape[i];
    }
    return true;
}

/* TensorIterator's comparison of two dims, innermost first: 1 when a belongs outside b. */
static int memory_outer(const pg_tensor *t, int a, int b)
{
    int64_t sa = t->strides[a], sb = t->strides[b];
    if (sa == 0 || sb == 0)
        return 0; /* a broadcast dim: ambiguous, it keeps its place */
    if (sa != sb)
        return sa < sb ? -1 : 1;
    return t->shape[a] > t->shape[b] ? 1 : 0;
}

bool pg_tensor_memory_order(const pg_tensor *t, int *perm)
{
    if (pg_tensor_is_contiguous(t))
        return false;
    int n = t->ndim, inner_first[PG_MAX_DIMS];
    for (int i = 0; i < n; i++)
        inner_first[i] = n - 1 - i;
    for (int i = 1; i < n; i++) { /* insertion sort with ambiguous comparisons, as ATen's */
        int d1 = i;
        for (int d0 = i - 1; d0 >= 0; d0--) {
            int c = memory_outer(t, inner_first[d0], inner_first[d1]);
            if (c > 0) {
                int tmp = inner_first[d0];
                inner_first[d0] = inner_first[d1];
                inner_first[d1] = tmp;
                d1 = d0;
            } else if (c < 0) {
                break;
            }
        }
    }
    bool identity = true;
    for (int i = 0; i < n; i++) {
        perm[i] = inner_first[n - 1 - i];
        identity = identity && perm[i] == i;
    }
    return !identity;
}

bool pg_tensor_covers_storage(const pg_tensor *t)
{
    size_t isz = pg_dtype_size((pg_dtype)t->dtype);
    if ((size_t)pg_tensor_numel(t) * isz != t->storage->nbytes || t->storage->nbytes == 0)
        return false;
    /* numel distinct elements (no stride-0 axis) inside [0, numel): all of them */
    int64_t lo = t->offset, hi = t->offset;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] > 1 && t->strides[i] == 0)
            return false;
        int64_t span = (t->shape[i] - 1) * t->strides[i];
        if (span < 0)
            lo += span;
        else
            hi += span;
    }
    return lo == 0 && hi + 1 == pg_tensor_numel(t);
}

const char *pg_shape_str(int ndim, const int64_t *shape, char *buf, int len)
{
    int n = snprintf(buf, len, "(");
    for (int i = 0; i < ndim && n < len; i++)
        n += snprintf(buf + n, len - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (n < len)
        snprintf(buf + n, len - n, ndim == 1 ? ",)" : ")");
    return buf;
}

const char *pg_shape_list_str(int ndim, const int64_t *shape, char *buf, int len)
{
    int n = snprintf(buf, len, "[");
    for (int i = 0; i < ndim && n < len; i++)
        n += snprintf(buf + n, len - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (n < len)
        snprintf(buf + n, len - n, "]");
    return buf;
}

pg_status pg_shape_check(int ndim, const int64_t *shape, pg_dtype dt)
{
    if (ndim < 0 || ndim > PG_MAX_DIMS)
        return pg_error_set(PG_ERR_VALUE, "pygpu supports at most %d dimensions, got %d",
                            PG_MAX_DIMS, ndim);
    /* 2^62 bytes is far beyond any machine; the limit keeps byte counts in int64 */
    const int64_t limit = (int64_t)1 << 62;
    int64_t bytes = (int64_t)pg_dtype_size(dt);
    bool empty = false;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return pg_error_set(PG_ERR_VALUE,
                                "negative dimension %lld in shape at axis %d: sizes must be >= 0",
                                (long long)shape[i], i);
        if (shape[i] == 0)
            empty = true;
    }
    if (empty)
        return PG_OK;
    for (int i = 0; i < ndim; i++) {
        if (bytes > limit / shape[i]) {
            char b[160];
            return pg_error_set(PG_ERR_NOMEM,
                                "a tensor of shape %s and dtype %s would need more than 2^62 "
                                "bytes: no machine can hold it",
                                pg_shape_str(ndim, shape, b, sizeof b), pg_dtype_name(dt));
        }
        bytes *= shape[i];
    }
    return PG_OK;
}

pg_status pg_tensor_empty(pg_device dev, pg_dtype dt, int ndim, const int64_t *shape,
                          pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    PG_TRY(pg_shape_check(ndim, shape, dt));
    size_t nbytes = (size_t)pg_shape_numel(ndim, shape) * pg_dtype_size(dt);
    pg_storage *s;
    PG_TRY(pg_storage_new(dev, nbytes, 0, &s));
    out->storage = s;
    out->dtype = dt;
    out->ndim = ndim;
    if (ndim > 0) /* a 0-d tensor may come with shape == NULL */
        memcpy(out->shape, shape, sizeof(int64_t) * ndim);
    pg_contiguous_strides(ndim, out->shape, out->strides);
    out->offset = 0;
    return PG_OK;
}

void pg_tensor_ref(const pg_tensor *t, pg_tensor *out)
{
    *out = *t;
    pg_storage_retain(t->storage);
}

void pg_tensor_clear(pg_tensor *t)
{
    if (t->storage)
        pg_storage_release(t->storage);
    t->storage = NULL;
}

pg_status pg_view_transpose(const pg_tensor *t, int ndim, const int *perm, pg_tensor *out)
{
    pg_tensor_out_init(out, t);
    if (ndim != t->ndim)
        return pg_error_set(PG_ERR_VALUE, "transpose: axes don't match tensor: got %d axes for a "
                                          "%d-d tensor",
                            ndim, t->ndim);
    bool seen[PG_MAX_DIMS] = {false};
    for (int i = 0; i < ndim; i++) {
        if (perm[i] < 0 || perm[i] >= ndim)
            return pg_error_set(PG_ERR_AXIS, "transpose: axis %d is out of bounds for array of "
                                             "dimension %d",
                                perm[i], ndim);
        if (seen[perm[i]])
            return pg_error_set(PG_ERR_VALUE, "transpose: repeated axis %d", perm[i]);
        seen[perm[i]] = true;
    }
    pg_tensor r = *t;
    for (int i = 0; i < ndim; i++) {
        r.shape[i] = t->shape[perm[i]];
        r.strides[i] = t->strides[perm[i]];
    }
    pg_storage_retain(t->storage);
    *out = r;
    return PG_OK;
}

/* Try to express `t` with a new shape without copying (NumPy's _attempt_nocopy_reshape):
 * walk the old and new shapes in chunks of equal element count; each old chunk must be
 * contiguous within itself. The old size-1 axes are dropped first, as NumPy does: their
 * strides are arbitrary (a permute of a (1, n, m) tensor gives one) and say nothing about
 * the layout. */
static bool reshape_strides(const pg_tensor *t, int ndim, const int64_t *shape, int64_t *strides)
{
    int oi = 0, oj = 1, ni = 0, nj = 1;
    int ond = 0;
    int64_t osh[PG_MAX_DIMS], ost[PG_MAX_DIMS];
    for (int k = 0; k < t->ndim; k++)
        if (t->shape[k] != 1) {
            osh[ond] = t->shape[k];
            ost[ond++] = t->strides[k];
        }
    if (pg_tensor_numel(t) == 0 || ndim == 0 || ond == 0) {
        pg_contiguous_strides(ndim, shape, strides);
        return true;
    }
    while (ni < ndim && oi < ond) {
        int64_t np = shape[ni], op = osh[oi];
        while (np != op) {
            if (np < op)
                np *= shape[nj++];
            else
                op *= osh[oj++];
        }
        for (int ok = oi; ok < oj - 1; ok++)
            if (ost[ok] != osh[ok + 1] * ost[ok + 1])
                return false;
        strides[nj - 1] = ost[oj - 1];
        for (int nk = nj - 1; nk > ni; nk--)
            strides[nk - 1] = strides[nk] * shape[nk];
        ni = nj++;
        oi = oj++;
    }
    for (int k = ni; k < ndim; k++) /* trailing 1s */
        strides[k] = 1;
    return true;
}

pg_status pg_view_reshape(const pg_tensor *t, int ndim, const int64_t *shape, pg_tensor *out)
{
    pg_tensor_out_init(out, t);
    PG_TRY(pg_shape_check(ndim, shape, (pg_dtype)t->dtype));
    if (pg_shape_numel(ndim, shape) != pg_tensor_numel(t)) {
        char a[160], b[160], c[160];
        return pg_error_set(PG_ERR_SHAPE, "shape '%s' is invalid for input of size %lld: cannot "
                                          "reshape a tensor of shape %s (%lld elements) into "
                                          "shape %s",
                            pg_shape_list_str(ndim, shape, c, sizeof c),
                            (long long)pg_tensor_numel(t),
                            pg_shape_str(t->ndim, t->shape, a, sizeof a),
                            (long long)pg_tensor_numel(t), pg_shape_str(ndim, shape, b, sizeof b));
    }
    int64_t strides[PG_MAX_DIMS];
    if (!reshape_strides(t, ndim, shape, strides))
        return PG_ERR_VALUE; /* caller copies to contiguous and retries; no message needed */
    pg_tensor r = *t;
    r.ndim = ndim;
    if (ndim > 0) {
        memcpy(r.shape, shape, sizeof(int64_t) * ndim);
        memcpy(r.strides, strides, sizeof(int64_t) * ndim);
    }
    pg_storage_retain(t->storage);
    *out = r;
    return PG_OK;
}

pg_status pg_view_select(const pg_tensor *t, int axis, int64_t i, pg_tensor *out)
{
    pg_tensor_out_init(out, t);
    if (axis < 0 || axis >= t->ndim)
        return pg_error_set(PG_ERR_INDEX, "too many indices for a %d-d tensor", t->ndim);
    int64_t n = t->shape[axis];
    if (i < -n || i >= n)
        return pg_error_set(PG_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld",
                            (long long)i, axis, (long long)n);
    if (i < 0)
        i += n;
    pg_tensor r = *t;
    r.offset += i * t->strides[axis];
    for (int k = axis; k < t->ndim - 1; k++) {
        r.shape[k] = t->shape[k + 1];
        r.strides[k] = t->strides[k + 1];
    }
    r.ndim--;
    pg_storage_retain(t->storage);
    *out = r;
    return PG_OK;
}

pg_status pg_view_slice(const pg_tensor *t, int axis, int64_t start, int64_t len, int64_t step,
                        pg_tensor *out)
{
    pg_tensor_out_init(out, t);
    if (axis < 0 || axis >= t->ndim)
        return pg_error_set(PG_ERR_INDEX, "too many indices for a %d-d tensor", t->ndim);
    pg_tensor r = *t;
    if (len > 0)
        r.offset += start * t->strides[axis];
    r.shape[axis] = len;
    r.strides[axis] = t->strides[axis] * step;
    pg_storage_retain(t->storage);
    *out = r;
    return PG_OK;
}

pg_status pg_view_unsqueeze(const pg_tensor *t, int axis, pg_tensor *out)
{
    pg_tensor_out_init(out, t);
    if (t->ndim >= PG_MAX_DIMS)
        return pg_error_set(PG_ERR_VALUE, "pygpu supports at most %d dimensions", PG_MAX_DIMS);
    if (axis < 0 || axis > t->ndim)
        return pg_error_set(PG_ERR_INDEX, "axis %d out of range", axis);
    pg_tensor r = *t;
    for (int k = t->ndim; k > axis; k--) {
        r.shape[k] = t->shape[k - 1];
        r.strides[k] = t->strides[k - 1];
    }
    r.shape[axis] = 1;
    r.strides[axis] = 0;
    r.ndim++;
    pg_storage_retain(t->storage);
    *out = r;
    return PG_OK;
}

pg_status pg_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                              int64_t *out, const char *opname)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : a[i - (n - na)];
        int64_t db = i < n - nb ? 1 : b[i - (n - nb)];
        if (da != db && da != 1 && db != 1) { /* PyTorch's words, then NumPy's */
            char sa[160], sb[160];
            return pg_error_set(PG_ERR_SHAPE,
                                "%s: The size of tensor a (%lld) must match the size of tensor b "
                                "(%lld) at non-singleton dimension %d: operands could not be "
                                "broadcast together with shapes %s and %s",
                                opname, (long long)da, (long long)db, i,
                                pg_shape_str(na, a, sa, sizeof sa),
                                pg_shape_str(nb, b, sb, sizeof sb));
        }
        out[i] = da == 1 ? db : da;
    }
    *nout = n;
    return PG_OK;
}

pg_status pg_view_broadcast(const pg_tensor *t, int ndim, const int64_t *shape, pg_tensor *out)
{
    pg_tensor_out_init(out, t);
    pg_tensor r = *t;
    int lead = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        if (i < lead) {
            r.shape[i] = shape[i];
            r.strides[i] = 0;
        } else {
            int64_t d = t->shape[i - lead];
            r.shape[i] = shape[i];
            r.strides[i] = (d == 1 && shape[i] != 1) ? 0 : t->strides[i - lead];
        }
    }
    r.ndim = ndim;
    pg_storage_retain(t->storage);
    *out = r;
    return PG_OK;
}
