"""What a compiled call captures and replays on cpu and sim (mode="reduce-overhead"): the
node graph of pygpu.cpu.Graph / pygpu.sim.Graph (csrc/core/pg_graph.h) under torch's
cudagraph-trees discipline.

Per compiled callable and per guard key (below), the calls go:
1. warm-up: the first call runs eagerly (lazy state is made here: momentum buffers, .grad);
2. probe: the second runs eagerly too, under a node-graph probe, which notes what a capture
   would refuse (a random draw, Adam's step count, a host read such as .item(), a transfer,
   an op on another device: the node table's GRAPH column and pg_graph.h) without raising.
   A refusal sends this callable to eager for good, said under the debug flag. Probing
   first means a capture is only tried when it will succeed: a capture that failed half way
   would leave the Python side of the call (an optimizer's step count) one step ahead;
3. capture: the inputs are copied into static buffers, the call runs under the capture
   (nothing computes) and the graph is replayed once for this call's results;
4. replay: later calls with the same guard key copy their inputs into the static buffers,
   replay the graph from C (GIL released, no Python) and return clones of the static outputs
   (torch's cudagraph trees return the static outputs themselves and raise when an
   overwritten one is read; pygpu clones, so an output kept across calls is never changed).

The guard key: the non-tensor arguments (equal), each tensor argument's shape, dtype, device
and requires_grad, grad mode, autocast, and for every nn.Module and optimizer the call can
reach (the compiled module itself; modules and optimizers among the arguments, the
function's closure and the globals its code names, and a bound method's object's
attributes): each parameter's and buffer's identity and storage, each .grad's identity,
each module's training flag and each optimizer's hyperparameters (a learning-rate schedule
changes them: a replay would repeat the captured values). A key not seen captures again,
at most config.cache_size_limit times per callable; then eager.

What stays eager, and why (said under the debug flag): a device other than cpu or sim;
tensors on several devices; an argument that is not hashable or a container pygpu does not
flatten; a module's training forward with grad mode on (its backward would run eagerly over
the capture's autograd graph; compile the whole step instead); an output that still carries
an autograd graph; a call that writes into its own input tensors."""
from .. import _C
from .._C import Tensor
from ..autograd.grad_mode import is_grad_enabled

_CAPTURE_TYPES = ("cpu", "sim")


class NotCapturable(Exception):
    """Why a call cannot be captured: the callable runs eagerly (said under the debug flag)."""


# ---- flattening arguments and outputs --------------------------------------------------------

def _flatten(obj, leaves):
    """obj's structure with each tensor replaced by its index in `leaves`."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return ("T", len(leaves) - 1)
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__, tuple(_flatten(o, leaves) for o in obj))
    if isinstance(obj, dict):
        return ("dict", tuple((k, _flatten(v, leaves)) for k, v in obj.items()))
    try:
        hash(obj)
    except TypeError:
        raise NotCapturable(f"an argument of type {type(obj).__name__} is not hashable") from None
    return ("C", type(obj), obj)


def _unflatten(spec, leaves):
    kind = spec[0]
    if kind == "T":
        return leaves[spec[1]]
    if kind in ("tuple", "list"):
        items = [_unflatten(s, leaves) for s in spec[1]]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {k: _unflatten(s, leaves) for k, s in spec[1]}
    return spec[2]


def _out_spec(obj, leaves):
    """As _flatten, for a result: a non-tensor leaf is kept as the capture's constant."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return ("T", len(leaves) - 1)
    if isinstance(obj, (tuple, list)) and type(obj) in (tuple, list):
        return (type(obj).__name__, tuple(_out_spec(o, leaves) for o in obj))
    if isinstance(obj, dict) and type(obj) is dict:
        return ("dict", tuple((k, _out_spec(v, leaves)) for k, v in obj.items()))
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return ("C", type(obj), obj)
    raise NotCapturable(f"it returns a {type(obj).__name__}, which pygpu does not replay")


# ---- what a call can reach: modules and optimizers --------------------------------------------

def _is_module(o):
    return hasattr(o, "named_parameters") and hasattr(o, "named_buffers") and hasattr(o, "training")


def _is_optimizer(o):
    return hasattr(o, "param_groups") and hasattr(o, "state") and hasattr(o, "step")


_PLAIN = (int, float, bool, str, bytes, type(None), complex)


def _plain_value(v, budget=64):
    """v's value as a guard when it is plain data (numbers, strings, and tuples, lists and
    dicts of them, up to `budget` items), else None."""
    if isinstance(v, _PLAIN):
        return (type(v), v)
    if isinstance(v, (tuple, list)) and len(v) <= budget:
        items = [_plain_value(x, budget // 4) for x in v]
        return None if any(i is None for i in items) else (type(v), tuple(items))
    if isinstance(v, dict) and len(v) <= budget:
        items = [(k, _plain_value(x, budget // 4)) for k, x in v.items() if isinstance(k, _PLAIN)]
        if len(items) != len(v) or any(i is None for _, i in items):
            return None
        return (dict, tuple(items))
    return None


def reachable(fn, args, kwargs, owner=None):
    """What a call of fn(*args, **kwargs) can read that its arguments do not show, as dynamo
    guards on it: the modules and optimizers (the owner module, arguments, closure cells,
    globals the code names, a bound method's object's attributes), and the plain Python
    values (numbers, strings, small containers of them) among the closure cells and globals
    of fn and of the functions those name, two levels deep. Returns (objects, values)."""
    found, seen, values = [], set(), []

    def add(o):
        if id(o) not in seen and (_is_module(o) or _is_optimizer(o)):
            seen.add(id(o))
            found.append(o)
            return True
        return False

    def scan(f, depth):
        target = getattr(f, "__func__", f)
        code = getattr(target, "__code__", None)
        if code is None or id(target) in seen:
            return
        seen.add(id(target))
        named = []
        for name, cell in zip(code.co_freevars, getattr(target, "__closure__", None) or ()):
            try:
                named.append((name, cell.cell_contents))
            except ValueError:  # an empty cell
                pass
        g = getattr(target, "__globals__", {})
        named += [(name, g[name]) for name in code.co_names if name in g]
        for name, v in named:
            if add(v):
                continue
            plain = _plain_value(v)
            if plain is not None:
                values.append((id(target), name, plain))
            elif depth > 0 and callable(v) and hasattr(getattr(v, "__func__", v), "__code__"):
                scan(v, depth - 1)

    if owner is not None:
        add(owner)
    for a in list(args) + list(kwargs.values()):
        add(a)
    self_obj = getattr(fn, "__self__", None)
    if self_obj is not None:
        add(self_obj)
        for v in list(getattr(self_obj, "__dict__", {}).values()):
            add(v)
    scan(fn, 2)
    return found, tuple(values)


def _tensor_state(t):
    return (id(t), _C._storage_info(t)[0]) if t is not None else None


def _module_values(m):
    """A module's plain attributes (a scale, a flag, dropout's p), as guards."""
    return tuple((k, v) for k, v in m.__dict__.items()
                 if not k.startswith("_") and isinstance(v, _PLAIN))


def reach_key(reach):
    """The part of the guard key that what a call reaches gives (reachable's result): the
    Python values (plain values, modules' plain attributes and training flags, optimizers'
    hyperparameters), then the tensors' identities (parameters, buffers, .grad)."""
    objs, values = reach
    py, tensors = [values], []
    for o in objs:
        if _is_module(o):
            tensors.append(tuple((n, _tensor_state(p), p.requires_grad, id(p.grad))
                                 for n, p in o.named_parameters()))
            tensors.append(tuple((n, _tensor_state(b)) for n, b in o.named_buffers()))
            py.append(tuple((m.training, _module_values(m)) for m in o.modules()))
        else:
            py.append(tuple(tuple(sorted((k, repr(v)) for k, v in g.items() if k != "params"))
                            + tuple(id(p) for p in g["params"]) for g in o.param_groups))
    return tuple(py), tuple(tensors)


def _autocast_key():
    try:
        from ..amp import _switches
        return tuple(_switches.is_autocast_enabled(d) for d in _CAPTURE_TYPES)
    except Exception:  # no autocast state to read: nothing to guard
        return ()


# ---- one capture --------------------------------------------------------------------------------

def output_problem(result):
    """Why `result` cannot be returned from a replay, or None."""
    leaves = []
    _out_spec(result, leaves)
    for t in leaves:
        node = t.grad_fn
        if t.requires_grad and (node is None or getattr(node, "inputs", None) is not None):
            return ("an output still carries an autograd graph (run backward inside the "
                    "compiled step, or compile under no_grad)")
    return None


class Captured:
    """One capture: the graph, the static inputs it reads and the static outputs it writes.
    Made after a probe saw the call capturable; `problem` is set if the capture's call did
    not behave as the probe's (its control flow read something else): the graph is still
    replayed once for this call, and the callable goes eager."""

    def __init__(self, graph_type, device, fn, args_spec, inputs):
        self.static_in = [t.detach().clone() for t in inputs]
        for s, t in zip(self.static_in, inputs):
            if t.requires_grad:
                s.requires_grad_(True)
        versions = [s._version for s in self.static_in]
        args, kwargs = _unflatten(args_spec, self.static_in)
        self.graph = graph_type()
        with _capture(self.graph, device):
            result = fn(*args, **kwargs)
        self.problem = None
        if [s._version for s in self.static_in] != versions:
            self.problem = "it writes into its input tensors"
        leaves = []
        self.out_spec = _out_spec(result, leaves)
        self.problem = self.problem or output_problem(result)
        self.static_out = leaves

    def run(self, inputs):
        for s, t in zip(self.static_in, inputs):
            s.detach().copy_(t)
        self.graph.replay()
        from ..autograd.grad_mode import no_grad
        with no_grad():
            if self.problem is not None:  # the capture's own call: give back its writes
                for s, t in zip(self.static_in, inputs):
                    t.detach().copy_(s)
            outs = [t.detach().clone() for t in self.static_out]
        return _unflatten(self.out_spec, outs)


class _capture:
    def __init__(self, g, device):
        self.g, self.device = g, device

    def __enter__(self):
        self.g.capture_begin(device=self.device)

    def __exit__(self, exc_type, exc, tb):
        self.g.capture_end(keep=exc_type is None)
        return False


# ---- the per-callable state machine ----------------------------------------------------------------

class Replayer:
    """The calls of one compiled callable: warm-up, probe, capture, replay (module docstring)."""

    def __init__(self, fn, owner=None, report=None, limit=8):
        self.fn, self.owner, self.report = fn, owner, report
        self.limit = limit
        self.eager_reason = None  # set: this callable runs eagerly for good
        self.seen = {}            # key less .grad ids -> calls run eagerly (warm-up, probe)
        self.entries = {}         # guard key -> Captured
        self.captures = 0
        self.replays = 0
        self.said = set()                # the per-call reasons already reported
        self.eager_calls_reason = None   # the last call that ran eagerly for a per-call reason

    def _say_once(self, why):
        self.eager_calls_reason = why
        if why not in self.said and self.report is not None:
            self.said.add(why)
            self.report(why)

    def _go_eager(self, why):
        self.eager_reason = why
        self.entries.clear()
        if self.report is not None:
            self.report("runs eagerly from now on: " + why)

    def __call__(self, args, kwargs):
        fn = self.fn
        if self.eager_reason is not None:
            return fn(*args, **kwargs)
        try:
            leaves = []
            spec = _flatten((tuple(args), dict(kwargs)), leaves)
            reach = reachable(fn, args, kwargs, self.owner)
            device = self._device(leaves, reach[0])
            grad = is_grad_enabled()
        except NotCapturable as e:
            self._go_eager(str(e))
            return fn(*args, **kwargs)
        if self.owner is not None and grad and (
                any(t.requires_grad for t in leaves)
                or any(p.requires_grad for p in self.owner.parameters())):
            # this call only: the same module under no_grad (evaluation) still replays
            self._say_once("a module's forward with grad mode on runs eagerly: its backward "
                           "would run over the capture's autograd graph; compile the whole "
                           "step (forward, backward, optimizer step) as a function, or call "
                           "under no_grad")
            return fn(*args, **kwargs)
        sig = (spec, tuple((tuple(t.shape), t.dtype, str(t.device), t.requires_grad)
                           for t in leaves), grad, _autocast_key())
        key = (sig, reach_key(reach))
        entry = self.entries.get(key)
        if entry is not None:
            self.replays += 1
            return entry.run(leaves)
        # warm-up and probe again for every new guard key but the .grad identities, which
        # each eager call with zero_grad(set_to_none=True) changes
        shape = (sig, key[1][0], tuple(tuple(e[:3] if len(e) == 4 else e for e in part)
                                       for part in key[1][1]))
        n = self.seen.get(shape, 0)
        self.seen[shape] = n + 1
        if len(self.seen) > 4 * self.limit:
            self._go_eager(f"its guards changed at {len(self.seen)} calls out of few: a Python "
                           "value it reads changes at every call (a counter it bumps?)")
            return fn(*args, **kwargs)
        if n == 0:  # warm-up
            return fn(*args, **kwargs)
        if n == 1:  # probe
            return self._probe(device, args, kwargs, leaves, key)
        if self.captures >= self.limit:
            self._go_eager(f"{self.captures} captures (config.cache_size_limit): its guards "
                           "keep changing")
            return fn(*args, **kwargs)
        return self._capture(device, spec, leaves, sig, args, kwargs, key)

    def _device(self, leaves, objs):
        devs = {str(t.device) for t in leaves}
        if not devs:
            for o in objs:
                if _is_module(o):
                    devs |= {str(p.device) for p in o.parameters()}
        if len(devs) != 1:
            raise NotCapturable("its tensors are on several devices" if devs else
                                "it takes no tensors and reaches no module")
        dev = devs.pop()
        if dev.split(":")[0] not in _CAPTURE_TYPES:
            raise NotCapturable(f"its tensors are on {dev}: pygpu.compile replays node graphs "
                                "on cpu and sim only (cuda runs eagerly; use "
                                "pygpu.cuda.CUDAGraph directly)")
        return dev

    def _graph_type(self, device):
        from .. import cpu, sim
        return cpu.Graph if device.startswith("cpu") else sim.Graph

    def _python_changed(self, key, args, kwargs):
        """Why the call cannot be replayed when it changed the Python values its guards read
        (a counter it bumps: a replay would not), else None."""
        after = reach_key(reachable(self.fn, args, kwargs, self.owner))
        if after[0] != key[1][0]:
            return ("it changes Python values it reads (a counter, a module attribute, a "
                    "hyperparameter): a replay would not")
        return None

    def _probe(self, device, args, kwargs, leaves, key):
        from .. import _device as _dev
        h = _C._graph_create()
        versions = [t._version for t in leaves]
        _C._graph_probe_begin(h, *_dev.device(device)._code)
        try:
            result = self.fn(*args, **kwargs)
        finally:
            why = _C._graph_probe_end(h)
        if why is None and [t._version for t in leaves] != versions:
            why = ("it writes into its input tensors (a replay would write static copies of "
                   "them)")
        if why is None:
            try:
                why = output_problem(result) or self._python_changed(key, args, kwargs)
            except NotCapturable as e:
                why = str(e)
        if why is not None:
            self._go_eager(why)
        return result

    def _capture(self, device, spec, leaves, sig, args, kwargs, key):
        try:
            entry = Captured(self._graph_type(device), device, self.fn, spec, leaves)
        except RuntimeError as e:  # refused although the probe was not: control flow differs
            self._go_eager(f"the capture failed ({e}); the call's Python ran, its ops did not")
            raise
        self.captures += 1
        self.replays += 1
        result = entry.run(leaves)
        problem = entry.problem or self._python_changed(key, args, kwargs)
        if problem is not None:
            self._go_eager(problem + " (seen at the capture, not at the probe)")
        else:
            # under the state a replay leaves behind: the .grad tensors the capture made
            after = reach_key(reachable(self.fn, args, kwargs, self.owner))
            self.entries[(sig, after)] = entry
        return result


