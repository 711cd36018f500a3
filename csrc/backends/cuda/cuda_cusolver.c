/* cuda_cusolver.c - cuSOLVER, loaded on first use, and the LINALG node on it: torch.linalg's
 * factorizations (LU, solve, inverse, Cholesky, QR, SVD, the symmetric eigendecomposition)
 * of each matrix of a batch on the GPU, as PyTorch runs them on cuda.
 *
 * cuSOLVER is not linked: like cuDNN (cuda_cudnn.c), libcusolver is dlopen'ed from the paths
 * Python hands over (pygpu/backends/_cusolver.py: PYGPU_CUSOLVER_LIBRARY, the nvidia-cusolver
 * wheel's lib directory, the toolkit's), when the first LINALG node asks whether cuda runs
 * it (supports_node). Where it cannot be loaded, the backend declines the node and
 * pygpu.linalg moves the operands to the cpu and back, as it does for the sub-ops whose
 * LINALG row has no cuda function (pg_subops.def: LSTSQ, gelsd's rank and singular values).
 *
 * The entry points are declared here from cusolverDn.h's stable C API (the 32-bit `int`
 * routines cusolverDn<S|D><routine> that cuSOLVER 11 and 12 both export), so building
 * needs no cuSOLVER headers. Per node:
 *   - one cusolverDn handle per device, created on first use, bound to the op's stream for
 *     each node under the device's lock (a handle is not safe to share between threads);
 *   - pygpu's matrices are row-major and cuSOLVER's column-major: a row-major matrix is its
 *     transpose column-major, which some routines take as it is (the Cholesky factor of a
 *     symmetric A is read from the other triangle, getrs solves with the transpose, SVD of
 *     A^T swaps U and V) and others through a transposing copy (kernels/linalg.cu);
 *   - workspace (cuSOLVER's, the column-major copies, pivots, devInfo) is stream-ordered
 *     memory (cudaMallocAsync, freed after the node's calls on the same stream), as cuDNN's
 *     workspace is: the plugin has no way into the core's caching allocator, and the
 *     stream-ordered pool caches it instead;
 *   - cuSOLVER's devInfo (int32, per matrix) becomes the node's info output (int64), which
 *     the core reads back after the node to raise PyTorch's error (pg_ops_linalg.c), as
 *     PyTorch synchronizes on cuda's infos. A bad argument is cuSOLVER's status at the call.
 * Each matrix of a batch is one call of each routine, queued in order on the stream. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

typedef struct pg_cusolver_ctx_s *pg_cusolver_handle;
typedef int pg_cusolver_status; /* 0 = CUSOLVER_STATUS_SUCCESS */
enum { CUSOLVER_EIG_MODE_VECTOR = 1 };

/* cusolverStatus_t's names (cusolver_common.h; cuSOLVER has no string function) */
static const char *const STATUS_NAME[] = {
    "CUSOLVER_STATUS_SUCCESS",          "CUSOLVER_STATUS_NOT_INITIALIZED",
    "CUSOLVER_STATUS_ALLOC_FAILED",     "CUSOLVER_STATUS_INVALID_VALUE",
    "CUSOLVER_STATUS_ARCH_MISMATCH",    "CUSOLVER_STATUS_MAPPING_ERROR",
    "CUSOLVER_STATUS_EXECUTION_FAILED", "CUSOLVER_STATUS_INTERNAL_ERROR",
    "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED", "CUSOLVER_STATUS_NOT_SUPPORTED",
};

/* the routines, one signature for float and double (matrices as void *) */
typedef pg_cusolver_status (*potrf_bs_fn)(pg_cusolver_handle, cublasFillMode_t, int, void *, int,
                                          int *);
typedef pg_cusolver_status (*potrf_fn)(pg_cusolver_handle, cublasFillMode_t, int, void *, int,
                                       void *, int, int *);
typedef pg_cusolver_status (*getrf_bs_fn)(pg_cusolver_handle, int, int, void *, int, int *);
typedef pg_cusolver_status (*getrf_fn)(pg_cusolver_handle, int, int, void *, int, void *, int *,
                                       int *);
typedef pg_cusolver_status (*getrs_fn)(pg_cusolver_handle, cublasOperation_t, int, int,
                                       const void *, int, const int *, void *, int, int *);
typedef pg_cusolver_status (*geqrf_bs_fn)(pg_cusolver_handle, int, int, void *, int, int *);
typedef pg_cusolver_status (*geqrf_fn)(pg_cusolver_handle, int, int, void *, int, void *, void *,
                                       int, int *);
typedef pg_cusolver_status (*orgqr_bs_fn)(pg_cusolver_handle, int, int, int, const void *, int,
                                          const void *, int *);
typedef pg_cusolver_status (*orgqr_fn)(pg_cusolver_handle, int, int, int, void *, int,
                                       const void *, void *, int, int *);
typedef pg_cusolver_status (*syevd_bs_fn)(pg_cusolver_handle, int, cublasFillMode_t, int,
                                          const void *, int, const void *, int *);
typedef pg_cusolver_status (*syevd_fn)(pg_cusolver_handle, int, cublasFillMode_t, int, void *,
                                       int, void *, void *, int, int *);
typedef pg_cusolver_status (*gesvd_bs_fn)(pg_cusolver_handle, int, int, int *);
typedef pg_cusolver_status (*gesvd_fn)(pg_cusolver_handle, signed char, signed char, int, int,
                                       void *, int, void *, void *, int, void *, int, void *, int,
                                       void *, int *);

/* per dtype: [0] float32 (cusolverDnS...), [1] float64 (cusolverDnD...) */
typedef struct pg_cusolver_routines {
    potrf_bs_fn potrf_bs;
    potrf_fn potrf;
    getrf_bs_fn getrf_bs;
    getrf_fn getrf;
    getrs_fn getrs;
    geqrf_bs_fn geqrf_bs;
    geqrf_fn geqrf;
    orgqr_bs_fn orgqr_bs;
    orgqr_fn orgqr;
    syevd_bs_fn syevd_bs;
    syevd_fn syevd;
    gesvd_bs_fn gesvd_bs;
    gesvd_fn gesvd;
} pg_cusolver_routines;

/* each routine's field and its name after cusolverDn<S|D> */
static const struct {
    size_t offset;
    const char *name;
} ROUTINE[] = {
#define R(field, name) {offsetof(pg_cusolver_routines, field), name}
    R(potrf_bs, "potrf_bufferSize"), R(potrf, "potrf"), R(getrf_bs, "getrf_bufferSize"),
    R(getrf, "getrf"), R(getrs, "getrs"), R(geqrf_bs, "geqrf_bufferSize"), R(geqrf, "geqrf"),
    R(orgqr_bs, "orgqr_bufferSize"), R(orgqr, "orgqr"), R(syevd_bs, "syevd_bufferSize"),
    R(syevd, "syevd"), R(gesvd_bs, "gesvd_bufferSize"), R(gesvd, "gesvd"),
#undef R
};

static struct {
    pthread_mutex_t lock;
    void *lib;
    int version;
    pg_cusolver_status (*get_version)(int *);
    pg_cusolver_status (*create)(pg_cusolver_handle *);
    pg_cusolver_status (*set_stream)(pg_cusolver_handle, cudaStream_t);
    pg_cusolver_routines r[2];
} pg_cusolver = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* dlopen `path` and resolve every entry point; 0 or a message in why */
int pg_plugin_cusolver_load(const char *path, char *why, size_t len)
{
    pthread_mutex_lock(&pg_cusolver.lock);
    if (pg_cusolver.lib) {
        pthread_mutex_unlock(&pg_cusolver.lock);
        return 0;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, len, "cannot load %s: %s", path, dlerror());
        pthread_mutex_unlock(&pg_cusolver.lock);
        return -1;
    }
    char missing[64] = "";
    *(void **)&pg_cusolver.get_version = dlsym(lib, "cusolverGetVersion");
    *(void **)&pg_cusolver.create = dlsym(lib, "cusolverDnCreate");
    *(void **)&pg_cusolver.set_stream = dlsym(lib, "cusolverDnSetStream");
    if (!pg_cusolver.get_version || !pg_cusolver.create || !pg_cusolver.set_stream)
        snprintf(missing, sizeof missing, "cusolverDnCreate");
    for (int t = 0; t < 2 && !missing[0]; t++)
        for (size_t i = 0; i < sizeof ROUTINE / sizeof *ROUTINE && !missing[0]; i++) {
            char name[64];
            snprintf(name, sizeof name, "cusolverDn%c%s", t ? 'D' : 'S', ROUTINE[i].name);
            void *f = dlsym(lib, name);
            if (!f)
                snprintf(missing, sizeof missing, "%s", name);
            memcpy((char *)&pg_cusolver.r[t] + ROUTINE[i].offset, &f, sizeof f);
        }
    if (missing[0]) {
        snprintf(why, len, "%s has no %s: not a cuSOLVER 11 or 12 library", path, missing);
        dlclose(lib); /* lib stays NULL: nothing reads the pointers resolved so far */
        pthread_mutex_unlock(&pg_cusolver.lock);
        return -1;
    }
    int version = 0;
    if (pg_cusolver.get_version(&version) != 0)
        version = 0;
    pg_cusolver.version = version;
    pg_cusolver.lib = lib;
    pthread_mutex_unlock(&pg_cusolver.lock);
    return 0;
}

int pg_plugin_cusolver_version(void) { return pg_cusolver.lib ? pg_cusolver.version : 0; }

/* The libraries pygpu offered when it loaded the plugin (pygpu/backends/_cusolver.py's
 * candidates), tried once, in order, when the first LINALG node asks: the offer and the one
 * attempt are cuDNN's and cuFFT's (cuda_lazy_library.c). */
static pg_cuda_lazy_library g_offer = PG_CUDA_LAZY_LIBRARY_INIT;

pg_status pg_plugin_cusolver_offer(const char *paths)
{
    pg_cuda_lazy_offer(&g_offer, paths);
    return PG_OK;
}

static bool cusolver_loaded(void) { return pg_cusolver.lib != NULL; }

static bool loaded_on_first_use(void)
{
    return pg_cuda_lazy_load(&g_offer, cusolver_loaded, pg_plugin_cusolver_load);
}

/* ---- the node: one job per LINALG node ------------------------------------------------ */

typedef struct linalg_job {
    pg_cuda_device *d;
    const pg_cuda_ctx *ctx;
    const pg_node *n;
    pg_cusolver_handle h;
    const pg_cusolver_routines *r; /* the node's dtype's routines */
    int dtype;
    size_t es;     /* element size */
    int64_t batch; /* matrices in the batch */
    void *mem[2];  /* stream-ordered scratch: parts, then cuSOLVER's workspace */
} linalg_job;

/* a cuSOLVER status as the node's: `call` the entry point's full name */
static pg_status solver_named(const linalg_job *j, pg_cusolver_status st, const char *call)
{
    if (st == 0)
        return PG_OK;
    const char *what = st > 0 && st < (int)(sizeof STATUS_NAME / sizeof *STATUS_NAME)
                           ? STATUS_NAME[st]
                           : "CUSOLVER_STATUS_?";
    return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: %s: %s failed: %s (cuSOLVER status %d)",
                         j->d->index, j->n->name, call, what, st);
}

/* the same for a routine of the node's dtype (`routine` after cusolverDn<S|D>) */
static pg_status solver(const linalg_job *j, pg_cusolver_status st, const char *routine)
{
    if (st == 0)
        return PG_OK;
    char call[64];
    snprintf(call, sizeof call, "cusolverDn%c%s", j->dtype == PG_FLOAT64 ? 'D' : 'S', routine);
    return solver_named(j, st, call);
}

/* pygpu.profiler's note of the routine about to be queued (a string literal: the log keeps
 * the pointer) */
#define NOTE(j, routine)                                                                         \
    pg_cuda_note_kernel((j)->ctx, (j)->dtype == PG_FLOAT64 ? "cusolverDnD" routine                \
                                                           : "cusolverDnS" routine)

/* output k of the node: dst, then its extras; the last one is info */
static const pg_tensor *out_k(const pg_node *n, int k)
{
    return k == 0 ? &n->dst : &n->extra[k - 1];
}

static char *at(const linalg_job *j, void *base, int64_t b, int64_t count)
{
    return (char *)base + b * count * (int64_t)j->es;
}

/* Scratch of several parts in one stream-ordered block: part i of bytes[i], 256-aligned. */
static pg_status scratch(linalg_job *j, int slot, int nparts, const size_t *bytes, void **parts)
{
    size_t off[8], total = 0;
    for (int i = 0; i < nparts; i++) {
        off[i] = total;
        total += (bytes[i] + 255) & ~(size_t)255;
    }
    PG_TRY(PG_CUDA_RT(cudaMallocAsync(&j->mem[slot], total ? total : 256, j->ctx->stream),
                      j->d->index, j->n->name));
    for (int i = 0; i < nparts; i++)
        parts[i] = (char *)j->mem[slot] + off[i];
    return PG_OK;
}

/* cuSOLVER's workspace of lwork elements */
static pg_status workspace(linalg_job *j, int lwork, void **work)
{
    size_t bytes = (size_t)(lwork > 0 ? lwork : 1) * j->es;
    return scratch(j, 1, 1, &bytes, work);
}

static const int64_t ALL_LO = INT64_MIN, ALL_HI = INT64_MAX;

/* dst (batch, rows, cols), rows di apart, matrices db apart = src at (sb, si, sj) inside the
 * band lo <= j - i <= hi, else 0 (kernels/linalg.cu); src NULL: the identity */
static pg_status band(const linalg_job *j, void *dst, int64_t db, int64_t di, const void *src,
                      int64_t sb, int64_t si, int64_t sj, int64_t rows, int64_t cols, int64_t lo,
                      int64_t hi)
{
    pg_cuda_band_copy a = {j->dtype, j->batch, rows, cols, src, sb, si, sj, dst, db, di, lo, hi};
    return PG_CUDA_KERNEL_STATUS(j->d, j->n, "pg_kernel_band_copy",
                                 pg_kernel_band_copy(j->ctx, &a));
}

/* the row-major (batch, rows, cols) matrices at src, transposed into dst: (batch, cols, rows)
 * row-major, which is src's matrices column-major */
static pg_status transpose(const linalg_job *j, void *dst, int64_t db, const void *src,
                           int64_t sb, int64_t rows, int64_t cols)
{
    return band(j, dst, db, rows, src, sb, 1, cols, cols, rows, ALL_LO, ALL_HI);
}

static pg_status widen(const linalg_job *j, const int32_t *src, const pg_tensor *dst, int64_t n)
{
    int64_t *out = (int64_t *)pg_cuda_tensor_data(dst);
    return PG_CUDA_KERNEL_STATUS(j->d, j->n, "pg_kernel_widen_int32",
                                 pg_kernel_widen_int32(j->ctx, src, out, n));
}

/* devInfo per matrix into the node's info output */
static pg_status infos(const linalg_job *j, const int32_t *info32)
{
    return widen(j, info32, out_k(j->n, j->n->nextra), j->batch);
}

static pg_status copy(const linalg_job *j, void *dst, const void *src, int64_t count)
{
    return PG_CUDA_RT(cudaMemcpyAsync(dst, src, (size_t)count * j->es, cudaMemcpyDeviceToDevice,
                                      j->ctx->stream),
                      j->d->index, j->n->name);
}

static int64_t rows_of(const pg_tensor *t) { return t->shape[t->ndim - 2]; }
static int64_t cols_of(const pg_tensor *t) { return t->shape[t->ndim - 1]; }

/* potrf: L (.., n, n) lower (p.linalg.flag 0) or U upper (1), the other triangle zeroed. A
 * row-major lower triangle is the column-major upper one: lower asks potrf for UPPER. */
static pg_status pg_cuda_linalg_cholesky(linalg_job *j)
{
    const pg_node *n = j->n;
    int upper = n->p.linalg.flag != 0, m = (int)cols_of(&n->src[0]);
    cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
    char *L = pg_cuda_tensor_data(&n->dst);
    size_t bytes = sizeof(int32_t) * (size_t)j->batch;
    int32_t *info;
    int lwork = 0;
    void *work;
    PG_TRY(scratch(j, 0, 1, &bytes, (void **)&info));
    PG_TRY(copy(j, L, pg_cuda_tensor_data(&n->src[0]), j->batch * m * m));
    PG_TRY(solver(j, j->r->potrf_bs(j->h, uplo, m, L, m, &lwork), "potrf_bufferSize"));
    PG_TRY(workspace(j, lwork, &work));
    NOTE(j, "potrf");
    for (int64_t b = 0; b < j->batch; b++)
        PG_TRY(solver(j, j->r->potrf(j->h, uplo, m, at(j, L, b, (int64_t)m * m), m, work, lwork,
                                     info + b),
                      "potrf"));
    PG_TRY(band(j, L, (int64_t)m * m, m, L, (int64_t)m * m, m, 1, m, m, upper ? 0 : ALL_LO,
                upper ? ALL_HI : 0));
    return infos(j, info);
}

/* getrf of the batch's m x m column-major matrices at A, in place (pivots ipiv, m a matrix;
 * info one a matrix), then, where B is not NULL, getrs of op(A) X = B over B's m x k
 * matrices, in place: lu's, solve's and inv's one loop */
static pg_status lu_batch(linalg_job *j, void *A, int m, int32_t *ipiv, int32_t *info,
                          cublasOperation_t trans, void *B, int k, int32_t *info2)
{
    int64_t mm = (int64_t)m * m, mk = (int64_t)m * k;
    int lwork = 0;
    void *work;
    PG_TRY(solver(j, j->r->getrf_bs(j->h, m, m, A, m, &lwork), "getrf_bufferSize"));
    PG_TRY(workspace(j, lwork, &work));
    NOTE(j, "getrf");
    if (B)
        NOTE(j, "getrs");
    for (int64_t b = 0; b < j->batch; b++) {
        PG_TRY(solver(j, j->r->getrf(j->h, m, m, at(j, A, b, mm), m, work, ipiv + b * m,
                                     info + b),
                      "getrf"));
        if (B)
            PG_TRY(solver(j, j->r->getrs(j->h, trans, m, k, at(j, A, b, mm), m, ipiv + b * m,
                                         at(j, B, b, mk), m, info2 + b),
                          "getrs"));
    }
    return PG_OK;
}

/* getrf of A column-major: LU (.., n, n), pivots int64 (.., n) 1-based */
static pg_status pg_cuda_linalg_lu(linalg_job *j)
{
    const pg_node *n = j->n;
    int m = (int)cols_of(&n->src[0]);
    int64_t mm = (int64_t)m * m;
    size_t bytes[3] = {(size_t)(j->batch * mm) * j->es, sizeof(int32_t) * (size_t)(j->batch * m),
                       sizeof(int32_t) * (size_t)j->batch};
    void *p[3];
    PG_TRY(scratch(j, 0, 3, bytes, p));
    int32_t *ipiv = p[1], *info = p[2];
    PG_TRY(transpose(j, p[0], mm, pg_cuda_tensor_data(&n->src[0]), mm, m, m));
    PG_TRY(lu_batch(j, p[0], m, ipiv, info, CUBLAS_OP_N, NULL, 0, NULL));
    PG_TRY(transpose(j, pg_cuda_tensor_data(&n->dst), mm, p[0], mm, m, m));
    PG_TRY(widen(j, ipiv, out_k(n, 1), j->batch * m));
    return infos(j, info);
}

/* getrf + getrs: X (.., n, k) = A^-1 B. A's row-major data is A^T column-major: its factors
 * solve A X = B as getrs's transposed system; B and X cross as their transposes. */
static pg_status pg_cuda_linalg_solve(linalg_job *j)
{
    const pg_node *n = j->n;
    int m = (int)cols_of(&n->src[0]), k = (int)cols_of(&n->src[1]);
    int64_t mm = (int64_t)m * m, mk = (int64_t)m * k;
    size_t bytes[5] = {(size_t)(j->batch * mm) * j->es, (size_t)(j->batch * mk) * j->es,
                       sizeof(int32_t) * (size_t)(j->batch * m), sizeof(int32_t) * (size_t)j->batch,
                       sizeof(int32_t) * (size_t)j->batch};
    void *p[5];
    PG_TRY(scratch(j, 0, 5, bytes, p));
    int32_t *ipiv = p[2], *info = p[3], *info2 = p[4];
    PG_TRY(copy(j, p[0], pg_cuda_tensor_data(&n->src[0]), j->batch * mm));
    PG_TRY(transpose(j, p[1], mk, pg_cuda_tensor_data(&n->src[1]), mk, m, k));
    PG_TRY(lu_batch(j, p[0], m, ipiv, info, CUBLAS_OP_T, p[1], k, info2));
    PG_TRY(transpose(j, pg_cuda_tensor_data(&n->dst), mk, p[1], mk, k, m));
    return infos(j, info);
}

/* getrf + getrs against the identity: A's data is A^T column-major, so the solution read
 * row-major is (A^T)^-1 transposed: A^-1 */
static pg_status pg_cuda_linalg_inv(linalg_job *j)
{
    const pg_node *n = j->n;
    int m = (int)cols_of(&n->src[0]);
    int64_t mm = (int64_t)m * m;
    size_t bytes[4] = {(size_t)(j->batch * mm) * j->es, sizeof(int32_t) * (size_t)(j->batch * m),
                       sizeof(int32_t) * (size_t)j->batch, sizeof(int32_t) * (size_t)j->batch};
    void *p[4];
    PG_TRY(scratch(j, 0, 4, bytes, p));
    int32_t *ipiv = p[1], *info = p[2], *info2 = p[3];
    char *Y = pg_cuda_tensor_data(&n->dst);
    PG_TRY(copy(j, p[0], pg_cuda_tensor_data(&n->src[0]), j->batch * mm));
    PG_TRY(band(j, Y, mm, m, NULL, 0, 0, 0, m, m, ALL_LO, ALL_HI));
    PG_TRY(lu_batch(j, p[0], m, ipiv, info, CUBLAS_OP_N, Y, m, info2));
    return infos(j, info);
}

/* geqrf + orgqr of A column-major: Q (.., m, k or m), R (.., k or m, n); mode
 * (p.linalg.flag) 0 reduced, 1 complete, 2 R only (Q empty). The column-major copy has room
 * for Q's columns (orgqr overwrites it in place). */
static pg_status pg_cuda_linalg_qr(linalg_job *j)
{
    const pg_node *n = j->n;
    int mode = (int)n->p.linalg.flag;
    int m = (int)rows_of(&n->src[0]), nc = (int)cols_of(&n->src[0]), k = m < nc ? m : nc;
    int qc = mode == 1 ? m : k, rr = mode == 1 ? m : k, wc = nc > qc ? nc : qc;
    int64_t per = (int64_t)m * wc;
    size_t bytes[4] = {(size_t)(j->batch * per) * j->es, (size_t)(j->batch * k) * j->es,
                       sizeof(int32_t) * (size_t)j->batch, sizeof(int32_t) * (size_t)j->batch};
    void *p[4], *work;
    int lwork = 0, lwork_q = 0;
    PG_TRY(scratch(j, 0, 4, bytes, p));
    int32_t *info = p[2], *info2 = p[3];
    PG_TRY(transpose(j, p[0], per, pg_cuda_tensor_data(&n->src[0]), (int64_t)m * nc, m, nc));
    PG_TRY(solver(j, j->r->geqrf_bs(j->h, m, nc, p[0], m, &lwork), "geqrf_bufferSize"));
    if (mode != 2)
        PG_TRY(solver(j, j->r->orgqr_bs(j->h, m, qc, k, p[0], m, p[1], &lwork_q),
                      "orgqr_bufferSize"));
    int lw = lwork > lwork_q ? lwork : lwork_q; /* one workspace serves both */
    PG_TRY(workspace(j, lw, &work));
    NOTE(j, "geqrf");
    for (int64_t b = 0; b < j->batch; b++)
        PG_TRY(solver(j, j->r->geqrf(j->h, m, nc, at(j, p[0], b, per), m, at(j, p[1], b, k), work,
                                     lw, info + b),
                      "geqrf"));
    /* R: the upper triangle of the factors, column-major (i, j) at i + j*m */
    PG_TRY(band(j, pg_cuda_tensor_data(out_k(n, 1)), (int64_t)rr * nc, nc, p[0], per, 1, m, rr,
                nc, 0, ALL_HI));
    if (mode != 2) {
        NOTE(j, "orgqr");
        for (int64_t b = 0; b < j->batch; b++)
            PG_TRY(solver(j, j->r->orgqr(j->h, m, qc, k, at(j, p[0], b, per), m, at(j, p[1], b, k),
                                         work, lw, info2 + b),
                          "orgqr"));
        PG_TRY(band(j, pg_cuda_tensor_data(&n->dst), (int64_t)m * qc, qc, p[0], per, 1, m, m, qc,
                    ALL_LO, ALL_HI));
    }
    return infos(j, info);
}

/* gesvd (which takes m >= n): U (.., m, m or k), S (.., k), Vh (.., n or k, n); p.linalg.flag
 * 0 reduced, 1 full, 2 values only (U, Vh empty). A with n >= m goes as its row-major data,
 * A^T column-major (n x m): A^T = U' S V'^T, so U = V' (gesvd's VT, m x m, read row-major) and
 * Vh = U'^T (gesvd's U, n x k or n x n, read row-major), written straight into the outputs.
 * A with m > n is transposed in, and U and V^T transposed out. */
static pg_status pg_cuda_linalg_svd(linalg_job *j)
{
    const pg_node *n = j->n;
    int flag = (int)n->p.linalg.flag;
    int m = (int)rows_of(&n->src[0]), nc = (int)cols_of(&n->src[0]), k = m < nc ? m : nc;
    signed char job = flag == 2 ? 'N' : flag == 1 ? 'A' : 'S';
    int uc = flag == 1 ? m : k;
    bool wide = nc >= m; /* A^T is tall: no transposes */
    int64_t mn = (int64_t)m * nc, ucount = (int64_t)m * uc, vcount = (int64_t)nc * nc;
    size_t bytes[5] = {(size_t)(j->batch * mn) * j->es, (size_t)k * j->es,
                       sizeof(int32_t) * (size_t)j->batch,
                       wide || flag == 2 ? 0 : (size_t)(j->batch * ucount) * j->es,
                       wide || flag == 2 ? 0 : (size_t)(j->batch * vcount) * j->es};
    void *p[5], *work;
    int lwork = 0;
    PG_TRY(scratch(j, 0, 5, bytes, p));
    int32_t *info = p[2];
    const void *A = pg_cuda_tensor_data(&n->src[0]);
    char *S = pg_cuda_tensor_data(out_k(n, 1)), *U = NULL, *Vh = NULL; /* U, Vh: empty for 2 */
    if (flag != 2) {
        U = pg_cuda_tensor_data(&n->dst);
        Vh = pg_cuda_tensor_data(out_k(n, 2));
    }
    int rows = wide ? nc : m, cols = wide ? m : nc;
    if (wide)
        PG_TRY(copy(j, p[0], A, j->batch * mn));
    else
        PG_TRY(transpose(j, p[0], mn, A, mn, m, nc));
    PG_TRY(solver(j, j->r->gesvd_bs(j->h, rows, cols, &lwork), "gesvd_bufferSize"));
    PG_TRY(workspace(j, lwork, &work));
    /* gesvd's U (rows x rows or rows x cols) and VT (cols x cols) for matrix b */
    int64_t u_count = flag == 1 ? (int64_t)rows * rows : (int64_t)rows * cols;
    NOTE(j, "gesvd");
    for (int64_t b = 0; b < j->batch; b++) {
        void *gu = NULL, *gvt = NULL;
        if (flag != 2) {
            gu = wide ? at(j, Vh, b, u_count) : at(j, p[3], b, ucount);
            gvt = wide ? at(j, U, b, (int64_t)m * m) : at(j, p[4], b, vcount);
        }
        PG_TRY(solver(j, j->r->gesvd(j->h, job, job, rows, cols, at(j, p[0], b, mn), rows,
                                     at(j, S, b, k), gu, rows, gvt, cols, work, lwork, p[1],
                                     info + b),
                      "gesvd"));
    }
    if (!wide && flag != 2) {
        PG_TRY(band(j, U, ucount, uc, p[3], ucount, 1, m, m, uc, ALL_LO, ALL_HI));
        PG_TRY(band(j, Vh, vcount, nc, p[4], vcount, 1, nc, nc, nc, ALL_LO, ALL_HI));
    }
    return infos(j, info);
}

/* syevd: w (.., n) ascending, V (.., n, n), from the lower (p.linalg.flag 0) or upper
 * triangle; a row-major triangle is the other one column-major. The eigenvectors come out as
 * columns of a column-major matrix: transposed into V. */
static pg_status pg_cuda_linalg_eigh(linalg_job *j)
{
    const pg_node *n = j->n;
    int m = (int)cols_of(&n->src[0]);
    int64_t mm = (int64_t)m * m;
    cublasFillMode_t uplo = n->p.linalg.flag ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
    size_t bytes[2] = {(size_t)(j->batch * mm) * j->es, sizeof(int32_t) * (size_t)j->batch};
    void *p[2], *work;
    int lwork = 0;
    PG_TRY(scratch(j, 0, 2, bytes, p));
    int32_t *info = p[1];
    char *w = pg_cuda_tensor_data(&n->dst);
    PG_TRY(copy(j, p[0], pg_cuda_tensor_data(&n->src[0]), j->batch * mm));
    PG_TRY(solver(j, j->r->syevd_bs(j->h, CUSOLVER_EIG_MODE_VECTOR, uplo, m, p[0], m, w, &lwork),
                  "syevd_bufferSize"));
    PG_TRY(workspace(j, lwork, &work));
    NOTE(j, "syevd");
    for (int64_t b = 0; b < j->batch; b++)
        PG_TRY(solver(j, j->r->syevd(j->h, CUSOLVER_EIG_MODE_VECTOR, uplo, m, at(j, p[0], b, mm), m,
                                     at(j, w, b, m), work, lwork, info + b),
                      "syevd"));
    PG_TRY(transpose(j, pg_cuda_tensor_data(out_k(n, 1)), mm, p[0], mm, m, m));
    return infos(j, info);
}

/* each LINALG row's function, by its cuda column (pg_subops.def; NO_CUDA: none) */
typedef pg_status (*linalg_fn)(linalg_job *);
#define NO_CUDA NULL
static const linalg_fn linalg_functions[PG_NUM_SUBOPS] = {
#define PG_SUBOP_LINALG(ID, name, flags, nsrc, outs, cpu, cuda, ...) [PG_LINALG_##ID] = cuda,
#include "pg_subops.def"
};
#undef NO_CUDA

static linalg_fn function_of(const pg_node *n)
{
    return n->subop >= 0 && n->subop < PG_NUM_SUBOPS ? linalg_functions[n->subop] : NULL;
}

/* supports_node's rule for LINALG: the sub-op's row has a cuda function, cuSOLVER is loaded
 * (on this first question), and every matrix dimension is one cuSOLVER's int takes; an empty
 * matrix goes to the cpu, whose LAPACK wrappers define its results. */
bool pg_cuda_linalg_runs(const pg_node *n)
{
    if (!function_of(n) || (n->src[0].dtype != PG_FLOAT32 && n->src[0].dtype != PG_FLOAT64))
        return false;
    for (int i = 0; i < n->nsrc; i++) {
        const pg_tensor *t = &n->src[i];
        if (t->ndim < 2)
            return false;
        for (int a = t->ndim - 2; a < t->ndim; a++)
            if (t->shape[a] < 1 || t->shape[a] > 46340) /* n*n, cuSOLVER's lda*n, in an int */
                return false;
    }
    return loaded_on_first_use();
}

static pg_cusolver_handle g_handles[PG_MAX_DEVICES_PER_TYPE];
static pthread_mutex_t g_handle_lock[PG_MAX_DEVICES_PER_TYPE];
static pthread_once_t g_handle_once = PTHREAD_ONCE_INIT;
static void handle_locks_init(void)
{
    for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++)
        pthread_mutex_init(&g_handle_lock[i], NULL);
}

pg_status pg_cuda_launch_linalg(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    linalg_fn fn = function_of(n);
    if (!fn)
        return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: %s: cuSOLVER has no routine for this "
                                             "sub-op (its LINALG row's cuda column is NO_CUDA)",
                             d->index, n->name);
    if (!pg_cusolver.lib)
        return pg_cuda_error(PG_ERR_UNAVAILABLE, "cuda:%d: %s: cuSOLVER is not loaded (pygpu "
                                                 "loads it on a factorization's first use: pip "
                                                 "install nvidia-cusolver)", d->index, n->name);
    if (n->src[0].dtype != PG_FLOAT32 && n->src[0].dtype != PG_FLOAT64)
        return pg_cuda_error(PG_ERR_DTYPE, "cuda:%d: %s: cuSOLVER runs float32 and float64 only "
                                           "(dtype code %d)", d->index, n->name, n->src[0].dtype);
    linalg_job j = {d, ctx, n, NULL, &pg_cusolver.r[n->src[0].dtype == PG_FLOAT64],
                    n->src[0].dtype, pg_cuda_itemsize(n->src[0].dtype), 1, {NULL, NULL}};
    for (int i = 0; i < n->src[0].ndim - 2; i++)
        j.batch *= n->src[0].shape[i];
    if (j.batch == 0)
        return PG_OK;
    pthread_once(&g_handle_once, handle_locks_init);
    pthread_mutex_lock(&g_handle_lock[d->index]);
    pg_status st = PG_OK;
    if (!g_handles[d->index])
        st = solver_named(&j, pg_cusolver.create(&g_handles[d->index]), "cusolverDnCreate");
    j.h = g_handles[d->index];
    if (st == PG_OK)
        st = solver_named(&j, pg_cusolver.set_stream(j.h, ctx->stream), "cusolverDnSetStream");
    if (st == PG_OK)
        st = fn(&j);
    for (int i = 0; i < 2; i++)
        if (j.mem[i] && cudaFreeAsync(j.mem[i], ctx->stream) != cudaSuccess && st == PG_OK)
            st = PG_CUDA_RT(cudaGetLastError(), d->index, n->name);
    pthread_mutex_unlock(&g_handle_lock[d->index]);
    return st;
}
