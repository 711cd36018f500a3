/* pg_ops_linalg.c - torch.linalg's factorizations on the CPU through LAPACK: LU, solve,
 * inverse, Cholesky, QR, SVD, the symmetric eigendecomposition and least squares, each
 * over a batch of matrices (the leading axes).
 *
 * The input is a contiguous float32/float64 cpu tensor (pygpu/linalg.py moves a sim or
 * cuda operand to the cpu and the result back: counted transfers, the documented
 * fallback, as LAPACK runs on the host). Each matrix is copied into its output, which
 * LAPACK then overwrites (backends/cpu/cpu_lapack.c). LAPACK's info becomes PyTorch's
 * message (a singular matrix, a minor that is not positive-definite) naming the batch
 * element. No node is built: the cpu backend runs ops at once, so the data is ready. */
#include "pg_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/cpu/cpu_lapack.h"

static pg_status out_tensor(pg_dtype dt, int nbatch, const int64_t *batch, int nlast,
                            int64_t d0, int64_t d1, pg_tensor *out)
{
    int64_t shape[PG_MAX_DIMS];
    if (nbatch + nlast > PG_MAX_DIMS)
        return pg_error_set(PG_ERR_VALUE, "linalg: too many dimensions");
    memcpy(shape, batch, sizeof(int64_t) * (size_t)nbatch);
    if (nlast > 0)
        shape[nbatch] = d0;
    if (nlast > 1)
        shape[nbatch + 1] = d1;
    pg_device cpu = {PG_DEV_CPU, 0};
    return pg_tensor_empty(cpu, dt, nbatch + nlast, shape, out);
}

static pg_status check_input(const char *op, const pg_tensor *a, int min_ndim)
{
    char dev[24];
    pg_device_str(pg_tensor_device(a), dev, sizeof dev);
    if (pg_tensor_device(a).type != PG_DEV_CPU || !pg_tensor_is_contiguous(a))
        return pg_error_set(PG_ERR_VALUE, "%s: internal: LAPACK takes a contiguous cpu tensor, "
                                          "got one on %s", op, dev);
    if (a->dtype != PG_FLOAT32 && a->dtype != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: expected a float32 or float64 tensor, got %s "
                                          "on %s (convert first: A.double())",
                            op, pg_dtype_name((pg_dtype)a->dtype), dev);
    if (a->ndim < min_ndim)
        return pg_error_set(PG_ERR_VALUE, "%s: the input tensor A must have at least %d "
                                          "dimensions, got %d", op, min_ndim, a->ndim);
    return PG_OK;
}

static int64_t batch_count(const pg_tensor *a, int last)
{
    int64_t n = 1;
    for (int i = 0; i < a->ndim - last; i++)
        n *= a->shape[i];
    return n;
}

static pg_status lapack_failed(const char *op, int info, int64_t b, int64_t nb)
{
    char where[48] = "";
    if (nb > 1)
        snprintf(where, sizeof where, "(Batch element %lld): ", (long long)b);
    if (info < 0)
        return pg_error_set(PG_ERR_RUNTIME, "%s: %sLAPACK rejected argument %d (internal error)",
                            op, where, -info);
    if (strcmp(op, "linalg.cholesky") == 0)
        return pg_error_set(PG_ERR_RUNTIME,
                            "%s: %sThe factorization could not be completed because the input is "
                            "not positive-definite (the leading minor of order %d is not "
                            "positive-definite).",
                            op, where, info);
    if (strcmp(op, "linalg.svd") == 0 || strcmp(op, "linalg.eigh") == 0 ||
        strcmp(op, "linalg.lstsq") == 0)
        return pg_error_set(PG_ERR_RUNTIME, "%s: %sThe algorithm failed to converge (error code "
                                            "%d).", op, where, info);
    return pg_error_set(PG_ERR_RUNTIME,
                        "%s: %sThe diagonal element %d is zero, the inversion could not be "
                        "completed because the input matrix is singular.",
                        op, where, info);
}

/* A copy of matrix `b` of `src` into `dst` (both contiguous, `count` elements each). */
static void copy_matrix(pg_tensor *dst, const pg_tensor *src, int64_t b, int64_t count)
{
    size_t es = pg_dtype_size((pg_dtype)src->dtype);
    memcpy(pg_tensor_data(dst) + b * count * es, pg_tensor_data(src) + b * count * es,
           (size_t)count * es);
}

static char *mat(pg_tensor *t, int64_t b, int64_t count)
{
    return pg_tensor_data(t) + b * count * (int64_t)pg_dtype_size((pg_dtype)t->dtype);
}

/* getrf: (LU (.., n, n), pivots int64 (.., n) 1-based, info int64 (..)); info > 0 is not
 * an error (torch.linalg.lu_factor_ex) */
static pg_status lu(const pg_tensor *a, pg_tensor *outs)
{
    int nd = a->ndim - 2;
    int64_t n = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    if (a->shape[a->ndim - 2] != n)
        return pg_error_set(PG_ERR_SHAPE, "linalg.lu_factor: A must be batches of square "
                                          "matrices, but they are %lld by %lld matrices",
                            (long long)a->shape[a->ndim - 2], (long long)n);
    PG_TRY(out_tensor((pg_dtype)a->dtype, nd, a->shape, 2, n, n, &outs[0]));
    PG_TRY(out_tensor(PG_INT64, nd, a->shape, 1, n, 0, &outs[1]));
    PG_TRY(out_tensor(PG_INT64, nd, a->shape, 0, 0, 0, &outs[2]));
    int32_t *ipiv = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!ipiv)
        return pg_error_set(PG_ERR_NOMEM, "linalg.lu_factor: out of memory");
    for (int64_t b = 0; b < nb; b++) {
        copy_matrix(&outs[0], a, b, n * n);
        int info = n ? pg_lapack_getrf(a->dtype, (int)n, mat(&outs[0], b, n * n), ipiv) : 0;
        int64_t *piv = (int64_t *)pg_tensor_data(&outs[1]) + b * n;
        for (int64_t i = 0; i < n; i++)
            piv[i] = ipiv[i];
        ((int64_t *)pg_tensor_data(&outs[2]))[b] = info;
        if (info < 0) {
            free(ipiv);
            return lapack_failed("linalg.lu_factor", info, b, nb);
        }
    }
    free(ipiv);
    return PG_OK;
}

/* gesv: X (.., n, k) = A^-1 B, with A (.., n, n) and B (.., n, k) of the same batch */
static pg_status solve(const pg_tensor *a, const pg_tensor *rhs, pg_tensor *outs)
{
    int64_t n = a->shape[a->ndim - 1], k = rhs->shape[rhs->ndim - 1], nb = batch_count(a, 2);
    if (a->shape[a->ndim - 2] != n || rhs->ndim != a->ndim || rhs->shape[rhs->ndim - 2] != n ||
        batch_count(rhs, 2) != nb || rhs->dtype != a->dtype)
        return pg_error_set(PG_ERR_SHAPE, "linalg.solve: internal: A (.., n, n) and B (.., n, k) "
                                          "of one batch and dtype expected");
    PG_TRY(out_tensor((pg_dtype)a->dtype, rhs->ndim - 2, rhs->shape, 2, n, k, &outs[0]));
    pg_tensor work;
    PG_TRY(out_tensor((pg_dtype)a->dtype, 0, NULL, 2, n, n, &work));
    int32_t *ipiv = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    pg_status st = ipiv ? PG_OK : pg_error_set(PG_ERR_NOMEM, "linalg.solve: out of memory");
    for (int64_t b = 0; st == PG_OK && b < nb && n && k; b++) {
        memcpy(pg_tensor_data(&work), mat((pg_tensor *)a, b, n * n),
               (size_t)(n * n) * pg_dtype_size((pg_dtype)a->dtype));
        copy_matrix(&outs[0], rhs, b, n * k);
        int info = pg_lapack_gesv(a->dtype, (int)n, (int)k, pg_tensor_data(&work), ipiv,
                                  mat(&outs[0], b, n * k));
        if (info > 0)
            st = pg_error_set(PG_ERR_RUNTIME, "linalg.solve: %sThe solver failed because the "
                                              "input matrix is singular.", nb > 1 ? "(a batch "
                                              "element) " : "");
        else if (info < 0)
            st = lapack_failed("linalg.solve", info, b, nb);
    }
    free(ipiv);
    pg_tensor_clear(&work);
    return st;
}

/* getrf + getri: A^-1 (.., n, n) */
static pg_status inverse(const pg_tensor *a, pg_tensor *outs)
{
    int64_t n = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    if (a->shape[a->ndim - 2] != n)
        return pg_error_set(PG_ERR_SHAPE, "linalg.inv: A must be batches of square matrices, "
                                          "but they are %lld by %lld matrices",
                            (long long)a->shape[a->ndim - 2], (long long)n);
    PG_TRY(out_tensor((pg_dtype)a->dtype, a->ndim - 2, a->shape, 2, n, n, &outs[0]));
    int32_t *ipiv = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!ipiv)
        return pg_error_set(PG_ERR_NOMEM, "linalg.inv: out of memory");
    pg_status st = PG_OK;
    for (int64_t b = 0; st == PG_OK && b < nb && n; b++) {
        copy_matrix(&outs[0], a, b, n * n);
        int info = pg_lapack_getrf(a->dtype, (int)n, mat(&outs[0], b, n * n), ipiv);
        if (info == 0)
            info = pg_lapack_getri(a->dtype, (int)n, mat(&outs[0], b, n * n), ipiv);
        if (info != 0)
            st = lapack_failed("linalg.inv", info, b, nb);
    }
    free(ipiv);
    return st;
}

/* potrf: L (.., n, n) lower (or U upper), the other triangle zeroed */
static pg_status cholesky(const pg_tensor *a, int upper, pg_tensor *outs)
{
    int64_t n = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    if (a->shape[a->ndim - 2] != n)
        return pg_error_set(PG_ERR_SHAPE, "linalg.cholesky: A must be batches of square "
                                          "matrices, but they are %lld by %lld matrices",
                            (long long)a->shape[a->ndim - 2], (long long)n);
    PG_TRY(out_tensor((pg_dtype)a->dtype, a->ndim - 2, a->shape, 2, n, n, &outs[0]));
    size_t es = pg_dtype_size((pg_dtype)a->dtype);
    for (int64_t b = 0; b < nb && n; b++) {
        copy_matrix(&outs[0], a, b, n * n);
        char *m = mat(&outs[0], b, n * n);
        int info = pg_lapack_potrf(a->dtype, upper, (int)n, m);
        if (info != 0)
            return lapack_failed("linalg.cholesky", info, b, nb);
        for (int64_t i = 0; i < n; i++) /* zero the triangle LAPACK left as it was */
            for (int64_t j = 0; j < n; j++)
                if (upper ? j < i : j > i)
                    memset(m + (i * n + j) * (int64_t)es, 0, es);
    }
    return PG_OK;
}

/* geqrf + orgqr: Q (.., m, k or m), R (.., k or m, n); mode 0 reduced, 1 complete,
 * 2 R only (Q empty) */
static pg_status qr(const pg_tensor *a, int mode, pg_tensor *outs)
{
    int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    int64_t k = m < n ? m : n, qc = mode == 1 ? m : k, rr = mode == 1 ? m : k;
    int64_t es = (int64_t)pg_dtype_size((pg_dtype)a->dtype);
    PG_TRY(out_tensor((pg_dtype)a->dtype, a->ndim - 2, a->shape, 2, mode == 2 ? 0 : m,
                      mode == 2 ? 0 : qc, &outs[0]));
    PG_TRY(out_tensor((pg_dtype)a->dtype, a->ndim - 2, a->shape, 2, rr, n, &outs[1]));
    char *tight = malloc((size_t)(m * n + k + 1) * (size_t)es); /* A's factors, then tau */
    if (!tight)
        return pg_error_set(PG_ERR_NOMEM, "linalg.qr: out of memory");
    char *tau = tight + m * n * es;
    pg_status st = PG_OK;
    for (int64_t b = 0; st == PG_OK && b < nb; b++) {
        memcpy(tight, mat((pg_tensor *)a, b, m * n), (size_t)(m * n * es));
        int info = k ? pg_lapack_geqrf(a->dtype, (int)m, (int)n, tight, tau) : 0;
        if (info != 0) {
            st = lapack_failed("linalg.qr", info, b, nb);
            break;
        }
        char *r = mat(&outs[1], b, rr * n); /* R: the upper triangle of the factors */
        memset(r, 0, (size_t)(rr * n * es));
        for (int64_t i = 0; i < rr && i < m; i++)
            memcpy(r + (i * n + i) * es, tight + (i * n + i) * es, (size_t)((n - i > 0 ? n - i : 0) * es));
        if (mode == 2)
            continue;
        /* Q: orgqr from the k reflectors in the first min(n, qc) columns */
        char *q = mat(&outs[0], b, m * qc);
        int64_t cols = n < qc ? n : qc;
        memset(q, 0, (size_t)(m * qc * es));
        for (int64_t i = 0; i < m; i++)
            memcpy(q + i * qc * es, tight + i * n * es, (size_t)(cols * es));
        info = (m && qc) ? pg_lapack_orgqr(a->dtype, (int)m, (int)qc, (int)k, q, tau) : 0;
        if (info != 0)
            st = lapack_failed("linalg.qr", info, b, nb);
    }
    free(tight);
    return st;
}

/* gesdd: U (.., m, m or k), S (.., k), Vh (.., n or k, n); flag 0 reduced, 1 full,
 * 2 values only (U, Vh empty) */
static pg_status svd(const pg_tensor *a, int flag, pg_tensor *outs)
{
    int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    int64_t k = m < n ? m : n;
    char jobz = flag == 2 ? 'N' : flag == 1 ? 'A' : 'S';
    int64_t uc = flag == 1 ? m : k, vr = flag == 1 ? n : k;
    size_t es = pg_dtype_size((pg_dtype)a->dtype);
    PG_TRY(out_tensor((pg_dtype)a->dtype, a->ndim - 2, a->shape, 2, flag == 2 ? 0 : m,
                      flag == 2 ? 0 : uc, &outs[0]));
    PG_TRY(out_tensor((pg_dtype)a->dtype, a->ndim - 2, a->shape, 1, k, 0, &outs[1]));
    PG_TRY(out_tensor((pg_dtype)a->dtype, a->ndim - 2, a->shape, 2, flag == 2 ? 0 : vr,
                      flag == 2 ? 0 : n, &outs[2]));
    char *work = malloc((size_t)(m * n + 1) * es);
    if (!work)
        return pg_error_set(PG_ERR_NOMEM, "linalg.svd: out of memory");
    char one[16];
    pg_status st = PG_OK;
    for (int64_t b = 0; st == PG_OK && b < nb && k; b++) {
        memcpy(work, mat((pg_tensor *)a, b, m * n), (size_t)(m * n) * es);
        void *u = flag == 2 ? (void *)one : (void *)mat(&outs[0], b, m * uc);
        void *vt = flag == 2 ? (void *)one : (void *)mat(&outs[2], b, vr * n);
        int info = pg_lapack_gesdd(a->dtype, jobz, (int)m, (int)n, work, mat(&outs[1], b, k), u, vt);
        if (info != 0)
            st = lapack_failed("linalg.svd", info, b, nb);
    }
    free(work);
    return st;
}

/* syevd: w (.., n) ascending, V (.., n, n) */
static pg_status eigh(const pg_tensor *a, int upper, pg_tensor *outs)
{
    int64_t n = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    if (a->shape[a->ndim - 2] != n)
        return pg_error_set(PG_ERR_SHAPE, "linalg.eigh: A must be batches of square matrices, "
                                          "but they are %lld by %lld matrices",
                            (long long)a->shape[a->ndim - 2], (long long)n);
    PG_TRY(out_tensor((pg_dtype)a->dtype, a->ndim - 2, a->shape, 1, n, 0, &outs[0]));
    PG_TRY(out_tensor((pg_dtype)a->dtype, a->ndim - 2, a->shape, 2, n, n, &outs[1]));
    for (int64_t b = 0; b < nb && n; b++) {
        copy_matrix(&outs[1], a, b, n * n);
        int info = pg_lapack_syevd(a->dtype, upper, (int)n, mat(&outs[1], b, n * n),
                                   mat(&outs[0], b, n));
        if (info != 0)
            return lapack_failed("linalg.eigh", info, b, nb);
    }
    return PG_OK;
}

/* gelsd: X (.., n, k), rank int64 (..), S (.., min(m, n)) for A (.., m, n), B (.., m, k) */
static pg_status lstsq(const pg_tensor *a, const pg_tensor *rhs, double rcond, pg_tensor *outs)
{
    int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    int64_t k = rhs->shape[rhs->ndim - 1], mn = m < n ? m : n, mx = m > n ? m : n;
    if (rhs->ndim != a->ndim || rhs->shape[rhs->ndim - 2] != m || batch_count(rhs, 2) != nb ||
        rhs->dtype != a->dtype)
        return pg_error_set(PG_ERR_SHAPE, "linalg.lstsq: internal: A (.., m, n) and B (.., m, k) "
                                          "of one batch and dtype expected");
    size_t es = pg_dtype_size((pg_dtype)a->dtype);
    PG_TRY(out_tensor((pg_dtype)a->dtype, a->ndim - 2, a->shape, 2, n, k, &outs[0]));
    PG_TRY(out_tensor(PG_INT64, a->ndim - 2, a->shape, 0, 0, 0, &outs[1]));
    PG_TRY(out_tensor((pg_dtype)a->dtype, a->ndim - 2, a->shape, 1, mn, 0, &outs[2]));
    char *wa = malloc((size_t)(m * n + mx * k + 1) * es);
    if (!wa)
        return pg_error_set(PG_ERR_NOMEM, "linalg.lstsq: out of memory");
    char *wb = wa + m * n * (int64_t)es;
    pg_status st = PG_OK;
    for (int64_t b = 0; st == PG_OK && b < nb; b++) {
        memcpy(wa, mat((pg_tensor *)a, b, m * n), (size_t)(m * n) * es);
        memset(wb, 0, (size_t)(mx * k) * es);
        memcpy(wb, mat((pg_tensor *)rhs, b, m * k), (size_t)(m * k) * es);
        int32_t rank = 0;
        int info = (mn && k) ? pg_lapack_gelsd(a->dtype, (int)m, (int)n, (int)k, wa, wb,
                                               mat(&outs[2], b, mn), rcond, &rank)
                             : 0;
        if (info != 0) {
            st = lapack_failed("linalg.lstsq", info, b, nb);
            break;
        }
        memcpy(mat(&outs[0], b, n * k), wb, (size_t)(n * k) * es);
        ((int64_t *)pg_tensor_data(&outs[1]))[b] = rank;
    }
    free(wa);
    return st;
}

pg_status pg_op_linalg(int op, const pg_tensor *a, const pg_tensor *b, int flag, double param,
                       pg_tensor outs[PG_LINALG_MAX_OUT], int *nout)
{
    static const char *const names[] = {"linalg.lu_factor", "linalg.solve", "linalg.inv",
                                        "linalg.cholesky", "linalg.qr", "linalg.svd",
                                        "linalg.eigh", "linalg.lstsq"};
    static const int counts[] = {3, 1, 1, 1, 2, 3, 2, 3};
    for (int i = 0; i < PG_LINALG_MAX_OUT; i++)
        pg_tensor_out_init(&outs[i], NULL);
    if (op < 0 || op >= (int)(sizeof counts / sizeof *counts))
        return pg_error_set(PG_ERR_VALUE, "linalg: unknown op %d", op);
    *nout = counts[op];
    PG_TRY(check_input(names[op], a, 2));
    if (b)
        PG_TRY(check_input(names[op], b, 2));
    pg_status st;
    switch (op) {
    case PG_LINALG_LU: st = lu(a, outs); break;
    case PG_LINALG_SOLVE: st = solve(a, b, outs); break;
    case PG_LINALG_INV: st = inverse(a, outs); break;
    case PG_LINALG_CHOLESKY: st = cholesky(a, flag, outs); break;
    case PG_LINALG_QR: st = qr(a, flag, outs); break;
    case PG_LINALG_SVD: st = svd(a, flag, outs); break;
    case PG_LINALG_EIGH: st = eigh(a, flag, outs); break;
    default: st = lstsq(a, b, param, outs); break;
    }
    if (st != PG_OK)
        for (int i = 0; i < PG_LINALG_MAX_OUT; i++)
            pg_tensor_clear(&outs[i]);
    return st;
}
