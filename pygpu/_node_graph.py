"""pygpu.cpu.Graph / pygpu.sim.Graph and graph(g): torch.cuda.CUDAGraph's contract on the
devices that have no CUDA graph, over the core's node graph (csrc/core/pg_graph.h).

    g = pygpu.sim.Graph()
    with pygpu.sim.graph(g):        # this thread's sim ops are recorded, not run
        static_y = model(static_x)
    static_x.copy_(x); g.replay()   # the recorded nodes run again, from C, GIL released

PyTorch has torch.cuda.CUDAGraph and torch.cuda.graph only; pygpu spells the same API on
each device module, so code written for cuda runs on sim (and cpu) by changing the module.
Inside a capture nothing runs: a host read (.item(), .numpy(), print), a transfer, a
synchronize, an op on another device or a node that a replay would repeat with frozen
scalars (random draws, Adam's step, GradScaler's unscale: the node table's GRAPH column)
raises RuntimeError and the capture is dropped. The graph keeps the memory of every tensor a
captured op touched until reset(), so a replay rewrites the captured outputs in place."""
from . import _C
from . import _device


class Graph:
    """A captured sequence of pygpu ops on one cpu or sim device, replayed from C
    (torch.cuda.CUDAGraph's methods)."""

    _type = None  # "cpu" or "sim": set by the device module's subclass

    def __init__(self):
        self._h = _C._graph_create()
        self.device = None

    def capture_begin(self, pool=None, capture_error_mode="global", *, device=None):
        d = _device.device(device if device is not None else f"{self._type}:0"
                           if self._type == "sim" else "cpu")
        if self._type is not None and d.type != self._type:
            raise ValueError(f"pygpu.{self._type}.Graph captures {self._type} ops, got "
                             f"device {d}")
        _C._graph_capture_begin(self._h, *d._code)
        self.device = d

    def capture_end(self, keep=True):
        _C._graph_capture_end(self._h, bool(keep))

    def replay(self):
        """Run the captured ops again, in order (cpu: now; sim: queued on the device)."""
        _C._graph_replay(self._h)

    def reset(self):
        """Drop the capture and the memory it held; the graph may capture again."""
        _C._graph_reset(self._h)

    @property
    def num_ops(self):
        """How many pygpu nodes the capture holds."""
        return _C._graph_ops(self._h)

    def pool(self):
        """torch's memory-pool handle: pygpu's graphs share the caching allocator."""
        return None


class graph:
    """`with pygpu.sim.graph(g):` records this thread's ops on the device into g instead
    of running them (torch.cuda.graph). Run the step once before capturing (warm-up), as
    with PyTorch: what only the first call does (a momentum buffer's creation) must not be
    captured."""

    _graph_type = Graph

    def __init__(self, node_graph, pool=None, stream=None, capture_error_mode="global",
                 device=None):
        if not isinstance(node_graph, self._graph_type):
            raise TypeError(f"{type(self).__module__}.graph expects a "
                            f"{self._graph_type.__module__}.Graph, got "
                            f"{type(node_graph).__name__}")
        self.g, self.device = node_graph, device

    def __enter__(self):
        self.g.capture_begin(device=self.device)
        return self.g

    def __exit__(self, exc_type, exc, tb):
        self.g.capture_end(keep=exc_type is None)
        return False


def for_device(type_name, module_name):
    """The Graph class and graph context manager of device type `type_name`."""
    g = type(Graph)("Graph", (Graph,), {"_type": type_name, "__module__": module_name,
                                        "__doc__": Graph.__doc__})
    ctx = type(graph)("graph", (graph,), {"_graph_type": g, "__module__": module_name,
                                          "__doc__": graph.__doc__})
    return g, ctx


def is_capturing():
    """Whether this thread is capturing into a cpu or sim graph."""
    return _C._graph_capturing()
