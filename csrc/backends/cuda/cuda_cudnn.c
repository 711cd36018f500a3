/* cuda_cudnn.c - cuDNN, loaded on first use, and the CONV node on it (forward, input and
 * weight gradients: csrc/core/pg_ops_conv.h lists the operands).
 *
 * cuDNN is not linked: like NCCL (cuda_nccl.c), libcudnn.so.9 is dlopen'ed from the path
 * Python hands over (pygpu/backends/cudnn.py: the nvidia-cudnn-cu13 wheel's lib directory,
 * the toolkit's, or PYGPU_CUDNN_LIBRARY), so `import pygpu` and the plugin never need it and
 * its absence is one line when a convolution asks for it. Other parts of the plugin (the
 * sequence layers) may call pg_cuda_cudnn_ready() and the table `pg_cudnn` below.
 *
 * The entry points used are declared here from cudnn.h's stable C ABI (the legacy
 * convolution API that cuDNN 8 and 9 both export, opaque descriptors, fixed enum values), so
 * building needs no cuDNN headers. Per convolution node:
 *   - descriptors (x, w, y, the convolution with its groups) are built once per shape and
 *     kept in a small cache, with the algorithm chosen for them: cuDNN's heuristics
 *     (cudnnGet*Algorithm_v7), or a timed search (cudnnFind*Algorithm) when the plugin option
 *     "cudnn_benchmark" is on (pygpu.backends.cudnn.benchmark), restricted to deterministic
 *     algorithms when "cudnn_deterministic" is on;
 *   - the workspace is stream-ordered memory (cudaMallocAsync, freed with cudaFreeAsync after
 *     the call on the same stream, as the fused linear layers' scratch is): the plugin has no
 *     way into the core's caching allocator, and the stream-ordered pool caches it instead;
 *   - the bias is added by cudnnAddTensor (forward, and ConvTranspose's forward), its gradient
 *     is cudnnConvolutionBackwardBias.
 * Padding must be symmetric (cuDNN's descriptor has one pad per axis): pygpu/_ops/_conv.py
 * composes the asymmetric 'same' convolutions instead. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "pg_ops_conv.h"

typedef struct pg_cudnn_ctx_s *pg_cudnn_handle;
typedef void *pg_cudnn_desc;
typedef int pg_cudnn_status; /* 0 = CUDNN_STATUS_SUCCESS */

enum { CUDNN_DATA_FLOAT = 0, CUDNN_DATA_DOUBLE = 1 };
enum { CUDNN_TENSOR_NCHW = 0 };
enum { CUDNN_CROSS_CORRELATION = 1 };
enum { CUDNN_DEFAULT_MATH = 0, CUDNN_FMA_MATH = 3 };
enum { CUDNN_DETERMINISTIC = 1 };

/* cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: one layout for the three */
typedef struct pg_cudnn_perf {
    int algo;
    pg_cudnn_status status;
    float time;
    size_t memory;
    int determinism;
    int math_type;
    int reserved[3];
} pg_cudnn_perf;

typedef pg_cudnn_status (*algo_fn)(pg_cudnn_handle, pg_cudnn_desc, pg_cudnn_desc, pg_cudnn_desc,
                                   pg_cudnn_desc, int, int *, pg_cudnn_perf *);
typedef pg_cudnn_status (*wsize_fn)(pg_cudnn_handle, pg_cudnn_desc, pg_cudnn_desc, pg_cudnn_desc,
                                    pg_cudnn_desc, int, size_t *);
typedef pg_cudnn_status (*conv_fn)(pg_cudnn_handle, const void *, pg_cudnn_desc, const void *,
                                   pg_cudnn_desc, const void *, pg_cudnn_desc, int, void *, size_t,
                                   const void *, pg_cudnn_desc, void *);

static struct {
    pthread_mutex_t lock;
    void *lib;
    size_t version;
    size_t (*get_version)(void);
    const char *(*error_string)(pg_cudnn_status);
    pg_cudnn_status (*create)(pg_cudnn_handle *);
    pg_cudnn_status (*set_stream)(pg_cudnn_handle, cudaStream_t);
    pg_cudnn_status (*create_tensor)(pg_cudnn_desc *);
    pg_cudnn_status (*set_tensor4d)(pg_cudnn_desc, int, int, int, int, int, int);
    pg_cudnn_status (*create_filter)(pg_cudnn_desc *);
    pg_cudnn_status (*set_filter4d)(pg_cudnn_desc, int, int, int, int, int, int);
    pg_cudnn_status (*create_conv)(pg_cudnn_desc *);
    pg_cudnn_status (*set_conv2d)(pg_cudnn_desc, int, int, int, int, int, int, int, int);
    pg_cudnn_status (*set_group_count)(pg_cudnn_desc, int);
    pg_cudnn_status (*set_math_type)(pg_cudnn_desc, int);
    pg_cudnn_status (*add_tensor)(pg_cudnn_handle, const void *, pg_cudnn_desc, const void *,
                                  const void *, pg_cudnn_desc, void *);
    pg_cudnn_status (*backward_bias)(pg_cudnn_handle, const void *, pg_cudnn_desc, const void *,
                                     const void *, pg_cudnn_desc, void *);
    /* per CONV sub-op (forward, backward data, backward filter): heuristics, timed search,
     * workspace, call */
    algo_fn get_algo[PG_NUM_SUBOPS], find_algo[PG_NUM_SUBOPS];
    wsize_fn wsize[PG_NUM_SUBOPS];
    conv_fn conv[PG_NUM_SUBOPS];
} pg_cudnn = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* cuDNN's entry points of each CONV sub-op, named from its row's cudnn column */
static const struct {
    const char *get_algo, *find_algo, *wsize, *conv;
} ENTRY[PG_NUM_SUBOPS] = {
#define PG_SUBOP_CONV(ID, name, flags, x, w, y, cudnn)                                             \
    [PG_CONV_##ID] = {"cudnnGetConvolution" cudnn "Algorithm_v7",                                  \
                      "cudnnFindConvolution" cudnn "Algorithm",                                    \
                      "cudnnGetConvolution" cudnn "WorkspaceSize", "cudnnConvolution" cudnn},
#include "pg_subops.def"
};

/* dlopen `path` and resolve every entry point; 0 or a message in why */
int pg_plugin_cudnn_load(const char *path, char *why, size_t len)
{
    pthread_mutex_lock(&pg_cudnn.lock);
    if (pg_cudnn.lib) {
        pthread_mutex_unlock(&pg_cudnn.lock);
        return 0;
    }
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, len, "cannot load %s: %s", path, dlerror());
        pthread_mutex_unlock(&pg_cudnn.lock);
        return -1;
    }
    const char *missing = NULL;
#define SYM(field, name)                                                                        \
    do {                                                                                        \
        *(void **)&pg_cudnn.field = dlsym(lib, name);                                           \
        if (!pg_cudnn.field && !missing)                                                        \
            missing = name;                                                                     \
    } while (0)
    SYM(get_version, "cudnnGetVersion");
    SYM(error_string, "cudnnGetErrorString");
    SYM(create, "cudnnCreate");
    SYM(set_stream, "cudnnSetStream");
    SYM(create_tensor, "cudnnCreateTensorDescriptor");
    SYM(set_tensor4d, "cudnnSetTensor4dDescriptor");
    SYM(create_filter, "cudnnCreateFilterDescriptor");
    SYM(set_filter4d, "cudnnSetFilter4dDescriptor");
    SYM(create_conv, "cudnnCreateConvolutionDescriptor");
    SYM(set_conv2d, "cudnnSetConvolution2dDescriptor");
    SYM(set_group_count, "cudnnSetConvolutionGroupCount");
    SYM(set_math_type, "cudnnSetConvolutionMathType");
    SYM(add_tensor, "cudnnAddTensor");
    SYM(backward_bias, "cudnnConvolutionBackwardBias");
    for (int k = 0; k < PG_NUM_SUBOPS; k++) {
        if (!ENTRY[k].conv)
            continue; /* not a CONV row */
        SYM(get_algo[k], ENTRY[k].get_algo);
        SYM(find_algo[k], ENTRY[k].find_algo);
        SYM(wsize[k], ENTRY[k].wsize);
        SYM(conv[k], ENTRY[k].conv);
    }
#undef SYM
    if (missing) {
        snprintf(why, len, "%s has no %s: not a cuDNN 8 or 9 library", path, missing);
        dlclose(lib); /* lib stays NULL: nothing reads the pointers resolved so far */
        pthread_mutex_unlock(&pg_cudnn.lock);
        return -1;
    }
    pg_cudnn.version = pg_cudnn.get_version();
    pg_cudnn.lib = lib;
    pthread_mutex_unlock(&pg_cudnn.lock);
    return 0;
}

size_t pg_plugin_cudnn_version(void) { return pg_cudnn.lib ? pg_cudnn.version : 0; }

/* The libraries pygpu offered when it loaded the plugin (pygpu/backends/cudnn.py's
 * candidates), tried once, in order, when the first convolution asks: cuDNN is loaded on
 * first use, by the backend that uses it (cuda_lazy_library.c). */
static pg_cuda_lazy_library g_offer = PG_CUDA_LAZY_LIBRARY_INIT;

pg_status pg_plugin_cudnn_offer(const char *paths)
{
    pg_cuda_lazy_offer(&g_offer, paths);
    return PG_OK;
}

static bool cudnn_loaded(void) { return pg_cudnn.lib != NULL; }

static bool loaded_on_first_use(void)
{
    return pg_cuda_lazy_load(&g_offer, cudnn_loaded, pg_plugin_cudnn_load);
}

/* supports_node's rule for CONV: cuDNN enabled (pygpu.backends.cudnn.enabled) and loaded, and
 * the node's geometry one cuDNN descriptor can say: it pads each axis alike before and after,
 * so its output size from that padding must be the node's (PyTorch's 'same' with an even
 * kernel pads one more after: composed instead). The same for the three sub-ops: x and y are
 * where the sub-op's row puts them. */
bool pg_cuda_cudnn_runs(const pg_node *n)
{
    if (!atomic_load(&pg_cuda.cudnn_enabled) || !loaded_on_first_use())
        return false;
    const pg_tensor *x = pg_conv_operand(n, PG_CONV_X), *y = pg_conv_operand(n, PG_CONV_Y);
    const pg_conv_geom *g = &n->p.conv;
    const int64_t pad[2] = {g->ph, g->pw}, k[2] = {g->kh, g->kw};
    const int64_t s[2] = {g->sh, g->sw}, d[2] = {g->dh, g->dw};
    for (int a = 0; a < 2; a++) {
        int64_t span = d[a] * (k[a] - 1) + 1, padded = x->shape[2 + a] + 2 * pad[a];
        if (s[a] <= 0 || padded < span || (padded - span) / s[a] + 1 != y->shape[2 + a])
            return false;
    }
    return true;
}

bool pg_cuda_cudnn_ready(void) { return pg_cudnn.lib != NULL; }

static pg_status check(pg_cuda_device *d, pg_cudnn_status st, const char *op, const char *call)
{
    if (st == 0)
        return PG_OK;
    return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: %s: %s failed: %s (cuDNN status %d)",
                         d->index, op, call,
                         pg_cudnn.error_string ? pg_cudnn.error_string(st) : "?", st);
}

/* ---- descriptors and algorithms, once per shape ------------------------------------------ */

typedef struct conv_key {
    int device, subop, dtype;
    int64_t x[4], w[4], y[4];
    pg_conv_geom g;
    int benchmark, deterministic;
} conv_key;

typedef struct conv_plan {
    conv_key key;
    bool used;
    pg_cudnn_desc xd, wd, yd, cd, bd; /* bd: the bias as (1, C, 1, 1) */
    int algo;
    size_t ws;
    uint64_t stamp;
} conv_plan;

#define PLANS 32
static conv_plan g_plans[PLANS];
static uint64_t g_stamp;
static pthread_mutex_t g_plans_lock = PTHREAD_MUTEX_INITIALIZER;

static pg_cudnn_handle g_handles[PG_MAX_DEVICES_PER_TYPE];
static pthread_mutex_t g_handle_lock[PG_MAX_DEVICES_PER_TYPE];
static pthread_once_t g_handle_once = PTHREAD_ONCE_INIT;
static void handle_locks_init(void)
{
    for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++)
        pthread_mutex_init(&g_handle_lock[i], NULL);
}

static pg_status make_descs(pg_cuda_device *d, conv_plan *p, const char *op)
{
    const conv_key *k = &p->key;
    int dt = k->dtype == PG_FLOAT64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    int bc = (int)(pg_conv_computes(k->subop) == PG_CONV_X ? k->x[1] : k->y[1]); /* bias channels */
    if (!p->xd) {
        PG_TRY(check(d, pg_cudnn.create_tensor(&p->xd), op, "cudnnCreateTensorDescriptor"));
        PG_TRY(check(d, pg_cudnn.create_tensor(&p->yd), op, "cudnnCreateTensorDescriptor"));
        PG_TRY(check(d, pg_cudnn.create_tensor(&p->bd), op, "cudnnCreateTensorDescriptor"));
        PG_TRY(check(d, pg_cudnn.create_filter(&p->wd), op, "cudnnCreateFilterDescriptor"));
        PG_TRY(check(d, pg_cudnn.create_conv(&p->cd), op, "cudnnCreateConvolutionDescriptor"));
    }
    PG_TRY(check(d, pg_cudnn.set_tensor4d(p->xd, CUDNN_TENSOR_NCHW, dt, (int)k->x[0], (int)k->x[1],
                                          (int)k->x[2], (int)k->x[3]), op,
                 "cudnnSetTensor4dDescriptor"));
    PG_TRY(check(d, pg_cudnn.set_tensor4d(p->yd, CUDNN_TENSOR_NCHW, dt, (int)k->y[0], (int)k->y[1],
                                          (int)k->y[2], (int)k->y[3]), op,
                 "cudnnSetTensor4dDescriptor"));
    PG_TRY(check(d, pg_cudnn.set_tensor4d(p->bd, CUDNN_TENSOR_NCHW, dt, 1, bc, 1, 1), op,
                 "cudnnSetTensor4dDescriptor"));
    PG_TRY(check(d, pg_cudnn.set_filter4d(p->wd, dt, CUDNN_TENSOR_NCHW, (int)k->w[0], (int)k->w[1],
                                          (int)k->w[2], (int)k->w[3]), op,
                 "cudnnSetFilter4dDescriptor"));
    PG_TRY(check(d, pg_cudnn.set_conv2d(p->cd, k->g.ph, k->g.pw, k->g.sh, k->g.sw, k->g.dh,
                                        k->g.dw, CUDNN_CROSS_CORRELATION, dt), op,
                 "cudnnSetConvolution2dDescriptor"));
    PG_TRY(check(d, pg_cudnn.set_group_count(p->cd, k->g.groups), op,
                 "cudnnSetConvolutionGroupCount"));
    /* float32 stays float32 (no TF32) unless allow_tf32, as the GEMMs */
    PG_TRY(check(d, pg_cudnn.set_math_type(p->cd, atomic_load(&pg_cuda.allow_tf32)
                                                      ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
                 op, "cudnnSetConvolutionMathType"));
    return PG_OK;
}

/* each role's descriptor (pg_conv_role: x, w, y) */
static pg_cudnn_desc desc_of(const conv_plan *p, int role)
{
    return role == PG_CONV_X ? p->xd : role == PG_CONV_W ? p->wd : p->yd;
}

/* The two inputs' roles in the order cuDNN's call takes them: the roles the sub-op reads, in
 * the order x, w, y ((x, w) forward, (w, dy) backward data, (x, dy) backward filter). */
static void input_roles(int s, int in[2])
{
    int k = 0;
    for (int role = PG_CONV_X; role <= PG_CONV_Y; role++)
        if (role != pg_conv_computes(s))
            in[k++] = role;
}

/* the descriptors of each call: (input 0, input 1, conv, output) */
static void operands(const conv_plan *p, int s, pg_cudnn_desc out[4])
{
    int in[2];
    input_roles(s, in);
    out[0] = desc_of(p, in[0]);
    out[1] = desc_of(p, in[1]);
    out[2] = p->cd;
    out[3] = desc_of(p, pg_conv_computes(s));
}

static pg_status choose_algo(pg_cuda_device *d, pg_cudnn_handle h, conv_plan *p, const char *op)
{
    int s = p->key.subop, n = 0;
    pg_cudnn_desc o[4];
    operands(p, s, o);
    pg_cudnn_perf perf[8];
    memset(perf, 0, sizeof perf);
    if (p->key.benchmark)
        PG_TRY(check(d, pg_cudnn.find_algo[s](h, o[0], o[1], o[2], o[3], 8, &n, perf), op,
                     ENTRY[s].find_algo));
    else
        PG_TRY(check(d, pg_cudnn.get_algo[s](h, o[0], o[1], o[2], o[3], 8, &n, perf), op,
                     ENTRY[s].get_algo));
    for (int i = 0; i < n; i++) { /* the first that works (and is deterministic if asked) */
        if (perf[i].status != 0)
            continue;
        if (p->key.deterministic && perf[i].determinism != CUDNN_DETERMINISTIC)
            continue;
        p->algo = perf[i].algo;
        return check(d, pg_cudnn.wsize[s](h, o[0], o[1], o[2], o[3], p->algo, &p->ws), op,
                     ENTRY[s].wsize);
    }
    return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: %s: cuDNN offers no %salgorithm for this "
                                         "convolution", d->index, op,
                         p->key.deterministic ? "deterministic " : "");
}

/* the plan for `key` (built on a miss, the least recently used one replaced); the caller
 * holds g_plans_lock until it has queued the calls that use the plan's descriptors */
static pg_status plan_for(pg_cuda_device *d, pg_cudnn_handle h, const conv_key *key,
                          const char *op, conv_plan *out)
{
    conv_plan *hit = NULL, *lru = &g_plans[0];
    for (int i = 0; i < PLANS; i++) {
        if (g_plans[i].used && memcmp(&g_plans[i].key, key, sizeof *key) == 0) {
            hit = &g_plans[i];
            break;
        }
        if (!g_plans[i].used || (lru->used && g_plans[i].stamp < lru->stamp))
            lru = &g_plans[i];
    }
    pg_status st = PG_OK;
    if (!hit) {
        hit = lru;
        hit->used = false;
        hit->key = *key;
        st = make_descs(d, hit, op);
        if (st == PG_OK)
            st = choose_algo(d, h, hit, op);
        hit->used = st == PG_OK;
    }
    if (st == PG_OK) {
        hit->stamp = ++g_stamp;
        *out = *hit;
    }
    return st;
}

/* ---- the CONV node ------------------------------------------------------------------------- */

pg_status pg_cuda_launch_conv(pg_cuda_device *d, const pg_cuda_ctx *ctx, const pg_node *n)
{
    const char *op = n->name;
    if (!pg_cudnn.lib)
        return pg_cuda_error(PG_ERR_UNAVAILABLE, "cuda:%d: %s: cuDNN is not loaded (pygpu "
                                                 "loads it on a convolution's first use: pip "
                                                 "install nvidia-cudnn-cu13)", d->index, op);
    const pg_conv_geom *g = &n->p.conv;
    int s = n->subop;
    const pg_tensor *x = pg_conv_operand(n, PG_CONV_X), *w = pg_conv_operand(n, PG_CONV_W);
    const pg_tensor *y = pg_conv_operand(n, PG_CONV_Y); /* where the sub-op's row puts them */
    conv_key key;
    memset(&key, 0, sizeof key); /* padding bytes too: the key is compared with memcmp */
    key.device = d->index;
    key.subop = s;
    key.dtype = n->dst.dtype;
    memcpy(key.x, x->shape, sizeof key.x);
    memcpy(key.w, w->shape, sizeof key.w);
    memcpy(key.y, y->shape, sizeof key.y);
    key.g = *g;
    key.benchmark = atomic_load(&pg_cuda.cudnn_benchmark);
    key.deterministic = atomic_load(&pg_cuda.cudnn_deterministic);
    for (int k = 0; k < 4; k++)
        if (key.x[k] > INT32_MAX || key.y[k] > INT32_MAX || key.w[k] > INT32_MAX)
            return pg_cuda_error(PG_ERR_VALUE, "cuda:%d: %s: dimensions above 2^31-1",
                                 d->index, op);
    pthread_once(&g_handle_once, handle_locks_init);
    pthread_mutex_lock(&g_handle_lock[d->index]);
    pg_status st = PG_OK;
    if (!g_handles[d->index])
        st = check(d, pg_cudnn.create(&g_handles[d->index]), op, "cudnnCreate");
    pg_cudnn_handle h = g_handles[d->index];
    if (st == PG_OK)
        st = check(d, pg_cudnn.set_stream(h, ctx->stream), op, "cudnnSetStream");
    conv_plan p;
    pthread_mutex_lock(&g_plans_lock); /* the plans' descriptors, until the calls are queued */
    if (st == PG_OK)
        st = plan_for(d, h, &key, op, &p);
    void *ws = NULL;
    if (st == PG_OK && p.ws > 0)
        st = PG_CUDA_RT(cudaMallocAsync(&ws, p.ws, ctx->stream), d->index, op);
    if (st == PG_OK) {
        double one64 = 1.0, zero64 = 0.0;
        float one32 = 1.0f, zero32 = 0.0f;
        bool f64 = key.dtype == PG_FLOAT64;
        const void *one = f64 ? (const void *)&one64 : (const void *)&one32;
        const void *zero = f64 ? (const void *)&zero64 : (const void *)&zero32;
        pg_cudnn_desc o[4];
        operands(&p, s, o);
        /* the two inputs in the call's order: (x, w), (w, dy), (x, dy) */
        int in[2];
        input_roles(s, in);
        const void *in0 = pg_cuda_tensor_data(pg_conv_operand(n, in[0]));
        const void *in1 = pg_cuda_tensor_data(pg_conv_operand(n, in[1]));
        bool dw = pg_conv_computes(s) == PG_CONV_W;
        st = check(d, pg_cudnn.conv[s](h, one, o[0], in0, o[1], in1, o[2], p.algo, ws, p.ws,
                                       zero, o[3], pg_cuda_tensor_data(&n->dst)), op,
                   ENTRY[s].conv);
        if (st == PG_OK && !dw && n->src[2].storage) /* bias, per channel of the output */
            st = check(d, pg_cudnn.add_tensor(h, one, p.bd, pg_cuda_tensor_data(&n->src[2]), one,
                                              o[3], pg_cuda_tensor_data(&n->dst)), op,
                       "cudnnAddTensor");
        if (st == PG_OK && dw && n->extra[0].storage)
            st = check(d, pg_cudnn.backward_bias(h, one, p.yd, pg_cuda_tensor_data(&n->src[0]),
                                                 zero, p.bd, pg_cuda_tensor_data(&n->extra[0])),
                       op, "cudnnConvolutionBackwardBias");
    }
    if (ws && cudaFreeAsync(ws, ctx->stream) != cudaSuccess && st == PG_OK)
        st = PG_CUDA_RT(cudaGetLastError(), d->index, op);
    pthread_mutex_unlock(&g_plans_lock);
    pthread_mutex_unlock(&g_handle_lock[d->index]);
    return st;
}
