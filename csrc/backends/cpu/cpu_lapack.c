/* cpu_lapack.c - one matrix through LAPACK, row-major, float32 or float64: the thin
 * layer between pg_ops_linalg.c (which loops the batch and checks every input) and the
 * LAPACKE functions of scipy_openblas32 (its symbols carry the scipy_ prefix). LAPACKE's
 * row-major interface transposes into column-major workspace itself, so callers keep
 * pygpu's row-major layout. The work-array sizes are LAPACKE's (its high-level calls
 * query and allocate them). */
#include <lapacke.h>

#include "../../core/pg_dtype.h"
#include "cpu_lapack.h"

#define ROW LAPACK_ROW_MAJOR
#define F32(dt) ((dt) == PG_FLOAT32)

int pg_lapack_getrf(int dt, int n, void *a, int32_t *ipiv)
{
    return F32(dt) ? scipy_LAPACKE_sgetrf(ROW, n, n, a, n, ipiv)
                   : scipy_LAPACKE_dgetrf(ROW, n, n, a, n, ipiv);
}

int pg_lapack_getri(int dt, int n, void *a, const int32_t *ipiv)
{
    return F32(dt) ? scipy_LAPACKE_sgetri(ROW, n, a, n, ipiv)
                   : scipy_LAPACKE_dgetri(ROW, n, a, n, ipiv);
}

int pg_lapack_gesv(int dt, int n, int nrhs, void *a, int32_t *ipiv, void *b)
{
    return F32(dt) ? scipy_LAPACKE_sgesv(ROW, n, nrhs, a, n, ipiv, b, nrhs)
                   : scipy_LAPACKE_dgesv(ROW, n, nrhs, a, n, ipiv, b, nrhs);
}

int pg_lapack_potrf(int dt, int upper, int n, void *a)
{
    char uplo = upper ? 'U' : 'L';
    return F32(dt) ? scipy_LAPACKE_spotrf(ROW, uplo, n, a, n)
                   : scipy_LAPACKE_dpotrf(ROW, uplo, n, a, n);
}

int pg_lapack_geqrf(int dt, int m, int n, void *a, void *tau)
{
    return F32(dt) ? scipy_LAPACKE_sgeqrf(ROW, m, n, a, n, tau)
                   : scipy_LAPACKE_dgeqrf(ROW, m, n, a, n, tau);
}

int pg_lapack_orgqr(int dt, int m, int ncols, int k, void *q, const void *tau)
{
    return F32(dt) ? scipy_LAPACKE_sorgqr(ROW, m, ncols, k, q, ncols, tau)
                   : scipy_LAPACKE_dorgqr(ROW, m, ncols, k, q, ncols, tau);
}

int pg_lapack_gesdd(int dt, char jobz, int m, int n, void *a, void *s, void *u, void *vt)
{
    int k = m < n ? m : n;
    int ucol = jobz == 'A' ? m : k, vtrow = jobz == 'A' ? n : k;
    (void)vtrow;
    int ldu = jobz == 'N' ? 1 : ucol, ldvt = jobz == 'N' ? 1 : n;
    return F32(dt) ? scipy_LAPACKE_sgesdd(ROW, jobz, m, n, a, n, s, u, ldu, vt, ldvt)
                   : scipy_LAPACKE_dgesdd(ROW, jobz, m, n, a, n, s, u, ldu, vt, ldvt);
}

int pg_lapack_syevd(int dt, int upper, int n, void *a, void *w)
{
    char uplo = upper ? 'U' : 'L';
    return F32(dt) ? scipy_LAPACKE_ssyevd(ROW, 'V', uplo, n, a, n, w)
                   : scipy_LAPACKE_dsyevd(ROW, 'V', uplo, n, a, n, w);
}

int pg_lapack_gelsd(int dt, int m, int n, int nrhs, void *a, void *b, void *s, double rcond,
                    int32_t *rank)
{
    return F32(dt) ? scipy_LAPACKE_sgelsd(ROW, m, n, nrhs, a, n, b, nrhs, s, (float)rcond, rank)
                   : scipy_LAPACKE_dgelsd(ROW, m, n, nrhs, a, n, b, nrhs, s, rcond, rank);
}
