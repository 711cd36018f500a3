/* cpu_lapack.h - one matrix through LAPACK (the LAPACKE of the OpenBLAS pygpu links,
 * scipy_openblas32: 32-bit integers), row-major, float32 or float64 by `dt`
 * (PG_FLOAT32 / PG_FLOAT64). Each returns LAPACK's info: 0 is success, > 0 the
 * factorization's own failure (a singular matrix, a non-positive-definite minor, no
 * convergence), < 0 a bad argument (an internal error). pg_ops_linalg.c loops the
 * batch and turns info into PyTorch's messages. */
#ifndef PG_CPU_LAPACK_H
#define PG_CPU_LAPACK_H

#include <stdint.h>

/* a (n, n) in place: P L U; ipiv (n): 1-based pivots */
int pg_lapack_getrf(int dt, int n, void *a, int32_t *ipiv);
/* a (n, n) in place: its inverse from getrf's factors */
int pg_lapack_getri(int dt, int n, void *a, const int32_t *ipiv);
/* b (n, nrhs) in place: A^-1 b; a (n, n) overwritten with its LU */
int pg_lapack_gesv(int dt, int n, int nrhs, void *a, int32_t *ipiv, void *b);
/* a (n, n) in place: L (upper = 0) or U (upper = 1) with A = L L^T = U^T U; the other
 * triangle is left as it was */
int pg_lapack_potrf(int dt, int upper, int n, void *a);
/* a (m, n) in place: R above the diagonal, the reflectors below; tau (min(m, n)) */
int pg_lapack_geqrf(int dt, int m, int n, void *a, void *tau);
/* q (m, ncols) in place: the first ncols columns of Q from geqrf's k reflectors */
int pg_lapack_orgqr(int dt, int m, int ncols, int k, void *q, const void *tau);
/* a (m, n) destroyed; s (min(m, n)); u (m, m or k), vt (n or k, n) when jobz is 'A' or 'S';
 * jobz 'N': singular values only */
int pg_lapack_gesdd(int dt, char jobz, int m, int n, void *a, void *s, void *u, void *vt);
/* a (n, n) in place: the eigenvectors (columns); w (n) ascending; from the lower (upper = 0)
 * or upper triangle */
int pg_lapack_syevd(int dt, int upper, int n, void *a, void *w);
/* b (max(m, n), nrhs) in place: the least-squares solution in its first n rows; a (m, n)
 * destroyed; s (min(m, n)) the singular values; rank out */
int pg_lapack_gelsd(int dt, int m, int n, int nrhs, void *a, void *b, void *s, double rcond,
                    int32_t *rank);

#endif
