/* pg_ops_linalg.c - torch.linalg's factorizations as one LINALG node each: LU, solve,
 * inverse, Cholesky, QR, SVD, the symmetric eigendecomposition and least squares, each
 * over a batch of matrices (the leading axes). Checked once here; the node's kernel is
 * the backend's (the CPU's LAPACK, csrc/backends/cpu/cpu_linalg.c, on cpu and sim's worker;
 * cuSOLVER on cuda, csrc/backends/cuda/cuda_cusolver.c, for the sub-ops whose row has a
 * cuda function: the backend's supports_node declines the others).
 *
 * Each sub-op is a LINALG row of pg_subops.def: its operands (nsrc), its outputs' shapes
 * (outs: a shapes_<outs> function here), and what LAPACK's info > 0 means (fails). Every
 * node writes, besides its results, `info` (int64, the batch's shape): LAPACK's info per
 * matrix. With `check`, the op then reads info back (on a device, one counted implicit
 * transfer of 8 bytes per matrix, as PyTorch's cuda linalg synchronizes on its info) and
 * turns the first nonzero one into PyTorch's message naming the batch element; without
 * it (the _ex functions, lu_factor) info is returned as it is. */
#include "pg_ops.h"

#include <stdio.h>
#include <string.h>

#include "pg_backend.h"
#include "pg_stats.h"

/* The outputs' shapes of one sub-op, given A (.., m, n) and B (.., m, k) | NULL: shapes[i]
 * with ndims[i] axes and dtypes[i], the count returned in *nout (info excluded). A shape
 * error is PyTorch's message. */
typedef struct linalg_outs {
    int n;
    int ndim[PG_LINALG_MAX_OUT];
    int dtype[PG_LINALG_MAX_OUT];
    int64_t shape[PG_LINALG_MAX_OUT][PG_MAX_DIMS];
} linalg_outs;

/* output i: the batch axes of `t`, then up to two matrix axes (d0, d1; nlast of them) */
static pg_status add_out(linalg_outs *o, int dtype, const pg_tensor *t, int nlast, int64_t d0,
                         int64_t d1)
{
    int nb = t->ndim - 2, i = o->n++;
    if (nb + nlast > PG_MAX_DIMS)
        return pg_error_set(PG_ERR_VALUE, "linalg: too many dimensions");
    memcpy(o->shape[i], t->shape, sizeof(int64_t) * (size_t)nb);
    if (nlast > 0)
        o->shape[i][nb] = d0;
    if (nlast > 1)
        o->shape[i][nb + 1] = d1;
    o->ndim[i] = nb + nlast;
    o->dtype[i] = dtype;
    return PG_OK;
}

static int64_t rows_of(const pg_tensor *t) { return t->shape[t->ndim - 2]; }
static int64_t cols_of(const pg_tensor *t) { return t->shape[t->ndim - 1]; }

static pg_status square(const char *op, const pg_tensor *a)
{
    if (rows_of(a) != cols_of(a))
        return pg_error_set(PG_ERR_SHAPE, "%s: A must be batches of square matrices, but they "
                                          "are %lld by %lld matrices",
                            op, (long long)rows_of(a), (long long)cols_of(a));
    return PG_OK;
}

/* B (.., m, k) of A's batch and rank */
static pg_status rhs_fits(const char *op, const pg_tensor *a, const pg_tensor *b)
{
    bool ok = b->ndim == a->ndim && rows_of(b) == rows_of(a);
    for (int i = 0; ok && i < a->ndim - 2; i++)
        ok = a->shape[i] == b->shape[i];
    if (!ok)
        return pg_error_set(PG_ERR_SHAPE, "%s: internal: A (.., m, n) and B (.., m, k) of one "
                                          "batch expected", op);
    return PG_OK;
}

/* LU (.., n, n), pivots int64 (.., n) */
static pg_status shapes_LU(const char *op, const pg_tensor *a, const pg_tensor *b, int flag,
                           linalg_outs *o)
{
    (void)b, (void)flag;
    PG_TRY(square(op, a));
    PG_TRY(add_out(o, a->dtype, a, 2, cols_of(a), cols_of(a)));
    return add_out(o, PG_INT64, a, 1, cols_of(a), 0);
}

/* X (.., n, k) */
static pg_status shapes_SOLVE(const char *op, const pg_tensor *a, const pg_tensor *b, int flag,
                              linalg_outs *o)
{
    (void)flag;
    PG_TRY(square(op, a));
    PG_TRY(rhs_fits(op, a, b));
    return add_out(o, a->dtype, a, 2, cols_of(a), cols_of(b));
}

/* the inverse or the Cholesky factor: (.., n, n) */
static pg_status shapes_SQUARE(const char *op, const pg_tensor *a, const pg_tensor *b, int flag,
                               linalg_outs *o)
{
    (void)b, (void)flag;
    PG_TRY(square(op, a));
    return add_out(o, a->dtype, a, 2, cols_of(a), cols_of(a));
}

/* Q (.., m, k or m; empty for mode 2), R (.., k or m, n); k = min(m, n) */
static pg_status shapes_QR(const char *op, const pg_tensor *a, const pg_tensor *b, int mode,
                           linalg_outs *o)
{
    (void)op, (void)b;
    int64_t m = rows_of(a), n = cols_of(a), k = m < n ? m : n, mk = mode == 1 ? m : k;
    PG_TRY(add_out(o, a->dtype, a, 2, mode == 2 ? 0 : m, mode == 2 ? 0 : mk));
    return add_out(o, a->dtype, a, 2, mk, n);
}

/* U (.., m, m or k), S (.., k), Vh (.., n or k, n); U and Vh empty for flag 2 */
static pg_status shapes_SVD(const char *op, const pg_tensor *a, const pg_tensor *b, int flag,
                            linalg_outs *o)
{
    (void)op, (void)b;
    int64_t m = rows_of(a), n = cols_of(a), k = m < n ? m : n;
    int64_t uc = flag == 1 ? m : k, vr = flag == 1 ? n : k;
    PG_TRY(add_out(o, a->dtype, a, 2, flag == 2 ? 0 : m, flag == 2 ? 0 : uc));
    PG_TRY(add_out(o, a->dtype, a, 1, k, 0));
    return add_out(o, a->dtype, a, 2, flag == 2 ? 0 : vr, flag == 2 ? 0 : n);
}

/* w (.., n), V (.., n, n) */
static pg_status shapes_EIGH(const char *op, const pg_tensor *a, const pg_tensor *b, int flag,
                             linalg_outs *o)
{
    (void)b, (void)flag;
    PG_TRY(square(op, a));
    PG_TRY(add_out(o, a->dtype, a, 1, cols_of(a), 0));
    return add_out(o, a->dtype, a, 2, cols_of(a), cols_of(a));
}

/* X (.., n, k), rank int64 (..), S (.., min(m, n)) */
static pg_status shapes_LSTSQ(const char *op, const pg_tensor *a, const pg_tensor *b, int flag,
                              linalg_outs *o)
{
    (void)flag;
    PG_TRY(rhs_fits(op, a, b));
    int64_t m = rows_of(a), n = cols_of(a);
    PG_TRY(add_out(o, a->dtype, a, 2, n, cols_of(b)));
    PG_TRY(add_out(o, PG_INT64, a, 0, 0, 0));
    return add_out(o, a->dtype, a, 1, m < n ? m : n, 0);
}

typedef pg_status (*shapes_fn)(const char *, const pg_tensor *, const pg_tensor *, int,
                               linalg_outs *);

/* each LINALG row's columns: operands, output shapes, what info > 0 means */
static const struct {
    int nsrc;
    shapes_fn shapes;
    const char *fails;
} rows[PG_NUM_SUBOPS] = {
#define PG_SUBOP_LINALG(ID, name, flags, nsrc, outs, cpu, cuda, fails)                             \
    [PG_LINALG_##ID] = {nsrc, shapes_##outs, fails},
#include "pg_subops.def"
};

static pg_status check_input(const char *op, const pg_tensor *a)
{
    char dev[24];
    pg_device_str(pg_tensor_device(a), dev, sizeof dev);
    if (a->dtype != PG_FLOAT32 && a->dtype != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: expected a float32 or float64 tensor, got %s "
                                          "on %s (convert first: A.double())",
                            op, pg_dtype_name((pg_dtype)a->dtype), dev);
    if (a->ndim < 2)
        return pg_error_set(PG_ERR_VALUE, "%s: the input tensor A must have at least 2 "
                                          "dimensions, got %d", op, a->ndim);
    return PG_OK;
}

/* The first nonzero info of the batch as PyTorch's message (its row's fails column). */
static pg_status check_info(int op, const pg_tensor *info)
{
    pg_tensor host;
    PG_TRY(pg_op_to_device(info, (pg_device){PG_DEV_CPU, 0}, false, PG_IMPLICIT_ITEM, &host));
    pg_status st = pg_tensor_wait(&host);
    int64_t nb = pg_tensor_numel(&host);
    const int64_t *v = (const int64_t *)pg_tensor_data(&host);
    for (int64_t b = 0; st == PG_OK && b < nb; b++) {
        if (v[b] == 0)
            continue;
        char where[48] = "", what[320];
        if (host.ndim > 0)
            snprintf(where, sizeof where, "(Batch element %lld): ", (long long)b);
        snprintf(what, sizeof what, rows[op].fails, (long long)v[b]);
        st = pg_error_set(PG_ERR_RUNTIME, "%s: %s%s", pg_subop_name(op), where, what);
    }
    pg_tensor_clear(&host);
    return st;
}

pg_status pg_op_linalg(int op, const pg_tensor *a, const pg_tensor *b, int flag, double param,
                       bool check, pg_tensor outs[PG_LINALG_MAX_OUT + 1], int *nout)
{
    for (int i = 0; i <= PG_LINALG_MAX_OUT; i++)
        pg_tensor_out_init(&outs[i], NULL);
    *nout = 0;
    if (pg_subop_node(op) != PG_OP_LINALG)
        return pg_error_set(PG_ERR_VALUE, "linalg: %s is not a LINALG sub-op", pg_subop_id(op));
    const char *name = pg_subop_name(op);
    if ((b != NULL) != (rows[op].nsrc == 2))
        return pg_error_set(PG_ERR_VALUE, "%s: internal: %d operand(s) expected", name,
                            rows[op].nsrc);
    PG_TRY(check_input(name, a));
    if (b) {
        PG_TRY(check_input(name, b));
        PG_TRY(pg_check_same_device(name, a, b));
        if (b->dtype != a->dtype)
            return pg_error_set(PG_ERR_DTYPE, "%s: internal: A and B of one dtype expected", name);
    }
    linalg_outs o;
    memset(&o, 0, sizeof o);
    PG_TRY(rows[op].shapes(name, a, b, flag, &o));
    pg_device dev = pg_tensor_device(a);
    PG_TRY(pg_backend_check_op(dev, PG_OP_LINALG, a->dtype, name));

    pg_node n;
    pg_node_start(&n, PG_OP_LINALG, op, name);
    n.p.linalg.flag = flag;
    n.p.linalg.param = param;
    n.nsrc = rows[op].nsrc;
    /* the backend's answer for this sub-op and these operands (supports_node: cuda's
     * cuSOLVER has no lstsq), asked of the node with its operands borrowed */
    n.src[0] = *a;
    if (b)
        n.src[1] = *b;
    pg_status st = pg_backend_check_node(dev, &n);
    pg_tensor_out_init(&n.src[0], NULL);
    pg_tensor_out_init(&n.src[1], NULL);
    if (st != PG_OK)
        return st;
    st = pg_op_contiguous(a, &n.src[0]);
    if (st == PG_OK && b)
        st = pg_op_contiguous(b, &n.src[1]);
    /* the outputs, then info (int64, A's batch shape) */
    for (int i = 0; st == PG_OK && i < o.n; i++)
        st = pg_tensor_empty(dev, (pg_dtype)o.dtype[i], o.ndim[i], o.shape[i], &outs[i]);
    if (st == PG_OK)
        st = pg_tensor_empty(dev, PG_INT64, a->ndim - 2, a->shape, &outs[o.n]);
    if (st == PG_OK) {
        n.dst = outs[0];
        n.nextra = o.n;
        for (int i = 1; i <= o.n; i++)
            n.extra[i - 1] = outs[i];
        st = pg_launch(&n);
    }
    for (int i = 0; i < n.nsrc; i++)
        if (n.src[i].storage)
            pg_tensor_clear(&n.src[i]);
    if (st == PG_OK && check)
        st = check_info(op, &outs[o.n]);
    if (st != PG_OK) {
        for (int i = 0; i <= PG_LINALG_MAX_OUT; i++)
            if (outs[i].storage)
                pg_tensor_clear(&outs[i]);
        return st;
    }
    *nout = o.n + 1;
    return PG_OK;
}
