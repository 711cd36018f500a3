/* cpu_conv_winograd.c - 3x3 convolution at stride 1 by Winograd's minimal filtering
 * F(m x m, 3 x 3), m = 2 or 4 (Lavin and Gray, "Fast Algorithms for Convolutional Neural
 * Networks", 2016): the forward and the input gradient of float32 CONV nodes with one group
 * (cpu_conv.c decides when, conv_winograd_tile below says which m).
 *
 * The output is cut into m x m tiles, each computed from an a x a input tile (a = m + 2):
 *     Y = A^T [ sum_c (G g_oc G^T) . (B^T d_c B) ] A
 * so a tile's 9 m^2 multiplies per (o, c) become a^2: 16 for 4 outputs (F(2,3), 2.25x fewer)
 * or 36 for 16 (F(4,3), 4x fewer). In GEMM form, for each of the a^2 positions xi:
 *     M[xi] (O x P) = U[xi] (O x C) @ V[xi] (C x P),  U = G g G^T, V = B^T d B,
 * P the tiles of a chunk of samples: one batched call of the GEMM contract (pg_gemm.h) with
 * a^2 entries, then Y = A^T M A per tile, plus the bias. The input gradient of a 3x3
 * convolution at stride 1 is itself one (of dy, by the weights flipped and transposed, with
 * padding 2 - p), so it runs the same way.
 *
 * The transforms are vector loops over whole rows of tiles, without gathers: a plane is
 * first copied into m x a zero-padded "phase planes" Y_bj[th][tw] = x[m th + b - p][m tw +
 * j - p] (b < m the row's phase, j < a the column inside a tile), each (TH + 1) x TW, so that
 * input row m th + r of every tile (th, tw) is phase plane (r mod m, j) at the flat index
 * q + (r / m) TW, q = th TW + tw. B^T is applied down the columns (a passes over the phase
 * planes), then across (a per row), each pass one loop over the chunk's TH*TW tiles of a
 * channel; A^T likewise on M's rows, and the m^2 results interleaved into the output planes.
 * The transform matrices are data (WINO_TABLES), one code path for both m.
 *
 * Work is cut by chunks of samples (about 256 tiles each, so V and M stay near the L2
 * cache): each thread runs whole chunks (transform, GEMM, inverse transform) when there are
 * enough; with fewer chunks than threads (a small batch) each stage of a chunk is shared
 * instead (channels, GEMM entries, output channels). Every output element is computed by one
 * thread in a fixed order, so the bits do not depend on the thread count.
 * Accuracy: F(2,3)'s coefficients are 0, +-1/2 and +-1, and its results are within a few ulps
 * of the direct sum's; F(4,3)'s (1/24, 8, -5, ...) lose more, about 1e-5 of a layer's output
 * range in float32 (tests/test_conv_winograd.py bounds both against float64). */
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_ops_conv.h"
#include "cpu_conv.h"
#include "cpu_gemm.h"
#include "cpu_part.h"
#include "cpu_scratch.h"
#include "cpu_vecmath.h"

#define A_MAX 6 /* the largest input tile, F(4,3)'s */

/* B^T (a x a), G (a x 3), A^T (m x a) of F(m, 3), as Lavin and Gray give them */
typedef struct wino_tables {
    int m, a;
    double bt[A_MAX][A_MAX], g[A_MAX][3], at[4][A_MAX];
} wino_tables;

static const wino_tables WINO_TABLES[] = {
    {2, 4,
     {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
     {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
     {{1, 1, 1, 0}, {0, 1, -1, -1}}},
    {4, 6,
     {{4, 0, -5, 0, 1, 0},
      {0, -4, -4, 1, 1, 0},
      {0, 4, -4, -1, 1, 0},
      {0, -2, -1, 2, 1, 0},
      {0, 2, -1, -2, 1, 0},
      {0, 4, 0, -5, 0, 1}},
     {{1.0 / 4, 0, 0},
      {-1.0 / 6, -1.0 / 6, -1.0 / 6},
      {-1.0 / 6, 1.0 / 6, -1.0 / 6},
      {1.0 / 24, 1.0 / 12, 1.0 / 6},
      {1.0 / 24, -1.0 / 12, 1.0 / 6},
      {0, 0, 1}},
     {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}}},
};

/* One convolution as Winograd sees it: x (N, Ci, Hi, Wi) -> y (N, Co, Ho, Wo), 3x3,
 * padding (ph, pw); the weight g(o, c) read through (w, flip). */
typedef struct wino_job {
    const wino_tables *t;
    const float *x, *w, *bias; /* bias (Co) or NULL */
    float *y;
    bool flip; /* input gradient: g(o, c)[i][j] = w[c][o][2 - i][2 - j] (w is (Ci, Co, 3, 3)) */
    int64_t N, Ci, Co, Hi, Wi, Ho, Wo, ph, pw;
    int64_t TH, TW, nb, chunks; /* tiles per plane, samples per chunk */
    float *U;                   /* (a^2, Co, Ci), the transformed weights */
    int64_t wtasks;             /* tasks the weights' transform is cut into */
    double bt[A_MAX * A_MAX], at[4 * A_MAX]; /* B^T (a x a) and A^T (m x a), packed rows */
} wino_job;

/* ---- vector stages -------------------------------------------------------------------- */

/* out[o][f] = sum_i mat[o][i] * in[i][f] for f < n, o < nout (mat row-major, nin columns):
 * a block of WINO_BLOCK elements of every input at a time (in L1), each output summed in
 * registers over the nonzero coefficients and stored once */
#define WINO_BLOCK 64
PG_CPU_DISPATCH(void, wino_stage, (int64_t n, int nout, int nin, const double *mat,
                                   const float *const *in, float *const *out),
                (n, nout, nin, mat, in, out))
{
    float coef[A_MAX * A_MAX];
    for (int k = 0; k < nout * nin; k++)
        coef[k] = (float)mat[k];
    for (int64_t f0 = 0; f0 < n; f0 += WINO_BLOCK) {
        int64_t len = n - f0 < WINO_BLOCK ? n - f0 : WINO_BLOCK;
        for (int o = 0; o < nout; o++) {
            float acc[WINO_BLOCK];
            _Pragma("omp simd") for (int64_t l = 0; l < WINO_BLOCK; l++) acc[l] = 0.0f;
            for (int i = 0; i < nin; i++) {
                float c = coef[o * nin + i];
                if (c == 0.0f)
                    continue;
                const float *s = in[i] + f0;
                if (len == WINO_BLOCK) {
                    _Pragma("omp simd") for (int64_t l = 0; l < WINO_BLOCK; l++) acc[l] += c * s[l];
                } else {
                    _Pragma("omp simd") for (int64_t l = 0; l < len; l++) acc[l] += c * s[l];
                }
            }
            float *d = out[o] + f0;
            _Pragma("omp simd") for (int64_t l = 0; l < len; l++) d[l] = acc[l];
        }
    }
}

/* ---- the weights: U[xi][o][c] = (G g(o, c) G^T)[xi] ------------------------------------ */

static pg_status weights_task(void *ctx, int64_t t)
{
    const wino_job *j = ctx;
    const wino_tables *T = j->t;
    int a = T->a;
    int64_t lo, hi;
    pg_cpu_part(j->Co, j->wtasks, t, &lo, &hi);
    for (int64_t o = lo; o < hi; o++)
        for (int64_t c = 0; c < j->Ci; c++) {
            double g[3][3], tmp[A_MAX][3];
            for (int i = 0; i < 3; i++)
                for (int k = 0; k < 3; k++)
                    g[i][k] = j->flip ? j->w[((c * j->Co + o) * 3 + 2 - i) * 3 + 2 - k]
                                      : j->w[((o * j->Ci + c) * 3 + i) * 3 + k];
            for (int r = 0; r < a; r++) /* G g */
                for (int k = 0; k < 3; k++)
                    tmp[r][k] = T->g[r][0] * g[0][k] + T->g[r][1] * g[1][k] + T->g[r][2] * g[2][k];
            for (int r = 0; r < a; r++) /* (G g) G^T */
                for (int s = 0; s < a; s++)
                    j->U[((int64_t)(r * a + s) * j->Co + o) * j->Ci + c] =
                        (float)(tmp[r][0] * T->g[s][0] + tmp[r][1] * T->g[s][1] +
                                tmp[r][2] * T->g[s][2]);
        }
    return PG_OK;
}

/* ---- one chunk ------------------------------------------------------------------------ */

typedef struct wino_chunk {
    const wino_job *j;
    int64_t n0, nb, P; /* samples [n0, n0 + nb), P = nb * TH * TW tiles */
    float *V, *M;      /* (a^2, Ci, P), (a^2, Co, P) */
    int64_t ntasks;    /* tasks each stage is cut into */
} wino_chunk;

/* Rows in and out of the phase planes, for each m as a constant (the strided accesses
 * vectorize): dst[c][tw] = xr[m tw + c - pw] for the tw whose column is inside the row
 * (c < m, tw < TW + 1: the planes' pitch), and yr[m tw + b] = src[b][tw] + bias. */
#define WINO_ROWS(M)                                                                           \
    PG_CPU_DISPATCH(void, split_row_##M, (const float *xr, int64_t Wi, int64_t pw,            \
                                          int64_t TW1, float *const *dst),                    \
                    (xr, Wi, pw, TW1, dst))                                                   \
    {                                                                                         \
        for (int64_t c = 0; c < M; c++) {                                                     \
            int64_t lo = pw - c > 0 ? (pw - c + M - 1) / M : 0;                               \
            int64_t last = Wi - 1 + pw - c; /* the last column's m tw */                      \
            int64_t hi = last < 0 ? 0 : last / M + 1;                                         \
            hi = hi < TW1 ? hi : TW1;                                                         \
            const float *src = xr + c - pw;                                                   \
            float *d = dst[c];                                                                \
            _Pragma("omp simd") for (int64_t tw = lo; tw < hi; tw++) d[tw] = src[M * tw];     \
        }                                                                                     \
    }                                                                                         \
    PG_CPU_DISPATCH(void, merge_row_##M, (float *yr, int64_t Wo, int64_t TW,                  \
                                          const float *const *src, float bias),               \
                    (yr, Wo, TW, src, bias))                                                  \
    {                                                                                         \
        int64_t full = Wo / M < TW ? Wo / M : TW;                                             \
        for (int64_t b = 0; b < M; b++) {                                                     \
            const float *s = src[b];                                                          \
            float *d = yr + b;                                                                \
            _Pragma("omp simd") for (int64_t tw = 0; tw < full; tw++) d[M * tw] = s[tw] + bias; \
        }                                                                                     \
        for (int64_t tw = full; tw < TW; tw++)                                                \
            for (int64_t b = 0; b < M && M * tw + b < Wo; b++)                                \
                yr[M * tw + b] = src[b][tw] + bias;                                           \
    }
WINO_ROWS(2)
WINO_ROWS(4)

/* The input side's layout: per sample, (TH + 1) x (TW + 1) tiles (a row and a column past
 * the last tile: the taps r, j >= m read them), S of them; f = nb S in a chunk; each plane
 * fs long, with room for the largest offset past f. */
typedef struct wino_in {
    int64_t TW1, S, f, fs;
} wino_in;

static wino_in in_layout(const wino_job *j, int64_t nb)
{
    wino_in L;
    L.TW1 = j->TW + 1;
    L.S = (j->TH + 1) * L.TW1;
    L.f = nb * L.S;
    L.fs = L.f + L.TW1 + 2;
    return L;
}

/* elements of the per-thread scratch of the transforms: input side, the m^2 phase planes,
 * the column pass (a x m) and a row pass (a); output side, (m x a) and (m x m) of P */
static size_t transform_scratch(const wino_job *j, int64_t nb)
{
    int64_t a = j->t->a, m = j->t->m;
    wino_in L = in_layout(j, nb);
    int64_t in = (m * m + a * m + a) * L.fs;
    int64_t out = (m * a + m * m) * nb * j->TH * j->TW;
    return (size_t)(in > out ? in : out) * sizeof(float);
}

/* V[xi][c][p] for input channel c of the chunk */
static void input_channel(const wino_chunk *ch, int64_t c, float *scratch)
{
    const wino_job *j = ch->j;
    const wino_tables *T = j->t;
    int a = T->a, m = T->m;
    int64_t TH = j->TH, TW = j->TW;
    wino_in L = in_layout(j, ch->nb);
    float *Z = scratch, *U = Z + (int64_t)m * m * L.fs, *Vr = U + (int64_t)a * m * L.fs;
    /* the phase planes: Z[b][cc] holds x[m th + b - ph][m tw + cc - pw] at th (TW+1) + tw */
    memset(Z, 0, sizeof(float) * (size_t)(m * m * L.fs));
    for (int64_t s = 0; s < ch->nb; s++) {
        const float *xs = j->x + ((ch->n0 + s) * j->Ci + c) * j->Hi * j->Wi;
        for (int64_t h = 0; h < j->Hi; h++) {
            int64_t r = h + j->ph, b = r % m, th = r / m;
            if (th > TH)
                break;
            float *dst[4];
            for (int cc = 0; cc < m; cc++)
                dst[cc] = Z + (b * m + cc) * L.fs + s * L.S + th * L.TW1;
            if (m == 4)
                split_row_4(xs + h * j->Wi, j->Wi, j->pw, L.TW1, dst);
            else
                split_row_2(xs + h * j->Wi, j->Wi, j->pw, L.TW1, dst);
        }
    }
    /* down the columns: U[k][cc] = sum_r B^T[k][r] * row r of every tile, at column cc
     * (column cc + m of a tile is column cc of the next: U[k][cc] one element on) */
    for (int cc = 0; cc < m; cc++) {
        const float *in[A_MAX];
        float *out[A_MAX];
        for (int r = 0; r < a; r++)
            in[r] = Z + (int64_t)((r % m) * m + cc) * L.fs + (r / m) * L.TW1;
        for (int k = 0; k < a; k++)
            out[k] = U + (int64_t)(k * m + cc) * L.fs;
        wino_stage(L.f + 1, a, a, j->bt, in, out);
    }
    /* across: V[k a + l] = sum_jj B^T[l][jj] * U[k][jj mod m] shifted by jj / m; then each
     * sample's TH x TW tiles (not the spare row and column) into V */
    for (int k = 0; k < a; k++) {
        const float *in[A_MAX];
        float *out[A_MAX];
        for (int jj = 0; jj < a; jj++)
            in[jj] = U + (int64_t)(k * m + jj % m) * L.fs + jj / m;
        for (int l = 0; l < a; l++)
            out[l] = Vr + (int64_t)l * L.fs;
        wino_stage(L.f, a, a, j->bt, in, out);
        for (int l = 0; l < a; l++) {
            float *v = ch->V + ((int64_t)(k * a + l) * j->Ci + c) * ch->P;
            const float *src = Vr + (int64_t)l * L.fs;
            for (int64_t s = 0; s < ch->nb; s++)
                for (int64_t th = 0; th < TH; th++)
                    memcpy(v + (s * TH + th) * TW, src + s * L.S + th * L.TW1,
                           sizeof(float) * (size_t)TW);
        }
    }
}

/* y planes of output channel o from M[xi][o][p] */
static void output_channel(const wino_chunk *ch, int64_t o, float *scratch)
{
    const wino_job *j = ch->j;
    const wino_tables *T = j->t;
    int a = T->a, m = T->m;
    int64_t P = ch->P, TH = j->TH, TW = j->TW;
    float *S = scratch, *Yt = S + (int64_t)m * a * P;
    /* down: S[i][l] = sum_k A^T[i][k] M[k a + l]; across: Yt[i][b] = sum_l A^T[b][l] S[i][l] */
    const double *atm = j->at;
    for (int l = 0; l < a; l++) {
        const float *in[A_MAX];
        float *out[4];
        for (int k = 0; k < a; k++)
            in[k] = ch->M + ((int64_t)(k * a + l) * j->Co + o) * P;
        for (int i = 0; i < m; i++)
            out[i] = S + (int64_t)(i * a + l) * P;
        wino_stage(P, m, a, atm, in, out);
    }
    for (int i = 0; i < m; i++) {
        const float *in[A_MAX];
        float *out[4];
        for (int l = 0; l < a; l++)
            in[l] = S + (int64_t)(i * a + l) * P;
        for (int b = 0; b < m; b++)
            out[b] = Yt + (int64_t)(i * m + b) * P;
        wino_stage(P, m, a, atm, in, out);
    }
    /* interleave: output (m th + i, m tw + b) of each tile, the partial tiles at the edges cut */
    float bias = j->bias ? j->bias[o] : 0.0f;
    for (int64_t s = 0; s < ch->nb; s++) {
        float *ys = j->y + ((ch->n0 + s) * j->Co + o) * j->Ho * j->Wo;
        for (int64_t th = 0; th < TH; th++)
            for (int i = 0; i < m && m * th + i < j->Ho; i++) {
                const float *src[4];
                for (int b = 0; b < m; b++)
                    src[b] = Yt + (int64_t)(i * m + b) * P + (s * TH + th) * TW;
                float *yr = ys + (m * th + i) * j->Wo;
                if (m == 4)
                    merge_row_4(yr, j->Wo, TW, src, bias);
                else
                    merge_row_2(yr, j->Wo, TW, src, bias);
            }
    }
}

static pg_status input_task(void *ctx, int64_t t)
{
    const wino_chunk *ch = ctx;
    float *scratch = pg_cpu_scratch(PG_SCRATCH_WINO, transform_scratch(ch->j, ch->nb));
    if (!scratch)
        return pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for the Winograd transforms");
    int64_t lo, hi;
    pg_cpu_part(ch->j->Ci, ch->ntasks, t, &lo, &hi);
    for (int64_t c = lo; c < hi; c++)
        input_channel(ch, c, scratch);
    return PG_OK;
}

static pg_status output_task(void *ctx, int64_t t)
{
    const wino_chunk *ch = ctx;
    float *scratch = pg_cpu_scratch(PG_SCRATCH_WINO, transform_scratch(ch->j, ch->nb));
    if (!scratch)
        return pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for the Winograd transforms");
    int64_t lo, hi;
    pg_cpu_part(ch->j->Co, ch->ntasks, t, &lo, &hi);
    for (int64_t o = lo; o < hi; o++)
        output_channel(ch, o, scratch);
    return PG_OK;
}

/* The chunk's a^2 products M[xi] = U[xi] @ V[xi], one batched descriptor */
static pg_gemm chunk_gemm(const wino_chunk *ch)
{
    const wino_job *j = ch->j;
    pg_gemm g;
    memset(&g, 0, sizeof g);
    g.batch = (int64_t)j->t->a * j->t->a;
    g.M = j->Co;
    g.N = ch->P;
    g.K = j->Ci;
    g.dtype_ab = g.dtype_c = PG_FLOAT32;
    g.compute = PG_FLOAT32;
    g.a = j->U;
    g.lda = j->Ci;
    g.stride_a = j->Co * j->Ci;
    g.b = ch->V;
    g.ldb = ch->P;
    g.stride_b = j->Ci * ch->P;
    g.c = ch->M;
    g.ldc = ch->P;
    g.stride_c = j->Co * ch->P;
    g.alpha = 1.0;
    return g;
}

static size_t chunk_bytes(const wino_job *j, int64_t nb)
{
    int64_t a2 = (int64_t)j->t->a * j->t->a;
    return (size_t)(a2 * (j->Ci + j->Co) * nb * j->TH * j->TW) * sizeof(float);
}

/* chunk c; pool NULL: every stage on this thread, else each stage cut over the pool */
static pg_status run_chunk(const wino_job *j, int64_t c, pg_pool *pool)
{
    wino_chunk ch;
    ch.j = j;
    ch.n0 = c * j->nb;
    ch.nb = j->N - ch.n0 < j->nb ? j->N - ch.n0 : j->nb;
    ch.P = ch.nb * j->TH * j->TW;
    float *buf = pg_cpu_scratch(PG_SCRATCH_WINO_CHUNK, chunk_bytes(j, j->nb));
    if (!buf)
        return pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for a Winograd chunk");
    ch.V = buf;
    ch.M = buf + (int64_t)j->t->a * j->t->a * j->Ci * ch.P;
    pg_gemm g = chunk_gemm(&ch);
    if (!pool) {
        ch.ntasks = 1;
        PG_TRY(input_task(&ch, 0));
        PG_TRY(pg_cpu_gemm_kernel(PG_FLOAT32, PG_FLOAT32)(&g));
        return output_task(&ch, 0);
    }
    int64_t threads = pg_pool_threads(pool);
    ch.ntasks = threads < j->Ci ? threads : j->Ci;
    PG_TRY(pg_pool_run(pool, ch.ntasks, input_task, &ch));
    PG_TRY(pg_cpu_gemm_run(pool, &g)); /* the scheduler cuts the a^2 entries */
    ch.ntasks = threads < j->Co ? threads : j->Co;
    return pg_pool_run(pool, ch.ntasks, output_task, &ch);
}

typedef struct chunks_job {
    const wino_job *j;
    int64_t ntasks;
} chunks_job;

static pg_status chunks_task(void *ctx, int64_t t)
{
    const chunks_job *cj = ctx;
    int64_t lo, hi;
    pg_cpu_part(cj->j->chunks, cj->ntasks, t, &lo, &hi);
    for (int64_t c = lo; c < hi; c++)
        PG_TRY(run_chunk(cj->j, c, NULL));
    return PG_OK;
}

/* ---- when, and the entry -------------------------------------------------------------- */

int pg_cpu_conv_winograd_tile(const pg_node *n)
{
    const pg_conv_geom *g = &n->p.conv;
    int computes = pg_conv_computes(n->subop);
    if (n->dst.dtype != PG_FLOAT32 || computes == PG_CONV_W || g->groups != 1 ||
        g->kh != 3 || g->kw != 3 || g->sh != 1 || g->sw != 1 || g->dh != 1 || g->dw != 1)
        return 0;
    const char *env = getenv("PYGPU_CONV_WINOGRAD"); /* 0, 2 or 4: measuring the choice */
    int forced = env && *env ? atoi(env) : -1;
    if (forced == 0)
        return 0;
    const pg_tensor *x = pg_conv_operand(n, PG_CONV_X), *y = pg_conv_operand(n, PG_CONV_Y);
    int64_t C = x->shape[1], O = y->shape[1], OH = y->shape[2], OW = y->shape[3];
    if (computes == PG_CONV_X && (g->ph > 2 || g->pw > 2))
        return 0; /* its padding 2 - p would be negative */
    if (OH == 0 || OW == 0 || x->shape[0] == 0)
        return 0;
    if (forced == 2 || forced == 4)
        return forced;
    /* the transforms cost passes over the input and the output; the products save 2.25x
     * (m = 2) or 4x (m = 4) of C * O multiplies, which pays only when C and O are large.
     * Measured (forward + input gradient, batch 32, padding 1, one thread, least process CPU
     * time of 10-12 alternating runs, Xeon Emerald Rapids, load 8-11): 128 ch at 16 x 16
     * 1.18x faster than im2col + GEMM, 256 at 8 x 8 1.13x, 64 at 32 x 32 1.06x; 32 at 32 x 32
     * and 16 at 32 x 32 0.92-0.78x (slower), 4 x 4 planes no gain (a tile is most of the
     * plane). So: F(4,3) from 24 x 24 outputs up, F(2,3) from 8 x 8, 64 channels a side.
     * The weights' transform is a fixed cost per call (C * O transforms, their stores a^2
     * planes apart), paid back only over enough tiles: forward alone, one thread, F(2,3)'s
     * tile count N ceil(Ho/2) ceil(Wo/2) under 512 ran slower than im2col + GEMM or even
     * (256 ch at 8 x 8, batch 1: 5.7 ms against 0.95; 128 at 16 x 16, batch 2: 2.6 against
     * 1.9; 64 at 32 x 32, batch 2: 2.4 against 2.4), and from 512 up faster (128 at 16 x 16,
     * batch 8: 6.3 against 6.9; 64 at 32 x 32, batch 16: 13.5 against 18.6); so batch-1
     * inference stays with im2col. */
    if (C < 64 || O < 64)
        return 0;
    if (x->shape[0] * ((OH + 1) / 2) * ((OW + 1) / 2) < 512)
        return 0;
    int64_t side = OH < OW ? OH : OW;
    return side >= 24 ? 4 : side >= 8 ? 2 : 0;
}

pg_status pg_cpu_conv_winograd(pg_pool *pool, const pg_node *n, int m)
{
    wino_job j;
    memset(&j, 0, sizeof j);
    j.t = &WINO_TABLES[m == 4 ? 1 : 0];
    const pg_conv_geom *g = &n->p.conv;
    /* the convolution Winograd runs: x -> y forward, dy -> dx for the input gradient */
    bool grad = pg_conv_computes(n->subop) == PG_CONV_X;
    const pg_tensor *in = pg_conv_operand(n, grad ? PG_CONV_Y : PG_CONV_X), *out = &n->dst;
    j.x = (const float *)pg_tensor_data(in);
    j.w = (const float *)pg_tensor_data(pg_conv_operand(n, PG_CONV_W));
    j.bias = n->src[2].storage ? (const float *)pg_tensor_data(&n->src[2]) : NULL;
    j.y = (float *)pg_tensor_data(out);
    j.N = in->shape[0];
    j.Ci = in->shape[1];
    j.Hi = in->shape[2];
    j.Wi = in->shape[3];
    j.Co = out->shape[1];
    j.Ho = out->shape[2];
    j.Wo = out->shape[3];
    j.flip = grad;
    j.ph = j.flip ? 2 - g->ph : g->ph;
    j.pw = j.flip ? 2 - g->pw : g->pw;
    for (int r = 0; r < j.t->a; r++) { /* the tables' rows, packed */
        for (int k = 0; k < j.t->a; k++)
            j.bt[r * j.t->a + k] = j.t->bt[r][k];
        if (r < m)
            for (int k = 0; k < j.t->a; k++)
                j.at[r * j.t->a + k] = j.t->at[r][k];
    }
    j.TH = (j.Ho + m - 1) / m;
    j.TW = (j.Wo + m - 1) / m;
    int64_t threads = pg_pool_threads(pool), tiles = j.TH * j.TW;
    j.nb = (256 + tiles - 1) / tiles; /* about 256 tiles a chunk */
    while (j.nb > 1 && chunk_bytes(&j, j.nb) > ((size_t)16 << 20))
        j.nb /= 2;
    if (threads > 1 && j.nb * threads > j.N) /* a chunk for every thread, when samples allow */
        j.nb = (j.N + threads - 1) / threads;
    if (j.nb > j.N)
        j.nb = j.N;
    j.chunks = (j.N + j.nb - 1) / j.nb;
    int64_t a2 = (int64_t)j.t->a * j.t->a;
    j.U = malloc((size_t)(a2 * j.Co * j.Ci) * sizeof(float));
    if (!j.U)
        return pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for the Winograd weights");
    j.wtasks = threads < j.Co ? threads : j.Co;
    pg_status st = j.wtasks > 1 ? pg_pool_run(pool, j.wtasks, weights_task, &j)
                                : weights_task(&j, 0);
    if (st == PG_OK) {
        if (j.chunks >= threads || threads < 2) {
            chunks_job cj = {&j, threads < j.chunks ? threads : j.chunks};
            st = cj.ntasks > 1 ? pg_pool_run(pool, cj.ntasks, chunks_task, &cj)
                               : chunks_task(&cj, 0);
        } else {
            for (int64_t c = 0; c < j.chunks && st == PG_OK; c++)
                st = run_chunk(&j, c, pool);
        }
    }
    free(j.U);
    return st;
}
