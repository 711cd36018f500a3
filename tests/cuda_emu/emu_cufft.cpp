/* emu_cufft.cpp - a CPU stand-in for the cuFFT calls the plugin makes (cufftPlanMany,
 * cufftSetStream, cufftExec{C2C,Z2Z,R2C,D2Z,C2R,Z2D}, cufftDestroy, cufftGetVersion:
 * csrc/backends/cuda/cuda_cufft.c), exported under cuFFT's names: PYGPU_CUFFT_LIBRARY set to
 * the emulated plugin's path makes pygpu load it.
 *
 * It checks what cuFFT's documentation says a call is given, and answers with cuFFT's
 * statuses: a null plan pointer, n[] or data pointer, or a direction other than
 * CUFFT_FORWARD/CUFFT_INVERSE is CUFFT_INVALID_VALUE; a rank outside 1..3, a length or batch
 * below 1, an advanced layout (inembed and onembed both given) whose strides or distances
 * are below 1, whose embedding is smaller than the transform on an axis after the first, or
 * whose lines overlap (dist below the stride times the line's length) is CUFFT_INVALID_SIZE;
 * a type that is not one of the six is CUFFT_INVALID_TYPE; a handle not made by
 * cufftPlanMany (or destroyed) is CUFFT_INVALID_PLAN; an exec whose function does not match
 * the plan's type (cufftExecC2C on an R2C plan, a single-precision exec on a double plan) is
 * CUFFT_INVALID_VALUE. The transform is a naive DFT in double (a test device: exact enough to
 * compare with torch), queued on the plan's stream (cufftSetStream; the legacy stream
 * before). Like cuFFT, the complex-to-real transforms overwrite their input: the stand-in
 * fills it with NaN after reading it, so a caller that needs its input must pass a copy. The
 * inverse real transform reads the non-negative frequencies as a Hermitian spectrum, without
 * the imaginary parts of the zero and (even n) Nyquist ones, as cuFFT and pocketfft do. */
#include <math.h>
#include <stdint.h>

#include <map>
#include <mutex>
#include <vector>

#include "emu_internal.h"

#define PG_CUFFT_API extern "C" __attribute__((visibility("default")))

typedef int cufftHandle;
typedef int cufftResult;
enum {
    CUFFT_SUCCESS = 0,
    CUFFT_INVALID_PLAN = 1,
    CUFFT_INVALID_TYPE = 3,
    CUFFT_INVALID_VALUE = 4,
    CUFFT_INVALID_SIZE = 8,
};
enum { CUFFT_FORWARD = -1, CUFFT_INVERSE = 1 };
enum { CUFFT_R2C = 0x2a, CUFFT_C2R = 0x2c, CUFFT_C2C = 0x29, CUFFT_D2Z = 0x6a, CUFFT_Z2D = 0x6c,
       CUFFT_Z2Z = 0x69 };

namespace {

enum Kind { C2C, R2C, C2R };

struct Plan {
    int type = 0;
    Kind kind = C2C;
    bool wide = false;
    int64_t n = 0, batch = 0, istride = 1, idist = 0, ostride = 1, odist = 0;
    cudaStream_t stream = nullptr;
};

std::mutex g_lock;
std::map<cufftHandle, Plan> g_plans;
cufftHandle g_next = 1;

bool kind_of(int type, Kind *kind, bool *wide)
{
    switch (type) {
    case CUFFT_C2C: *kind = C2C; *wide = false; return true;
    case CUFFT_Z2Z: *kind = C2C; *wide = true; return true;
    case CUFFT_R2C: *kind = R2C; *wide = false; return true;
    case CUFFT_D2Z: *kind = R2C; *wide = true; return true;
    case CUFFT_C2R: *kind = C2R; *wide = false; return true;
    case CUFFT_Z2D: *kind = C2R; *wide = true; return true;
    default: return false;
    }
}

/* part i of a float or double buffer */
double ld(const void *p, bool wide, int64_t i)
{
    return wide ? ((const double *)p)[i] : (double)((const float *)p)[i];
}
void st(void *p, bool wide, int64_t i, double v)
{
    if (wide)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

/* the DFT of every line of the plan: in and out address elements (a complex element is two
 * parts) at b * dist + j * stride; sign -1 forward, +1 inverse; unscaled, as cuFFT */
void transform(const Plan &p, const void *in, void *out, int sign)
{
    const int64_t n = p.n, half = n / 2 + 1;
    std::vector<double> c((size_t)n), s((size_t)n);
    for (int64_t k = 0; k < n; k++) { /* e^{sign 2 pi i k / n}, the angle reduced mod n */
        double a = 2.0 * M_PI * (double)k / (double)n;
        c[(size_t)k] = cos(a);
        s[(size_t)k] = sign * sin(a);
    }
    const int64_t in_len = p.kind == C2R ? half : n, out_len = p.kind == R2C ? half : n;
    const bool cin = p.kind != R2C, cout = p.kind != C2R;
    std::vector<double> re((size_t)in_len), im((size_t)in_len);
    for (int64_t b = 0; b < p.batch; b++) {
        for (int64_t j = 0; j < in_len; j++) {
            int64_t e = b * p.idist + j * p.istride;
            re[(size_t)j] = cin ? ld(in, p.wide, 2 * e) : ld(in, p.wide, e);
            im[(size_t)j] = cin ? ld(in, p.wide, 2 * e + 1) : 0.0;
        }
        for (int64_t k = 0; k < out_len; k++) {
            double sr = 0, si = 0;
            if (p.kind == C2R) { /* the Hermitian spectrum's real signal at k */
                sr = re[0];
                for (int64_t j = 1; j < half; j++) {
                    size_t a = (size_t)((j * k) % n);
                    double term = re[(size_t)j] * c[a] - im[(size_t)j] * s[a];
                    sr += (2 * j == n) ? (a == 0 ? re[(size_t)j] : -re[(size_t)j]) : 2 * term;
                }
            } else {
                for (int64_t j = 0; j < n; j++) {
                    size_t a = (size_t)((j * k) % n);
                    sr += re[(size_t)j] * c[a] - im[(size_t)j] * s[a];
                    si += re[(size_t)j] * s[a] + im[(size_t)j] * c[a];
                }
            }
            int64_t e = b * p.odist + k * p.ostride;
            if (cout) {
                st(out, p.wide, 2 * e, sr);
                st(out, p.wide, 2 * e + 1, si);
            } else {
                st(out, p.wide, e, sr);
            }
        }
    }
    if (p.kind == C2R) /* cuFFT's C2R overwrites its input */
        for (int64_t b = 0; b < p.batch; b++)
            for (int64_t j = 0; j < in_len; j++) {
                int64_t e = b * p.idist + j * p.istride;
                st((void *)in, p.wide, 2 * e, NAN);
                st((void *)in, p.wide, 2 * e + 1, NAN);
            }
}

cufftResult exec(cufftHandle h, int type, const void *in, void *out, int direction)
{
    Plan p;
    {
        std::lock_guard<std::mutex> g(g_lock);
        auto it = g_plans.find(h);
        if (it == g_plans.end())
            return CUFFT_INVALID_PLAN;
        p = it->second;
    }
    if (p.type != type || !in || !out)
        return CUFFT_INVALID_VALUE;
    if (p.kind == C2C && direction != CUFFT_FORWARD && direction != CUFFT_INVERSE)
        return CUFFT_INVALID_VALUE;
    int sign = p.kind == R2C ? -1 : p.kind == C2R ? 1 : direction;
    pg_emu_enqueue(p.stream, [p, in, out, sign] { transform(p, in, out, sign); });
    return CUFFT_SUCCESS;
}

} // namespace

PG_CUFFT_API cufftResult cufftGetVersion(int *version)
{
    if (!version)
        return CUFFT_INVALID_VALUE;
    *version = 12000;
    return CUFFT_SUCCESS;
}

PG_CUFFT_API cufftResult cufftPlanMany(cufftHandle *plan, int rank, int *n, int *inembed,
                                       int istride, int idist, int *onembed, int ostride,
                                       int odist, int type, int batch)
{
    if (!plan || !n)
        return CUFFT_INVALID_VALUE;
    Plan p;
    if (!kind_of(type, &p.kind, &p.wide))
        return CUFFT_INVALID_TYPE;
    if (rank < 1 || rank > 3 || batch < 1)
        return CUFFT_INVALID_SIZE;
    for (int i = 0; i < rank; i++)
        if (n[i] < 1)
            return CUFFT_INVALID_SIZE;
    if (rank != 1)
        return CUFFT_INVALID_SIZE; /* the stand-in runs the plugin's 1-D plans only */
    int64_t len = n[0], half = len / 2 + 1;
    int64_t in_len = p.kind == C2R ? half : len, out_len = p.kind == R2C ? half : len;
    p.n = len;
    p.batch = batch;
    if (inembed && onembed) { /* the advanced layout (inembed[0] is not read at rank 1) */
        if (istride < 1 || ostride < 1 || idist < 1 || odist < 1)
            return CUFFT_INVALID_SIZE;
        if (batch > 1 && ((int64_t)idist < (int64_t)istride * (in_len - 1) + 1 ||
                          (int64_t)odist < (int64_t)ostride * (out_len - 1) + 1))
            return CUFFT_INVALID_SIZE; /* lines that overlap */
        p.istride = istride, p.idist = idist, p.ostride = ostride, p.odist = odist;
    } else { /* the basic layout: contiguous lines, the strides and distances not read */
        p.istride = p.ostride = 1;
        p.idist = in_len;
        p.odist = out_len;
    }
    p.type = type;
    std::lock_guard<std::mutex> g(g_lock);
    *plan = g_next++;
    g_plans[*plan] = p;
    return CUFFT_SUCCESS;
}

PG_CUFFT_API cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream)
{
    std::lock_guard<std::mutex> g(g_lock);
    auto it = g_plans.find(plan);
    if (it == g_plans.end())
        return CUFFT_INVALID_PLAN;
    it->second.stream = stream;
    return CUFFT_SUCCESS;
}

PG_CUFFT_API cufftResult cufftDestroy(cufftHandle plan)
{
    std::lock_guard<std::mutex> g(g_lock);
    return g_plans.erase(plan) ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

PG_CUFFT_API cufftResult cufftExecC2C(cufftHandle h, void *in, void *out, int direction)
{
    return exec(h, CUFFT_C2C, in, out, direction);
}
PG_CUFFT_API cufftResult cufftExecZ2Z(cufftHandle h, void *in, void *out, int direction)
{
    return exec(h, CUFFT_Z2Z, in, out, direction);
}
PG_CUFFT_API cufftResult cufftExecR2C(cufftHandle h, void *in, void *out)
{
    return exec(h, CUFFT_R2C, in, out, 0);
}
PG_CUFFT_API cufftResult cufftExecD2Z(cufftHandle h, void *in, void *out)
{
    return exec(h, CUFFT_D2Z, in, out, 0);
}
PG_CUFFT_API cufftResult cufftExecC2R(cufftHandle h, void *in, void *out)
{
    return exec(h, CUFFT_C2R, in, out, 0);
}
PG_CUFFT_API cufftResult cufftExecZ2D(cufftHandle h, void *in, void *out)
{
    return exec(h, CUFFT_Z2D, in, out, 0);
}
