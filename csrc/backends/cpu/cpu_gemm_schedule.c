/* cpu_gemm_schedule.c - cut one GEMM descriptor into panels by work, one task each.
 *
 * The thread count comes from the FLOPs (batch * M * N * K multiply-adds over
 * PG_GEMM_GRAIN), not from the row count, so a 200x200 product uses both cores
 * and a 32x32 one stays on the caller. Which axis is cut:
 *   - the batch, when there are at least as many entries as tasks;
 *   - else the output's columns when N >= M (or when BGRAD needs whole columns):
 *     each thread then packs only its own slice of B (for a linear layer, its own
 *     output features' rows of W), and A is the smaller operand every thread reads;
 *   - else the rows, each thread packing its own rows of A.
 * Each panel is a set of whole output elements, computed by one kernel call over
 * the whole K; the cut depends on the shape and the thread count only, so a run
 * repeats bit for bit (see cpu_gemm.h for different thread counts). */
#include "cpu_gemm.h"

#include "../../core/pg_dtype.h"
#include "cpu_blas.h"
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm_bf16.h"
#include "cpu_isa.h"
#include "cpu_part.h"

enum { CUT_BATCH, CUT_ROWS, CUT_COLS };

typedef struct gemm_job {
    pg_gemm g;
    pg_gemm_kernel_fn fn;
    int axis;
    int64_t len, ntasks, align;
} gemm_job;

static const void *advance(const void *p, int64_t elems, size_t isz)
{
    return p ? (const char *)p + elems * (int64_t)isz : NULL;
}

/* The panel [lo, hi) of `g` along `axis`. */
static void panel(const pg_gemm *g, int axis, int64_t lo, int64_t hi, pg_gemm *out)
{
    size_t sab = pg_dtype_size((pg_dtype)g->dtype_ab), sc = pg_dtype_size((pg_dtype)g->dtype_c);
    size_t sb = g->b_f32 ? sizeof(float) : sab;
    *out = *g;
    switch (axis) {
    case CUT_BATCH:
        out->batch = hi - lo;
        out->a = advance(g->a, lo * g->stride_a, sab);
        out->b = advance(g->b, lo * g->stride_b, sb);
        out->b_mask = advance(g->b_mask, lo * g->stride_b, sizeof(float));
        out->c = (void *)advance(g->c, lo * g->stride_c, sc);
        out->aux = advance(g->aux, lo * g->stride_c, sc);
        break;
    case CUT_ROWS:
        out->M = hi - lo;
        out->a = advance(g->a, g->trans_a ? lo : lo * g->lda, sab);
        out->c = (void *)advance(g->c, lo * g->ldc, sc);
        out->aux = advance(g->aux, lo * g->ldaux, sc);
        break;
    default: /* CUT_COLS */
        out->N = hi - lo;
        out->b = advance(g->b, g->trans_b ? lo * g->ldb : lo, sb);
        out->b_mask = advance(g->b_mask, g->trans_b ? lo * g->ldb : lo, sizeof(float));
        out->b_packed_col = g->b_packed_col + lo;
        out->c = (void *)advance(g->c, lo, sc);
        out->aux = advance(g->aux, lo, sc);
        out->bias = advance(g->bias, lo, sc);
        out->bias_grad = (void *)advance(g->bias_grad, lo, sc);
        break;
    }
}

static pg_status run_panel(void *ctx, int64_t task)
{
    gemm_job *j = ctx;
    int64_t lo, hi;
    pg_cpu_part_aligned(j->len, j->ntasks, task, j->align, &lo, &hi);
    if (hi <= lo)
        return PG_OK;
    pg_gemm p;
    panel(&j->g, j->axis, lo, hi, &p);
    return j->fn(&p);
}

/* Whether dtype_ab's kernel takes a mask of B itself: float32's (cpu_gemm.c: fused where
 * pygpu's AVX2 kernel runs, else a copy per panel), and bfloat16's when it is the
 * AVX512_BF16 kernel (pg_cpu_gemm_half_kernel picks it exactly then), which packs it. */
static bool pg_cpu_gemm_packs_b_kernel(int dtype_ab)
{
    return dtype_ab == PG_FLOAT32 || (dtype_ab == PG_BFLOAT16 && pg_cpu_gemm_bf16_runs());
}

pg_status pg_cpu_gemm_run_unmasked(pg_pool *pool, const pg_gemm *g);

pg_status pg_cpu_gemm_run(pg_pool *pool, const pg_gemm *g)
{
    pg_gemm_kernel_fn fn = pg_cpu_gemm_kernel(g->dtype_ab, g->dtype_c);
    if (!fn)
        return pg_error_set(PG_ERR_DTYPE, "matmul: the CPU has no kernel for %s inputs with a "
                                          "%s output; use float32 or float64",
                            pg_dtype_name((pg_dtype)g->dtype_ab),
                            pg_dtype_name((pg_dtype)g->dtype_c));
    if (g->b_mask) { /* pg_gemm.h: a float32 B's mask; fused by the kernels that pack B */
        if (g->dtype_ab != PG_FLOAT32 && !g->b_f32)
            return pg_error_set(PG_ERR_DTYPE, "matmul: a mask of B needs B stored as float32, "
                                              "got %s", pg_dtype_name((pg_dtype)g->dtype_ab));
        /* float32's kernel handles its mask panel by panel (cpu_gemm.c); bfloat16's packs it */
        if (!pg_cpu_gemm_packs_b_kernel(g->dtype_ab))
            return pg_cpu_gemm_run_unmasked(pool, g);
    }
    pg_cpu_blas_keep_one_thread();
    bool bgrad = (g->epilogue & PG_EPI_BGRAD) != 0;
    int64_t work = g->batch * g->M * g->N * (g->K > 0 ? g->K : 1);
    int64_t nt = work / PG_GEMM_GRAIN, threads = pg_pool_threads(pool);
    if (nt > threads)
        nt = threads;
    if (nt < 2)
        return fn(g);
    gemm_job j = {.g = *g, .fn = fn, .ntasks = nt, .align = 1};
    if (g->batch >= nt && !bgrad) {
        j.axis = CUT_BATCH;
        j.len = g->batch;
    } else if ((g->N >= g->M || bgrad) && g->N >= nt) {
        j.axis = CUT_COLS;
        j.len = g->N;
        j.align = g->N >= 16 * nt ? 16 : 1; /* whole register tiles and cache lines */
    } else if (!bgrad && g->M >= nt) {
        j.axis = CUT_ROWS;
        j.len = g->M;
        j.align = g->M >= 8 * nt ? 8 : 1;
    } else if (g->N >= nt) {
        j.axis = CUT_COLS;
        j.len = g->N;
    } else {
        return fn(g);
    }
    return pg_pool_run(pool, nt, run_panel, &j);
}

bool pg_cpu_gemm_packs_b(int dtype_ab)
{
    if (dtype_ab == PG_FLOAT32)
        return pg_cpu_isa() == PG_ISA_AVX2; /* pygpu's own kernel runs (cpu_sgemm.c) */
    return dtype_ab == PG_BFLOAT16 && pg_cpu_gemm_bf16_runs();
}

/* The mask of B where the kernel does not take it (cpu_gemm.h) */
pg_status pg_cpu_gemm_run_unmasked(pg_pool *pool, const pg_gemm *g)
{
    /* stored B of one batch entry: (K, N), or (N, K) when transposed */
    const int64_t rows = g->trans_b ? g->N : g->K, cols = g->trans_b ? g->K : g->N;
    const int64_t entries = g->stride_b == 0 ? 1 : g->batch, each = rows * cols;
    /* the entries one after another: one (entries * rows, cols) matrix when the batch
     * stride is rows * ldb, else entry by entry */
    float *t = malloc((size_t)(entries * each > 0 ? entries * each : 1) * sizeof(float));
    if (!t)
        return pg_error_set(PG_ERR_NOMEM, "matmul: out of host memory for the masked weight "
                                          "(%lld x %lld floats)", (long long)rows,
                            (long long)cols);
    for (int64_t z = 0; z < entries; z++) {
        float *e = pg_cpu_gemm_masked_copy((const float *)g->b + z * g->stride_b,
                                           g->b_mask + z * g->stride_b, rows, cols, g->ldb);
        if (!e) {
            free(t);
            return pg_error_set(PG_ERR_NOMEM, "matmul: out of host memory for the masked "
                                              "weight");
        }
        memcpy(t + z * each, e, (size_t)each * sizeof(float));
        free(e);
    }
    pg_gemm u = *g;
    u.b = t;
    u.ldb = cols > 0 ? cols : 1;
    u.stride_b = g->stride_b == 0 ? 0 : each;
    u.b_mask = NULL;
    u.b_packed = NULL;
    pg_cpu_gemm_mask_note(false);
    pg_status st = pg_cpu_gemm_run(pool, &u);
    free(t);
    return st;
}
