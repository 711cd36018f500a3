/* pg_ops_amp.c - the generic layer of the loss scaler's fused op (pygpu.amp.GradScaler).
 *
 *   AMP_UNSCALE  src: g, found             dst: g (in place); extra: found
 *                p.amp.inv_scale.  g *= inv_scale; found = 1 if any element of
 *                g was inf or NaN, else untouched
 *
 * One pass per gradient does both the unscale and the inf/NaN check, and the flag is
 * only ever raised, so one 0-d float32 `found` per device serves all of an optimizer's
 * gradients there: the scaler reads it once per step. Checked here once; a backend
 * without the kernel says so through supports_op and the scaler uses tensor ops. */
#include <string.h>

#include "pg_backend.h"
#include "pg_ops.h"

pg_status pg_op_amp_unscale(const pg_tensor *g, double inv_scale, const pg_tensor *found)
{
    const char *op = "unscale_";
    if (g->dtype != PG_FLOAT32 && g->dtype != PG_FLOAT64 && g->dtype != PG_FLOAT16 &&
        g->dtype != PG_BFLOAT16)
        return pg_error_set(PG_ERR_DTYPE, "%s: gradients must be float tensors, got %s", op,
                            pg_dtype_name((pg_dtype)g->dtype));
    if (found->dtype != PG_FLOAT32 || found->ndim != 0)
        return pg_error_set(PG_ERR_DTYPE, "%s: the found-inf flag must be a 0-d float32 tensor",
                            op);
    PG_TRY(pg_check_same_device(op, g, found));
    if (!pg_tensor_is_contiguous(g))
        return pg_error_set(PG_ERR_VALUE, "%s: the gradient must be contiguous", op);
    if ((g->storage->flags & PG_STORAGE_READONLY) || (found->storage->flags & PG_STORAGE_READONLY))
        return pg_error_set(PG_ERR_VALUE, "%s: the gradient or the flag is read-only", op);
    PG_TRY(pg_backend_check_op(pg_tensor_device(g), PG_OP_AMP_UNSCALE, g->dtype, op));
    if (pg_tensor_numel(g) == 0)
        return PG_OK;
    pg_node n;
    pg_node_start(&n, PG_OP_AMP_UNSCALE, 0, op);
    n.nsrc = 2;
    n.src[0] = *g;
    n.src[1] = *found;
    n.dst = *g;
    n.nextra = 1;
    n.extra[0] = *found;
    n.p.amp.inv_scale = inv_scale;
    return pg_launch(&n);
}
