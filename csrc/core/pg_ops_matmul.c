/* pg_ops_matmul.c - checked matrix multiply with PyTorch's matmul shape rules, at any rank.
 *
 * 1-D operands are promoted to a row (left) or a column (right) and the extra axis is
 * dropped from the result; the axes before the last two are batch axes, broadcast against
 * each other (PyTorch's _matmul_impl). Backends receive one node, (B,M,K) @ (B,K,N) ->
 * (B,M,N): the GEMM contract's batched product (strided-batched cuBLAS on cuda), with
 * every batch axis folded into B:
 *   - when the right operand does not vary over the batch (a matrix, or batch axes of
 *     size 1) and the left operand's batch and row axes collapse into one stride, they are
 *     folded into M instead: one (B*M,K) @ (K,N) product, as PyTorch folds (linear layers
 *     on (batch, tokens, features) inputs);
 *   - else each operand's batch axes, broadcast to the common batch shape (stride 0 where
 *     broadcast), collapse into one stride when its layout allows (a contiguous tensor, a
 *     transposed view such as k.transpose(-2, -1), one matrix broadcast over all of them);
 *     an operand whose batch axes do not (a view over a (B,T,3C) projection split into
 *     heads, a broadcast over one axis but not another) is copied to its broadcast shape
 *     first, as PyTorch's expand(...).reshape(...) copies.
 * Each operand's matrix is put in a layout BLAS (and cuBLAS) takes directly: row-major,
 * or a transposed view, else a contiguous copy of that operand (before any broadcast, so
 * no broadcast copy is made for it). */
#include "pg_ops.h"
#include "pg_fp8_ops.h"
#include "pg_backend.h"

#include <string.h>

#define BLAS_MAX 2147483647LL /* the BLAS index type is a 32-bit int */

/* Whether (rows, cols) with these strides is a matrix BLAS reads directly: unit stride on
 * one axis and a leading dimension (the other stride) at least that axis's length. */
static bool blas_matrix(int64_t rows, int64_t cols, int64_t srow, int64_t scol)
{
    int64_t ld = rows > 1 ? srow : cols;
    if ((scol == 1 || cols == 1) && ld >= (cols > 1 ? cols : 1) && ld <= BLAS_MAX)
        return true;
    ld = cols > 1 ? scol : rows;
    return (srow == 1 || rows == 1) && ld >= (rows > 1 ? rows : 1) && ld <= BLAS_MAX;
}

/* Give `t` (B, rows, cols), already BLAS-readable (blas_matrix), the strides the GEMM
 * descriptor reads: a unit stride on the row-major axis, or on the transposed one. */
static void blas_strides(pg_tensor *t)
{
    int64_t rows = t->shape[1], cols = t->shape[2];
    if (t->shape[0] == 1)
        t->strides[0] = 0;
    int64_t ld = rows > 1 ? t->strides[1] : cols;
    if ((t->strides[2] == 1 || cols == 1) && ld >= (cols > 1 ? cols : 1) && ld <= BLAS_MAX) {
        t->strides[2] = 1;
        t->strides[1] = ld;
        return;
    }
    t->strides[1] = 1;
    t->strides[2] = cols > 1 ? t->strides[2] : rows;
}

/* Collapse axes [0, n) of (shape, strides) into one axis of `*size` elements at stride
 * `*stride`, if one stride walks them all (axes of size 1 are skipped). */
static bool collapse(int n, const int64_t *shape, const int64_t *strides, int64_t *size,
                     int64_t *stride)
{
    int64_t total = 1, inner = 0;
    bool have = false;
    for (int i = n - 1; i >= 0; i--) {
        if (shape[i] == 1)
            continue;
        if (!have) {
            inner = strides[i];
            have = true;
        } else if (strides[i] != inner * total) {
            return false;
        }
        total *= shape[i];
    }
    for (int i = 0; i < n; i++)
        if (shape[i] == 0)
            total = 0;
    *size = total;
    *stride = have ? inner : 0;
    return true;
}

/* An operand as a PyTorch matmul sees it: batch axes, then its matrix (1-D promoted). */
typedef struct operand {
    pg_tensor t;    /* the operand, cast and BLAS-readable; its storage is the node's */
    int nbatch;     /* its own batch axes, t.shape[0 .. nbatch) */
    int64_t rows, cols, srow, scol; /* its matrix, after the 1-D promotion */
} operand;

static pg_status operand_init(const pg_tensor *x, bool left, int dt, operand *o)
{
    memset(o, 0, sizeof *o);
    if (x->dtype != dt)
        PG_TRY(pg_op_astype(x, (pg_dtype)dt, &o->t));
    else
        pg_tensor_ref(x, &o->t);
    for (int pass = 0; pass < 2; pass++) {
        const pg_tensor *t = &o->t;
        if (t->ndim == 1) { /* left: (1, K); right: (K, 1) */
            o->nbatch = 0;
            o->rows = left ? 1 : t->shape[0];
            o->cols = left ? t->shape[0] : 1;
            o->srow = left ? t->shape[0] * t->strides[0] : t->strides[0];
            o->scol = left ? t->strides[0] : 1;
        } else {
            o->nbatch = t->ndim - 2;
            o->rows = t->shape[t->ndim - 2];
            o->cols = t->shape[t->ndim - 1];
            o->srow = t->strides[t->ndim - 2];
            o->scol = t->strides[t->ndim - 1];
        }
        if (pass == 1 || blas_matrix(o->rows, o->cols, o->srow, o->scol))
            return PG_OK;
        pg_tensor c; /* no layout BLAS reads: a contiguous copy of the operand itself */
        pg_status st = pg_op_astype(&o->t, (pg_dtype)dt, &c);
        pg_tensor_clear(&o->t);
        if (st != PG_OK)
            return st;
        o->t = c;
    }
    return PG_OK;
}

/* o's 3-D (nb, rows, cols) form over the common batch shape (nbd axes `bshape`): a view
 * when its broadcast batch axes collapse, else a copy at the broadcast shape. */
static pg_status operand_3d(const operand *o, int nbd, const int64_t *bshape, int64_t nb,
                            int dt, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    int64_t shape[PG_MAX_DIMS] = {0}, strides[PG_MAX_DIMS] = {0};
    int lead = nbd - o->nbatch;
    for (int i = 0; i < nbd; i++) {
        int64_t own = i < lead ? 1 : o->t.shape[i - lead];
        shape[i] = bshape[i];
        strides[i] = own == 1 ? 0 : o->t.strides[i - lead];
    }
    int64_t size, stride;
    pg_tensor r;
    pg_tensor_ref(&o->t, &r);
    if (!collapse(nbd, shape, strides, &size, &stride)) {
        /* the broadcast copy: its batch axes are contiguous, so they collapse */
        int64_t full[PG_MAX_DIMS];
        for (int i = 0; i < nbd; i++)
            full[i] = bshape[i];
        full[nbd] = o->rows;
        full[nbd + 1] = o->cols;
        pg_tensor m, b;
        pg_status st = o->t.ndim == 1 ? pg_view_reshape(&o->t, 2, full + nbd, &m)
                                      : (pg_tensor_ref(&o->t, &m), PG_OK);
        if (st == PG_OK)
            st = pg_view_broadcast(&m, nbd + 2, full, &b);
        pg_tensor_clear(&m);
        pg_tensor_clear(&r);
        if (st != PG_OK)
            return st;
        st = pg_op_astype(&b, (pg_dtype)dt, &r);
        pg_tensor_clear(&b);
        if (st != PG_OK)
            return st;
        stride = o->rows * o->cols;
        size = nb;
        r.ndim = 3;
        r.shape[0] = nb;
        r.strides[0] = stride;
        r.shape[1] = o->rows;
        r.shape[2] = o->cols;
        r.strides[1] = o->cols;
        r.strides[2] = 1;
    } else {
        r.ndim = 3;
        r.shape[0] = size;
        r.strides[0] = stride;
        r.shape[1] = o->rows;
        r.shape[2] = o->cols;
        r.strides[1] = o->srow;
        r.strides[2] = o->scol;
    }
    blas_strides(&r);
    *out = r;
    return PG_OK;
}

/* PyTorch's words for two operands whose inner dimensions differ. */
static pg_status inner_mismatch(const pg_tensor *a, const pg_tensor *b, int64_t ka, int64_t kb)
{
    char sa[160], sb[160];
    pg_shape_str(a->ndim, a->shape, sa, sizeof sa);
    pg_shape_str(b->ndim, b->shape, sb, sizeof sb);
    if (a->ndim == 1 && b->ndim == 1)
        return pg_error_set(PG_ERR_SHAPE,
                            "inconsistent tensor size, expected tensor [%lld] and src [%lld] to "
                            "have the same number of elements, but got %lld and %lld elements "
                            "respectively (matmul of %s and %s)",
                            (long long)ka, (long long)kb, (long long)ka, (long long)kb, sa, sb);
    int64_t ra = a->ndim > 1 ? pg_shape_numel(a->ndim - 1, a->shape) : 1;
    int64_t cb = b->ndim > 1 ? b->shape[b->ndim - 1] : 1;
    return pg_error_set(PG_ERR_SHAPE,
                        "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld): "
                        "matmul of %s and %s; the last axis of the first must equal the %s "
                        "axis of the second",
                        (long long)ra, (long long)ka, (long long)kb, (long long)cb, sa, sb,
                        b->ndim > 1 ? "second-to-last" : "only");
}

/* The common batch shape of a and b, with PyTorch's words where two sizes differ. */
static pg_status batch_shape(const pg_tensor *a, const operand *A, const pg_tensor *b,
                             const operand *B, int *nbd, int64_t *bshape)
{
    int n = A->nbatch > B->nbatch ? A->nbatch : B->nbatch;
    for (int i = 0; i < n; i++) {
        int ia = i - (n - A->nbatch), ib = i - (n - B->nbatch);
        int64_t da = ia < 0 ? 1 : A->t.shape[ia], db = ib < 0 ? 1 : B->t.shape[ib];
        if (da != db && da != 1 && db != 1) {
            char sa[160], sb[160];
            return pg_error_set(PG_ERR_SHAPE,
                                "The size of tensor a (%lld) must match the size of tensor b "
                                "(%lld) at non-singleton dimension %d (matmul's batch axes of "
                                "%s and %s)",
                                (long long)da, (long long)db, i,
                                pg_shape_str(a->ndim, a->shape, sa, sizeof sa),
                                pg_shape_str(b->ndim, b->shape, sb, sizeof sb));
        }
        bshape[i] = da == 1 ? db : da;
    }
    *nbd = n;
    return PG_OK;
}

/* Fold A's batch axes into its rows when B is one matrix for the whole batch: A (nb*M, K)
 * as one matrix, B (K, N). False when A's layout does not allow it. */
static bool fold_rows(const operand *A, const operand *B, int nbd, pg_tensor *a3)
{
    if (A->nbatch == 0 || A->nbatch != nbd)
        return false;
    if (pg_shape_numel(B->nbatch, B->t.shape) != 1)
        return false; /* B varies over the batch */
    if (A->scol != 1 && A->cols > 1)
        return false; /* a transposed A: its rows are not one stride apart across the batch */
    int64_t shape[PG_MAX_DIMS], strides[PG_MAX_DIMS];
    for (int i = 0; i < A->nbatch; i++) {
        shape[i] = A->t.shape[i];
        strides[i] = A->t.strides[i];
    }
    shape[A->nbatch] = A->rows;
    strides[A->nbatch] = A->srow;
    int64_t rows, srow;
    if (!collapse(A->nbatch + 1, shape, strides, &rows, &srow))
        return false;
    if (rows > 1 && (srow < (A->cols > 1 ? A->cols : 1) || srow > BLAS_MAX))
        return false;
    pg_tensor_ref(&A->t, a3);
    a3->ndim = 3;
    a3->shape[0] = 1;
    a3->strides[0] = 0;
    a3->shape[1] = rows;
    a3->strides[1] = rows > 1 ? srow : (A->cols > 1 ? A->cols : 1);
    a3->shape[2] = A->cols;
    a3->strides[2] = 1;
    return true;
}

static pg_status run_product(pg_device dev, int dt, const pg_tensor *A3, const pg_tensor *B3,
                             pg_tensor *C)
{
    int64_t shape3[3] = {A3->shape[0] > B3->shape[0] ? A3->shape[0] : B3->shape[0], A3->shape[1],
                         B3->shape[2]};
    PG_TRY(pg_tensor_empty(dev, (pg_dtype)dt, 3, shape3, C));
    if (pg_tensor_numel(C) == 0)
        return PG_OK;
    if (A3->shape[2] == 0) {
        pg_scalar zero = {PG_SCALAR_INT, 0.0, 0};
        return pg_op_fill(C, zero);
    }
    pg_node n;
    n.nextra = 0;
    n.op = PG_OP_MATMUL;
    n.subop = 0;
    n.nsrc = 2;
    n.src[0] = *A3;
    n.src[1] = *B3;
    n.dst = *C;
    n.name = "matmul";
    return pg_launch(&n);
}

pg_status pg_op_matmul(const pg_tensor *a, const pg_tensor *b, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    pg_device dev = pg_tensor_device(a);
    PG_TRY(pg_check_same_device("matmul", a, b));
    if (a->ndim == 0 || b->ndim == 0)
        return pg_error_set(PG_ERR_SHAPE,
                            "both arguments to matmul need to be at least 1D, but they are %dD "
                            "and %dD; use * to multiply by a scalar",
                            a->ndim, b->ndim);
    /* float16/bfloat16 run the half GEMM (fp32 accumulation), result in the half dtype; the
     * integers narrower than int64 run the int64 product and wrap back to their dtype (exact:
     * wrapping commutes with sums and products), as PyTorch's integer matmul on the CPU; float8
     * runs float32's and rounds it back once, where PyTorch runs it (pg_fp8_ops.h) */
    PG_TRY((pg_status)pg_dtype_promote_check((pg_dtype)a->dtype, (pg_dtype)b->dtype));
    int out_dt = pg_dtype_promote((pg_dtype)a->dtype, (pg_dtype)b->dtype);
    int dt = pg_dtype_is_narrow_int((pg_dtype)out_dt) ? PG_INT64 : out_dt;
    if (pg_dtype_is_fp8((pg_dtype)out_dt)) { /* float32's product, rounded back once */
        const char *kernel, *rank = pg_fp8_matmul_refusal(a->ndim, b->ndim);
        if (!pg_fp8_op_runs(PG_OP_MATMUL, 0, (pg_dtype)out_dt, false, &kernel) || rank)
            return pg_error_set(PG_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'",
                                rank ? rank : kernel, pg_dtype_legacy_name((pg_dtype)out_dt));
        dt = PG_FLOAT32;
    }
    PG_TRY(pg_backend_check_op(dev, PG_OP_MATMUL, dt, "matmul"));
    if (dt == PG_BOOL)
        return pg_error_set(PG_ERR_DTYPE, "matmul: bool operands are not supported; use "
                                          ".astype(pygpu.int64) or a float dtype");
    int64_t ka = a->shape[a->ndim - 1], kb = b->shape[b->ndim > 1 ? b->ndim - 2 : 0];
    if (ka != kb)
        return inner_mismatch(a, b, ka, kb);
    operand A, B;
    memset(&B, 0, sizeof B);
    pg_status st = operand_init(a, true, dt, &A);
    if (st == PG_OK)
        st = operand_init(b, false, dt, &B);
    int nbd = 0;
    int64_t bshape[PG_MAX_DIMS];
    if (st == PG_OK)
        st = batch_shape(a, &A, b, &B, &nbd, bshape);
    int64_t M = A.rows, N = B.cols, K = A.cols, nb = pg_shape_numel(nbd, bshape);
    if (st == PG_OK && (M > BLAS_MAX || N > BLAS_MAX || K > BLAS_MAX || nb > BLAS_MAX))
        st = pg_error_set(PG_ERR_VALUE, "matmul: dimensions above 2^31-1 are not supported");
    pg_tensor A3, B3, C;
    memset(&A3, 0, sizeof A3);
    memset(&B3, 0, sizeof B3);
    memset(&C, 0, sizeof C);
    if (st == PG_OK) {
        if (fold_rows(&A, &B, nbd, &A3)) {
            st = operand_3d(&B, 0, bshape, 1, dt, &B3);
            if (st == PG_OK && (A3.shape[1] > BLAS_MAX))
                st = pg_error_set(PG_ERR_VALUE, "matmul: dimensions above 2^31-1 are not "
                                                "supported");
        } else {
            st = operand_3d(&A, nbd, bshape, nb, dt, &A3);
            if (st == PG_OK)
                st = operand_3d(&B, nbd, bshape, nb, dt, &B3);
        }
    }
    if (st == PG_OK)
        st = run_product(dev, dt, &A3, &B3, &C);
    if (st == PG_OK) { /* the batch shape, then the matrix axes the operands keep */
        int64_t shape[PG_MAX_DIMS + 2];
        int nd = 0;
        for (int i = 0; i < nbd; i++)
            shape[nd++] = bshape[i];
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
    pg_tensor_clear(&A.t);
    pg_tensor_clear(&B.t);
    pg_tensor_clear(&A3);
    pg_tensor_clear(&B3);
    pg_tensor_clear(&C);
    return st;
}
