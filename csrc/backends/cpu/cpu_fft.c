/* cpu_fft.c - the FFT node on the CPU (cpu and sim's worker): pocketfft (the C version,
 * vendored in csrc/third_party/pocketfft/, BSD-3) transforms each line along the last axis.
 *
 * pocketfft works in double: a complex64 or float32 line is widened into a double buffer,
 * transformed and rounded once at the store. One plan per node (pocketfft's plans are cheap
 * next to a batch of lines; it caches nothing itself). The real transforms use pocketfft's
 * halfcomplex order (r0, r1, i1, r2, i2, ..., and r(n/2) for even n), which the loops below
 * turn into and out of (real, imaginary) pairs; like PyTorch's and NumPy's, the inverse real
 * transform ignores the imaginary parts of the zero and (even n) Nyquist frequencies. Each
 * FFT row of pg_subops.def names its function here in its cpu column. The node is SERIAL:
 * the core releases the GIL around it and it runs whole on one thread. */
#include "cpu_kernels.h"

#include <stdlib.h>

/* pocketfft's own file, in this translation unit: its functions stay private to the
 * extension and the project's warnings stay on for everything above and below it */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#include "../../third_party/pocketfft/pocketfft.c"
#pragma GCC diagnostic pop

/* element i of a line of floats or doubles, as a double */
static inline double load_part(const char *p, bool wide, int64_t i)
{
    return wide ? ((const double *)p)[i] : (double)((const float *)p)[i];
}
static inline void store_part(char *p, bool wide, int64_t i, double v)
{
    if (wide)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

/* the lines of a node: count, and the part type of its operand and result */
typedef struct fft_lines {
    int64_t count, in_len, out_len; /* lines; values (parts) per input and output line */
    bool in_wide, out_wide;         /* float64 parts (else float32) */
    const char *in;
    char *out;
} fft_lines;

static fft_lines lines_of(const pg_node *n, int64_t in_parts, int64_t out_parts)
{
    const pg_tensor *s = &n->src[0], *d = &n->dst;
    fft_lines l;
    l.in_len = in_parts;
    l.out_len = out_parts;
    l.count = pg_tensor_numel(s) / s->shape[s->ndim - 1];
    l.in_wide = s->dtype == PG_FLOAT64 || s->dtype == PG_COMPLEX128;
    l.out_wide = d->dtype == PG_FLOAT64 || d->dtype == PG_COMPLEX128;
    l.in = pg_tensor_data(s);
    l.out = pg_tensor_data(d);
    return l;
}

static pg_status no_memory(const pg_node *n)
{
    return pg_error_set(PG_ERR_NOMEM, "%s: out of host memory for a transform of %lld", n->name,
                        (long long)n->p.fft.n);
}

static pg_status pg_cpu_fft_c2c(const pg_node *n)
{
    const int64_t len = n->p.fft.n;
    fft_lines l = lines_of(n, 2 * len, 2 * len);
    cfft_plan plan = make_cfft_plan((size_t)len);
    double *buf = malloc(sizeof(double) * 2 * (size_t)len);
    pg_status st = plan && buf ? PG_OK : no_memory(n);
    size_t isz = l.in_wide ? 8 : 4, osz = l.out_wide ? 8 : 4;
    for (int64_t b = 0; st == PG_OK && b < l.count; b++) {
        const char *ip = l.in + b * l.in_len * (int64_t)isz;
        char *op = l.out + b * l.out_len * (int64_t)osz;
        for (int64_t i = 0; i < 2 * len; i++)
            buf[i] = load_part(ip, l.in_wide, i);
        int rc = n->p.fft.forward ? cfft_forward(plan, buf, n->p.fft.fct)
                                  : cfft_backward(plan, buf, n->p.fft.fct);
        if (rc != 0)
            st = no_memory(n);
        for (int64_t i = 0; st == PG_OK && i < 2 * len; i++)
            store_part(op, l.out_wide, i, buf[i]);
    }
    free(buf);
    if (plan)
        destroy_cfft_plan(plan);
    return st;
}

/* n reals -> n/2+1 (re, im) pairs; backward (the sign +1) conjugates the forward result */
static pg_status pg_cpu_fft_r2c(const pg_node *n)
{
    const int64_t len = n->p.fft.n, half = len / 2 + 1;
    fft_lines l = lines_of(n, len, 2 * half);
    rfft_plan plan = make_rfft_plan((size_t)len);
    double *buf = malloc(sizeof(double) * (size_t)len);
    pg_status st = plan && buf ? PG_OK : no_memory(n);
    size_t isz = l.in_wide ? 8 : 4, osz = l.out_wide ? 8 : 4;
    double sign = n->p.fft.forward ? 1.0 : -1.0;
    for (int64_t b = 0; st == PG_OK && b < l.count; b++) {
        const char *ip = l.in + b * l.in_len * (int64_t)isz;
        char *op = l.out + b * l.out_len * (int64_t)osz;
        for (int64_t i = 0; i < len; i++)
            buf[i] = load_part(ip, l.in_wide, i);
        if (rfft_forward(plan, buf, n->p.fft.fct) != 0) {
            st = no_memory(n);
            break;
        }
        /* halfcomplex: buf[0] = r0, buf[2k-1] = rk, buf[2k] = ik, buf[n-1] = r(n/2) if even */
        store_part(op, l.out_wide, 0, buf[0]);
        store_part(op, l.out_wide, 1, 0.0);
        for (int64_t k = 1; k < half; k++) {
            double re = buf[2 * k - 1], im = 2 * k < len ? buf[2 * k] : 0.0;
            store_part(op, l.out_wide, 2 * k, re);
            store_part(op, l.out_wide, 2 * k + 1, sign * im);
        }
    }
    free(buf);
    if (plan)
        destroy_rfft_plan(plan);
    return st;
}

/* n/2+1 (re, im) pairs -> n reals; the imaginary parts of frequency 0 (and n/2, n even) are
 * not read, as no real signal has them. forward (the sign -1) reads the conjugate. */
static pg_status pg_cpu_fft_c2r(const pg_node *n)
{
    const int64_t len = n->p.fft.n, half = len / 2 + 1;
    fft_lines l = lines_of(n, 2 * half, len);
    rfft_plan plan = make_rfft_plan((size_t)len);
    double *buf = malloc(sizeof(double) * (size_t)len);
    pg_status st = plan && buf ? PG_OK : no_memory(n);
    size_t isz = l.in_wide ? 8 : 4, osz = l.out_wide ? 8 : 4;
    double sign = n->p.fft.forward ? -1.0 : 1.0;
    for (int64_t b = 0; st == PG_OK && b < l.count; b++) {
        const char *ip = l.in + b * l.in_len * (int64_t)isz;
        char *op = l.out + b * l.out_len * (int64_t)osz;
        buf[0] = load_part(ip, l.in_wide, 0);
        for (int64_t k = 1; k < half; k++) {
            buf[2 * k - 1] = load_part(ip, l.in_wide, 2 * k);
            if (2 * k < len)
                buf[2 * k] = sign * load_part(ip, l.in_wide, 2 * k + 1);
        }
        if (rfft_backward(plan, buf, n->p.fft.fct) != 0) {
            st = no_memory(n);
            break;
        }
        for (int64_t i = 0; i < len; i++)
            store_part(op, l.out_wide, i, buf[i]);
    }
    free(buf);
    if (plan)
        destroy_rfft_plan(plan);
    return st;
}

/* each FFT row's function, by its cpu column (pg_subops.def) */
typedef pg_status (*fft_fn)(const pg_node *);
static const fft_fn fft_kernels[PG_NUM_SUBOPS] = {
#define PG_SUBOP_FFT(ID, name, flags, in, out, cpu, ...) [PG_FFT_##ID] = cpu,
#include "../../core/pg_subops.def"
};

pg_status pg_cpu_fft(const pg_node *n)
{
    fft_fn fn = n->subop >= 0 && n->subop < PG_NUM_SUBOPS ? fft_kernels[n->subop] : NULL;
    if (!fn)
        return pg_error_set(PG_ERR_RUNTIME, "fft: %s is not an FFT sub-op", pg_subop_id(n->subop));
    return fn(n);
}
