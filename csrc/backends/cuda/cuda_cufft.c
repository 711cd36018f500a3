/* cuda_cufft.c - cuFFT, loaded on first use, and the FFT node on it (a 1-D transform of
 * every line along the last axis: csrc/core/pg_ops_fft.c shapes it, pg_subops.def's FFT rows
 * name the sub-ops; the CPU twin is csrc/backends/cpu/cpu_fft.c).
 *
 * cuFFT is not linked: like cuDNN (cuda_cudnn.c), libcufft is dlopen'ed from the paths Python
 * offers (pygpu/backends/_cufft.py: PYGPU_CUFFT_LIBRARY, the nvidia-cufft wheel's lib
 * directory, the toolkit's), tried once when the first FFT node asks (supports_node,
 * cuda_lazy_library.c). Where none loads, supports_node declines the node and pygpu/fft moves
 * a cuda operand to the cpu and back (counted transfers), as before cuFFT. The few entry
 * points are declared here from cufft.h's C ABI (a plan is an int, the types and statuses
 * are fixed values), so building needs no cuFFT headers.
 *
 * Per node: one plan per (device, stream, sub-op, precision, n, batch, strides), made by
 * cufftPlanMany once and kept in a small cache (the least recently used one destroyed when it
 * is full), bound to the node's stream by cufftSetStream and run by the sub-op's cufftExec*
 * (its row's cufft column names C2C/Z2Z, R2C/D2Z, C2R/Z2D). A plan is per stream because its
 * work area is: two streams never share one. cuFFT does not scale, and its real transforms
 * have one direction each, so what the CPU's pocketfft gets from its arguments is done here
 * by kernels/fft.cu's pg_kernel_fft_scale, on the same stream:
 *   - the norm's factor p.fft.fct multiplies the result (skipped when it is 1);
 *   - R2C backward (ihfft's sign +1) conjugates the forward result;
 *   - C2R forward (hfft's sign -1) reads the conjugate of its input.
 * cuFFT's C2R overwrites its input, which may be the caller's tensor, so C2R runs from a
 * stream-ordered copy (cudaMallocAsync, freed after the call on the same stream). Like the
 * CPU's, the inverse real transform does not read the imaginary parts of the zero and (even
 * n) Nyquist frequencies. A plan run while its stream captures a CUDA graph is kept for good
 * (the graph's replays run it): make the plans before capturing, as PyTorch advises. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

typedef int pg_cufft_handle;
typedef int pg_cufft_result; /* cufftResult: 0 = CUFFT_SUCCESS */
enum { CUFFT_FORWARD = -1, CUFFT_INVERSE = 1 };
/* cufftType */
enum { CUFFT_R2C = 0x2a, CUFFT_C2R = 0x2c, CUFFT_C2C = 0x29, CUFFT_D2Z = 0x6a, CUFFT_Z2D = 0x6c,
       CUFFT_Z2Z = 0x69 };

/* cufftResult's names, by value (cufft.h) */
static const char *const RESULT_NAMES[] = {
    "CUFFT_SUCCESS", "CUFFT_INVALID_PLAN", "CUFFT_ALLOC_FAILED", "CUFFT_INVALID_TYPE",
    "CUFFT_INVALID_VALUE", "CUFFT_INTERNAL_ERROR", "CUFFT_EXEC_FAILED", "CUFFT_SETUP_FAILED",
    "CUFFT_INVALID_SIZE", "CUFFT_UNALIGNED_DATA", "CUFFT_INCOMPLETE_PARAMETER_LIST",
    "CUFFT_INVALID_DEVICE", "CUFFT_PARSE_ERROR", "CUFFT_NO_WORKSPACE", "CUFFT_NOT_IMPLEMENTED",
    "CUFFT_LICENSE_ERROR", "CUFFT_NOT_SUPPORTED"};

/* every cufftExec* takes (plan, in, out); the complex-to-complex ones also a direction */
typedef pg_cufft_result (*exec_fn)(pg_cufft_handle, void *, void *);
typedef pg_cufft_result (*exec_dir_fn)(pg_cufft_handle, void *, void *, int);

static struct {
    pthread_mutex_t lock; /* the load, then the plans, each plan's stream and its calls */
    void *lib;
    int version;
    pg_cufft_result (*get_version)(int *);
    pg_cufft_result (*plan_many)(pg_cufft_handle *, int, int *, int *, int, int, int *, int,
                                 int, int, int);
    pg_cufft_result (*set_stream)(pg_cufft_handle, cudaStream_t);
    pg_cufft_result (*destroy)(pg_cufft_handle);
    void *exec[PG_NUM_SUBOPS][2]; /* per FFT sub-op: single, double precision */
} pg_cufft = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* what a line holds (an FFT row's in and out columns) */
enum { FFT_COMPLEX, FFT_REAL, FFT_HALF };
/* each FFT row's cuFFT types and entry points, single and double precision (its cufft
 * column); `directed`: complex in and out (C2C), whose exec takes the direction */
static const struct {
    int type[2];
    const char *exec[2];
    bool directed;
} ENTRY[PG_NUM_SUBOPS] = {
/* the column CUFFT(s, d) pasted onto PG_ (it is not a macro itself, so it reaches the row's
 * macro as written) */
#define PG_CUFFT(s, d) {CUFFT_##s, CUFFT_##d}, {"cufftExec" #s, "cufftExec" #d}
#define PG_SUBOP_FFT(ID, name, flags, in, out, cpu, cufft)                                         \
    [PG_FFT_##ID] = {PG_##cufft, FFT_##in == FFT_##out},
#include "pg_subops.def"
#undef PG_CUFFT
};

static bool cufft_loaded(void) { return pg_cufft.lib != NULL; }

/* dlopen `path` and resolve every entry point; 0 or a message in why */
int pg_plugin_cufft_load(const char *path, char *why, size_t len)
{
    pthread_mutex_lock(&pg_cufft.lock);
    if (pg_cufft.lib) {
        pthread_mutex_unlock(&pg_cufft.lock);
        return 0;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, len, "cannot load %s: %s", path, dlerror());
        pthread_mutex_unlock(&pg_cufft.lock);
        return -1;
    }
    const char *missing = NULL;
#define SYM(field, name)                                                                        \
    do {                                                                                        \
        *(void **)&pg_cufft.field = dlsym(lib, name);                                           \
        if (!pg_cufft.field && !missing)                                                        \
            missing = name;                                                                     \
    } while (0)
    SYM(get_version, "cufftGetVersion");
    SYM(plan_many, "cufftPlanMany");
    SYM(set_stream, "cufftSetStream");
    SYM(destroy, "cufftDestroy");
    for (int k = 0; k < PG_NUM_SUBOPS; k++)
        for (int w = 0; w < 2 && ENTRY[k].exec[w]; w++)
            SYM(exec[k][w], ENTRY[k].exec[w]);
#undef SYM
    int version = 0;
    if (!missing && pg_cufft.get_version(&version) != 0)
        missing = "a working cufftGetVersion";
    if (missing) {
        snprintf(why, len, "%s has no %s: not a cuFFT library", path, missing);
        dlclose(lib); /* lib stays NULL: nothing reads the pointers resolved so far */
        pthread_mutex_unlock(&pg_cufft.lock);
        return -1;
    }
    pg_cufft.version = version;
    pg_cufft.lib = lib;
    pthread_mutex_unlock(&pg_cufft.lock);
    return 0;
}

pg_status pg_plugin_cufft_version(int *out)
{
    *out = pg_cufft.lib ? pg_cufft.version : 0;
    return PG_OK;
}

static pg_cuda_lazy_library g_offer = PG_CUDA_LAZY_LIBRARY_INIT;

pg_status pg_plugin_cufft_offer(const char *paths)
{
    pg_cuda_lazy_offer(&g_offer, paths);
    return PG_OK;
}

/* supports_node's rule for FFT: cuFFT loaded (on this first use), and the node's lines (the
 * last axis of its operand and result, and their count) within cufftPlanMany's int sizes */
bool pg_cuda_cufft_runs(const pg_node *n)
{
    if (!pg_cuda_lazy_load(&g_offer, cufft_loaded, pg_plugin_cufft_load))
        return false;
    if (n->p.fft.n > INT_MAX)
        return false;
    const pg_tensor *ends[2] = {&n->src[0], &n->dst};
    for (int i = 0; i < 2; i++) {
        const pg_tensor *t = ends[i];
        if (t->ndim < 1)
            continue; /* _C._has_node describes no result */
        int64_t line = t->shape[t->ndim - 1];
        if (line > INT_MAX || (line > 0 && pg_cuda_numel(t) / line > INT_MAX))
            return false;
    }
    return true;
}

static pg_status check(pg_cuda_device *d, pg_cufft_result r, const char *op, const char *call)
{
    if (r == 0)
        return PG_OK;
    const char *name = r > 0 && r < (int)(sizeof RESULT_NAMES / sizeof *RESULT_NAMES)
                           ? RESULT_NAMES[r]
                           : "an unknown cufftResult";
    return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: %s: %s failed: %s (cuFFT status %d)",
                         d->index, op, call, name, r);
}

/* ---- plans, once per layout and stream --------------------------------------------------- */

typedef struct fft_key {
    int device, subop, wide;
    cudaStream_t stream;
    int64_t n, batch, istride, idist, ostride, odist;
} fft_key;

typedef struct fft_plan {
    fft_key key;
    bool used, captured; /* captured: a CUDA graph replays it, never destroyed */
    pg_cufft_handle handle;
    uint64_t stamp;
} fft_plan;

#define PLANS 32
static fft_plan g_plans[PLANS];
static uint64_t g_stamp;

/* the plan for `key`, made on a miss in the least recently used slot that no graph holds;
 * under pg_cufft.lock */
static pg_status plan_for(pg_cuda_device *d, const fft_key *key, const char *op, fft_plan **out)
{
    fft_plan *hit = NULL, *lru = NULL; /* lru: a free slot, else the oldest no graph holds */
    for (int i = 0; i < PLANS && !hit; i++) {
        fft_plan *p = &g_plans[i];
        if (p->used && memcmp(&p->key, key, sizeof *key) == 0)
            hit = p;
        else if (!p->used)
            lru = lru && !lru->used ? lru : p;
        else if (!p->captured && (!lru || (lru->used && p->stamp < lru->stamp)))
            lru = p;
    }
    if (!hit) {
        if (!lru)
            return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: %s: all %d cuFFT plans are held by "
                                                 "captured CUDA graphs; reset a graph first",
                                 d->index, op, PLANS);
        if (lru->used)
            (void)pg_cufft.destroy(lru->handle); /* cuFFT frees its work area after the work */
        lru->used = false;
        int nn = (int)key->n;
        int in_len = (int)key->idist, out_len = (int)key->odist; /* the advanced layout */
        PG_TRY(check(d, pg_cufft.plan_many(&lru->handle, 1, &nn, &in_len, (int)key->istride,
                                           (int)key->idist, &out_len, (int)key->ostride,
                                           (int)key->odist, ENTRY[key->subop].type[key->wide],
                                           (int)key->batch),
                     op, "cufftPlanMany"));
        lru->key = *key;
        lru->used = true;
        lru->captured = false;
        hit = lru;
    }
    hit->stamp = ++g_stamp;
    *out = hit;
    return PG_OK;
}

/* ---- the FFT node ------------------------------------------------------------------------ */

/* x (count float or double parts) *= even at even indices, odd at odd ones: a complex
 * buffer's real and imaginary parts, or (even == odd) a real one */
static pg_status scale(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n, int part,
                       void *x, int64_t count, double even, double odd)
{
    if (even == 1.0 && odd == 1.0)
        return PG_OK;
    return PG_CUDA_KERNEL_STATUS(d, n, "pg_kernel_fft_scale",
                                 pg_kernel_fft_scale(ctx, part, x, count, even, odd));
}

pg_status pg_cuda_launch_fft(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    const char *op = n->name;
    if (!pg_cufft.lib)
        return pg_cuda_error(PG_ERR_UNAVAILABLE, "cuda:%d: %s: cuFFT is not loaded (pygpu "
                                                 "loads it on a transform's first use: pip "
                                                 "install nvidia-cufft)", d->index, op);
    int s = n->subop;
    if (s < 0 || s >= PG_NUM_SUBOPS || !ENTRY[s].exec[0])
        return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: fft: %s is not an FFT sub-op", d->index,
                             pg_subop_id(s));
    const pg_tensor *src = &n->src[0], *dst = &n->dst;
    int64_t in_len = src->shape[src->ndim - 1], out_len = dst->shape[dst->ndim - 1];
    int64_t batch = in_len > 0 ? pg_cuda_numel(src) / in_len : 0;
    if (batch == 0)
        return PG_OK; /* no lines (cuFFT refuses a batch of 0) */
    bool wide = dst->dtype == PG_FLOAT64 || dst->dtype == PG_COMPLEX128;
    int part = wide ? PG_FLOAT64 : PG_FLOAT32;
    bool complex_in = pg_dtype_is_complex((pg_dtype)src->dtype);
    bool complex_out = pg_dtype_is_complex((pg_dtype)dst->dtype);
    bool forward = n->p.fft.forward != 0;
    double fct = n->p.fft.fct;
    fft_key key;
    memset(&key, 0, sizeof key); /* padding bytes too: the key is compared with memcmp */
    key.device = d->index;
    key.subop = s;
    key.wide = wide;
    key.stream = ctx->stream;
    key.n = n->p.fft.n;
    key.batch = batch;
    key.istride = key.ostride = 1;
    key.idist = in_len;
    key.odist = out_len;

    void *in = pg_cuda_tensor_data(src), *out = pg_cuda_tensor_data(dst), *scratch = NULL;
    size_t in_bytes = (size_t)pg_cuda_numel(src) * pg_cuda_itemsize(src->dtype);
    pg_status st = PG_OK;
    if (!ENTRY[s].directed && complex_in) { /* C2R overwrites its input: run from a copy */
        st = PG_CUDA_RT(cudaMallocAsync(&scratch, in_bytes, ctx->stream), d->index, op);
        if (st == PG_OK)
            st = PG_CUDA_RT(cudaMemcpyAsync(scratch, in, in_bytes, cudaMemcpyDeviceToDevice,
                                            ctx->stream), d->index, op);
        if (st == PG_OK && forward) /* hfft: the transform of the conjugate */
            st = scale(d, ctx, n, part, scratch, 2 * pg_cuda_numel(src), 1.0, -1.0);
        in = scratch;
    }
    pthread_mutex_lock(&pg_cufft.lock);
    fft_plan *p = NULL;
    if (st == PG_OK)
        st = plan_for(d, &key, op, &p);
    if (st == PG_OK)
        st = check(d, pg_cufft.set_stream(p->handle, ctx->stream), op, "cufftSetStream");
    if (st == PG_OK) {
        void *fn = pg_cufft.exec[s][wide];
        pg_cufft_result r = ENTRY[s].directed
                                ? ((exec_dir_fn)fn)(p->handle, in, out,
                                                    forward ? CUFFT_FORWARD : CUFFT_INVERSE)
                                : ((exec_fn)fn)(p->handle, in, out);
        st = check(d, r, op, ENTRY[s].exec[wide]);
    }
    if (st == PG_OK) {
        enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(ctx->stream, &cap) == cudaSuccess &&
            cap != cudaStreamCaptureStatusNone)
            p->captured = true;
    }
    pthread_mutex_unlock(&pg_cufft.lock);
    if (st == PG_OK) { /* the norm's factor; R2C backward (ihfft) conjugates the result */
        int64_t parts = pg_cuda_numel(dst) * (complex_out ? 2 : 1);
        bool conj = !ENTRY[s].directed && !complex_in && !forward;
        st = scale(d, ctx, n, part, out, parts, fct, conj ? -fct : fct);
    }
    if (scratch && cudaFreeAsync(scratch, ctx->stream) != cudaSuccess && st == PG_OK)
        st = PG_CUDA_RT(cudaGetLastError(), d->index, op);
    return st;
}
