/* cuda_graph.c - CUDA graph capture and replay (pygpu.cuda.CUDAGraph).
 *
 * Capture runs on a user stream (cuda_stream.c) put into capture mode with
 * cudaStreamCaptureModeRelaxed, made current for the capturing thread: every
 * op that thread queues on the device becomes a node of the graph instead of
 * running. Relaxed mode lets the caching allocator call cudaMalloc meanwhile
 * (the allocation happens now, outside the graph); pygpu refuses itself what
 * would break a capture or read results that do not exist yet: host waits,
 * copies and stream switches (cuda_stream.c says why, in the error).
 *
 * Memory: a replay writes to the addresses captured. So that none of them is
 * freed and handed to another tensor while the graph lives, the graph holds a
 * reference to every storage a captured op touched (inputs, parameters,
 * outputs, and the temporaries, which are therefore not reused inside the
 * capture either) until reset() or destruction. Replay queues the one
 * cudaGraphLaunch on the current stream and marks every held storage as
 * written by it, so reading a result waits for the replay. */
#include <stdlib.h>

#include "cuda_internal.h"
#include "pg_graph_rules.h"

struct pg_cuda_graph {
    int device;
    pg_cuda_ustream *stream; /* capturing stream (owned by the caller) */
    bool capturing;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    pg_storage **held;
    int nheld, capheld;
    int nodes; /* ops captured, for messages and tests */
};


pg_status pg_plugin_graph_create(void **out)
{
    struct pg_cuda_graph *g = calloc(1, sizeof *g);
    if (g == NULL)
        return pg_cuda_error(PG_ERR_NOMEM, "cuda: CUDAGraph(): out of host memory");
    g->device = -1;
    *out = g;
    return PG_OK;
}

static void pg_cuda_graph_release(struct pg_cuda_graph *g)
{
    if (g->exec != NULL && cudaGraphExecDestroy(g->exec) != cudaSuccess)
        (void)cudaGetLastError();
    if (g->graph != NULL && cudaGraphDestroy(g->graph) != cudaSuccess)
        (void)cudaGetLastError();
    g->exec = NULL;
    g->graph = NULL;
    for (int i = 0; i < g->nheld; i++)
        pg_cuda.core->storage_release(g->held[i]);
    free(g->held);
    g->held = NULL;
    g->nheld = g->capheld = 0;
    g->nodes = 0;
}

pg_status pg_plugin_graph_reset(void *gp)
{
    struct pg_cuda_graph *g = gp;
    if (g->capturing)
        return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: CUDAGraph.reset() during its own capture",
                             g->device);
    if (g->device >= 0) {
        /* a replay may still be running: let it finish before its memory goes */
        pg_cuda_device *d;
        if (pg_cuda_device_get(g->device, "CUDAGraph.reset()", &d) == PG_OK)
            (void)pg_cuda_queue_sync(&d->compute, "CUDAGraph.reset");
    }
    pg_cuda_graph_release(g);
    return PG_OK;
}

pg_status pg_plugin_graph_destroy(void *gp)
{
    struct pg_cuda_graph *g = gp;
    if (g == NULL)
        return PG_OK;
    PG_TRY(pg_plugin_graph_reset(g));
    free(g);
    return PG_OK;
}

int pg_plugin_graph_ops(void *gp) { return ((struct pg_cuda_graph *)gp)->nodes; }

pg_status pg_plugin_graph_capture_begin(void *gp, int device, void *stream)
{
    struct pg_cuda_graph *g = gp;
    pg_cuda_ustream *u = stream;
    if (g->capturing || g->exec != NULL)
        return pg_cuda_error(PG_ERR_RUNTIME,
                             "cuda: this CUDAGraph already holds a capture; call g.reset() "
                             "before capturing again");
    if (u == NULL || u->device != device)
        return pg_cuda_error(PG_ERR_VALUE, "cuda:%d: capture needs a user stream of that device",
                             device);
    if (pg_cuda_current_ustream(device) != u)
        return pg_cuda_error(PG_ERR_RUNTIME,
                             "cuda:%d: the capture stream must be current (enter it first)",
                             device);
    PG_TRY(PG_CUDA_RT(cudaStreamBeginCapture(u->stream, cudaStreamCaptureModeRelaxed), device,
                      "CUDAGraph capture"));
    g->device = device;
    g->stream = u;
    g->capturing = true;
    u->capture = g;
    return PG_OK;
}

/* Which nodes a graph may hold is the PG_NODE rows' graph column, read through
 * pg_graph_rules.h, the one rule the core's node graph for cpu and sim (pg_graph.c) reads
 * too: ops whose scalars change from one step to the next are refused, with the row's
 * reason, so a replay is never silently wrong. */
pg_status pg_cuda_graph_refuse_frozen(int device, const pg_node *node)
{
    const char *what = pg_node_graph_refusal(node);
    if (what == NULL)
        return PG_OK;
    return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: %s cannot be captured in a CUDA graph: %s",
                         device, node->name, what);
}

/* The graph holds `st` (once) until it is reset or destroyed. */
static pg_status graph_hold(struct pg_cuda_graph *g, pg_storage *st)
{
    for (int j = g->nheld - 1; j >= 0; j--) /* a few hundred at most */
        if (g->held[j] == st)
            return PG_OK;
    if (g->nheld == g->capheld) {
        int cap = g->capheld ? 2 * g->capheld : 64;
        pg_storage **p = realloc(g->held, (size_t)cap * sizeof *p);
        if (p == NULL)
            return pg_cuda_error(PG_ERR_NOMEM, "cuda: CUDAGraph capture: out of host memory");
        g->held = p;
        g->capheld = cap;
    }
    pg_cuda.core->storage_retain(st);
    g->held[g->nheld++] = st;
    return PG_OK;
}

/* Called by the launch path for each op queued while `u` captures into its graph: every
 * storage it reads or writes, a list node's entries included, is held. */
pg_status pg_cuda_graph_note_op(pg_cuda_ustream *u, const pg_node *node)
{
    struct pg_cuda_graph *g = u->capture;
    const pg_tensor *outs[1 + PG_NODE_MAX_EXTRA];
    int nout = pg_node_outputs(node, outs);
    for (int i = 0; i < node->nsrc; i++)
        if (node->src[i].storage)
            PG_TRY(graph_hold(g, node->src[i].storage));
    for (int i = 0; i < nout; i++)
        PG_TRY(graph_hold(g, outs[i]->storage));
    for (int i = 0, len = pg_node_list_len(node); i < len; i++)
        if (pg_node_list_at(node, i)->storage)
            PG_TRY(graph_hold(g, pg_node_list_at(node, i)->storage));
    g->nodes++;
    return PG_OK;
}

pg_status pg_plugin_graph_capture_end(void *gp, int keep)
{
    struct pg_cuda_graph *g = gp;
    if (!g->capturing)
        return pg_cuda_error(PG_ERR_RUNTIME, "cuda: CUDAGraph: no capture in progress");
    pg_cuda_ustream *u = g->stream;
    cudaGraph_t graph = NULL;
    cudaError_t err = cudaStreamEndCapture(u->stream, &graph);
    u->capture = NULL;
    g->capturing = false;
    g->stream = NULL;
    if (err != cudaSuccess || !keep) {
        if (graph != NULL && cudaGraphDestroy(graph) != cudaSuccess)
            (void)cudaGetLastError();
        pg_cuda_graph_release(g);
        if (err == cudaSuccess)
            return PG_OK; /* the block raised: its error is the one to report */
        return pg_cuda_check(PG_CUDA_LIB_RUNTIME, err, g->device,
                             "CUDAGraph capture (an operation not allowed during capture ran "
                             "inside the block, e.g. on another stream or a legacy-stream call)",
                             "cudaStreamEndCapture", false);
    }
    g->graph = graph;
    pg_status st = PG_CUDA_RT(cudaGraphInstantiate(&g->exec, graph, 0), g->device,
                              "CUDAGraph instantiate");
    if (st != PG_OK)
        pg_cuda_graph_release(g);
    return st;
}

pg_status pg_plugin_graph_replay(void *gp)
{
    struct pg_cuda_graph *g = gp;
    if (g->capturing)
        return pg_cuda_error(PG_ERR_RUNTIME, "cuda:%d: CUDAGraph.replay() inside its own capture",
                             g->device);
    if (g->exec == NULL)
        return pg_cuda_error(PG_ERR_RUNTIME,
                             "cuda: CUDAGraph.replay(): nothing captured; capture with `with "
                             "pygpu.cuda.graph(g):` first");
    pg_cuda_device *d;
    PG_TRY(pg_cuda_device_get(g->device, "CUDAGraph.replay()", &d));
    pg_cuda_ustream *cur = pg_cuda_current_ustream(g->device);
    if (cur != NULL && cur->capture != NULL)
        return pg_cuda_error(PG_ERR_RUNTIME,
                             "cuda:%d: replaying a graph inside another capture is not supported",
                             g->device);
    /* the graph's storages may have pending work from other queues (a host
     * buffer some copy fills): order after it as a kernel launch would */
    for (int i = 0; i < g->nheld; i++)
        PG_TRY(pg_cuda_order_after_on(g->held[i], &d->compute, cur));
    PG_TRY(pg_cuda_stream_before_op(d, "CUDAGraph.replay()"));
    PG_TRY(PG_CUDA_RT(cudaGraphLaunch(g->exec, pg_cuda_work_stream(d)), g->device,
                      "CUDAGraph.replay()"));
    uint64_t seq = pg_cuda_note_queued_on(&d->compute, "CUDAGraph.replay", cur);
    for (int i = 0; i < g->nheld; i++)
        pg_cuda_mark(g->held[i], &d->compute, seq, true);
    pg_cuda_stream_after_op(d, seq);
    if (atomic_load(&pg_cuda.sync_each_op))
        return pg_cuda_queue_sync(&d->compute, "cudaStreamSynchronize");
    return PG_OK;
}
