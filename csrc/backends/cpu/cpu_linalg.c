/* cpu_linalg.c - the LINALG node on the CPU (cpu and sim's worker): torch.linalg's
 * factorizations of each matrix of a batch through LAPACK (cpu_lapack.c: LU, solve,
 * inverse, Cholesky, QR, SVD, the symmetric eigendecomposition, least squares).
 *
 * The core (pg_ops_linalg.c) has checked the operands (contiguous float32/float64 batches,
 * shapes) and allocated the outputs; here each matrix is copied into its output (or a work
 * buffer), which LAPACK then overwrites, and LAPACK's info is written per matrix into the
 * last output, `info`: > 0 is the factorization's own failure (a singular matrix, a minor
 * that is not positive-definite, no convergence), which the core turns into PyTorch's
 * message after the node (or returns, for the _ex functions). A negative info (LAPACK
 * rejected an argument) is an internal error and fails the node. Each sub-op's function is
 * named by its LINALG row's cpu column (pg_subops.def). Runs whole on one thread (SERIAL). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "cpu_lapack.h"

/* output k of a node: dst, then its extras; the last one is info */
static pg_tensor *out_k(const pg_node *n, int k)
{
    return (pg_tensor *)(k == 0 ? &n->dst : &n->extra[k - 1]);
}

static int64_t *info_of(const pg_node *n) { return (int64_t *)pg_tensor_data(out_k(n, n->nextra)); }

static int64_t batch_count(const pg_tensor *a, int last)
{
    int64_t n = 1;
    for (int i = 0; i < a->ndim - last; i++)
        n *= a->shape[i];
    return n;
}

/* LAPACK refused an argument: a bug in the caller, not the user's data */
static pg_status rejected(const pg_node *n, int info, int64_t b)
{
    return pg_error_set(PG_ERR_RUNTIME, "%s: (Batch element %lld): LAPACK rejected argument %d "
                                        "(internal error)", n->name, (long long)b, -info);
}

static char *mat(const pg_tensor *t, int64_t b, int64_t count)
{
    return pg_tensor_data(t) + b * count * (int64_t)pg_dtype_size((pg_dtype)t->dtype);
}

/* A copy of matrix `b` of `src` into `dst` (both contiguous, `count` elements each). */
static void copy_matrix(const pg_tensor *dst, const pg_tensor *src, int64_t b, int64_t count)
{
    memcpy(mat(dst, b, count), mat(src, b, count),
           (size_t)count * pg_dtype_size((pg_dtype)src->dtype));
}

static pg_status no_memory(const pg_node *n)
{
    return pg_error_set(PG_ERR_NOMEM, "%s: out of memory for LAPACK's work arrays", n->name);
}

/* getrf: LU (.., n, n), pivots int64 (.., n) 1-based */
static pg_status pg_cpu_linalg_lu(const pg_node *n)
{
    const pg_tensor *a = &n->src[0], *lu = out_k(n, 0), *piv = out_k(n, 1);
    int64_t m = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    int64_t *info = info_of(n);
    int32_t *ipiv = malloc(sizeof(int32_t) * (size_t)(m ? m : 1));
    if (!ipiv)
        return no_memory(n);
    for (int64_t b = 0; b < nb; b++) {
        copy_matrix(lu, a, b, m * m);
        int r = m ? pg_lapack_getrf(a->dtype, (int)m, mat(lu, b, m * m), ipiv) : 0;
        int64_t *p = (int64_t *)pg_tensor_data(piv) + b * m;
        for (int64_t i = 0; i < m; i++)
            p[i] = ipiv[i];
        info[b] = r;
        if (r < 0) {
            free(ipiv);
            return rejected(n, r, b);
        }
    }
    free(ipiv);
    return PG_OK;
}

/* gesv: X (.., n, k) = A^-1 B, with A (.., n, n) and B (.., n, k) of the same batch */
static pg_status pg_cpu_linalg_solve(const pg_node *n)
{
    const pg_tensor *a = &n->src[0], *rhs = &n->src[1], *x = out_k(n, 0);
    int64_t m = a->shape[a->ndim - 1], k = rhs->shape[rhs->ndim - 1], nb = batch_count(a, 2);
    size_t es = pg_dtype_size((pg_dtype)a->dtype);
    int64_t *info = info_of(n);
    int32_t *ipiv = malloc(sizeof(int32_t) * (size_t)(m ? m : 1));
    char *work = malloc((size_t)(m * m + 1) * es);
    pg_status st = ipiv && work ? PG_OK : no_memory(n);
    for (int64_t b = 0; st == PG_OK && b < nb; b++) {
        info[b] = 0;
        if (!m || !k)
            continue;
        memcpy(work, mat(a, b, m * m), (size_t)(m * m) * es);
        copy_matrix(x, rhs, b, m * k);
        int r = pg_lapack_gesv(a->dtype, (int)m, (int)k, work, ipiv, mat(x, b, m * k));
        info[b] = r;
        if (r < 0)
            st = rejected(n, r, b);
    }
    free(ipiv);
    free(work);
    return st;
}

/* getrf + getri: A^-1 (.., n, n) */
static pg_status pg_cpu_linalg_inv(const pg_node *n)
{
    const pg_tensor *a = &n->src[0], *y = out_k(n, 0);
    int64_t m = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    int64_t *info = info_of(n);
    int32_t *ipiv = malloc(sizeof(int32_t) * (size_t)(m ? m : 1));
    if (!ipiv)
        return no_memory(n);
    pg_status st = PG_OK;
    for (int64_t b = 0; st == PG_OK && b < nb; b++) {
        info[b] = 0;
        if (!m)
            continue;
        copy_matrix(y, a, b, m * m);
        int r = pg_lapack_getrf(a->dtype, (int)m, mat(y, b, m * m), ipiv);
        if (r == 0)
            r = pg_lapack_getri(a->dtype, (int)m, mat(y, b, m * m), ipiv);
        info[b] = r;
        if (r < 0)
            st = rejected(n, r, b);
    }
    free(ipiv);
    return st;
}

/* potrf: L (.., n, n) lower (p.linalg.flag 0) or U upper (1), the other triangle zeroed */
static pg_status pg_cpu_linalg_cholesky(const pg_node *n)
{
    const pg_tensor *a = &n->src[0], *l = out_k(n, 0);
    int64_t m = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    int upper = n->p.linalg.flag != 0;
    size_t es = pg_dtype_size((pg_dtype)a->dtype);
    int64_t *info = info_of(n);
    for (int64_t b = 0; b < nb; b++) {
        info[b] = 0;
        if (!m)
            continue;
        copy_matrix(l, a, b, m * m);
        char *t = mat(l, b, m * m);
        int r = pg_lapack_potrf(a->dtype, upper, (int)m, t);
        info[b] = r;
        if (r < 0)
            return rejected(n, r, b);
        for (int64_t i = 0; i < m; i++) /* zero the triangle LAPACK left as it was */
            for (int64_t j = 0; j < m; j++)
                if (upper ? j < i : j > i)
                    memset(t + (i * m + j) * (int64_t)es, 0, es);
    }
    return PG_OK;
}

/* geqrf + orgqr: Q (.., m, k or m), R (.., k or m, n); mode (p.linalg.flag) 0 reduced,
 * 1 complete, 2 R only (Q empty) */
static pg_status pg_cpu_linalg_qr(const pg_node *n)
{
    const pg_tensor *a = &n->src[0], *qt = out_k(n, 0), *rt = out_k(n, 1);
    int mode = (int)n->p.linalg.flag;
    int64_t m = a->shape[a->ndim - 2], nc = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    int64_t k = m < nc ? m : nc, qc = mode == 1 ? m : k, rr = mode == 1 ? m : k;
    int64_t es = (int64_t)pg_dtype_size((pg_dtype)a->dtype);
    int64_t *info = info_of(n);
    char *tight = malloc((size_t)(m * nc + k + 1) * (size_t)es); /* A's factors, then tau */
    if (!tight)
        return no_memory(n);
    char *tau = tight + m * nc * es;
    pg_status st = PG_OK;
    for (int64_t b = 0; st == PG_OK && b < nb; b++) {
        memcpy(tight, mat(a, b, m * nc), (size_t)(m * nc * es));
        int r = k ? pg_lapack_geqrf(a->dtype, (int)m, (int)nc, tight, tau) : 0;
        info[b] = r;
        if (r != 0) {
            if (r < 0)
                st = rejected(n, r, b);
            continue;
        }
        char *R = mat(rt, b, rr * nc); /* R: the upper triangle of the factors */
        memset(R, 0, (size_t)(rr * nc * es));
        for (int64_t i = 0; i < rr && i < m; i++)
            memcpy(R + (i * nc + i) * es, tight + (i * nc + i) * es,
                   (size_t)((nc - i > 0 ? nc - i : 0) * es));
        if (mode == 2)
            continue;
        /* Q: orgqr from the k reflectors in the first min(n, qc) columns */
        char *q = mat(qt, b, m * qc);
        int64_t cols = nc < qc ? nc : qc;
        memset(q, 0, (size_t)(m * qc * es));
        for (int64_t i = 0; i < m; i++)
            memcpy(q + i * qc * es, tight + i * nc * es, (size_t)(cols * es));
        r = (m && qc) ? pg_lapack_orgqr(a->dtype, (int)m, (int)qc, (int)k, q, tau) : 0;
        info[b] = r;
        if (r < 0)
            st = rejected(n, r, b);
    }
    free(tight);
    return st;
}

/* gesdd: U (.., m, m or k), S (.., k), Vh (.., n or k, n); p.linalg.flag 0 reduced, 1 full,
 * 2 values only (U, Vh empty) */
static pg_status pg_cpu_linalg_svd(const pg_node *n)
{
    const pg_tensor *a = &n->src[0], *ut = out_k(n, 0), *st_ = out_k(n, 1), *vt = out_k(n, 2);
    int flag = (int)n->p.linalg.flag;
    int64_t m = a->shape[a->ndim - 2], nc = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    int64_t k = m < nc ? m : nc;
    char jobz = flag == 2 ? 'N' : flag == 1 ? 'A' : 'S';
    int64_t uc = flag == 1 ? m : k, vr = flag == 1 ? nc : k;
    size_t es = pg_dtype_size((pg_dtype)a->dtype);
    int64_t *info = info_of(n);
    char *work = malloc((size_t)(m * nc + 1) * es);
    if (!work)
        return no_memory(n);
    char one[16];
    pg_status st = PG_OK;
    for (int64_t b = 0; st == PG_OK && b < nb; b++) {
        info[b] = 0;
        if (!k)
            continue;
        memcpy(work, mat(a, b, m * nc), (size_t)(m * nc) * es);
        void *u = flag == 2 ? (void *)one : (void *)mat(ut, b, m * uc);
        void *v = flag == 2 ? (void *)one : (void *)mat(vt, b, vr * nc);
        int r = pg_lapack_gesdd(a->dtype, jobz, (int)m, (int)nc, work, mat(st_, b, k), u, v);
        info[b] = r;
        if (r < 0)
            st = rejected(n, r, b);
    }
    free(work);
    return st;
}

/* syevd: w (.., n) ascending, V (.., n, n), from the lower (p.linalg.flag 0) or upper
 * triangle */
static pg_status pg_cpu_linalg_eigh(const pg_node *n)
{
    const pg_tensor *a = &n->src[0], *w = out_k(n, 0), *v = out_k(n, 1);
    int64_t m = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    int64_t *info = info_of(n);
    for (int64_t b = 0; b < nb; b++) {
        info[b] = 0;
        if (!m)
            continue;
        copy_matrix(v, a, b, m * m);
        int r = pg_lapack_syevd(a->dtype, n->p.linalg.flag != 0, (int)m, mat(v, b, m * m),
                                mat(w, b, m));
        info[b] = r;
        if (r < 0)
            return rejected(n, r, b);
    }
    return PG_OK;
}

/* gelsd: X (.., n, k), rank int64 (..), S (.., min(m, n)) for A (.., m, n), B (.., m, k);
 * p.linalg.param: rcond */
static pg_status pg_cpu_linalg_lstsq(const pg_node *n)
{
    const pg_tensor *a = &n->src[0], *rhs = &n->src[1];
    const pg_tensor *x = out_k(n, 0), *rank = out_k(n, 1), *s = out_k(n, 2);
    int64_t m = a->shape[a->ndim - 2], nc = a->shape[a->ndim - 1], nb = batch_count(a, 2);
    int64_t k = rhs->shape[rhs->ndim - 1], mn = m < nc ? m : nc, mx = m > nc ? m : nc;
    size_t es = pg_dtype_size((pg_dtype)a->dtype);
    int64_t *info = info_of(n);
    char *wa = malloc((size_t)(m * nc + mx * k + 1) * es);
    if (!wa)
        return no_memory(n);
    char *wb = wa + m * nc * (int64_t)es;
    pg_status st = PG_OK;
    for (int64_t b = 0; st == PG_OK && b < nb; b++) {
        memcpy(wa, mat(a, b, m * nc), (size_t)(m * nc) * es);
        memset(wb, 0, (size_t)(mx * k) * es);
        memcpy(wb, mat(rhs, b, m * k), (size_t)(m * k) * es);
        int32_t rk = 0;
        int r = (mn && k) ? pg_lapack_gelsd(a->dtype, (int)m, (int)nc, (int)k, wa, wb,
                                            mat(s, b, mn), n->p.linalg.param, &rk)
                          : 0;
        info[b] = r;
        if (r < 0)
            st = rejected(n, r, b);
        memcpy(mat(x, b, nc * k), wb, (size_t)(nc * k) * es);
        ((int64_t *)pg_tensor_data(rank))[b] = rk;
    }
    free(wa);
    return st;
}

/* each LINALG row's function, by its cpu column (pg_subops.def) */
typedef pg_status (*linalg_fn)(const pg_node *);
static const linalg_fn linalg_kernels[PG_NUM_SUBOPS] = {
#define PG_SUBOP_LINALG(ID, name, flags, nsrc, outs, cpu, ...) [PG_LINALG_##ID] = cpu,
#include "../../core/pg_subops.def"
};

pg_status pg_cpu_linalg(const pg_node *n)
{
    linalg_fn fn = n->subop >= 0 && n->subop < PG_NUM_SUBOPS ? linalg_kernels[n->subop] : NULL;
    if (!fn)
        return pg_error_set(PG_ERR_RUNTIME, "linalg: %s is not a LINALG sub-op",
                            pg_subop_id(n->subop));
    if (n->src[0].dtype != PG_FLOAT32 && n->src[0].dtype != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: no CPU kernel for dtype %s", n->name,
                            pg_dtype_name((pg_dtype)n->src[0].dtype));
    return fn(n);
}
