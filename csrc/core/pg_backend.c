/* pg_backend.c - the backend registry: which backend serves each device type.
 *
 * cpu and sim are linked into the core and registered at module init; cuda is
 * a separate shared object registered by the plugin loader (pg_plugin.c). The
 * registry uses nothing above it, so storage and allocator code can ask it
 * for a backend without reaching back into the loader. */
#include "pg_backend.h"

#include <string.h>

#include <stdatomic.h>
#include <stdio.h>

static _Atomic(const pg_backend *) g_backends[PG_NUM_DEVICE_TYPES];

const char *pg_device_type_name(int type)
{
    static const char *names[PG_NUM_DEVICE_TYPES] = {"cpu", "sim", "cuda", "meta"};
    return type >= 0 && type < PG_NUM_DEVICE_TYPES ? names[type] : "?";
}

const char *pg_device_str(pg_device d, char *buf, int len)
{
    if (d.type == PG_DEV_CPU || d.type == PG_DEV_META)
        snprintf(buf, len, "%s", pg_device_type_name(d.type));
    else
        snprintf(buf, len, "%s:%d", pg_device_type_name(d.type), d.index);
    return buf;
}

/* Written once per type (cuda by the plugin loader, on any thread) and read on
 * every op: atomic, so a reader sees the table only once it is complete. */
void pg_backend_register(int type, const pg_backend *be)
{
    atomic_store_explicit(&g_backends[type], be, memory_order_release);
}

const pg_backend *pg_backend_get(int type)
{
    return type >= 0 && type < PG_NUM_DEVICE_TYPES
               ? atomic_load_explicit(&g_backends[type], memory_order_acquire)
               : NULL;
}

/* The node kinds that only store, move, pick or fill elements: all a float8 tensor reaches
 * itself, as in PyTorch, where its casts, copies, fills, indexing and where run; the
 * arithmetic PyTorch runs on it computes in float32 (pg_fp8_ops.h). */
static bool moves_only(int op)
{
    return op == PG_OP_COPY || op == PG_OP_FILL || op == PG_OP_INDEX || op == PG_OP_SELECT;
}

/* PyTorch's kernel names in its refusal of an op on a shell dtype (pg_dtype_is_shell), by
 * pygpu's op name; an op not listed is refused under its own name */
static const char *const shell_kernels[][2] = {
    {"add", "add_stub"}, {"subtract", "add_stub"}, {"multiply", "mul_cpu"},
    {"divide", "div_cpu"}, {"equal", "eq_cpu"}, {"not_equal", "ne_cpu"}, {"less", "lt_cpu"},
    {"less_equal", "le_cpu"}, {"greater", "gt_cpu"}, {"greater_equal", "ge_cpu"},
    {"negative", "neg_cpu"}, {"abs", "abs_cpu"}, {"sum", "sum_cpu"}, {"max", "max_all"},
    {"min", "min_all"}, {"gather", "scatter_gather_tensor_cpu"}, {"flip", "flip_cpu"},
};

static const char *shell_kernel(const char *what)
{
    for (size_t i = 0; i < sizeof shell_kernels / sizeof shell_kernels[0]; i++)
        if (strcmp(what, shell_kernels[i][0]) == 0)
            return shell_kernels[i][1];
    return what;
}

pg_status pg_backend_check_op(pg_device dev, int op, int dtype, const char *what)
{
    /* float8: moves only; a shell dtype (pg_dtype_is_shell): copies only, which pg_op_copy
     * narrows further, as PyTorch's, and zero fills, which pg_op_fill runs on the bytes */
    if (pg_dtype_is_shell((pg_dtype)dtype) && op != PG_OP_COPY)
        return pg_error_set(PG_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'",
                            shell_kernel(what), pg_dtype_legacy_name((pg_dtype)dtype));
    if (pg_dtype_is_fp8((pg_dtype)dtype) && !moves_only(op))
        return pg_error_set(PG_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", what,
                            pg_dtype_legacy_name((pg_dtype)dtype));
    const pg_backend *be = pg_backend_get(dev.type);
    if (!be || !be->supports_op || be->supports_op(be, op, dtype))
        return PG_OK;
    return pg_error_set(PG_ERR_DTYPE, "%s: %s tensors are not supported on %s yet; do it on the "
                                      "cpu (or sim) and move the result, or use float32",
                        what, pg_dtype_name((pg_dtype)dtype), be->name);
}

bool pg_backend_has_op(pg_device dev, int op, int dtype)
{
    const pg_backend *be = pg_backend_get(dev.type);
    return be && (!be->supports_op || be->supports_op(be, op, dtype));
}

/* the dtype a node's kind is asked about: its first operand's (a cast's source), else dst's */
static int node_dtype(const pg_node *n) { return n->nsrc > 0 ? n->src[0].dtype : n->dst.dtype; }

bool pg_backend_has_node(pg_device dev, const pg_node *node)
{
    const pg_backend *be = pg_backend_get(dev.type);
    return be && pg_backend_has_op(dev, node->op, node_dtype(node)) &&
           (!be->supports_node || be->supports_node(be, dev.index, node));
}

pg_status pg_backend_check_node(pg_device dev, const pg_node *node)
{
    const pg_backend *be = pg_backend_get(dev.type);
    if (!be || !be->supports_node || be->supports_node(be, dev.index, node))
        return PG_OK;
    return pg_error_set(PG_ERR_RUNTIME, "%s: the %s backend has no kernel for this node's "
                                        "parameters (its supports_node declines it); the "
                                        "public function composes it there (pygpu.nn.functional, "
                                        "pygpu.linalg, ...)",
                        node->name ? node->name : "op", be->name);
}

/* Set in a fork()ed child for a device type whose runtime was loaded before the fork
 * (pg_fork.h): a CUDA context does not survive fork. */
static _Atomic bool g_forked[PG_NUM_DEVICE_TYPES];

void pg_backend_mark_forked(int type)
{
    if (type >= 0 && type < PG_NUM_DEVICE_TYPES)
        atomic_store(&g_forked[type], true);
}

pg_status pg_fork_check(int type)
{
    if (type < 0 || type >= PG_NUM_DEVICE_TYPES ||
        !atomic_load_explicit(&g_forked[type], memory_order_relaxed))
        return PG_OK;
    const char *name = pg_device_type_name(type);
    return pg_error_set(PG_ERR_UNAVAILABLE,
                        "Cannot re-initialize %s in forked subprocess. To use %s with "
                        "multiprocessing, you must use the 'spawn' start method (its runtime "
                        "was loaded before this process was forked)", name, name);
}

pg_status pg_backend_for(pg_device dev, const pg_backend **out)
{
    PG_TRY(pg_fork_check(dev.type));
    const pg_backend *be = pg_backend_get(dev.type);
    if (!be)
        return pg_error_set(PG_ERR_UNAVAILABLE, "device type '%s' is not available",
                            pg_device_type_name(dev.type));
    int n = be->device_count(be);
    if (dev.index < 0 || dev.index >= n) {
        const char *why = n == 0 && be->unavailable_reason ? be->unavailable_reason(be) : NULL;
        if (why)
            return pg_error_set(PG_ERR_UNAVAILABLE, "%s:%d is not available: %s", be->name,
                                dev.index, why);
        return pg_error_set(PG_ERR_UNAVAILABLE,
                            "%s:%d does not exist: %d %s device(s) present (indices 0..%d)",
                            be->name, dev.index, n, be->name, n - 1);
    }
    *out = be;
    return PG_OK;
}
