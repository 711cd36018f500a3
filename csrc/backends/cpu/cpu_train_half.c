/* cpu_train_half.c - the fused linear layers on float16/bfloat16 tensors.
 *
 * The same nodes as cpu_train.c's float32 kernels (operands in pg_ops_train.c),
 * each product a pg_gemm run by the half GEMM kernel for the CPU
 * (cpu_gemm_half.c: fp32 accumulation, rounded once into the half output):
 *   forward   y (N,O) = act(x (N,I) @ W (O,I)^T + b)   one GEMM, BIAS|act epilogue
 *   backward  dz (N,O) = dy * act'(y) (rounded to the half dtype, as autocast's
 *             activation backward is) with db = column sums of dz in double;
 *             dW (O,I) = dz^T @ x; dx (N,I) = dz @ W
 * Row panels (cpu_parallel.c's run_linear) arrive as narrowed nodes with the
 * absent outputs' storage NULL, exactly as for float32. */
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm_half.h"
#include "cpu_half_convert.h"
#include "cpu_kernels.h"

static void gemm_init(pg_gemm *g, int dt)
{
    memset(g, 0, sizeof *g);
    g->batch = 1;
    g->dtype_ab = g->dtype_c = dt;
    g->compute = PG_FLOAT32;
    g->alpha = 1.0;
    g->act = PG_ACT_NONE;
}

static pg_status run(const pg_gemm *g)
{
    return pg_cpu_gemm_half_kernel(g->dtype_ab, g->dtype_c, NULL)(g);
}

pg_status pg_cpu_linear_fwd_half(const pg_node *n)
{
    const pg_tensor *x = &n->src[0], *w = &n->src[1], *b = &n->src[2], *y = &n->dst;
    pg_gemm g;
    gemm_init(&g, y->dtype);
    g.M = x->shape[0];
    g.K = x->shape[1];
    g.N = w->shape[0];
    g.a = pg_tensor_data(x);
    g.lda = g.K;
    g.b = pg_tensor_data(w);
    g.trans_b = true;
    g.ldb = g.K;
    g.c = pg_tensor_data(y);
    g.ldc = g.N;
    g.act = n->subop;
    if (b->storage) {
        g.epilogue = PG_EPI_BIAS;
        g.bias = pg_tensor_data(b);
    }
    return run(&g);
}

/* dz = dy * act'(y) (into dzt) and/or db's column sums, row by row in float32 */
static pg_status prologue(const pg_node *n, int64_t N, int64_t O, double *acc)
{
    const int dt = n->src[0].dtype, act = n->subop;
    const uint16_t *dy = (const uint16_t *)pg_tensor_data(&n->src[0]);
    const uint16_t *yv = act != PG_ACT_NONE ? (const uint16_t *)pg_tensor_data(&n->src[3]) : NULL;
    uint16_t *dz = act != PG_ACT_NONE ? (uint16_t *)pg_tensor_data(&n->extra[2]) : NULL;
    float *buf = malloc((size_t)(O > 0 ? O : 1) * 2 * sizeof(float));
    if (!buf)
        return pg_error_set(PG_ERR_NOMEM, "linear_backward: out of host memory");
    float *d = buf, *yr = buf + O;
    for (int64_t r = 0; r < N; r++) {
        pg_cpu_half_to_f32(dt, O, dy + r * O, d);
        if (act != PG_ACT_NONE) {
            pg_cpu_half_to_f32(dt, O, yv + r * O, yr);
            for (int64_t j = 0; j < O; j++) {
                float v = yr[j];
                d[j] *= act == PG_ACT_RELU ? (v > 0.0f ? 1.0f : 0.0f)
                        : act == PG_ACT_TANH ? 1.0f - v * v
                                             : v * (1.0f - v);
            }
            pg_cpu_f32_to_half(dt, O, d, dz + r * O);
            if (acc) /* db sums what dW and dx will see: the rounded dz */
                pg_cpu_half_to_f32(dt, O, dz + r * O, d);
        }
        if (acc)
            for (int64_t j = 0; j < O; j++)
                acc[j] += d[j];
    }
    free(buf);
    return PG_OK;
}

pg_status pg_cpu_linear_bwd_half(const pg_node *n)
{
    const pg_tensor *dy = &n->src[0], *x = &n->src[1], *w = &n->src[2];
    const pg_tensor *dw = &n->dst, *dx = &n->extra[0], *db = &n->extra[1], *dzt = &n->extra[2];
    const int dt = dy->dtype;
    const int64_t N = x->shape[0], I = x->shape[1], O = w->shape[0];
    double *acc = NULL;
    if (db->storage) {
        acc = calloc((size_t)O + 1, sizeof *acc);
        if (!acc)
            return pg_error_set(PG_ERR_NOMEM, "linear_backward: out of host memory");
    }
    pg_status st = PG_OK;
    if (n->subop != PG_ACT_NONE || acc)
        st = prologue(n, N, O, acc);
    if (st == PG_OK && acc) {
        float *tmp = malloc((size_t)O * sizeof(float) + 1);
        if (!tmp) {
            st = pg_error_set(PG_ERR_NOMEM, "linear_backward: out of host memory");
        } else {
            for (int64_t j = 0; j < O; j++)
                tmp[j] = (float)acc[j];
            pg_cpu_f32_to_half(dt, O, tmp, (uint16_t *)pg_tensor_data(db));
            free(tmp);
        }
    }
    free(acc);
    if (st != PG_OK)
        return st;
    const void *DZ = n->subop != PG_ACT_NONE ? pg_tensor_data(dzt) : pg_tensor_data(dy);
    pg_gemm g;
    if (dw->storage) { /* dW (O,I) = dz^T (O,N) @ x (N,I) */
        gemm_init(&g, dt);
        g.M = O;
        g.N = I;
        g.K = N;
        g.a = DZ;
        g.trans_a = true;
        g.lda = O;
        g.b = pg_tensor_data(x);
        g.ldb = I;
        g.c = pg_tensor_data(dw);
        g.ldc = I;
        PG_TRY(run(&g));
    }
    if (dx->storage) { /* dx (N,I) = dz (N,O) @ W (O,I) */
        gemm_init(&g, dt);
        g.M = N;
        g.N = I;
        g.K = O;
        g.a = DZ;
        g.lda = O;
        g.b = pg_tensor_data(w);
        g.ldb = I;
        g.c = pg_tensor_data(dx);
        g.ldc = I;
        PG_TRY(run(&g));
    }
    return PG_OK;
}
