/* cpu_amp.c - the CPU kernel of the loss scaler's fused unscale-and-check
 * (operands in pg_ops_amp.c): g *= inv_scale in one pass that also notes whether
 * any element was inf or NaN, raising the 0-d float32 flag `found` if so. float16
 * and bfloat16 gradients go through float32 in blocks (cpu_half_convert.c). */
#include <math.h>

#include "cpu_half_convert.h"
#include "cpu_kernels.h"

#define BLOCK 1024

static int unscale_f32(int64_t n, float *g, float inv)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        bad |= !isfinite(g[i]);
        g[i] *= inv;
    }
    return bad;
}

pg_status pg_cpu_amp_unscale(const pg_node *node)
{
    const pg_tensor *g = &node->dst;
    const int64_t n = pg_tensor_numel(g);
    const double inv = node->p.amp.inv_scale;
    int bad = 0;
    switch (g->dtype) {
    case PG_FLOAT32: bad = unscale_f32(n, (float *)pg_tensor_data(g), (float)inv); break;
    case PG_FLOAT64: {
        double *d = (double *)pg_tensor_data(g);
        for (int64_t i = 0; i < n; i++) {
            bad |= !isfinite(d[i]);
            d[i] *= inv;
        }
        break;
    }
    default: { /* float16 / bfloat16 */
        uint16_t *h = (uint16_t *)pg_tensor_data(g);
        float buf[BLOCK];
        for (int64_t a = 0; a < n; a += BLOCK) {
            int64_t m = n - a < BLOCK ? n - a : BLOCK;
            pg_cpu_half_to_f32(g->dtype, m, h + a, buf);
            bad |= unscale_f32(m, buf, (float)inv);
            pg_cpu_f32_to_half(g->dtype, m, buf, h + a);
        }
        break;
    }
    }
    if (bad)
        *(float *)pg_tensor_data(&node->extra[0]) = 1.0f;
    return PG_OK;
}
