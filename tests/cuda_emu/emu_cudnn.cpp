/* emu_cudnn.cpp - a CPU stand-in for the cuDNN calls the plugin makes (the legacy
 * convolution API of cuDNN 8 and 9, csrc/backends/cuda/cuda_cudnn.c), exported under
 * cuDNN's names: PYGPU_CUDNN_LIBRARY set to the emulated plugin's path makes pygpu load it.
 *
 * It checks what cuDNN checks and returns cuDNN 9's status codes (BAD_PARAM for a null
 * pointer, a non-positive dimension, a channel count the filter and group count do not
 * match, an output shape the convolution does not give, a workspace smaller than the one
 * asked for the algorithm; NOT_SUPPORTED for a data type or format it lacks), and computes a
 * reference convolution (cross-correlation, groups, strides, symmetric padding, dilation)
 * in double, queued on the handle's stream. The algorithms it offers are numbered 0 and 1:
 * 0 needs no workspace, 1 asks for one (so the plugin's workspace path runs); both compute
 * the same, and only 0 claims to be deterministic in the backward passes. */
#include <stdint.h>
#include <string.h>

#include <vector>

#include "emu_internal.h"

#define PG_CUDNN_API extern "C" __attribute__((visibility("default")))

typedef int cudnnStatus_t;
enum {
    CUDNN_STATUS_SUCCESS = 0,
    CUDNN_STATUS_NOT_INITIALIZED = 1001,
    CUDNN_STATUS_BAD_PARAM = 2000,
    CUDNN_STATUS_BAD_PARAM_NULL_POINTER = 2002,
    CUDNN_STATUS_NOT_SUPPORTED = 3000,
};
enum { DT_FLOAT = 0, DT_DOUBLE = 1 };

struct cudnnContext {
    cudaStream_t stream = nullptr;
};
struct TensorDesc {
    int dtype = -1, n = 0, c = 0, h = 0, w = 0;
};
struct ConvDesc {
    int ph = 0, pw = 0, sh = 1, sw = 1, dh = 1, dw = 1, mode = 1, dtype = -1, groups = 1,
        math = 0;
    bool set = false;
};
struct Perf {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    int determinism;
    int math_type;
    int reserved[3];
};

namespace {

const size_t WS1 = 4096; /* algorithm 1's workspace */

bool valid(const TensorDesc *t) { return t && t->dtype >= 0 && t->n > 0 && t->c > 0 && t->h > 0 && t->w > 0; }

/* cuDNN's checks of (x, w, conv, y): the shapes fit together and the dtypes agree */
cudnnStatus_t check(const TensorDesc *x, const TensorDesc *w, const ConvDesc *c, const TensorDesc *y)
{
    if (!x || !w || !c || !y)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (!valid(x) || !valid(w) || !valid(y) || !c->set)
        return CUDNN_STATUS_BAD_PARAM;
    if (x->dtype != w->dtype || x->dtype != y->dtype || c->dtype != x->dtype)
        return CUDNN_STATUS_BAD_PARAM;
    if (c->groups < 1 || x->c != w->c * c->groups || w->n % c->groups != 0 || y->c != w->n ||
        y->n != x->n)
        return CUDNN_STATUS_BAD_PARAM;
    long oh = (x->h + 2L * c->ph - (long)c->dh * (w->h - 1) - 1) / c->sh + 1;
    long ow = (x->w + 2L * c->pw - (long)c->dw * (w->w - 1) - 1) / c->sw + 1;
    if (oh != y->h || ow != y->w)
        return CUDNN_STATUS_BAD_PARAM;
    return CUDNN_STATUS_SUCCESS;
}

double ld(const void *p, int dt, int64_t i)
{
    return dt == DT_DOUBLE ? ((const double *)p)[i] : ((const float *)p)[i];
}
void st(void *p, int dt, int64_t i, double v)
{
    if (dt == DT_DOUBLE)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}
double scalar(const void *p, int dt) { return dt == DT_DOUBLE ? *(const double *)p : *(const float *)p; }

struct Conv {
    TensorDesc x, w, y;
    ConvDesc c;
};

/* visit(xi, wi, yi) for every product of the convolution */
template <class F> void each(const Conv &k, F visit)
{
    const TensorDesc &x = k.x, &w = k.w, &y = k.y;
    int og = w.n / k.c.groups, cg = w.c;
    for (int n = 0; n < x.n; n++)
        for (int o = 0; o < y.c; o++) {
            int g = o / og;
            for (int oh = 0; oh < y.h; oh++)
                for (int ow = 0; ow < y.w; ow++) {
                    int64_t yi = (((int64_t)n * y.c + o) * y.h + oh) * y.w + ow;
                    for (int c = 0; c < cg; c++)
                        for (int i = 0; i < w.h; i++) {
                            int ih = oh * k.c.sh - k.c.ph + i * k.c.dh;
                            if (ih < 0 || ih >= x.h)
                                continue;
                            for (int j = 0; j < w.w; j++) {
                                int iw = ow * k.c.sw - k.c.pw + j * k.c.dw;
                                if (iw < 0 || iw >= x.w)
                                    continue;
                                int64_t xi = (((int64_t)n * x.c + g * cg + c) * x.h + ih) * x.w + iw;
                                int64_t wi = (((int64_t)o * cg + c) * w.h + i) * w.w + j;
                                visit(xi, wi, yi);
                            }
                        }
                }
        }
}

int64_t numel(const TensorDesc &t) { return (int64_t)t.n * t.c * t.h * t.w; }

/* out = alpha * acc + beta * out, acc summed in double */
void finish(void *out, int dt, const std::vector<double> &acc, double alpha, double beta)
{
    for (size_t i = 0; i < acc.size(); i++)
        st(out, dt, (int64_t)i, alpha * acc[i] + (beta != 0 ? beta * ld(out, dt, (int64_t)i) : 0));
}

cudnnStatus_t launch(cudnnContext *h, size_t ws_given, int algo, void *ws, std::function<void()> f)
{
    if (!h)
        return CUDNN_STATUS_NOT_INITIALIZED;
    if (algo < 0 || algo > 1)
        return CUDNN_STATUS_BAD_PARAM;
    if (algo == 1 && (ws_given < WS1 || !ws))
        return CUDNN_STATUS_BAD_PARAM; /* the workspace the algorithm asked for is missing */
    pg_emu_enqueue(h->stream, std::move(f));
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t algos(const TensorDesc *x, const TensorDesc *w, const ConvDesc *c,
                    const TensorDesc *y, int requested, int *returned, Perf *perf, bool fwd)
{
    cudnnStatus_t s = check(x, w, c, y);
    if (s != CUDNN_STATUS_SUCCESS)
        return s;
    if (!returned || !perf || requested < 1)
        return CUDNN_STATUS_BAD_PARAM;
    int n = requested < 2 ? requested : 2;
    for (int i = 0; i < n; i++) { /* algorithm 1 first: the workspace path runs */
        Perf p{};
        p.algo = 1 - i;
        p.status = CUDNN_STATUS_SUCCESS;
        p.time = 1.0f + (float)i;
        p.memory = p.algo == 1 ? WS1 : 0;
        p.determinism = fwd || p.algo == 0 ? 1 : 0;
        p.math_type = c->math;
        perf[i] = p;
    }
    *returned = n;
    return CUDNN_STATUS_SUCCESS;
}

} // namespace

PG_CUDNN_API size_t cudnnGetVersion(void) { return 91000; }

PG_CUDNN_API const char *cudnnGetErrorString(cudnnStatus_t s)
{
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS_UNKNOWN";
    }
}

PG_CUDNN_API cudnnStatus_t cudnnCreate(cudnnContext **h)
{
    if (!h)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    *h = new cudnnContext();
    return CUDNN_STATUS_SUCCESS;
}

PG_CUDNN_API cudnnStatus_t cudnnDestroy(cudnnContext *h)
{
    delete h;
    return CUDNN_STATUS_SUCCESS;
}

PG_CUDNN_API cudnnStatus_t cudnnSetStream(cudnnContext *h, cudaStream_t s)
{
    if (!h)
        return CUDNN_STATUS_NOT_INITIALIZED;
    h->stream = s;
    return CUDNN_STATUS_SUCCESS;
}

PG_CUDNN_API cudnnStatus_t cudnnCreateTensorDescriptor(TensorDesc **d)
{
    if (!d)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    *d = new TensorDesc();
    return CUDNN_STATUS_SUCCESS;
}

PG_CUDNN_API cudnnStatus_t cudnnCreateFilterDescriptor(TensorDesc **d)
{
    return cudnnCreateTensorDescriptor(d);
}

static cudnnStatus_t set4d(TensorDesc *d, int format, int dtype, int n, int c, int h, int w)
{
    if (!d)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (format != 0) /* NCHW only */
        return CUDNN_STATUS_NOT_SUPPORTED;
    if (dtype != DT_FLOAT && dtype != DT_DOUBLE)
        return CUDNN_STATUS_NOT_SUPPORTED;
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0)
        return CUDNN_STATUS_BAD_PARAM;
    *d = TensorDesc{dtype, n, c, h, w};
    return CUDNN_STATUS_SUCCESS;
}

PG_CUDNN_API cudnnStatus_t cudnnSetTensor4dDescriptor(TensorDesc *d, int format, int dtype, int n,
                                                      int c, int h, int w)
{
    return set4d(d, format, dtype, n, c, h, w);
}

PG_CUDNN_API cudnnStatus_t cudnnSetFilter4dDescriptor(TensorDesc *d, int dtype, int format, int k,
                                                      int c, int h, int w)
{
    return set4d(d, format, dtype, k, c, h, w);
}

PG_CUDNN_API cudnnStatus_t cudnnCreateConvolutionDescriptor(ConvDesc **d)
{
    if (!d)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    *d = new ConvDesc();
    return CUDNN_STATUS_SUCCESS;
}

PG_CUDNN_API cudnnStatus_t cudnnSetConvolution2dDescriptor(ConvDesc *d, int ph, int pw, int sh,
                                                           int sw, int dh, int dw, int mode,
                                                           int dtype)
{
    if (!d)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (ph < 0 || pw < 0 || sh <= 0 || sw <= 0 || dh <= 0 || dw <= 0 || (mode != 0 && mode != 1))
        return CUDNN_STATUS_BAD_PARAM;
    if (mode != 1) /* pygpu's convolutions are cross-correlations, as PyTorch's */
        return CUDNN_STATUS_NOT_SUPPORTED;
    d->ph = ph, d->pw = pw, d->sh = sh, d->sw = sw, d->dh = dh, d->dw = dw, d->mode = mode;
    d->dtype = dtype;
    d->set = true;
    return CUDNN_STATUS_SUCCESS;
}

PG_CUDNN_API cudnnStatus_t cudnnSetConvolutionGroupCount(ConvDesc *d, int groups)
{
    if (!d)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (groups < 1)
        return CUDNN_STATUS_BAD_PARAM;
    d->groups = groups;
    return CUDNN_STATUS_SUCCESS;
}

PG_CUDNN_API cudnnStatus_t cudnnSetConvolutionMathType(ConvDesc *d, int math)
{
    if (!d)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (math < 0 || math > 3)
        return CUDNN_STATUS_BAD_PARAM;
    d->math = math;
    return CUDNN_STATUS_SUCCESS;
}

/* forward: (x, w, conv, y) */
PG_CUDNN_API cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnContext *h, TensorDesc *x, TensorDesc *w, ConvDesc *c, TensorDesc *y, int req, int *ret,
    Perf *perf)
{
    return h ? algos(x, w, c, y, req, ret, perf, true) : CUDNN_STATUS_NOT_INITIALIZED;
}

PG_CUDNN_API cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnContext *h, TensorDesc *x,
                                                                TensorDesc *w, ConvDesc *c,
                                                                TensorDesc *y, int req, int *ret,
                                                                Perf *perf)
{
    return cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, c, y, req, ret, perf);
}

PG_CUDNN_API cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnContext *h, TensorDesc *x,
                                                                   TensorDesc *w, ConvDesc *c,
                                                                   TensorDesc *y, int algo,
                                                                   size_t *size)
{
    if (!h)
        return CUDNN_STATUS_NOT_INITIALIZED;
    cudnnStatus_t s = check(x, w, c, y);
    if (s != CUDNN_STATUS_SUCCESS)
        return s;
    if (!size || algo < 0 || algo > 1)
        return CUDNN_STATUS_BAD_PARAM;
    *size = algo == 1 ? WS1 : 0;
    return CUDNN_STATUS_SUCCESS;
}

PG_CUDNN_API cudnnStatus_t cudnnConvolutionForward(cudnnContext *h, const void *alpha,
                                                   TensorDesc *xd, const void *x, TensorDesc *wd,
                                                   const void *w, ConvDesc *cd, int algo,
                                                   void *ws, size_t wss, const void *beta,
                                                   TensorDesc *yd, void *y)
{
    cudnnStatus_t s = check(xd, wd, cd, yd);
    if (s != CUDNN_STATUS_SUCCESS)
        return s;
    if (!alpha || !beta || !x || !w || !y)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    Conv k{*xd, *wd, *yd, *cd};
    int dt = xd->dtype;
    double a = scalar(alpha, dt), b = scalar(beta, dt);
    return launch(h, wss, algo, ws, [k, x, w, y, dt, a, b] {
        std::vector<double> acc((size_t)numel(k.y), 0.0);
        each(k, [&](int64_t xi, int64_t wi, int64_t yi) { acc[yi] += ld(x, dt, xi) * ld(w, dt, wi); });
        finish(y, dt, acc, a, b);
    });
}

/* backward data: (w, dy, conv, dx) */
PG_CUDNN_API cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnContext *h, TensorDesc *w, TensorDesc *dy, ConvDesc *c, TensorDesc *dx, int req, int *ret,
    Perf *perf)
{
    return h ? algos(dx, w, c, dy, req, ret, perf, false) : CUDNN_STATUS_NOT_INITIALIZED;
}

PG_CUDNN_API cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnContext *h, TensorDesc *w, TensorDesc *dy, ConvDesc *c, TensorDesc *dx, int req, int *ret,
    Perf *perf)
{
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w, dy, c, dx, req, ret, perf);
}

PG_CUDNN_API cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnContext *h, TensorDesc *w, TensorDesc *dy, ConvDesc *c, TensorDesc *dx, int algo, size_t *size)
{
    return cudnnGetConvolutionForwardWorkspaceSize(h, dx, w, c, dy, algo, size);
}

PG_CUDNN_API cudnnStatus_t cudnnConvolutionBackwardData(cudnnContext *h, const void *alpha,
                                                        TensorDesc *wd, const void *w,
                                                        TensorDesc *dyd, const void *dy,
                                                        ConvDesc *cd, int algo, void *ws,
                                                        size_t wss, const void *beta,
                                                        TensorDesc *dxd, void *dx)
{
    cudnnStatus_t s = check(dxd, wd, cd, dyd);
    if (s != CUDNN_STATUS_SUCCESS)
        return s;
    if (!alpha || !beta || !w || !dy || !dx)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    Conv k{*dxd, *wd, *dyd, *cd};
    int dt = dxd->dtype;
    double a = scalar(alpha, dt), b = scalar(beta, dt);
    return launch(h, wss, algo, ws, [k, w, dy, dx, dt, a, b] {
        std::vector<double> acc((size_t)numel(k.x), 0.0);
        each(k, [&](int64_t xi, int64_t wi, int64_t yi) { acc[xi] += ld(dy, dt, yi) * ld(w, dt, wi); });
        finish(dx, dt, acc, a, b);
    });
}

/* backward filter: (x, dy, conv, dw) */
PG_CUDNN_API cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnContext *h, TensorDesc *x, TensorDesc *dy, ConvDesc *c, TensorDesc *dw, int req, int *ret,
    Perf *perf)
{
    return h ? algos(x, dw, c, dy, req, ret, perf, false) : CUDNN_STATUS_NOT_INITIALIZED;
}

PG_CUDNN_API cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnContext *h, TensorDesc *x, TensorDesc *dy, ConvDesc *c, TensorDesc *dw, int req, int *ret,
    Perf *perf)
{
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x, dy, c, dw, req, ret, perf);
}

PG_CUDNN_API cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnContext *h, TensorDesc *x, TensorDesc *dy, ConvDesc *c, TensorDesc *dw, int algo, size_t *size)
{
    return cudnnGetConvolutionForwardWorkspaceSize(h, x, dw, c, dy, algo, size);
}

PG_CUDNN_API cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnContext *h, const void *alpha,
                                                          TensorDesc *xd, const void *x,
                                                          TensorDesc *dyd, const void *dy,
                                                          ConvDesc *cd, int algo, void *ws,
                                                          size_t wss, const void *beta,
                                                          TensorDesc *dwd, void *dw)
{
    cudnnStatus_t s = check(xd, dwd, cd, dyd);
    if (s != CUDNN_STATUS_SUCCESS)
        return s;
    if (!alpha || !beta || !x || !dy || !dw)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    Conv k{*xd, *dwd, *dyd, *cd};
    int dt = xd->dtype;
    double a = scalar(alpha, dt), b = scalar(beta, dt);
    return launch(h, wss, algo, ws, [k, x, dy, dw, dt, a, b] {
        std::vector<double> acc((size_t)numel(k.w), 0.0);
        each(k, [&](int64_t xi, int64_t wi, int64_t yi) { acc[wi] += ld(dy, dt, yi) * ld(x, dt, xi); });
        finish(dw, dt, acc, a, b);
    });
}

/* C = alpha * A + beta * C, A broadcast over C's axes of size 1 in A (the bias (1, C, 1, 1)) */
PG_CUDNN_API cudnnStatus_t cudnnAddTensor(cudnnContext *h, const void *alpha, TensorDesc *ad,
                                          const void *A, const void *beta, TensorDesc *cd, void *C)
{
    if (!h)
        return CUDNN_STATUS_NOT_INITIALIZED;
    if (!ad || !cd || !A || !C || !alpha || !beta)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (!valid(ad) || !valid(cd) || ad->dtype != cd->dtype)
        return CUDNN_STATUS_BAD_PARAM;
    const int as[4] = {ad->n, ad->c, ad->h, ad->w}, cs[4] = {cd->n, cd->c, cd->h, cd->w};
    for (int k = 0; k < 4; k++)
        if (as[k] != 1 && as[k] != cs[k])
            return CUDNN_STATUS_BAD_PARAM;
    TensorDesc a = *ad, c = *cd;
    int dt = cd->dtype;
    double al = scalar(alpha, dt), be = scalar(beta, dt);
    pg_emu_enqueue(h->stream, [a, c, A, C, dt, al, be] {
        for (int n = 0; n < c.n; n++)
            for (int ch = 0; ch < c.c; ch++)
                for (int i = 0; i < c.h; i++)
                    for (int j = 0; j < c.w; j++) {
                        int64_t ci = (((int64_t)n * c.c + ch) * c.h + i) * c.w + j;
                        int64_t ai = ((((int64_t)(a.n == 1 ? 0 : n) * a.c + (a.c == 1 ? 0 : ch)) *
                                       a.h + (a.h == 1 ? 0 : i)) * a.w) + (a.w == 1 ? 0 : j);
                        st(C, dt, ci, al * ld(A, dt, ai) + be * ld(C, dt, ci));
                    }
    });
    return CUDNN_STATUS_SUCCESS;
}

/* db (1, C, 1, 1) = alpha * the sums of dy over (N, H, W) + beta * db */
PG_CUDNN_API cudnnStatus_t cudnnConvolutionBackwardBias(cudnnContext *h, const void *alpha,
                                                        TensorDesc *dyd, const void *dy,
                                                        const void *beta, TensorDesc *dbd,
                                                        void *db)
{
    if (!h)
        return CUDNN_STATUS_NOT_INITIALIZED;
    if (!dyd || !dbd || !dy || !db || !alpha || !beta)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (!valid(dyd) || !valid(dbd) || dbd->n != 1 || dbd->c != dyd->c || dbd->h != 1 ||
        dbd->w != 1 || dbd->dtype != dyd->dtype)
        return CUDNN_STATUS_BAD_PARAM;
    TensorDesc y = *dyd;
    int dt = y.dtype;
    double al = scalar(alpha, dt), be = scalar(beta, dt);
    pg_emu_enqueue(h->stream, [y, dy, db, dt, al, be] {
        for (int ch = 0; ch < y.c; ch++) {
            double s = 0;
            for (int n = 0; n < y.n; n++)
                for (int64_t k = 0; k < (int64_t)y.h * y.w; k++)
                    s += ld(dy, dt, ((int64_t)n * y.c + ch) * y.h * y.w + k);
            st(db, dt, ch, al * s + (be != 0 ? be * ld(db, dt, ch) : 0));
        }
    });
    return CUDNN_STATUS_SUCCESS;
}
