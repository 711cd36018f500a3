/* cpu_dispatch.c - the CPU's one dispatcher: which serial kernel runs a pg_node.
 *
 * The bottom of the CPU backend's layers: cpu_backend.c (the backend table)
 * hands a node to cpu_parallel.c (the pool: cuts it into slices), which runs
 * each slice through pg_cpu_execute here; sim's device threads do the same.
 * Kept apart from the table so the includes form a line, not a circle.
 * The kernels are a function-pointer array generated from the PG_NODE rows'
 * cpu column (pg_ops.def): a new node kind is a row, not a case here. */
#include "cpu_kernels.h"

typedef pg_status (*pg_cpu_kernel)(const pg_node *node);

static const pg_cpu_kernel pg_cpu_kernels[PG_NUM_OPS] = {
#define PG_NODE(ID, params, cpu, ...) [PG_OP_##ID] = cpu,
#include "../../core/pg_ops.def"
};

pg_status pg_cpu_execute(const pg_node *node)
{
    if ((unsigned)node->op >= (unsigned)PG_NUM_OPS)
        return pg_error_set(PG_ERR_RUNTIME, "unknown op %d", node->op);
    return pg_cpu_kernels[node->op](node);
}
