/* cpu_conv_direct.c - depthwise convolution (one input channel per group, C/g == 1) as
 * direct loops: its GEMMs would have one row. Output channel o reads input channel o / m (a
 * channel multiplier m = O/g >= 1).
 *
 *   forward        y[n,o] = b[o] + sum over taps (i, j) of w[o,i,j] * x[n,o/m] shifted
 *   input grad     dx[n,c] = sum over its m output channels and taps of w * dy shifted back
 *   weight grad    dW[o,i,j] = sum over n and the output plane of dy[n,o] * x[n,o/m] shifted
 *
 * Every geometry (stride, padding, dilation) runs one way: a plane is first copied into
 * zero-padded "phase planes", one per (row mod sh, column mod sw), each Hq x Wq, so that
 * input pixel (oh*sh + i*dh - ph, ow*sw + j*dw - pw) of tap (i, j) is element
 * k + off(i, j) of one phase plane, k = oh*Wq + ow the output's index at pitch Wq. A tap is
 * then one contiguous vector pass over the whole plane (OH*Wq elements, not a row of OW:
 * a 4x4 plane is one 24-element loop, not four of 4), and the taps of a block of 64
 * outputs are summed before it is stored. The input gradient is the same passes reversed
 * (each tap adds w * dy at its offset into zeroed phase planes, dy laid out at pitch Wq with
 * zero columns past OW), then the phase planes are read back into dx; the weight gradient
 * is one dot product per tap over the same layout (the zero columns of dy keep the columns
 * past OW out of it; an infinite input pixel there would make a tap's sum NaN rather than
 * leave it alone, as 0 * inf is NaN). The copies cost one pass over a plane;
 * the first version called a vector routine per row and tap (and dispatched on the ISA for
 * each call, and ran strided rows as scalar loops): MobileNetV2's depthwise layers were 45%
 * of its CIFAR training step (issue 45). The second ran one plane at a time, which on 4 x 4
 * planes left 16 outputs a dispatched tap pass (0.15-0.28x PyTorch's CPU time per layer at
 * 960 channels), and dealt stride-2 inputs to the phases with a division per pixel (0.33x
 * at 144 channels, 32 x 32): now a block of samples is laid side by side in each phase
 * plane, `plane` apart, and a tap is one pass over the whole block; rows are dealt to the
 * column phases as strided runs (docs/performance.md, "Per layer").
 * Vector code through PG_CPU_DISPATCH (AVX-512, AVX2 or baseline). (channel, block) units
 * (forward, input gradient) or output channels (weight gradient: each task sums whole
 * channels over every sample, block by block in order, the blocks fixed by the shape, so
 * there are no partial sums and the bits do not depend on the thread count) are shared
 * among the pool's threads. */
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_ops_conv.h"
#include "cpu_conv.h"
#include "cpu_part.h"
#include "cpu_vecmath.h"

#define DATA(T, t) ((T *)pg_tensor_data(t))
#define MAX_TAPS 1024 /* kh*kw above this runs tap by tap without the offset table */
#define CHUNK 64      /* outputs whose taps are summed before they are stored */
#define BLOCK_ELEMS 4096 /* a block's samples: about this many elements of each phase plane */

typedef struct dw_job {
    const pg_node *n;
    int64_t N, C, H, W, O, OH, OW, m; /* m: output channels per input channel */
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t Hq, Wq, phases, plane; /* phase planes: count, and elements each (Hq+1 rows) */
    int64_t B, nblk; /* samples a block (laid side by side, see unit_), and blocks a batch */
    int64_t ntasks, units;
    int computes; /* the operand in dst (pg_conv_role): y forward, x or w backward */
} dw_job;

/* n elements from src to dst, 16 bytes a move, inline: a 4 x 4 plane's rows are 16 bytes,
 * and the 256 calls of memcpy a unit made cost more than its arithmetic. The empty asm
 * keeps GCC from turning the loop back into a call of memmove (-ftree-loop-distribute-
 * patterns); a constant-size memcpy is a plain load and store. */
#define COPY_ROW(SUF, T)                                                                        \
    static inline void copy_row_##SUF(T *restrict dst, const T *restrict src, int64_t n)        \
    {                                                                                           \
        enum { V = 16 / sizeof(T) };                                                            \
        int64_t i = 0;                                                                          \
        for (; i + V <= n; i += V) {                                                            \
            memcpy(dst + i, src + i, 16);                                                       \
            __asm__("" : : "r"(dst + i));                                                       \
        }                                                                                       \
        for (; i < n; i++) {                                                                    \
            memcpy(dst + i, src + i, sizeof(T));                                                \
            __asm__("" : : "r"(dst + i));                                                       \
        }                                                                                       \
    }
COPY_ROW(f32, float)
COPY_ROW(f64, double)

/* The phase-plane layout of a job (see the file's comment). */
static void layout(dw_job *j)
{
    int64_t hp = (j->OH - 1) * j->sh + (j->kh - 1) * j->dh + 1; /* padded rows the taps read */
    int64_t wp = (j->OW - 1) * j->sw + (j->kw - 1) * j->dw + 1;
    if (hp < j->H + j->ph)
        hp = j->H + j->ph; /* every input pixel has a place (the input gradient reads them) */
    if (wp < j->W + j->pw)
        wp = j->W + j->pw;
    j->Hq = (hp + j->sh - 1) / j->sh;
    j->Wq = (wp + j->sw - 1) / j->sw;
    j->phases = j->sh * j->sw;
    j->plane = (j->Hq + 1) * j->Wq; /* a spare zero row: the columns past OW read beyond */
    /* small planes (MobileNetV2's 4 x 4 and 8 x 8) a block of samples at a time, so the
     * per-plane costs (a dispatched call per tap pass, the zeroing) are paid per block; the
     * block depends on the shape only, so the weight gradient's sums do not depend on the
     * thread count */
    j->B = BLOCK_ELEMS / j->plane;
    if (j->B > j->N)
        j->B = j->N;
    if (j->B < 1)
        j->B = 1;
    j->nblk = (j->N + j->B - 1) / j->B;
}

/* phase plane and offset of tap (i, j) */
static void tap_at(const dw_job *j, int64_t i, int64_t jj, int64_t *phase, int64_t *off)
{
    int64_t r = i * j->dh, c = jj * j->dw;
    *phase = (r % j->sh) * j->sw + c % j->sw;
    *off = (r / j->sh) * j->Wq + c / j->sw;
}

#define DW_KERNELS(SUF, T)                                                                      \
    /* out[k] = b + sum_t w[t] * src[t][k], k < n: the taps of CHUNK outputs summed in a    \
     * block before it is stored */                                                          \
    PG_CPU_DISPATCH(void, taps_fwd_##SUF,                                                       \
                    (int64_t n, int64_t ntaps, const T *const *src, const T *w, T b, T *out),   \
                    (n, ntaps, src, w, b, out))                                                 \
    {                                                                                           \
        if (ntaps == 9) { /* 3 x 3: each output summed in a register, in the same order */     \
            const T *s0 = src[0], *s1 = src[1], *s2 = src[2], *s3 = src[3], *s4 = src[4];       \
            const T *s5 = src[5], *s6 = src[6], *s7 = src[7], *s8 = src[8];                     \
            T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6];      \
            T w7 = w[7], w8 = w[8];                                                             \
            _Pragma("omp simd") for (int64_t k = 0; k < n; k++) {                               \
                T a = b;                                                                        \
                a += w0 * s0[k];                                                                \
                a += w1 * s1[k];                                                                \
                a += w2 * s2[k];                                                                \
                a += w3 * s3[k];                                                                \
                a += w4 * s4[k];                                                                \
                a += w5 * s5[k];                                                                \
                a += w6 * s6[k];                                                                \
                a += w7 * s7[k];                                                                \
                a += w8 * s8[k];                                                                \
                out[k] = a;                                                                     \
            }                                                                                   \
            return;                                                                             \
        }                                                                                       \
        T acc[CHUNK];                                                                           \
        for (int64_t k0 = 0; k0 < n; k0 += CHUNK) {                                             \
            int64_t len = n - k0 < CHUNK ? n - k0 : CHUNK;                                      \
            _Pragma("omp simd") for (int64_t l = 0; l < len; l++) acc[l] = b;                   \
            for (int64_t t = 0; t < ntaps; t++) {                                               \
                const T *s = src[t] + k0;                                                       \
                T wv = w[t];                                                                    \
                _Pragma("omp simd") for (int64_t l = 0; l < len; l++) acc[l] += wv * s[l];      \
            }                                                                                   \
            _Pragma("omp simd") for (int64_t l = 0; l < len; l++) out[k0 + l] = acc[l];         \
        }                                                                                       \
    }                                                                                           \
    /* dst[t][k] += w[t] * dy[k], tap after tap (the taps' ranges overlap) */                  \
    PG_CPU_DISPATCH(void, taps_bwd_##SUF,                                                       \
                    (int64_t n, int64_t ntaps, T *const *dst, const T *w, const T *dy),         \
                    (n, ntaps, dst, w, dy))                                                     \
    {                                                                                           \
        for (int64_t t = 0; t < ntaps; t++) {                                                   \
            T *d = dst[t], wv = w[t];                                                           \
            _Pragma("omp simd") for (int64_t k = 0; k < n; k++) d[k] += wv * dy[k];             \
        }                                                                                       \
    }                                                                                           \
    /* acc[t] += sum_k dy[k] * src[t][k] (each tap's sum in T's vector lanes, then double) */  \
    PG_CPU_DISPATCH(void, taps_dot_##SUF,                                                       \
                    (int64_t n, int64_t ntaps, const T *const *src, const T *dy, double *acc),  \
                    (n, ntaps, src, dy, acc))                                                   \
    {                                                                                           \
        for (int64_t t = 0; t < ntaps; t++) {                                                   \
            const T *s = src[t];                                                                \
            T sum = 0;                                                                          \
            _Pragma("omp simd reduction(+:sum)") for (int64_t k = 0; k < n; k++) sum +=         \
                dy[k] * s[k];                                                                   \
            acc[t] += (double)sum;                                                              \
        }                                                                                       \
    }                                                                                           \
    /* x (H, W) into the (already zeroed) phase planes at ph, phase p's at ph + p * pstride: \
     * a row goes to phase row (h + ph) / sh of phases (h + ph) % sh, its columns dealt out  \
     * to the sw column phases as strided runs (no division per pixel) */                   \
    static void to_phases_##SUF(const dw_job *j, const T *x, T *ph, int64_t pstride)            \
    {                                                                                           \
        for (int64_t h = 0; h < j->H; h++) {                                                    \
            int64_t r = h + j->ph, a = r % j->sh;                                               \
            const T *xr = x + h * j->W;                                                         \
            T *dst = ph + a * j->sw * pstride + (r / j->sh) * j->Wq;                            \
            if (j->sw == 1) {                                                                   \
                copy_row_##SUF(dst + j->pw, xr, j->W);                              \
                continue;                                                                       \
            }                                                                                   \
            for (int64_t b = 0; b < j->sw; b++) {                                               \
                int64_t w0 = ((b - j->pw) % j->sw + j->sw) % j->sw; /* (w0 + pw) % sw == b */   \
                T *d = dst + b * pstride + (w0 + j->pw) / j->sw;                                \
                for (int64_t w = w0, q = 0; w < j->W; w += j->sw, q++)                          \
                    d[q] = xr[w];                                                               \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    /* the phase planes back into dx (H, W) */                                                 \
    static void from_phases_##SUF(const dw_job *j, const T *ph, int64_t pstride, T *dx)         \
    {                                                                                           \
        for (int64_t h = 0; h < j->H; h++) {                                                    \
            int64_t r = h + j->ph, a = r % j->sh;                                               \
            T *xr = dx + h * j->W;                                                              \
            const T *src = ph + a * j->sw * pstride + (r / j->sh) * j->Wq;                      \
            if (j->sw == 1) {                                                                   \
                copy_row_##SUF(xr, src + j->pw, j->W);                              \
                continue;                                                                       \
            }                                                                                   \
            for (int64_t b = 0; b < j->sw; b++) {                                               \
                int64_t w0 = ((b - j->pw) % j->sw + j->sw) % j->sw;                             \
                const T *s = src + b * pstride + (w0 + j->pw) / j->sw;                          \
                for (int64_t w = w0, q = 0; w < j->W; w += j->sw, q++)                          \
                    xr[w] = s[q];                                                               \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    /* dy (OH, OW) at pitch Wq into a zeroed plane (the columns past OW, rows past OH stay 0) */ \
    static void to_pitch_##SUF(const dw_job *j, const T *dy, T *out)                            \
    {                                                                                           \
        for (int64_t oh = 0; oh < j->OH; oh++)                                                  \
            copy_row_##SUF(out + oh * j->Wq, dy + oh * j->OW, j->OW);               \
    }                                                                                           \
    /* the tap pointers into a block's phase planes (phase p at ph + p * pstride), and the    \
     * weights of channel o in tap order */                                                   \
    static void taps_of_##SUF(const dw_job *j, T *ph, int64_t pstride, int64_t o, T **src,      \
                              T *w)                                                             \
    {                                                                                           \
        const T *wo = w ? DATA(T, pg_conv_operand(j->n, PG_CONV_W)) : NULL;                     \
        for (int64_t i = 0; i < j->kh; i++)                                                     \
            for (int64_t jj = 0; jj < j->kw; jj++) {                                            \
                int64_t phase, off, t = i * j->kw + jj;                                         \
                tap_at(j, i, jj, &phase, &off);                                                 \
                src[t] = ph + phase * pstride + off;                                            \
                if (w)                                                                          \
                    w[t] = wo[o * j->kh * j->kw + t];                                           \
            }                                                                                   \
    }                                                                                           \
    /* Unit u of a job on the block of samples [s0, s0 + nb): each sample's phase planes     \
     * `plane` apart inside each phase's stretch of B * plane, so a tap is one pass of        \
     * (nb - 1) * plane + OH * Wq elements over the whole block (the positions between two    \
     * samples' outputs are computed and dropped; in the gradients dy is zero there) */      \
    static void unit_##SUF(const dw_job *j, int64_t u, T *ph, T *row, T **src, T *w,            \
                           double *acc)                                                         \
    {                                                                                           \
        const pg_node *n = j->n;                                                                \
        int64_t ntaps = j->kh * j->kw, pstride = j->B * j->plane;                               \
        int64_t HW = j->H * j->W, OHW = j->OH * j->OW;                                          \
        if (j->computes == PG_CONV_W) { /* u: output channel o, summed over the blocks in order */ \
            int64_t o = u;                                                                      \
            double db = 0;                                                                      \
            memset(acc, 0, sizeof(double) * (size_t)ntaps);                                     \
            for (int64_t s0 = 0; s0 < j->N; s0 += j->B) {                                       \
                int64_t nb = j->N - s0 < j->B ? j->N - s0 : j->B;                               \
                int64_t len = (nb - 1) * j->plane + j->OH * j->Wq;                              \
                memset(ph, 0, sizeof(T) * (size_t)(j->phases * pstride));                       \
                memset(row, 0, sizeof(T) * (size_t)pstride);                                    \
                for (int64_t s = 0; s < nb; s++) {                                              \
                    to_phases_##SUF(j, DATA(T, &n->src[1]) + ((s0 + s) * j->C + o / j->m) * HW, \
                                    ph + s * j->plane, pstride);                                \
                    const T *dy = DATA(T, &n->src[0]) + ((s0 + s) * j->O + o) * OHW;            \
                    to_pitch_##SUF(j, dy, row + s * j->plane);                                  \
                    if (n->extra[0].storage) {                                                  \
                        T sb = 0;                                                               \
                        for (int64_t k = 0; k < OHW; k++)                                       \
                            sb += dy[k];                                                        \
                        db += (double)sb;                                                       \
                    }                                                                           \
                }                                                                               \
                taps_of_##SUF(j, ph, pstride, o, src, NULL);                                    \
                taps_dot_##SUF(len, ntaps, (const T *const *)src, row, acc);                    \
            }                                                                                   \
            T *dw = DATA(T, &n->dst) + o * ntaps;                                               \
            for (int64_t t = 0; t < ntaps; t++)                                                 \
                dw[t] = (T)acc[t];                                                              \
            if (n->extra[0].storage)                                                            \
                DATA(T, &n->extra[0])[o] = (T)db;                                               \
            return;                                                                             \
        }                                                                                       \
        /* forward: u = (output channel, block); input gradient: u = (input channel, block) */ \
        int64_t ch = u / j->nblk, s0 = (u % j->nblk) * j->B;                                    \
        int64_t nb = j->N - s0 < j->B ? j->N - s0 : j->B;                                       \
        int64_t len = (nb - 1) * j->plane + j->OH * j->Wq;                                      \
        memset(ph, 0, sizeof(T) * (size_t)(j->phases * pstride));                               \
        if (j->computes == PG_CONV_Y) {                                                         \
            int64_t o = ch;                                                                     \
            for (int64_t s = 0; s < nb; s++)                                                    \
                to_phases_##SUF(j, DATA(T, &n->src[0]) + ((s0 + s) * j->C + o / j->m) * HW,     \
                                ph + s * j->plane, pstride);                                    \
            taps_of_##SUF(j, ph, pstride, o, src, w);                                           \
            T b = n->src[2].storage ? DATA(T, &n->src[2])[o] : (T)0;                            \
            taps_fwd_##SUF(len, ntaps, (const T *const *)src, w, b, row);                       \
            for (int64_t s = 0; s < nb; s++) {                                                  \
                T *y = DATA(T, &n->dst) + ((s0 + s) * j->O + o) * OHW;                          \
                for (int64_t oh = 0; oh < j->OH; oh++)                                          \
                    copy_row_##SUF(y + oh * j->OW, row + s * j->plane + oh * j->Wq, j->OW);     \
            }                                                                                   \
            return;                                                                             \
        }                                                                                       \
        int64_t c = ch;                                                                         \
        for (int64_t o = c * j->m; o < (c + 1) * j->m; o++) {                                   \
            memset(row, 0, sizeof(T) * (size_t)pstride);                                        \
            for (int64_t s = 0; s < nb; s++)                                                    \
                to_pitch_##SUF(j, DATA(T, &n->src[0]) + ((s0 + s) * j->O + o) * OHW,            \
                               row + s * j->plane);                                             \
            taps_of_##SUF(j, ph, pstride, o, src, w);                                           \
            taps_bwd_##SUF(len, ntaps, src, w, row);                                            \
        }                                                                                       \
        for (int64_t s = 0; s < nb; s++) {                                                      \
            T *dx = DATA(T, &n->dst) + ((s0 + s) * j->C + c) * HW;                              \
            from_phases_##SUF(j, ph + s * j->plane, pstride, dx);                               \
            if (n->src[2].storage) { /* ConvTranspose's bias, added to its output */           \
                T b = DATA(T, &n->src[2])[c];                                                   \
                for (int64_t k = 0; k < HW; k++)                                                \
                    dx[k] += b;                                                                 \
            }                                                                                   \
        }                                                                                       \
    }

DW_KERNELS(f32, float)
DW_KERNELS(f64, double)

static pg_status dw_task(void *ctx, int64_t t)
{
    const dw_job *j = ctx;
    int64_t lo, hi;
    pg_cpu_part(j->units, j->ntasks, t, &lo, &hi);
    if (hi <= lo)
        return PG_OK;
    size_t esz = j->n->dst.dtype == PG_FLOAT32 ? sizeof(float) : sizeof(double);
    int64_t ntaps = j->kh * j->kw;
    /* a block's phase planes, its output (or dy) planes at pitch Wq, the tap pointers,
     * weights and sums */
    size_t elems = (size_t)((j->phases + 1) * j->B * j->plane + ntaps);
    /* the pointers and double sums after the planes start on a 16-byte boundary (an odd
     * count of floats would misalign them) */
    size_t head = (elems * esz + 15) / 16 * 16;
    char *buf = malloc(head + (size_t)ntaps * (sizeof(void *) + sizeof(double)));
    if (!buf)
        return pg_error_set(PG_ERR_NOMEM, "conv2d: out of host memory for a depthwise plane's "
                                          "scratch");
    void **src = (void **)(buf + head);
    double *acc = (double *)(src + ntaps);
    for (int64_t u = lo; u < hi; u++) {
        if (esz == sizeof(float)) {
            float *ph = (float *)buf, *row = ph + j->phases * j->B * j->plane;
            float *w = row + j->B * j->plane;
            unit_f32(j, u, ph, row, (float **)src, w, acc);
        } else {
            double *ph = (double *)buf, *row = ph + j->phases * j->B * j->plane;
            double *w = row + j->B * j->plane;
            unit_f64(j, u, ph, row, (double **)src, w, acc);
        }
    }
    free(buf);
    return PG_OK;
}

pg_status pg_cpu_conv_direct(pg_pool *pool, const pg_node *n)
{
    dw_job j;
    memset(&j, 0, sizeof j);
    j.n = n;
    /* the operands where the sub-op's row puts them; the one in dst is what it computes */
    const pg_tensor *x = pg_conv_operand(n, PG_CONV_X), *y = pg_conv_operand(n, PG_CONV_Y);
    j.computes = pg_conv_computes(n->subop);
    const pg_conv_geom *g = &n->p.conv;
    j.N = x->shape[0];
    j.C = x->shape[1];
    j.H = x->shape[2];
    j.W = x->shape[3];
    j.O = y->shape[1];
    j.OH = y->shape[2];
    j.OW = y->shape[3];
    j.m = j.O / j.C;
    j.kh = g->kh, j.kw = g->kw, j.sh = g->sh, j.sw = g->sw;
    j.ph = g->ph, j.pw = g->pw, j.dh = g->dh, j.dw = g->dw;
    layout(&j);
    j.units = j.computes == PG_CONV_Y ? j.O * j.nblk : j.computes == PG_CONV_X ? j.C * j.nblk : j.O;
    /* a task per thread, when there is enough work to share */
    int64_t work = j.N * j.O * j.OH * j.Wq * j.kh * j.kw;
    if (j.units == 0)
        return PG_OK; /* an empty batch: nothing to write */
    int64_t threads = pg_pool_threads(pool);
    j.ntasks = work >= 32768 ? threads : 1;
    if (j.ntasks > j.units)
        j.ntasks = j.units;
    return j.ntasks > 1 ? pg_pool_run(pool, j.ntasks, dw_task, &j) : dw_task(&j, 0);
}
