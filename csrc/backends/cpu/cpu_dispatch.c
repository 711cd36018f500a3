/* cpu_dispatch.c - the CPU's one dispatcher: which serial kernel runs a pg_node.
 *
 * The bottom of the CPU backend's layers: cpu_backend.c (the backend table)
 * hands a node to cpu_parallel.c (the pool: cuts it into slices), which runs
 * each slice through pg_cpu_execute here; sim's device threads do the same.
 * Kept apart from the table so the includes form a line, not a circle. */
#include "cpu_gemm_int8.h"
#include "cpu_kernels.h"

pg_status pg_cpu_execute(const pg_node *node)
{
    switch (node->op) {
    case PG_OP_FILL: return pg_cpu_fill(node);
    case PG_OP_COPY: return pg_cpu_copy(node);
    case PG_OP_BINARY: return pg_cpu_binary(node);
    case PG_OP_UNARY: return pg_cpu_unary(node);
    case PG_OP_CLAMP: return pg_cpu_clamp(node);
    case PG_OP_SOFTMAX: return pg_cpu_softmax(node);
    case PG_OP_LAYER_NORM: return pg_cpu_layer_norm(node);
    case PG_OP_REDUCE: return pg_cpu_reduce(node);
    case PG_OP_MATMUL: return pg_cpu_matmul(node);
    case PG_OP_ARANGE: return pg_cpu_arange(node);
    case PG_OP_RANDOM: return pg_cpu_random(node);
    case PG_OP_LINEAR_FWD: return pg_cpu_linear_fwd(node);
    case PG_OP_LINEAR_BWD: return pg_cpu_linear_bwd(node);
    case PG_OP_XENT_FWD: return pg_cpu_xent_fwd(node);
    case PG_OP_XENT_BWD: return pg_cpu_xent_bwd(node);
    case PG_OP_SGD: return pg_cpu_sgd(node);
    case PG_OP_ADAM: return pg_cpu_adam(node);
    case PG_OP_AMP_UNSCALE: return pg_cpu_amp_unscale(node);
    case PG_OP_SELECT: return pg_cpu_select(node);
    case PG_OP_INDEX: return pg_cpu_index(node);
    case PG_OP_QLINEAR: return pg_cpu_qlinear(node);
    case PG_OP_RNN_CELL:
    case PG_OP_RNN_CELL_BWD: return pg_cpu_rnn_cell(node);
    case PG_OP_SDPA:
    case PG_OP_SDPA_BWD: return pg_cpu_attention(node);
    default: return pg_error_set(PG_ERR_RUNTIME, "unknown op %d", node->op);
    }
}
