/* pg_graph.h - a node graph for cpu and sim: capture a thread's nodes, replay them from C.
 *
 * The contract is pygpu.cuda.CUDAGraph's (csrc/backends/cuda/cuda_graph.c), in the core so
 * that one capture serves every backend that runs pg_nodes without a graph API of its own:
 * while a thread captures into a graph, pg_launch records each node it is given instead of
 * handing it to the backend (nothing runs), and the graph holds a reference to every
 * storage the node reads or writes (inputs, parameters, outputs and temporaries, which are
 * therefore not reused inside the capture). replay() hands the recorded nodes, in order,
 * to their backend again: cpu runs them at once, sim queues them to its worker; no Python
 * runs, and the bindings give up the GIL around it. A replay writes to the captured
 * storages, so the caller refills the captured inputs and reads the captured outputs.
 *
 * What may be captured is the PG_NODE rows' graph column (pg_graph_rules.h), as on cuda.
 * Inside a capture, a node of another device, a refused node, a host read (.item(),
 * .numpy(), print), a transfer and a device synchronize fail with PG_ERR_RUNTIME and
 * invalidate the capture: its end drops it (PyTorch's cudaErrorStreamCaptureInvalidated).
 * A capture belongs to the thread that began it; other threads' nodes run as usual. */
#ifndef PG_GRAPH_H
#define PG_GRAPH_H

#include <stdbool.h>

#include "pg_device.h"
#include "pg_node.h"
#include "pg_status.h"

typedef struct pg_graph pg_graph;

pg_status pg_graph_new(pg_graph **out);
/* Drops what the graph holds (its nodes and storages) and frees it; NULL is fine. */
void pg_graph_free(pg_graph *g);
/* Drops the capture: the graph may capture again. Refused during its own capture. */
pg_status pg_graph_reset(pg_graph *g);

/* This thread's nodes on `dev` (cpu or sim) go into g until capture_end. */
pg_status pg_graph_capture_begin(pg_graph *g, pg_device dev);
/* Ends this thread's capture into g. keep false (the block raised), or a capture that
 * was invalidated, drops what was recorded; the latter is reported with its reason. */
pg_status pg_graph_capture_end(pg_graph *g, bool keep);
/* Runs the recorded nodes again, in order, on their backend (pg_ops_elementwise.c, beside
 * pg_launch). */
pg_status pg_graph_replay(pg_graph *g);
/* The checks of a replay, then the nodes it runs. */
pg_status pg_graph_replay_begin(pg_graph *g, const pg_node **nodes, int *n);
/* How many nodes the graph holds, and its device. */
int pg_graph_node_count(const pg_graph *g);
pg_device pg_graph_device(const pg_graph *g);

/* A probe: this thread's nodes run as usual, and what a capture of the same calls would
 * refuse (the first reason) is noted instead of raised. pygpu.compile probes a call before
 * it captures one, so that a capture that would fail half-way, after the Python code had
 * already changed its own state (an optimizer's step count), is never attempted. probe_end
 * gives that reason, or NULL when the calls could be captured. */
pg_status pg_graph_probe_begin(pg_graph *g, pg_device dev);
const char *pg_graph_probe_end(pg_graph *g);

/* Called by pg_launch: whether this thread captures (or probes), and recording a node into
 * its capture (the node is checked against the graph column and the capture's device);
 * *run says whether pg_launch hands the node to its backend too (a probe). */
bool pg_graph_capturing(void);
pg_status pg_graph_record(const pg_node *node, bool *run);
/* PG_OK unless this thread captures; then `what` (a host read, a transfer, a
 * synchronize) invalidates the capture and is refused with PG_ERR_RUNTIME. */
pg_status pg_graph_refuse_host(const char *what);

#endif
