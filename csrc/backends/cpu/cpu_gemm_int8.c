/* cpu_gemm_int8.c - the int8 GEMM's kernel choice (by ISA and PYGPU_ISA), its scheduler
 * (row or 64-column panels on a device's pool) and the quantized linear node PG_OP_QLINEAR
 * (cpu_gemm_int8.h). The driver and the portable/AVX2 tiles: cpu_gemm_int8_drive.c. */
#include "cpu_gemm_int8.h"

#include <string.h>

#include "../../core/pg_tensor.h"
#include "cpu_isa.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define PG_INT8_AVX2 1
#endif

/* ---- choice ------------------------------------------------------------------------------ */

pg_qgemm_kernel_fn pg_cpu_qgemm_kernel_named(const char *name, int a_max)
{
    if (strcmp(name, "portable") == 0)
        return pg_cpu_qgemm_portable;
#ifdef PG_INT8_AVX2
    if (strcmp(name, "avx2") == 0)
        return a_max <= 127 && pg_cpu_isa() >= PG_ISA_AVX2 ? pg_cpu_qgemm_avx2 : NULL;
#endif
    if (strcmp(name, "avx512_vnni") == 0)
        return pg_cpu_qgemm_vnni_runs() ? pg_cpu_qgemm_vnni : NULL;
    if (strcmp(name, "avx_vnni") == 0)
        return pg_cpu_qgemm_avx_vnni_built() && pg_cpu_has_avx_vnni() ? pg_cpu_qgemm_avx_vnni
                                                                       : NULL;
    if (strcmp(name, "avx_vnni_evex") == 0)
        return pg_cpu_qgemm_avx_vnni_built() && pg_cpu_has_avx512_vnni()
                   ? pg_cpu_qgemm_avx_vnni_evex
                   : NULL;
    return NULL;
}

pg_qgemm_kernel_fn pg_cpu_qgemm_kernel(int a_max, const char **name)
{
    const char *nm = "portable";
    pg_qgemm_kernel_fn fn = pg_cpu_qgemm_portable;
    if (pg_cpu_qgemm_vnni_runs()) {
        nm = pg_cpu_qgemm_vnni_emulated() ? "avx512_vnni (SIMDe emulation)" : "avx512_vnni";
        fn = pg_cpu_qgemm_vnni;
    } else if (pg_cpu_qgemm_kernel_named("avx_vnni", a_max)) {
        nm = "avx_vnni";
        fn = pg_cpu_qgemm_avx_vnni;
    } else if (pg_cpu_qgemm_kernel_named("avx2", a_max)) {
        nm = "avx2";
        fn = pg_cpu_qgemm_avx2;
    }
    if (name)
        *name = nm;
    return fn;
}

/* ---- the scheduler: row panels, or 64-column panels ---------------------------------------- */

/* Multiply-adds below which a product runs whole on one thread: int8 runs 4x float32's
 * rate, so the float GEMM's grain (cpu_gemm.h) times 4. */
#define QGEMM_GRAIN ((int64_t)1 << 20)

typedef struct qjob {
    const pg_qgemm *g;
    pg_qgemm_kernel_fn fn;
    bool by_rows;
    int64_t len, ntasks; /* rows, or 64-column panels */
} qjob;

static pg_status qjob_task(void *ctx, int64_t t)
{
    const qjob *j = ctx;
    const int64_t lo = j->len * t / j->ntasks, hi = j->len * (t + 1) / j->ntasks;
    if (lo >= hi)
        return PG_OK;
    pg_qgemm s = *j->g;
    if (j->by_rows) {
        const int64_t m0 = lo, m1 = hi;
        s.M = m1 - m0;
        if (s.a_u8)
            s.a_u8 += m0 * s.lda;
        else
            s.a_f32 += m0 * s.lda;
        if (s.c_f32)
            s.c_f32 += m0 * s.ldc;
        if (s.c_u8)
            s.c_u8 += m0 * s.ldc;
        if (s.c_s32)
            s.c_s32 += m0 * s.ldc;
        return j->fn(&s);
    }
    /* columns [n0, n1): whole 64-column panels, so the narrowed weight keeps the layout */
    const int64_t n0 = lo * PG_QGEMM_PANEL;
    const int64_t n1 = hi * PG_QGEMM_PANEL < s.N ? hi * PG_QGEMM_PANEL : s.N;
    s.N = n1 - n0;
    s.b_packed += n0 * 4 * pg_qpack_k4(s.K);
    s.b_colsum += n0;
    s.b_scale += n0;
    if (s.bias)
        s.bias += n0;
    if (s.c_f32)
        s.c_f32 += n0;
    if (s.c_u8)
        s.c_u8 += n0;
    if (s.c_s32)
        s.c_s32 += n0;
    return j->fn(&s);
}

pg_status pg_cpu_qgemm_run(pg_pool *pool, const pg_qgemm *g, pg_qgemm_kernel_fn fn)
{
    if (!fn)
        fn = pg_cpu_qgemm_kernel(g->a_max, NULL);
    const int nt = pool ? pg_pool_threads(pool) : 1;
    const int64_t work = g->M * g->N * g->K;
    if (nt < 2 || work < QGEMM_GRAIN)
        return fn(g);
    qjob j = {.g = g, .fn = fn};
    const int64_t panels = (g->N + PG_QGEMM_PANEL - 1) / PG_QGEMM_PANEL;
    j.by_rows = g->M >= 8 * nt || panels < nt; /* few rows (small batches): split the columns */
    j.len = j.by_rows ? g->M : panels;
    j.ntasks = j.len < nt ? j.len : nt;
    return pg_pool_run(pool, j.ntasks, qjob_task, &j);
}

/* ---- the quantized linear node ------------------------------------------------------------- */

/* PG_OP_QLINEAR: src x (M,K) float32 or u8 (bool-typed storage), packed (bytes), w_scale
 * (N) float32, bias (N) float32 or none; dst (M,N) float32 or u8; subop the activation;
 * p.qlinear: a_scale, c_scale, a_zp, c_zp, a_max, c_max, a_dynamic. */
static void qgemm_of_node(const pg_node *n, pg_qgemm *g)
{
    const pg_tensor *x = &n->src[0], *w = &n->src[1], *ws = &n->src[2], *b = &n->src[3];
    memset(g, 0, sizeof *g);
    g->M = x->shape[0];
    g->K = x->shape[1];
    g->N = ws->shape[0];
    g->lda = g->K;
    if (x->dtype == PG_FLOAT32)
        g->a_f32 = (const float *)pg_tensor_data(x);
    else
        g->a_u8 = (const uint8_t *)pg_tensor_data(x);
    g->a_dynamic = n->p.qlinear.a_dynamic != 0;
    g->a_scale = (float)n->p.qlinear.a_scale;
    g->a_zp = (int32_t)n->p.qlinear.a_zp;
    g->a_max = (int)n->p.qlinear.a_max;
    g->b_packed = (const uint8_t *)pg_tensor_data(w);
    g->b_colsum = pg_qpack_colsum(g->b_packed, g->N, g->K);
    g->b_scale = (const float *)pg_tensor_data(ws);
    g->bias = b->storage ? (const float *)pg_tensor_data(b) : NULL;
    g->act = n->subop;
    g->ldc = g->N;
    if (n->dst.dtype == PG_FLOAT32)
        g->c_f32 = (float *)pg_tensor_data(&n->dst);
    else
        g->c_u8 = (uint8_t *)pg_tensor_data(&n->dst);
    g->c_scale = (float)n->p.qlinear.c_scale;
    g->c_zp = (int32_t)n->p.qlinear.c_zp;
    g->c_max = (int)n->p.qlinear.c_max;
}

pg_status pg_cpu_qlinear_on(pg_pool *pool, const pg_node *n)
{
    pg_qgemm g;
    qgemm_of_node(n, &g);
    return pg_cpu_qgemm_run(pool, &g, NULL);
}

pg_status pg_cpu_qlinear(const pg_node *n) { return pg_cpu_qlinear_on(NULL, n); }
