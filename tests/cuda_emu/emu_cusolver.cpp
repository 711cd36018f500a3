/* emu_cusolver.cpp - a CPU stand-in for the cuSOLVER calls the plugin makes (the dense
 * routines of csrc/backends/cuda/cuda_cusolver.c: potrf, getrf, getrs, geqrf, orgqr, syevd,
 * gesvd, their bufferSize queries, handle and stream), exported under cuSOLVER's names:
 * PYGPU_CUSOLVER_LIBRARY set to the emulated plugin's path makes pygpu load it.
 *
 * It checks what cuSOLVER documents and returns its status codes: NOT_INITIALIZED for a null
 * handle; INVALID_VALUE for a fill mode, operation, job or eig mode outside the enum, a
 * negative dimension, a leading dimension below max(1, rows), orgqr's n > m or k > n, gesvd
 * with m < n (cuSOLVER's gesvd takes tall matrices only), a null devInfo, a workspace
 * smaller than the bufferSize query answered (Lwork) or missing. Every column-major matrix
 * it reads or writes lies within lda * cols of its pointer, so a wrong lda or a short buffer
 * shows as wrong numbers (and to ASan). Each call is queued on the handle's stream and
 * writes LAPACK's devInfo per matrix (0; > 0 the routine's own failure: a non-positive minor,
 * a zero pivot, no convergence). The workspace is filled with NaN before each routine runs,
 * so a plugin that reads results from it, or lets it alias an operand, computes NaN.
 *
 * The arithmetic is a plain host implementation in double, independent of the LAPACK the CPU
 * backend calls: Cholesky-Banachiewicz, LU with partial pivoting (LAPACK's dgetf2: the first
 * largest pivot, a zero pivot recorded and skipped), Householder QR with LAPACK's reflector
 * convention (dlarfg, dorg2r), cyclic Jacobi for syevd, one-sided Jacobi (Hestenes) for gesvd
 * with U completed by Gram-Schmidt where a singular value is zero or 'A' asks for all of U.
 * A test device: accurate, not fast. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include <cublas_v2.h>

#include "emu_internal.h"

#define PG_CUSOLVER_API extern "C" __attribute__((visibility("default")))

typedef int cusolverStatus_t;
enum {
    CUSOLVER_STATUS_SUCCESS = 0,
    CUSOLVER_STATUS_NOT_INITIALIZED = 1,
    CUSOLVER_STATUS_INVALID_VALUE = 3,
    CUSOLVER_STATUS_NOT_SUPPORTED = 9,
};
enum { EIG_NOVECTOR = 0, EIG_VECTOR = 1 };

struct cusolverDnContext {
    cudaStream_t stream = nullptr;
};
typedef cusolverDnContext *cusolverDnHandle_t;

namespace {

/* a column-major matrix of T at p, leading dimension ld, read and written in double */
template <typename T> struct Mat {
    T *p;
    int ld;
    double get(int i, int j) const { return (double)p[(int64_t)j * ld + i]; }
    void set(int i, int j, double v) const { p[(int64_t)j * ld + i] = (T)v; }
};

/* a dense double matrix, column-major, for the work of one routine */
struct Dense {
    int m, n;
    std::vector<double> a;
    Dense(int m_, int n_) : m(m_), n(n_), a((size_t)m_ * n_, 0.0) {}
    double &operator()(int i, int j) { return a[(size_t)j * m + i]; }
};

/* the m x n matrix at a, in double, and back: the routines that work on a copy */
template <typename T> Dense read(const Mat<T> &a, int m, int n)
{
    Dense D(m, n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            D(i, j) = a.get(i, j);
    return D;
}
template <typename T> void write(const Mat<T> &a, Dense &D)
{
    for (int j = 0; j < D.n; j++)
        for (int i = 0; i < D.m; i++)
            a.set(i, j, D(i, j));
}

bool fill_ok(cublasFillMode_t u)
{
    return u == CUBLAS_FILL_MODE_LOWER || u == CUBLAS_FILL_MODE_UPPER;
}
int lead(int rows) { return rows > 1 ? rows : 1; }

/* workspace sizes (elements) the bufferSize queries answer: enough to hold one column or
 * more, so that the plugin's workspace path runs and a short one is caught */
int potrf_lwork(int n) { return 2 * lead(n); }
int getrf_lwork(int m, int n) { return lead(m) + lead(n); }
int geqrf_lwork(int n) { return 4 * lead(n); }
int orgqr_lwork(int n) { return 4 * lead(n); }
int syevd_lwork(int n) { return 1 + 6 * n + 2 * n * n; }
int gesvd_lwork(int m, int n) { return 5 * lead(m > n ? m : n); }

/* The argument checks, written once: each routine's shape check (its enums, dimensions and
 * leading dimensions) serves both its bufferSize query and the routine, and `checked` turns
 * a check into cuSOLVER's status in cuSOLVER's order (a null handle first). */
cusolverStatus_t checked(cusolverDnHandle_t h, bool ok)
{
    if (!h)
        return CUSOLVER_STATUS_NOT_INITIALIZED;
    return ok ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_INVALID_VALUE;
}
/* a routine's workspace: present and at least what its bufferSize query answered */
bool work_ok(const void *work, int lwork, int need) { return work && lwork >= need; }

bool potrf_shape_ok(cublasFillMode_t uplo, int n, int lda)
{
    return fill_ok(uplo) && n >= 0 && lda >= lead(n);
}
/* getrf's and geqrf's: an m x n matrix */
bool general_shape_ok(int m, int n, int lda) { return m >= 0 && n >= 0 && lda >= lead(m); }
bool orgqr_shape_ok(int m, int n, int k, int lda)
{
    return general_shape_ok(m, n, lda) && n <= m && k >= 0 && k <= n;
}
bool syevd_shape_ok(int jobz, cublasFillMode_t uplo, int n, int lda)
{
    return (jobz == EIG_NOVECTOR || jobz == EIG_VECTOR) && potrf_shape_ok(uplo, n, lda);
}
/* cuSOLVER's gesvd takes tall matrices only */
bool gesvd_shape_ok(int m, int n) { return m >= 0 && n >= 0 && m >= n; }

/* M J and J^T M for the Jacobi rotation J in the (p, q) plane (syevd's and gesvd's sweeps) */
void rotate_columns(Dense &M, int p, int q, double c, double s)
{
    for (int i = 0; i < M.m; i++) {
        double mp = M(i, p), mq = M(i, q);
        M(i, p) = c * mp - s * mq;
        M(i, q) = s * mp + c * mq;
    }
}
void rotate_rows(Dense &M, int p, int q, double c, double s)
{
    for (int j = 0; j < M.n; j++) {
        double mp = M(p, j), mq = M(q, j);
        M(p, j) = c * mp - s * mq;
        M(q, j) = s * mp + c * mq;
    }
}

template <typename T> void poison(T *work, int lwork)
{
    for (int i = 0; i < lwork; i++)
        work[i] = std::numeric_limits<T>::quiet_NaN();
}

/* Runs the routine on the handle's stream after the checks passed. */
template <class F> cusolverStatus_t queue(cusolverDnHandle_t h, F f)
{
    pg_emu_enqueue(h->stream, std::function<void()>(f));
    return CUSOLVER_STATUS_SUCCESS;
}

/* ---- potrf: A = L L^T (lower) or U^T U (upper), from the uplo triangle ------------------ */
template <typename T>
cusolverStatus_t potrf(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T *A, int lda, T *work,
                       int lwork, int *info)
{
    if (cusolverStatus_t st = checked(h, potrf_shape_ok(uplo, n, lda) && info && (n == 0 || A) &&
                                             work_ok(work, lwork, potrf_lwork(n))))
        return st;
    return queue(h, [=] {
        poison(work, lwork);
        Mat<T> a{A, lda};
        bool lower = uplo == CUBLAS_FILL_MODE_LOWER;
        Dense L(n, n);
        int bad = 0;
        for (int j = 0; j < n && !bad; j++) {
            double d = a.get(j, j);
            for (int k = 0; k < j; k++)
                d -= L(j, k) * L(j, k);
            if (!(d > 0)) {
                bad = j + 1;
                break;
            }
            L(j, j) = sqrt(d);
            for (int i = j + 1; i < n; i++) {
                double s = lower ? a.get(i, j) : a.get(j, i);
                for (int k = 0; k < j; k++)
                    s -= L(i, k) * L(j, k);
                L(i, j) = s / L(j, j);
            }
        }
        int done = bad ? bad - 1 : n; /* the columns factored; the rest stay as they were */
        for (int j = 0; j < done; j++)
            for (int i = j; i < n; i++) {
                if (lower)
                    a.set(i, j, L(i, j));
                else
                    a.set(j, i, L(i, j));
            }
        *info = bad;
    });
}

/* ---- getrf: P A = L U, partial pivoting (LAPACK's dgetf2); ipiv NULL: no pivoting ------ */
template <typename T>
cusolverStatus_t getrf(cusolverDnHandle_t h, int m, int n, T *A, int lda, T *work, int *ipiv,
                       int *info)
{
    if (cusolverStatus_t st = checked(h, general_shape_ok(m, n, lda) && info && work &&
                                             (m == 0 || n == 0 || A)))
        return st;
    int lwork = getrf_lwork(m, n);
    return queue(h, [=] {
        poison(work, lwork);
        Mat<T> a{A, lda};
        Dense D = read(a, m, n);
        int bad = 0, k = m < n ? m : n;
        for (int j = 0; j < k; j++) {
            int p = j;
            if (ipiv) {
                for (int i = j + 1; i < m; i++)
                    if (fabs(D(i, j)) > fabs(D(p, j)))
                        p = i;
                ipiv[j] = p + 1;
            }
            if (D(p, j) != 0) {
                if (p != j)
                    for (int c = 0; c < n; c++)
                        std::swap(D(j, c), D(p, c));
                for (int i = j + 1; i < m; i++)
                    D(i, j) /= D(j, j);
            } else if (!bad) {
                bad = j + 1;
            }
            for (int c = j + 1; c < n; c++)
                for (int i = j + 1; i < m; i++)
                    D(i, c) -= D(i, j) * D(j, c);
        }
        write(a, D);
        *info = bad;
    });
}

/* ---- getrs: op(A) X = B with getrf's factors ------------------------------------------- */
template <typename T>
cusolverStatus_t getrs(cusolverDnHandle_t h, cublasOperation_t trans, int n, int nrhs, const T *A,
                       int lda, const int *ipiv, T *B, int ldb, int *info)
{
    bool op_ok = trans == CUBLAS_OP_N || trans == CUBLAS_OP_T || trans == CUBLAS_OP_C;
    if (cusolverStatus_t st = checked(h, op_ok && general_shape_ok(n, nrhs, lda) &&
                                             ldb >= lead(n) && info && (n == 0 || (A && B))))
        return st;
    return queue(h, [=] {
        Mat<T> a{(T *)A, lda}, b{B, ldb};
        for (int c = 0; c < nrhs; c++) {
            std::vector<double> x(n);
            for (int i = 0; i < n; i++)
                x[i] = b.get(i, c);
            if (trans == CUBLAS_OP_N) { /* P A = L U: x = U^-1 L^-1 P b */
                for (int i = 0; ipiv && i < n; i++)
                    std::swap(x[i], x[ipiv[i] - 1]);
                for (int i = 0; i < n; i++)
                    for (int k = 0; k < i; k++)
                        x[i] -= a.get(i, k) * x[k];
                for (int i = n - 1; i >= 0; i--) {
                    for (int k = i + 1; k < n; k++)
                        x[i] -= a.get(i, k) * x[k];
                    x[i] /= a.get(i, i);
                }
            } else { /* A^T = U^T L^T P: x = P^T L^-T U^-T b */
                for (int i = 0; i < n; i++) {
                    for (int k = 0; k < i; k++)
                        x[i] -= a.get(k, i) * x[k];
                    x[i] /= a.get(i, i);
                }
                for (int i = n - 1; i >= 0; i--)
                    for (int k = i + 1; k < n; k++)
                        x[i] -= a.get(k, i) * x[k];
                for (int i = n - 1; ipiv && i >= 0; i--)
                    std::swap(x[i], x[ipiv[i] - 1]);
            }
            for (int i = 0; i < n; i++)
                b.set(i, c, x[i]);
        }
        *info = 0;
    });
}

/* ---- geqrf / orgqr: Householder QR, LAPACK's reflectors H = I - tau v v^T, v(0) = 1 ---- */

/* dlarfg on x (len), alpha = x[0]: tau, and x becomes (beta, v(1:)) */
double reflector(double *x, int len)
{
    double xn = 0;
    for (int i = 1; i < len; i++)
        xn = hypot(xn, x[i]);
    if (xn == 0)
        return 0;
    double alpha = x[0], beta = -copysign(hypot(alpha, xn), alpha);
    double tau = (beta - alpha) / beta, scale = 1 / (alpha - beta);
    for (int i = 1; i < len; i++)
        x[i] *= scale;
    x[0] = beta;
    return tau;
}

/* H(v, tau) applied from the left to columns [c0, n) of D, rows [r0, m); v(r0) = 1 */
void apply_left(Dense &D, const std::vector<double> &v, int r0, double tau, int c0)
{
    if (tau == 0)
        return;
    for (int c = c0; c < D.n; c++) {
        double s = 0;
        for (int i = r0; i < D.m; i++)
            s += v[i] * D(i, c);
        s *= tau;
        for (int i = r0; i < D.m; i++)
            D(i, c) -= s * v[i];
    }
}

template <typename T>
cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, T *A, int lda, T *tau, T *work,
                       int lwork, int *info)
{
    if (cusolverStatus_t st = checked(h, general_shape_ok(m, n, lda) && info &&
                                             work_ok(work, lwork, geqrf_lwork(n)) &&
                                             (m == 0 || n == 0 || (A && tau))))
        return st;
    return queue(h, [=] {
        poison(work, lwork);
        Mat<T> a{A, lda};
        Dense D = read(a, m, n);
        int k = m < n ? m : n;
        std::vector<double> col(m), v(m);
        for (int j = 0; j < k; j++) {
            for (int i = j; i < m; i++)
                col[i] = D(i, j);
            double t = reflector(&col[j], m - j);
            v.assign(m, 0);
            v[j] = 1;
            for (int i = j + 1; i < m; i++)
                v[i] = col[i];
            apply_left(D, v, j, t, j + 1);
            D(j, j) = col[j];
            for (int i = j + 1; i < m; i++)
                D(i, j) = col[i];
            tau[j] = (T)t;
        }
        write(a, D);
        *info = 0;
    });
}

template <typename T>
cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, T *A, int lda, const T *tau,
                       T *work, int lwork, int *info)
{
    if (cusolverStatus_t st = checked(h, orgqr_shape_ok(m, n, k, lda) && info &&
                                             work_ok(work, lwork, orgqr_lwork(n)) &&
                                             (n == 0 || A) && (k == 0 || tau)))
        return st;
    return queue(h, [=] {
        poison(work, lwork);
        Mat<T> a{A, lda};
        /* dorg2r: Q = H(0) ... H(k-1) applied to the first n columns of I */
        Dense Q(m, n);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++)
                Q(i, j) = j < k ? a.get(i, j) : (i == j ? 1.0 : 0.0);
        std::vector<double> v(m);
        for (int i = k - 1; i >= 0; i--) {
            double t = (double)tau[i];
            if (i < n - 1) {
                v.assign(m, 0);
                v[i] = 1;
                for (int r = i + 1; r < m; r++)
                    v[r] = Q(r, i);
                apply_left(Q, v, i, t, i + 1);
            }
            for (int r = i + 1; r < m; r++)
                Q(r, i) *= -t;
            Q(i, i) = 1 - t;
            for (int r = 0; r < i; r++)
                Q(r, i) = 0;
        }
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++)
                a.set(i, j, Q(i, j));
        *info = 0;
    });
}

/* ---- syevd: cyclic Jacobi, eigenvalues ascending, vectors as columns ------------------- */
template <typename T>
cusolverStatus_t syevd(cusolverDnHandle_t h, int jobz, cublasFillMode_t uplo, int n, T *A, int lda,
                       T *W, T *work, int lwork, int *info)
{
    if (cusolverStatus_t st = checked(h, syevd_shape_ok(jobz, uplo, n, lda) && info &&
                                             work_ok(work, lwork, syevd_lwork(n)) &&
                                             (n == 0 || (A && W))))
        return st;
    return queue(h, [=] {
        poison(work, lwork);
        Mat<T> a{A, lda};
        bool lower = uplo == CUBLAS_FILL_MODE_LOWER;
        Dense S(n, n), V(n, n);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                bool mine = lower ? i >= j : i <= j; /* the triangle read */
                S(i, j) = mine ? a.get(i, j) : a.get(j, i);
                V(i, j) = i == j;
            }
        double norm = 0;
        for (double x : S.a)
            norm += x * x;
        int sweep = 0, converged = n < 2;
        for (; sweep < 100 && !converged; sweep++) {
            double off = 0;
            for (int q = 0; q < n; q++)
                for (int p = 0; p < q; p++)
                    off += 2 * S(p, q) * S(p, q);
            if (off <= 1e-30 * norm) { /* off-diagonal below 1e-15 of the norm */
                converged = 1;
                break;
            }
            for (int p = 0; p < n - 1; p++)
                for (int q = p + 1; q < n; q++) {
                    double apq = S(p, q);
                    if (fabs(apq) < 1e-300)
                        continue;
                    double theta = (S(q, q) - S(p, p)) / (2 * apq);
                    double t = copysign(1.0, theta) / (fabs(theta) + sqrt(theta * theta + 1));
                    double c = 1 / sqrt(t * t + 1), s = t * c;
                    rotate_columns(S, p, q, c, s); /* S = J^T S J */
                    rotate_rows(S, p, q, c, s);
                    rotate_columns(V, p, q, c, s);
                }
        }
        std::vector<int> order(n);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int x, int y) { return S(x, x) < S(y, y); });
        for (int j = 0; j < n; j++) {
            W[j] = (T)S(order[j], order[j]);
            for (int i = 0; i < n; i++)
                a.set(i, j, jobz == EIG_VECTOR ? V(i, order[j]) : 0.0);
        }
        *info = converged ? 0 : n + 1;
    });
}

/* ---- gesvd: one-sided Jacobi on a tall A (m >= n) --------------------------------------- */

/* column j of U made a unit vector orthogonal to columns [0, j), taken from the
 * standard basis: where a singular value is zero, or 'A' asks for more columns than A has */
void complete(Dense &U, int j)
{
    for (int e = 0; e < U.m; e++) {
        std::vector<double> x(U.m, 0);
        x[e] = 1;
        for (int pass = 0; pass < 2; pass++)
            for (int c = 0; c < j; c++) {
                double d = 0;
                for (int i = 0; i < U.m; i++)
                    d += U(i, c) * x[i];
                for (int i = 0; i < U.m; i++)
                    x[i] -= d * U(i, c);
            }
        double nx = 0;
        for (double v : x)
            nx = hypot(nx, v);
        if (nx > 0.5) { /* far from the span so far */
            for (int i = 0; i < U.m; i++)
                U(i, j) = x[i] / nx;
            return;
        }
    }
}

bool job_ok(signed char j) { return j == 'A' || j == 'S' || j == 'N' || j == 'O'; }

template <typename T>
cusolverStatus_t gesvd(cusolverDnHandle_t h, signed char jobu, signed char jobvt, int m, int n,
                       T *A, int lda, T *S, T *U, int ldu, T *VT, int ldvt, T *work, int lwork,
                       T *rwork, int *info)
{
    (void)rwork;
    if (cusolverStatus_t st = checked(h, job_ok(jobu) && job_ok(jobvt) && gesvd_shape_ok(m, n) &&
                                             lda >= lead(m) && info &&
                                             work_ok(work, lwork, gesvd_lwork(m, n)) &&
                                             (m == 0 || n == 0 || (A && S))))
        return st;
    if (jobu == 'O' || jobvt == 'O')
        return CUSOLVER_STATUS_NOT_SUPPORTED; /* the stand-in computes into U and VT only */
    bool wantu = jobu != 'N', wantv = jobvt != 'N';
    if ((wantu && (ldu < lead(m) || !U)) || (wantv && (ldvt < lead(n) || !VT)))
        return CUSOLVER_STATUS_INVALID_VALUE;
    return queue(h, [=] {
        poison(work, lwork);
        Mat<T> a{A, lda};
        Dense Wm = read(a, m, n), V(n, n);
        for (int j = 0; j < n; j++)
            V(j, j) = 1;
        bool rotated = true;
        int sweep = 0;
        for (; sweep < 80 && rotated; sweep++) {
            rotated = false;
            for (int p = 0; p < n - 1; p++)
                for (int q = p + 1; q < n; q++) {
                    double al = 0, be = 0, ga = 0;
                    for (int i = 0; i < m; i++) {
                        al += Wm(i, p) * Wm(i, p);
                        be += Wm(i, q) * Wm(i, q);
                        ga += Wm(i, p) * Wm(i, q);
                    }
                    if (ga == 0 || fabs(ga) <= 1e-15 * sqrt(al * be))
                        continue;
                    rotated = true;
                    double zeta = (be - al) / (2 * ga);
                    double t = copysign(1.0, zeta) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                    double c = 1 / sqrt(1 + t * t), s = c * t;
                    rotate_columns(Wm, p, q, c, s);
                    rotate_columns(V, p, q, c, s);
                }
        }
        std::vector<double> sig(n);
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int i = 0; i < m; i++)
                s = hypot(s, Wm(i, j));
            sig[j] = s;
        }
        std::vector<int> order(n);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return sig[x] > sig[y]; });
        double top = n ? sig[order[0]] : 0;
        int ucols = jobu == 'A' ? m : n;
        Dense Uo(m, ucols);
        for (int j = 0; j < n; j++) {
            int c = order[j];
            S[j] = (T)sig[c];
            if (sig[c] > 0 && sig[c] > 2.3e-16 * top)
                for (int i = 0; i < m; i++)
                    Uo(i, j) = Wm(i, c) / sig[c];
            else
                complete(Uo, j);
        }
        for (int j = n; j < ucols; j++)
            complete(Uo, j);
        if (wantu) {
            Mat<T> u{U, ldu};
            for (int j = 0; j < ucols; j++)
                for (int i = 0; i < m; i++)
                    u.set(i, j, Uo(i, j));
        }
        if (wantv) {
            Mat<T> vt{VT, ldvt};
            for (int r = 0; r < n; r++)
                for (int c = 0; c < n; c++)
                    vt.set(r, c, V(c, order[r]));
        }
        *info = rotated ? n : 0; /* LAPACK: superdiagonals that did not converge */
    });
}

/* a bufferSize query: the routine's shape check, then the size it answers */
cusolverStatus_t lwork_out(cusolverDnHandle_t h, bool shape_ok, int *lwork, int v)
{
    cusolverStatus_t st = checked(h, shape_ok && lwork);
    if (st == CUSOLVER_STATUS_SUCCESS)
        *lwork = v;
    return st;
}

} // namespace

PG_CUSOLVER_API cusolverStatus_t cusolverGetVersion(int *version)
{
    if (!version)
        return CUSOLVER_STATUS_INVALID_VALUE;
    *version = 12000; /* the stand-in claims cuSOLVER 12.0.0 (CUDA 13) */
    return CUSOLVER_STATUS_SUCCESS;
}

PG_CUSOLVER_API cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t *h)
{
    if (!h)
        return CUSOLVER_STATUS_INVALID_VALUE;
    *h = new cusolverDnContext();
    return CUSOLVER_STATUS_SUCCESS;
}

PG_CUSOLVER_API cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t h)
{
    if (!h)
        return CUSOLVER_STATUS_NOT_INITIALIZED;
    delete h;
    return CUSOLVER_STATUS_SUCCESS;
}

PG_CUSOLVER_API cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t h, cudaStream_t s)
{
    if (!h)
        return CUSOLVER_STATUS_NOT_INITIALIZED;
    h->stream = s;
    return CUSOLVER_STATUS_SUCCESS;
}

/* the S (float) and D (double) entry points over the templates above */
#define PG_CUSOLVER_TYPED(X, T)                                                                    \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##potrf_bufferSize(                              \
        cusolverDnHandle_t h, cublasFillMode_t uplo, int n, T *A, int lda, int *lwork)             \
    {                                                                                              \
        (void)A;                                                                                   \
        return lwork_out(h, potrf_shape_ok(uplo, n, lda), lwork, potrf_lwork(n));                  \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##potrf(cusolverDnHandle_t h,                    \
                                                          cublasFillMode_t uplo, int n, T *A,      \
                                                          int lda, T *work, int lwork, int *info)  \
    {                                                                                              \
        return potrf<T>(h, uplo, n, A, lda, work, lwork, info);                                    \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##getrf_bufferSize(cusolverDnHandle_t h, int m,  \
                                                                     int n, T *A, int lda,         \
                                                                     int *lwork)                   \
    {                                                                                              \
        (void)A;                                                                                   \
        return lwork_out(h, general_shape_ok(m, n, lda), lwork, getrf_lwork(m, n));                \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##getrf(cusolverDnHandle_t h, int m, int n,      \
                                                          T *A, int lda, T *work, int *ipiv,       \
                                                          int *info)                               \
    {                                                                                              \
        return getrf<T>(h, m, n, A, lda, work, ipiv, info);                                        \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##getrs(                                         \
        cusolverDnHandle_t h, cublasOperation_t trans, int n, int nrhs, const T *A, int lda,       \
        const int *ipiv, T *B, int ldb, int *info)                                                 \
    {                                                                                              \
        return getrs<T>(h, trans, n, nrhs, A, lda, ipiv, B, ldb, info);                            \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##geqrf_bufferSize(cusolverDnHandle_t h, int m,  \
                                                                     int n, T *A, int lda,         \
                                                                     int *lwork)                   \
    {                                                                                              \
        (void)A;                                                                                   \
        return lwork_out(h, general_shape_ok(m, n, lda), lwork, geqrf_lwork(n));                   \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##geqrf(cusolverDnHandle_t h, int m, int n,      \
                                                          T *A, int lda, T *tau, T *work,          \
                                                          int lwork, int *info)                    \
    {                                                                                              \
        return geqrf<T>(h, m, n, A, lda, tau, work, lwork, info);                                  \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##orgqr_bufferSize(                              \
        cusolverDnHandle_t h, int m, int n, int k, const T *A, int lda, const T *tau, int *lwork)  \
    {                                                                                              \
        (void)A, (void)tau;                                                                        \
        return lwork_out(h, orgqr_shape_ok(m, n, k, lda), lwork, orgqr_lwork(n));                  \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##orgqr(cusolverDnHandle_t h, int m, int n,      \
                                                          int k, T *A, int lda, const T *tau,      \
                                                          T *work, int lwork, int *info)           \
    {                                                                                              \
        return orgqr<T>(h, m, n, k, A, lda, tau, work, lwork, info);                               \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##syevd_bufferSize(                              \
        cusolverDnHandle_t h, int jobz, cublasFillMode_t uplo, int n, const T *A, int lda,         \
        const T *W, int *lwork)                                                                    \
    {                                                                                              \
        (void)A, (void)W;                                                                          \
        return lwork_out(h, syevd_shape_ok(jobz, uplo, n, lda), lwork, syevd_lwork(n));            \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##syevd(cusolverDnHandle_t h, int jobz,          \
                                                          cublasFillMode_t uplo, int n, T *A,      \
                                                          int lda, T *W, T *work, int lwork,       \
                                                          int *info)                               \
    {                                                                                              \
        return syevd<T>(h, jobz, uplo, n, A, lda, W, work, lwork, info);                           \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##gesvd_bufferSize(cusolverDnHandle_t h, int m,  \
                                                                     int n, int *lwork)            \
    {                                                                                              \
        return lwork_out(h, gesvd_shape_ok(m, n), lwork, gesvd_lwork(m, n));                       \
    }                                                                                              \
    PG_CUSOLVER_API cusolverStatus_t cusolverDn##X##gesvd(                                         \
        cusolverDnHandle_t h, signed char jobu, signed char jobvt, int m, int n, T *A, int lda,    \
        T *S, T *U, int ldu, T *VT, int ldvt, T *work, int lwork, T *rwork, int *info)             \
    {                                                                                              \
        return gesvd<T>(h, jobu, jobvt, m, n, A, lda, S, U, ldu, VT, ldvt, work, lwork, rwork,     \
                        info);                                                                     \
    }

PG_CUSOLVER_TYPED(S, float)
PG_CUSOLVER_TYPED(D, double)
