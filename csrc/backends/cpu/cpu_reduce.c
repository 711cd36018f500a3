/* cpu_reduce.c - sum, max, min and argmax over one axis on the CPU, vectorized.
 *
 * A reduction node is src (any shape, any strides) reduced over `axis` into
 * dst (the same shape with that axis 1). The generic layer passes both
 * contiguous, but the thread pool splits nodes into views, so any strides must
 * work; the fast paths are for unit-stride runs. Two kernels, chosen by which
 * axis has unit stride in src:
 *
 *  - the reduced axis (sum(axis=-1), or everything): each output is one
 *    contiguous run of R elements, reduced with independent lanes the
 *    compiler maps to vector registers. float64 sums are pairwise over
 *    1024-element leaves like NumPy's, so the error grows with log(R), not R.
 *  - another axis (sum(axis=0) of a matrix): rows are folded in memory order
 *    into a tile of 256 accumulators (on the stack: kernels are reentrant and
 *    run on several pool threads at once), so reducing the first axis streams
 *    through memory with vector adds instead of striding down columns.
 *
 * float32 sums accumulate in float64 (more accurate than NumPy's float32
 * pairwise sum, at no cost once memory-bound); int64 sums wrap like NumPy's
 * (computed in uint64: no signed-overflow UB). NaN wins max/min/argmax, as in
 * NumPy; argmax returns the first index of the maximum (or of the first NaN).
 *
 * float16 and bfloat16 are read a block at a time into float32 on the stack
 * (the vector converters of cpu_half_convert.c) and reduced like float32: a
 * sum keeps the float32 kernel's float64 lanes across blocks, so it is bit for
 * bit the float32 sum of the widened input, written as float32 (the generic
 * layer rounds the result to the half dtype once); max, min and argmax are
 * exact. No widened copy of the input is made. */
#include <stdbool.h>
#include <string.h>

#include "../../core/pg_half.h"
#include "cpu_half_convert.h"
#include "cpu_kernels.h"
#include "cpu_vecmath.h"

/* Independent accumulators of a run: 128 bytes of T, i.e. two AVX-512 or four
 * AVX2 registers, enough to hide the add/compare latency. */
/* The GCC vector types the kernels write are 32 bytes, AVX2's width: every variant keeps
 * them in registers (the AVX-512 one pairs them), where 64-byte ones went through the
 * stack in the AVX2 variant, 5-12x slower there (issue 39). */
#define PG_VEC_BYTES 32
#define LANES(T) ((int)(128 / sizeof(T)))
#define PAIRWISE_LEAF 1024 /* elements summed by the lanes before the pairwise split */
#define TILE 256           /* accumulators of the row kernel (2 KiB of float64) */

/* NaN-propagating picks; for integers x != x is false and folds away */
#define PICK_MAX(v, acc) (((v) > (acc) || (v) != (v)) ? (v) : (acc))
#define PICK_MIN(v, acc) (((v) < (acc) || (v) != (v)) ? (v) : (acc))

static inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- one contiguous run of n elements -> one value ------------------------------------- */

/* LANES(T) accumulators of type ACC; float32 sums into float64 lanes, whose
 * rounding error over even 2^31 terms stays far below float32's, so only
 * float64 (and int64, where it costs nothing) needs the pairwise split. */
#define RUN_SUM(SUF, T, ACC, PAIRWISE)                                                        \
    RUN_SUM_LEAF_##SUF                                                                        \
    static ACC sum_run_##SUF(const T *a, int64_t n)                                           \
    {                                                                                         \
        if (!(PAIRWISE) || n <= PAIRWISE_LEAF)                                                \
            return sum_leaf_##SUF(a, n);                                                      \
        int64_t half = (n / 2) / LANES(T) * LANES(T);                                         \
        return sum_run_##SUF(a, half) + sum_run_##SUF(a + half, n - half);                   \
    }

/* The generic leaf: LANES(T) accumulators of type ACC, kept as vectors of 8. */
#define RUN_SUM_LEAF(SUF, T, ACC)                                                             \
    typedef T vin_##SUF __attribute__((vector_size(PG_VEC_BYTES)));                           \
    typedef ACC vacc_##SUF __attribute__((vector_size(PG_VEC_BYTES / sizeof(T) * sizeof(ACC)))); \
    PG_CPU_DISPATCH(ACC, sum_leaf_##SUF, (const T *a, int64_t n), (a, n))                           \
    {                                                                                         \
        enum { E = PG_VEC_BYTES / sizeof(T), L = LANES(T), V = LANES(T) / E };               \
        /* the lanes as V vectors of E (GCC keeps vector variables in registers; a lane     \
         * array went through the stack on every add) */                                     \
        vacc_##SUF acc[V];                                                                    \
        ACC lane[L];                                                                          \
        for (int v = 0; v < V; v++)                                                           \
            acc[v] = (vacc_##SUF){0};                                                         \
        int64_t i = 0;                                                                        \
        for (; i + L <= n; i += L) {                                                          \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                             \
                vin_##SUF x;                                                                  \
                memcpy(&x, a + i + E * v, sizeof x);                                          \
                acc[v] += __builtin_convertvector(x, vacc_##SUF);                             \
            }                                                                                 \
        }                                                                                     \
        memcpy(lane, acc, sizeof lane);                                                       \
        for (int k = 0; i < n; i++, k++)                                                      \
            lane[k] += (ACC)a[i];                                                             \
        for (int w = L / 2; w > 0; w /= 2) {                                                  \
            _Pragma("omp simd") for (int k = 0; k < w; k++) lane[k] += lane[k + w];           \
        }                                                                                     \
        return lane[0];                                                                       \
    }
#define RUN_SUM_LEAF_i64 RUN_SUM_LEAF(i64, int64_t, uint64_t)
#define RUN_SUM_LEAF_f64 RUN_SUM_LEAF(f64, double, double)
#define RUN_SUM_LEAF_f32 /* sum_f32_run, next */                                              \
    static double sum_leaf_f32(const float *a, int64_t n) { return sum_f32_run(a, n); }

/* float32 runs add into 32 float64 lanes (lane k takes the elements at k mod 32), but
 * each lane first sums F32_BLOCK of its elements in float32 and then adds that partial
 * in float64: one widening per F32_BLOCK loads instead of one per load (the widening,
 * not memory, bounded the plain float64 lanes at half of PyTorch's float32 sum). The
 * error is that of 8-term float32 sums, then float64's: still below NumPy's pairwise
 * float32 sum. The lanes stay in four vector registers, the last partial 32 elements
 * come in zero-padded (x + 0 is x), and the fold (lane k += lane k + w, w = 16 .. 1) is
 * done on them too: through memory, a 64-byte store read back in halves stalled it. The
 * half path (sum_f32_lanes) runs the same steps a block of PG_CPU_HALF_BLOCK elements (a
 * multiple of 32 * F32_BLOCK) at a time and the same fold, so a widened half sum stays
 * bit for bit the float32 one. */
#define F32_BLOCK 8
/* The lanes are kept as 32-byte vectors (four of 8 floats, eight of 4 doubles): AVX2's
 * width, which every variant keeps in registers. Written as 64-byte vectors, GCC split
 * them through the stack in the AVX2 variant: sum(1) of a 64x512 float32 took 10 us
 * there against 1.2 us in the AVX-512 one (issue 39). The arithmetic per lane is the
 * same, so every variant gives the same bits. */
typedef float f32x8 __attribute__((vector_size(32)));
typedef float f32x4 __attribute__((vector_size(16)));
typedef double f64x4 __attribute__((vector_size(32)));
typedef double f64x2 __attribute__((vector_size(16)));

/* The lanes as named vector variables (arrays of vectors went through the stack): the
 * float64 lanes D0..D7 (Dk holds lanes 4k..4k+3), float32 partials F0..F3 (Fv holds lanes
 * 8v..8v+7). */
#define F32_WIDEN(DLO, DHI, F)                                                            \
    do {                                                                                  \
        DLO += __builtin_convertvector(__builtin_shufflevector(F, F, 0, 1, 2, 3), f64x4);  \
        DHI += __builtin_convertvector(__builtin_shufflevector(F, F, 4, 5, 6, 7), f64x4);  \
    } while (0)
#define F32_LOAD4(P, F0, F1, F2, F3)                                                      \
    do {                                                                                  \
        memcpy(&F0, (P), 32);                                                             \
        memcpy(&F1, (P) + 8, 32);                                                         \
        memcpy(&F2, (P) + 16, 32);                                                        \
        memcpy(&F3, (P) + 24, 32);                                                        \
    } while (0)

/* n elements at a into the lanes d[0..7] (loaded into registers, stored back) */
static inline __attribute__((always_inline)) void f32_lanes_add(const float *a, int64_t n, f64x4 *d)
{
    enum { L = LANES(float), STEP = L * F32_BLOCK };
    f64x4 D0 = d[0], D1 = d[1], D2 = d[2], D3 = d[3], D4 = d[4], D5 = d[5], D6 = d[6], D7 = d[7];
    int64_t i = 0;
    for (; i + STEP <= n; i += STEP) {
        f32x8 F0, F1, F2, F3, X0, X1, X2, X3;
        F32_LOAD4(a + i, F0, F1, F2, F3);
        for (int b = 1; b < F32_BLOCK; b++) {
            F32_LOAD4(a + i + b * L, X0, X1, X2, X3);
            F0 += X0;
            F1 += X1;
            F2 += X2;
            F3 += X3;
        }
        F32_WIDEN(D0, D1, F0);
        F32_WIDEN(D2, D3, F1);
        F32_WIDEN(D4, D5, F2);
        F32_WIDEN(D6, D7, F3);
    }
    for (; i < n; i += L) { /* 32 at a time, the last one zero-padded */
        float buf[L] = {0};
        memcpy(buf, a + i, sizeof(float) * (size_t)(n - i < L ? n - i : L));
        f32x8 F0, F1, F2, F3;
        F32_LOAD4(buf, F0, F1, F2, F3);
        F32_WIDEN(D0, D1, F0);
        F32_WIDEN(D2, D3, F1);
        F32_WIDEN(D4, D5, F2);
        F32_WIDEN(D6, D7, F3);
    }
    d[0] = D0, d[1] = D1, d[2] = D2, d[3] = D3, d[4] = D4, d[5] = D5, d[6] = D6, d[7] = D7;
}

/* lane k += lane k + w for w = 16, 8, 4, 2, 1, then lane 0 */
static inline __attribute__((always_inline)) double f32_lanes_fold(const f64x4 *d)
{
    f64x4 lo = (d[0] + d[4]) + (d[2] + d[6]); /* lanes 0..3 after w = 16, then 8 */
    f64x4 hi = (d[1] + d[5]) + (d[3] + d[7]); /* lanes 4..7 */
    f64x4 u = lo + hi;
    f64x2 q = __builtin_shufflevector(u, u, 0, 1) + __builtin_shufflevector(u, u, 2, 3);
    return q[0] + q[1];
}

PG_CPU_DISPATCH(double, sum_f32_run, (const float *a, int64_t n), (a, n))
{
    f64x4 d[8] = {{0}};
    f32_lanes_add(a, n, d);
    return f32_lanes_fold(d);
}

/* the half path: the lanes carried in memory across blocks, folded once at the end */
PG_CPU_DISPATCH(void, sum_f32_lanes, (const float *a, int64_t n, double *lane), (a, n, lane))
{
    f64x4 d[8];
    memcpy(d, lane, sizeof d);
    f32_lanes_add(a, n, d);
    memcpy(lane, d, sizeof d);
}

PG_CPU_DISPATCH(double, sum_f32_fold, (const double *lane), (lane))
{
    f64x4 d[8];
    memcpy(d, lane, sizeof d);
    return f32_lanes_fold(d);
}

#define RUN_PICK(NAME, T, PICK)                                                               \
    PG_CPU_DISPATCH(T, NAME, (const T *a, int64_t n), (a, n))                                        \
    {                                                                                         \
        enum { L = LANES(T) };                                                                \
        T lane[L];                                                                            \
        for (int k = 0; k < L; k++)                                                           \
            lane[k] = a[0];                                                                   \
        int64_t i = 0;                                                                        \
        for (; i + L <= n; i += L) {                                                          \
            _Pragma("omp simd") for (int k = 0; k < L; k++) lane[k] = PICK(a[i + k], lane[k]);\
        }                                                                                     \
        for (; i < n; i++)                                                                    \
            lane[0] = PICK(a[i], lane[0]);                                                    \
        T m = lane[0];                                                                        \
        for (int k = 1; k < L; k++)                                                           \
            m = PICK(lane[k], m);                                                             \
        return m;                                                                             \
    }

/* argmax in one pass, written with GCC vector types (the compiler does not keep
 * select-updated lane arrays in registers): each lane keeps its largest value
 * and the index where it first saw it (as wide as T: 32-bit for float32, so a
 * float32 run goes in chunks of < 2^31 elements), and notes any NaN; the lanes
 * then give the smallest index holding the largest value. A NaN anywhere
 * (rare) sends us to find the first one instead. */
#define RUN_ARGMAX(SUF, T, IT, ABS, INF)                                                                    \
    PG_CPU_DISPATCH(int64_t, first_nan_##SUF, (const T *a, int64_t n), (a, n))                       \
    {                                                                                         \
        for (int64_t i0 = 0; i0 < n; i0 += 64) {                                              \
            int64_t w = min_i64(64, n - i0);                                                  \
            int hit = 0;                                                                      \
            _Pragma("omp simd reduction(|:hit)") for (int64_t k = 0; k < w; k++) hit |=       \
                a[i0 + k] != a[i0 + k];                                                       \
            if (hit)                                                                          \
                for (int64_t k = 0; k < w; k++)                                               \
                    if (a[i0 + k] != a[i0 + k])                                               \
                        return i0 + k;                                                        \
        }                                                                                     \
        return -1;                                                                            \
    }                                                                                         \
    typedef T vec_##SUF __attribute__((vector_size(PG_VEC_BYTES)));                                     \
    typedef IT ivec_##SUF __attribute__((vector_size(PG_VEC_BYTES)));                                   \
    PG_CPU_DISPATCH(int64_t, argmax_chunk_##SUF, (const T *a, int64_t n, T *best), (a, n, best))           \
    {                                                                                         \
        enum { W = PG_VEC_BYTES / sizeof(T) }; /* elements per vector; two vectors per step */          \
        T lane[2 * W];                                                                        \
        IT at[2 * W], iota[2 * W];                                                            \
        for (int k = 0; k < 2 * W; k++) {                                                     \
            lane[k] = a[0];                                                                   \
            at[k] = 0;                                                                        \
            iota[k] = (IT)k;                                                                  \
        }                                                                                     \
        int64_t i = 0;                                                                        \
        if (n >= 2 * W) {                                                                     \
            vec_##SUF b0, b1;                                                                 \
            ivec_##SUF i0, i1, x0, x1, nan = {0}, step;                                       \
            memcpy(&b0, lane, PG_VEC_BYTES);                                                            \
            b1 = b0;                                                                          \
            memcpy(&x0, iota, PG_VEC_BYTES);                                                            \
            memcpy(&x1, iota + W, PG_VEC_BYTES);                                                        \
            i0 = nan;                                                                         \
            i1 = nan;                                                                         \
            step = nan + (IT)(2 * W);                                                         \
            for (; i + 2 * W <= n; i += 2 * W) {                                              \
                vec_##SUF v0, v1;                                                             \
                memcpy(&v0, a + i, PG_VEC_BYTES);                                                       \
                memcpy(&v1, a + i + W, PG_VEC_BYTES);                                                   \
                ivec_##SUF g0 = v0 > b0, g1 = v1 > b1; /* all-ones where greater */           \
                b0 = (vec_##SUF)(((ivec_##SUF)v0 & g0) | ((ivec_##SUF)b0 & ~g0));            \
                b1 = (vec_##SUF)(((ivec_##SUF)v1 & g1) | ((ivec_##SUF)b1 & ~g1));            \
                i0 = (x0 & g0) | (i0 & ~g0);                                                  \
                i1 = (x1 & g1) | (i1 & ~g1);                                                  \
                ivec_##SUF m0 = (ivec_##SUF)v0 & ABS, m1 = (ivec_##SUF)v1 & ABS;             \
                nan |= (INF - m0) | (INF - m1); /* negative where |bits| > INF: a NaN */      \
                x0 += step;                                                                   \
                x1 += step;                                                                   \
            }                                                                                 \
            memcpy(lane, &b0, PG_VEC_BYTES);                                                            \
            memcpy(lane + W, &b1, PG_VEC_BYTES);                                                        \
            memcpy(at, &i0, PG_VEC_BYTES);                                                              \
            memcpy(at + W, &i1, PG_VEC_BYTES);                                                          \
            for (int k = 0; k < W; k++)                                                       \
                if (nan[k] < 0) {                                                             \
                    int64_t at_nan = first_nan_##SUF(a, n);                                   \
                    *best = a[at_nan];                                                        \
                    return at_nan;                                                            \
                }                                                                             \
        }                                                                                     \
        for (int k = 0; i < n; i++, k++) {                                                    \
            if (a[i] != a[i]) {                                                               \
                int64_t at_nan = first_nan_##SUF(a, n);                                       \
                *best = a[at_nan];                                                            \
                return at_nan;                                                                \
            }                                                                                 \
            if (a[i] > lane[k]) {                                                             \
                lane[k] = a[i];                                                               \
                at[k] = (IT)i;                                                                \
            }                                                                                 \
        }                                                                                     \
        /* no NaN here: fold the lanes in halves, keeping the larger value and, on a   \
         * tie, the smaller index (vector steps, not a 32-step scalar chain) */               \
        for (int w = W; w > 0; w /= 2) {                                                      \
            _Pragma("omp simd") for (int k = 0; k < w; k++)                                   \
            {                                                                                 \
                bool right = lane[k + w] > lane[k] || (lane[k + w] == lane[k] && at[k + w] < at[k]); \
                lane[k] = right ? lane[k + w] : lane[k];                                      \
                at[k] = right ? at[k + w] : at[k];                                            \
            }                                                                                 \
        }                                                                                     \
        *best = lane[0];                                                                      \
        return (int64_t)at[0];                                                                \
    }                                                                                         \
    static int64_t argmax_run_##SUF(const T *a, int64_t n)                                    \
    {                                                                                         \
        const int64_t chunk = (int64_t)1 << 31;                                               \
        T best;                                                                               \
        int64_t arg = argmax_chunk_##SUF(a, min_i64(n, chunk), &best);                        \
        for (int64_t c0 = chunk; c0 < n && best == best; c0 += chunk) {                       \
            T b;                                                                              \
            int64_t i = argmax_chunk_##SUF(a + c0, min_i64(n - c0, chunk), &b);               \
            if (b > best || b != b) {                                                         \
                best = b;                                                                     \
                arg = c0 + i;                                                                 \
            }                                                                                 \
        }                                                                                     \
        return arg;                                                                           \
    }

/* ---- R rows of m elements (row stride sR bytes, element stride s_in) -> m values --------- */

#define ROWS_SUM(SUF, T, ACC)                                                                 \
    PG_CPU_DISPATCH(void, sum_rows_##SUF, (const char *src, int64_t sR, int64_t R,          \
                                             int64_t m, int64_t s_in, char *dst, int64_t d_in), (src, sR, R, m, s_in, dst, d_in))\
    {                                                                                         \
        ACC acc[TILE];                                                                        \
        for (int64_t j0 = 0; j0 < m; j0 += TILE) {                                            \
            int64_t w = min_i64(TILE, m - j0);                                                \
            for (int64_t j = 0; j < w; j++)                                                   \
                acc[j] = 0;                                                                   \
            for (int64_t r = 0; r < R; r++) {                                                 \
                const char *row = src + r * sR + j0 * s_in;                                   \
                if (s_in == (int64_t)sizeof(T)) {                                             \
                    const T *x = (const T *)row;                                              \
                    _Pragma("omp simd") for (int64_t j = 0; j < w; j++) acc[j] += (ACC)x[j];  \
                } else {                                                                      \
                    for (int64_t j = 0; j < w; j++)                                           \
                        acc[j] += (ACC) * (const T *)(row + j * s_in);                        \
                }                                                                             \
            }                                                                                 \
            for (int64_t j = 0; j < w; j++)                                                   \
                *(T *)(dst + (j0 + j) * d_in) = (T)acc[j];                                    \
        }                                                                                     \
    }

#define ROWS_PICK(NAME, T, PICK)                                                              \
    PG_CPU_DISPATCH(void, NAME, (const char *src, int64_t sR, int64_t R, int64_t m,         \
                                   int64_t s_in, char *dst, int64_t d_in), (src, sR, R, m, s_in, dst, d_in))                     \
    {                                                                                         \
        T acc[TILE];                                                                          \
        for (int64_t j0 = 0; j0 < m; j0 += TILE) {                                            \
            int64_t w = min_i64(TILE, m - j0);                                                \
            for (int64_t j = 0; j < w; j++)                                                   \
                acc[j] = *(const T *)(src + (j0 + j) * s_in);                                 \
            for (int64_t r = 1; r < R; r++) {                                                 \
                const char *row = src + r * sR + j0 * s_in;                                   \
                if (s_in == (int64_t)sizeof(T)) {                                             \
                    const T *x = (const T *)row;                                              \
                    _Pragma("omp simd") for (int64_t j = 0; j < w; j++) acc[j] =              \
                        PICK(x[j], acc[j]);                                                   \
                } else {                                                                      \
                    for (int64_t j = 0; j < w; j++) {                                         \
                        T v = *(const T *)(row + j * s_in);                                   \
                        acc[j] = PICK(v, acc[j]);                                             \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
            for (int64_t j = 0; j < w; j++)                                                   \
                *(T *)(dst + (j0 + j) * d_in) = acc[j];                                       \
        }                                                                                     \
    }

/* argmax: strictly greater keeps the first maximum; once a lane holds NaN it sticks */
#define ARGMAX_TAKE(v, acc) ((acc) == (acc) && ((v) > (acc) || (v) != (v)))
#define ROWS_ARGMAX(SUF, T)                                                                   \
    PG_CPU_DISPATCH(void, argmax_rows_##SUF, (const char *src, int64_t sR, int64_t R,       \
                                                int64_t m, int64_t s_in, char *dst,           \
                                                int64_t d_in), (src, sR, R, m, s_in, dst, d_in))                                 \
    {                                                                                         \
        T acc[TILE];                                                                          \
        int64_t arg[TILE];                                                                    \
        for (int64_t j0 = 0; j0 < m; j0 += TILE) {                                            \
            int64_t w = min_i64(TILE, m - j0);                                                \
            for (int64_t j = 0; j < w; j++) {                                                 \
                acc[j] = *(const T *)(src + (j0 + j) * s_in);                                 \
                arg[j] = 0;                                                                   \
            }                                                                                 \
            for (int64_t r = 1; r < R; r++) {                                                 \
                const char *row = src + r * sR + j0 * s_in;                                   \
                if (s_in == (int64_t)sizeof(T)) {                                             \
                    const T *x = (const T *)row;                                              \
                    _Pragma("omp simd") for (int64_t j = 0; j < w; j++)                       \
                    {                                                                         \
                        bool take = ARGMAX_TAKE(x[j], acc[j]);                                \
                        acc[j] = take ? x[j] : acc[j];                                        \
                        arg[j] = take ? r : arg[j];                                           \
                    }                                                                         \
                } else {                                                                      \
                    for (int64_t j = 0; j < w; j++) {                                         \
                        T v = *(const T *)(row + j * s_in);                                   \
                        if (ARGMAX_TAKE(v, acc[j])) {                                         \
                            acc[j] = v;                                                       \
                            arg[j] = r;                                                       \
                        }                                                                     \
                    }                                                                         \
                }                                                                             \
            }                                                                                 \
            for (int64_t j = 0; j < w; j++)                                                   \
                *(int64_t *)(dst + (j0 + j) * d_in) = arg[j];                                 \
        }                                                                                     \
    }

#define REDUCE_KERNELS(SUF, T, IT, ABS, INF, SUM_ACC, PAIRWISE) \
    RUN_SUM(SUF, T, SUM_ACC, PAIRWISE)           \
    RUN_PICK(max_run_##SUF, T, PICK_MAX)         \
    RUN_PICK(min_run_##SUF, T, PICK_MIN)         \
    RUN_ARGMAX(SUF, T, IT, ABS, INF)             \
    ROWS_SUM(SUF, T, SUM_ACC)                    \
    ROWS_PICK(max_rows_##SUF, T, PICK_MAX)       \
    ROWS_PICK(min_rows_##SUF, T, PICK_MIN)       \
    ROWS_ARGMAX(SUF, T)

/* IT: argmax's lane index type, as wide as T so that a compare mask selects it;
 * ABS, INF: a value's bits without the sign are above INF's exactly for NaN,
 * so INF - (bits & ABS) is negative (an integer test: GCC 12 scalarizes the
 * vector x != x); never for int64. */
REDUCE_KERNELS(i64, int64_t, int64_t, 0, INT64_MAX, uint64_t, 0) /* wrapping int sums: exact */
REDUCE_KERNELS(f32, float, int32_t, 0x7fffffff, 0x7f800000, double, 0)
REDUCE_KERNELS(f64, double, int64_t, INT64_MAX, 0x7ff0000000000000LL, double, 1)

/* One contiguous run of R elements into *out (int64 for argmax). */
typedef void (*run_fn)(int op, const char *src, int64_t R, char *out);
typedef void (*rows_fn)(const char *src, int64_t sR, int64_t R, int64_t m, int64_t s_in,
                        char *dst, int64_t d_in);

#define RUN_DISPATCH(SUF, T)                                                        \
    static void run_##SUF(int op, const char *src, int64_t R, char *out)            \
    {                                                                               \
        const T *a = (const T *)src;                                                \
        switch (op) {                                                               \
        case PG_RED_SUM: *(T *)out = (T)sum_run_##SUF(a, R); break;                 \
        case PG_RED_MAX: *(T *)out = max_run_##SUF(a, R); break;                    \
        case PG_RED_MIN: *(T *)out = min_run_##SUF(a, R); break;                    \
        default: *(int64_t *)out = argmax_run_##SUF(a, R); break;                     \
        }                                                                           \
    }
RUN_DISPATCH(i64, int64_t)
RUN_DISPATCH(f32, float)
RUN_DISPATCH(f64, double)

static const run_fn run_table[3] = {run_i64, run_f32, run_f64};
static const rows_fn rows_table[PG_NUM_REDUCE][3] = {
    [PG_RED_SUM] = {sum_rows_i64, sum_rows_f32, sum_rows_f64},
    [PG_RED_MAX] = {max_rows_i64, max_rows_f32, max_rows_f64},
    [PG_RED_MIN] = {min_rows_i64, min_rows_f32, min_rows_f64},
    [PG_RED_ARGMAX] = {argmax_rows_i64, argmax_rows_f32, argmax_rows_f64},
};

/* ---- float16 / bfloat16: float32 kernels over blocks widened on the stack --------------- */

#define HALF_BLOCK PG_CPU_HALF_BLOCK /* a multiple of LANES(float): lanes carry across blocks */

PG_CPU_DISPATCH(void, acc_add_f32, (int64_t w, double *acc, const float *x), (w, acc, x))
{
    _Pragma("omp simd") for (int64_t j = 0; j < w; j++) acc[j] += (double)x[j];
}

PG_CPU_DISPATCH(void, pick_max_f32, (int64_t w, float *acc, const float *x), (w, acc, x))
{
    _Pragma("omp simd") for (int64_t j = 0; j < w; j++) acc[j] = PICK_MAX(x[j], acc[j]);
}

PG_CPU_DISPATCH(void, pick_min_f32, (int64_t w, float *acc, const float *x), (w, acc, x))
{
    _Pragma("omp simd") for (int64_t j = 0; j < w; j++) acc[j] = PICK_MIN(x[j], acc[j]);
}

PG_CPU_DISPATCH(void, argmax_take_f32, (int64_t w, float *acc, int64_t *arg, const float *x,
                                         int64_t r), (w, acc, arg, x, r))
{
    _Pragma("omp simd") for (int64_t j = 0; j < w; j++)
    {
        bool take = ARGMAX_TAKE(x[j], acc[j]);
        acc[j] = take ? x[j] : acc[j];
        arg[j] = take ? r : arg[j];
    }
}

/* A reduction's result into dst of dtype `dt` (float32, float64 or a half: rounded once). */
static void store_wide(int dt, char *p, double v)
{
    switch (dt) {
    case PG_FLOAT32: *(float *)p = (float)v; break;
    case PG_FLOAT64: *(double *)p = v; break;
    case PG_FLOAT16: *(uint16_t *)p = pg_f16_from_double(v); break;
    default: *(uint16_t *)p = pg_bf16_from_double(v); break;
    }
}

/* w half elements at `src` (stride s_in bytes) as float32 in x */
static void widen(int dt, const char *src, int64_t w, int64_t s_in, float *x)
{
    if (s_in == (int64_t)sizeof(uint16_t)) {
        pg_cpu_half_to_f32(dt, w, (const uint16_t *)src, x);
        return;
    }
    uint16_t g[HALF_BLOCK];
    for (int64_t j0 = 0; j0 < w; j0 += HALF_BLOCK) {
        int64_t n = min_i64(HALF_BLOCK, w - j0);
        for (int64_t j = 0; j < n; j++)
            memcpy(&g[j], src + (j0 + j) * s_in, sizeof(uint16_t));
        pg_cpu_half_to_f32(dt, n, g, x + j0);
    }
}

/* One contiguous half run of R elements into *out (dst dtype odt). */
static void run_half(int op, int dt, const char *src, int64_t R, char *out, int odt)
{
    float buf[HALF_BLOCK], best = 0;
    double lane[LANES(float)] = {0};
    int64_t arg = 0;
    for (int64_t i0 = 0; i0 < R; i0 += HALF_BLOCK) {
        int64_t w = min_i64(HALF_BLOCK, R - i0);
        pg_cpu_half_to_f32(dt, w, (const uint16_t *)src + i0, buf);
        if (op == PG_RED_SUM) {
            sum_f32_lanes(buf, w, lane);
        } else if (op == PG_RED_MAX) {
            float m = max_run_f32(buf, w);
            best = i0 == 0 ? m : PICK_MAX(m, best);
        } else if (op == PG_RED_MIN) {
            float m = min_run_f32(buf, w);
            best = i0 == 0 ? m : PICK_MIN(m, best);
        } else {
            int64_t i = argmax_run_f32(buf, w);
            if (i0 == 0 || ARGMAX_TAKE(buf[i], best)) { /* earlier blocks win ties and NaN */
                best = buf[i];
                arg = i0 + i;
            }
        }
    }
    if (op == PG_RED_ARGMAX) {
        *(int64_t *)out = arg;
    } else if (op == PG_RED_SUM) {
        store_wide(odt, out, sum_f32_fold(lane)); /* sum_leaf_f32's fold */
    } else {
        store_wide(odt, out, best);
    }
}

/* R half rows of m elements -> m values, a tile of TILE columns at a time. */
static void rows_half(int op, int dt, const char *src, int64_t sR, int64_t R, int64_t m,
                      int64_t s_in, char *dst, int64_t d_in, int odt)
{
    float x[TILE], best[TILE];
    double acc[TILE];
    int64_t arg[TILE];
    for (int64_t j0 = 0; j0 < m; j0 += TILE) {
        int64_t w = min_i64(TILE, m - j0);
        for (int64_t j = 0; j < w; j++) {
            acc[j] = 0;
            arg[j] = 0;
        }
        for (int64_t r = 0; r < R; r++) {
            widen(dt, src + r * sR + j0 * s_in, w, s_in, r == 0 ? best : x);
            switch (op) {
            case PG_RED_SUM: acc_add_f32(w, acc, r == 0 ? best : x); break;
            case PG_RED_MAX: if (r) pick_max_f32(w, best, x); break;
            case PG_RED_MIN: if (r) pick_min_f32(w, best, x); break;
            default: if (r) argmax_take_f32(w, best, arg, x, r); break;
            }
        }
        for (int64_t j = 0; j < w; j++) {
            char *o = dst + (j0 + j) * d_in;
            if (op == PG_RED_ARGMAX)
                *(int64_t *)o = arg[j];
            else
                store_wide(odt, o, op == PG_RED_SUM ? acc[j] : best[j]);
        }
    }
}

pg_status pg_cpu_reduce(const pg_node *node)
{
    const pg_tensor *s = &node->src[0], *d = &node->dst;
    int axis = node->p.reduce.axis, op = node->subop;
    int slot = s->dtype == PG_INT64 ? 0 : s->dtype == PG_FLOAT32 ? 1 : s->dtype == PG_FLOAT64 ? 2 : -1;
    bool half = pg_dtype_is_half((pg_dtype)s->dtype);
    if (slot < 0 && !half) /* the generic layer reduces bool as int64 */
        return pg_error_set(PG_ERR_DTYPE, "%s: no CPU reduction for dtype %s", node->name,
                            pg_dtype_name((pg_dtype)s->dtype));
    if (pg_tensor_numel(d) == 0)
        return PG_OK;
    int64_t es = (int64_t)pg_dtype_size((pg_dtype)s->dtype);
    int64_t ds = (int64_t)pg_dtype_size((pg_dtype)d->dtype);
    int64_t R = s->shape[axis], sR = s->strides[axis] * es;
    if (R == 0 && op != PG_RED_SUM)
        return pg_error_set(PG_ERR_VALUE, "%s: cannot reduce over an empty axis", node->name);

    /* the other axes (size 1 dropped), byte strides in src and dst */
    int n = 0;
    int64_t shape[PG_MAX_DIMS], ss[PG_MAX_DIMS], dstr[PG_MAX_DIMS];
    for (int k = 0; k < s->ndim; k++) {
        if (k == axis || s->shape[k] == 1)
            continue;
        shape[n] = s->shape[k];
        ss[n] = s->strides[k] * es;
        dstr[n] = d->strides[k] * ds;
        n++;
    }
    /* Unit-stride reduced axis: a run per output. Otherwise the last other axis
     * is the row the tile kernel folds (unit stride in the contiguous case). */
    bool run = R <= 1 ? n == 0 : sR == es;
    int64_t m = 1, s_in = es, d_in = ds;
    if (!run && n > 0) {
        n--;
        m = shape[n];
        s_in = ss[n];
        d_in = dstr[n];
    }
    const char *sp = pg_tensor_data(s);
    char *dp = pg_tensor_data(d);
    int64_t idx[PG_MAX_DIMS] = {0};
    for (;;) {
        if (half && run)
            run_half(op, s->dtype, sp, R, dp, d->dtype);
        else if (half)
            rows_half(op, s->dtype, sp, sR, R, m, s_in, dp, d_in, d->dtype);
        else if (run)
            run_table[slot](op, sp, R, dp);
        else
            rows_table[op][slot](sp, sR, R, m, s_in, dp, d_in);
        int k = n - 1;
        for (; k >= 0; k--) { /* odometer over the remaining axes */
            sp += ss[k];
            dp += dstr[k];
            if (++idx[k] < shape[k])
                break;
            sp -= ss[k] * shape[k];
            dp -= dstr[k] * shape[k];
            idx[k] = 0;
        }
        if (k < 0)
            return PG_OK;
    }
}
