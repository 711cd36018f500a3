/* pg_graph_rules.h - which nodes a captured graph may hold: the PG_NODE rows' graph column.
 *
 * A replay runs the captured nodes again with the parameters they were captured with. A
 * node whose scalars change from one step to the next (Adam's step count, GradScaler's
 * inv_scale, the Philox seed and offset of a random draw, SGD's first-step flag) would be
 * repeated frozen, so its row refuses capture (GRAPH_REFUSE / GRAPH_REFUSE_IF) and the
 * capture fails with the row's reason: a replay is never silently wrong. PyTorch's answer
 * is capturable=True, device-side scalars, which pygpu's kernels do not have yet.
 *
 * One rule for every kind of graph: the CUDA plugin's (csrc/backends/cuda/cuda_graph.c)
 * and the core's node graph for cpu and sim (pg_graph.c) both ask pg_node_graph_refusal.
 * Header-only (static functions generated from the rows) so that the plugin, which cannot
 * link against the core's symbols, reads the same column. */
#ifndef PG_GRAPH_RULES_H
#define PG_GRAPH_RULES_H

#include "pg_node.h"

typedef const char *(*pg_graph_refusal_fn)(const pg_node *n);

static inline const char *pg_graph_refusal_of_entries(const pg_node *n);

/* the PG_NODE rows' graph column, one function per node kind: the reason, or NULL */
#define GRAPH_AS_ENTRIES pg_graph_refusal_of_entries(n)
#define GRAPH_OK NULL
#define GRAPH_REFUSE(why) (why)
#define GRAPH_REFUSE_IF(cond, why) ((cond) ? (why) : NULL)
#define PG_NODE(ID, params, cpu, split, panels, cuda, graph, ...)                                  \
    static inline const char *pg_graph_refusal_##ID(const pg_node *n)                              \
    {                                                                                              \
        (void)n;                                                                                   \
        return graph;                                                                              \
    }
#include "pg_ops.def"
#undef GRAPH_AS_ENTRIES
#undef GRAPH_OK
#undef GRAPH_REFUSE
#undef GRAPH_REFUSE_IF

static inline pg_graph_refusal_fn pg_graph_refusal_of_kind(int op)
{
    static const pg_graph_refusal_fn t[PG_NUM_OPS] = {
#define PG_NODE(ID, ...) [PG_OP_##ID] = pg_graph_refusal_##ID,
#include "pg_ops.def"
    };
    return op >= 0 && op < PG_NUM_OPS ? t[op] : NULL;
}

/* Why `n` may not be captured into a graph, or NULL when it may. */
static inline const char *pg_node_graph_refusal(const pg_node *n)
{
    pg_graph_refusal_fn f = pg_graph_refusal_of_kind(n->op);
    return f ? f(n) : NULL;
}

/* A list node (MULTI) is refused when one node of its entries' kind would be: its entries
 * share the node's scalars and flags (pygpu.optim buckets them so), so the first says it. */
static inline const char *pg_graph_refusal_of_entries(const pg_node *n)
{
    if (n->list == NULL || n->list->count == 0)
        return NULL;
    pg_graph_refusal_fn f = pg_graph_refusal_of_kind(n->subop);
    if (f == NULL)
        return NULL;
    pg_node first;
    pg_node_list_entry(n, 0, &first);
    return f(&first);
}

#endif
