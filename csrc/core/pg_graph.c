/* pg_graph.c - the node graph for cpu and sim (pg_graph.h): capture, hold, replay.
 *
 * A recorded node is a copy of the pg_node pg_launch was given, holding its own reference
 * to each storage it names (a MULTI node's list too, and the list's tensors' storages):
 * so no memory a captured node touched is freed or handed to another tensor while the
 * graph lives, and a replay writes where the capture's outputs live. The replay loop is
 * pg_ops_elementwise.c's, beside pg_launch (this file stays below the op layer). */
#include "pg_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_graph_rules.h"

struct pg_graph {
    pg_device device;
    bool capturing;
    bool probing;        /* a probe: nodes run as usual, what a capture would refuse is noted */
    bool invalid;        /* something inside the capture was refused: its end drops it */
    char why[320];       /* what, for capture_end's error */
    bool has_capture;    /* a kept capture (replay may run) */
    pg_node *nodes;      /* recorded, each holding its storages */
    int n, cap;
};

static _Thread_local pg_graph *t_capture; /* this thread's capture, or NULL */

pg_status pg_graph_new(pg_graph **out)
{
    pg_graph *g = calloc(1, sizeof *g);
    if (g == NULL)
        return pg_error_set(PG_ERR_NOMEM, "graph: out of host memory");
    *out = g;
    return PG_OK;
}

static void hold(pg_storage *s)
{
    if (s)
        pg_storage_retain(s);
}
static void drop(pg_storage *s)
{
    if (s)
        pg_storage_release(s);
}

/* `f` on every storage a recorded node names */
static void each_storage(pg_node *n, void (*f)(pg_storage *))
{
    for (int i = 0; i < n->nsrc; i++)
        f(n->src[i].storage);
    f(n->dst.storage);
    for (int i = 0; i < n->nextra; i++)
        f(n->extra[i].storage);
    for (int i = 0, len = pg_node_list_len(n); i < len; i++)
        f(n->list->t[i].storage);
}

static void release_nodes(pg_graph *g)
{
    for (int i = 0; i < g->n; i++) {
        each_storage(&g->nodes[i], drop);
        if (g->nodes[i].list)
            pg_node_list_release(g->nodes[i].list);
    }
    free(g->nodes);
    g->nodes = NULL;
    g->n = g->cap = 0;
    g->has_capture = false;
}

pg_status pg_graph_reset(pg_graph *g)
{
    if (g->capturing)
        return pg_error_set(PG_ERR_RUNTIME, "Graph.reset() during its own capture");
    release_nodes(g);
    return PG_OK;
}

void pg_graph_free(pg_graph *g)
{
    if (g == NULL)
        return;
    if (g->capturing && t_capture == g)
        t_capture = NULL;
    release_nodes(g);
    free(g);
}

pg_status pg_graph_capture_begin(pg_graph *g, pg_device dev)
{
    if (dev.type != PG_DEV_CPU && dev.type != PG_DEV_SIM)
        return pg_error_set(PG_ERR_VALUE, "a node graph captures cpu or sim nodes; on cuda use "
                                          "pygpu.cuda.CUDAGraph");
    if (g->capturing || g->has_capture)
        return pg_error_set(PG_ERR_RUNTIME, "this graph already holds a capture; call g.reset() "
                                            "before capturing again");
    if (t_capture != NULL)
        return pg_error_set(PG_ERR_RUNTIME, "this thread is already capturing into another "
                                            "graph; captures do not nest");
    g->device = dev;
    g->capturing = true;
    g->probing = false;
    g->invalid = false;
    g->why[0] = '\0';
    t_capture = g;
    return PG_OK;
}

pg_status pg_graph_capture_end(pg_graph *g, bool keep)
{
    if (!g->capturing || g->probing || t_capture != g)
        return pg_error_set(PG_ERR_RUNTIME, "graph: no capture in progress on this thread");
    t_capture = NULL;
    g->capturing = false;
    if (g->invalid || !keep) {
        release_nodes(g);
        if (!keep)
            return PG_OK; /* the block raised: its error is the one to report */
        return pg_error_set(PG_ERR_RUNTIME, "graph capture invalidated: %s", g->why);
    }
    g->has_capture = true;
    return PG_OK;
}

pg_status pg_graph_probe_begin(pg_graph *g, pg_device dev)
{
    PG_TRY(pg_graph_capture_begin(g, dev));
    g->probing = true;
    return PG_OK;
}

const char *pg_graph_probe_end(pg_graph *g)
{
    if (!g->probing || t_capture != g)
        return NULL;
    t_capture = NULL;
    g->capturing = g->probing = false;
    return g->invalid ? g->why : NULL;
}

/* The capture fails from here on: `msg` is the error now and at capture_end. */
static pg_status invalidate(pg_graph *g, const char *msg)
{
    if (!g->invalid) {
        g->invalid = true;
        snprintf(g->why, sizeof g->why, "%s", msg);
    }
    if (g->probing) /* noted; the op goes on as without a probe */
        return PG_OK;
    return pg_error_set(PG_ERR_RUNTIME, "%s", msg);
}

bool pg_graph_capturing(void) { return t_capture != NULL; }

pg_status pg_graph_record(const pg_node *node, bool *run)
{
    pg_graph *g = t_capture;
    *run = g->probing;
    char msg[320], a[24], b[24];
    pg_device dev = pg_tensor_device(&node->dst);
    if (!pg_device_eq(dev, g->device)) {
        snprintf(msg, sizeof msg, "%s on %s inside a graph capturing %s: a graph captures one "
                 "device's nodes", node->name ? node->name : "an op",
                 pg_device_str(dev, a, sizeof a), pg_device_str(g->device, b, sizeof b));
        return invalidate(g, msg);
    }
    const char *refusal = pg_node_graph_refusal(node);
    if (refusal != NULL) {
        snprintf(msg, sizeof msg, "%s: %s cannot be captured in a graph: %s",
                 pg_device_str(dev, a, sizeof a), node->name ? node->name : "an op", refusal);
        return invalidate(g, msg);
    }
    if (g->probing)
        return PG_OK;
    if (g->invalid) /* an op after a refused one (its error was caught) */
        return pg_error_set(PG_ERR_RUNTIME, "graph capture invalidated: %s", g->why);
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        pg_node *p = realloc(g->nodes, (size_t)cap * sizeof *p);
        if (p == NULL)
            return invalidate(g, "graph capture: out of host memory");
        g->nodes = p;
        g->cap = cap;
    }
    pg_node *r = &g->nodes[g->n++];
    *r = *node;
    if ((r->op == PG_OP_MULTI || r->op == PG_OP_MULTI_NORM) && r->list)
        pg_node_list_retain(r->list); /* shared with the op that built it */
    else
        r->list = NULL; /* unset for the other kinds */
    each_storage(r, hold);
    return PG_OK;
}

pg_status pg_graph_refuse_host(const char *what)
{
    pg_graph *g = t_capture;
    if (g == NULL)
        return PG_OK;
    char msg[320], a[24];
    snprintf(msg, sizeof msg, "%s inside a graph capture on %s: the captured ops have not run "
             "(they run at replay); read results after the capture", what,
             pg_device_str(g->device, a, sizeof a));
    return invalidate(g, msg);
}

pg_status pg_graph_replay_begin(pg_graph *g, const pg_node **nodes, int *n)
{
    if (g->capturing)
        return pg_error_set(PG_ERR_RUNTIME, "Graph.replay() inside its own capture");
    if (!g->has_capture)
        return pg_error_set(PG_ERR_RUNTIME, "Graph.replay(): nothing captured; capture with "
                                            "`with pygpu.cpu.graph(g):` (or pygpu.sim.graph) first");
    if (t_capture != NULL)
        return pg_error_set(PG_ERR_RUNTIME, "replaying a graph inside another capture is not "
                                            "supported");
    *nodes = g->nodes;
    *n = g->n;
    return PG_OK;
}

int pg_graph_node_count(const pg_graph *g) { return g->n; }
pg_device pg_graph_device(const pg_graph *g) { return g->device; }
