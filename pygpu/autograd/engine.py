"""The autograd graph and its engine: nodes, the recording hook, backward() and the walk
that autograd.grad shares.

A Node is what `t.grad_fn` holds: the op's name, its operands (`inputs`, None where an
operand was a Python scalar), the grad_fn each operand had when the op ran (`fns`, the
graph's edges) and a backward function mapping the gradient of the output to one gradient
per operand. The C bindings call `record()` after an op whenever grad mode is on and an
operand requires grad (csrc/bindings/autograd.c); Python-level ops build nodes through
Function.apply (function.py). `execute()` sorts the nodes reachable from the outputs
topologically and walks them once in reverse, summing gradients that meet, and either
accumulates into leaves' `.grad` (backward) or hands back the gradients reaching chosen
inputs (autograd.grad). Every gradient op runs on the device of the data.

What a node holds (hold()): a leaf that requires grad itself (gradients accumulate into
it); any other tensor as a detached alias (the same memory, no history, no _base), with
the operand's grad_fn kept in `fns`. So no tensor a node holds can gain a history later
and point back into the graph: an in-place write, which gives a tensor a new grad_fn,
never closes a cycle through a node (the Tensor type is not tracked by the garbage
collector). Under create_graph=True the aliases are given their grad_fn back for the
backward that records its own graph (higher_order.py), as PyTorch unpacks its
SavedVariables.

Memory, as PyTorch keeps it: each node's saved tensors are dropped as soon as its backward
has run (unless retain_graph), and a gradient is added into an existing `.grad` in place
when nothing else can see that memory (_grad_exclusive), so a training step holds one set
of gradients, not two. A node's `keep` holds objects that must outlive its own backward
until the whole backward() returns (DataParallel's replicas, DistributedDataParallel's
wrapper: keep_alive)."""
import sys
import warnings

from .. import _C
from .._tensor import create as _tensor_create
from .grad_mode import set_grad_enabled
from . import _multi_output, _pieces, anomaly_mode, grad_layout, rules, versions

Tensor = _C.Tensor

# What the modules above the engine plug in when the package is imported (one-way layers:
# the engine imports neither): views.refresh, which regenerates a stale view's history
# before an op holds it, and higher_order.backward, a node's backward under create_graph.
_plugged = {"refresh_view": None, "recorded_backward": None}


def plug(**fns):
    """Called by views.py and higher_order.py at import."""
    for k, fn in fns.items():
        if k not in _plugged:
            raise KeyError(k)
        _plugged[k] = fn

class Node:
    """One recorded op: backward(g) -> tuple of gradients, one per input.

    `fns` holds each input's grad_fn as it was when the op ran: an in-place op that later
    gives an input a new grad_fn does not change what this node backpropagates into.
    `saved` holds (tensor, write stamp, version, ...) for each tensor whose values the
    backward reads, taken when the op ran: backward refuses to run on one modified since
    (PyTorch's version counter check, versions.check). `out_ref` is the detached alias of
    the op's output that the backward reads, if any; `cls` the Function class of a Python
    op (None for the C-recorded ones); `args`/`kwargs` a composite Function's arguments
    (higher_order.py); `view`/`base_fn` mark a view's node and the base's grad_fn it was
    made from (views.py regenerates a view whose base was written since)."""
    __slots__ = ("name", "inputs", "fns", "_backward", "ctx", "keep", "saved", "view",
                 "out_ref", "cls", "args", "kwargs", "base_fn", "stack", "output_nr",
                 "__weakref__")

    def __init__(self, name, inputs, fns, backward, ctx, saved=(), view=False):
        self.name = name
        self.inputs = inputs
        self.fns = fns
        self._backward = backward
        self.ctx = ctx
        self.keep = None  # objects held until backward() returns, not just until release()
        self.saved = versions.stamp(saved, inputs, fns) if saved else ()
        self.view = view
        self.out_ref = None
        self.cls = None
        self.args = None
        self.kwargs = None
        self.base_fn = None
        self.output_nr = 0  # which output of PyTorch's one node this is (number_outputs)
        # anomaly mode (anomaly_mode.py): the forward call's stack, for the backward's error
        self.stack = anomaly_mode.forward_stack() if anomaly_mode.enabled() else None

    def __repr__(self):  # PyTorch's: <AddBackward0 object at 0x7f...>, <CopySlices ...>
        from .._printing import grad_fn_name
        return f"<{grad_fn_name(self)} object at {id(self):#x}>"

    @property
    def next_functions(self):
        """PyTorch's ((grad_fn, 0), ...): one pair per input, (None, 0) where the input has
        no grad_fn (a leaf, or no grad)."""
        if self.inputs is None:
            return ()
        return tuple((f, 0) for f in self.fns)

    def backward(self, g, create_graph=False):
        if self.inputs is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or "
                f"if you need to access saved tensors after calling backward. ({self!r})")
        if self.saved:
            versions.check(self)
        if create_graph:
            return _plugged["recorded_backward"](self, g)
        return self._backward(self.ctx, g)

    def release(self):
        self.inputs = None
        self.fns = ()
        self.ctx = None
        self.saved = ()
        self.out_ref = None
        self.args = self.kwargs = None


def hold(t):
    """(what a node keeps of operand t, t's grad_fn): see the module's docstring. A view
    whose base was written with a history since it was made gets its history regenerated
    first (views.py)."""
    if type(t) is not Tensor:
        if isinstance(t, Tensor):  # a subclass: kept as it is
            return t, t.grad_fn
        return t, None
    if t._base is not None:
        _plugged["refresh_view"](t)
    fn = t.grad_fn
    if fn is None and t.requires_grad:
        return t, None
    alias = t.detach()
    if fn is not None:
        alias.requires_grad_(True)  # rules ask whether an operand needs a gradient
    return alias, fn


def _shape_only(t):
    """A stand-in for an operand whose values the backward never reads: its shape, dtype and
    device over one element (a broadcast view), so the operand's memory is not held."""
    s = _tensor_create.zeros((), dtype=t.dtype, device=t.device).expand(t.shape).detach()
    return s.requires_grad_(True)


def _lean(ha, fa, hb, fb, ctx, saved):
    """Operands made by other ops (fa/fb set) that the rule does not read (not in `saved`)
    become shape-only stand-ins in the node and its ctx, as PyTorch saves only what the
    formula reads: F.relu(bn(x)) then holds relu's output, not bn's too."""
    held = {id(s.t if type(s) is versions.Output else s) for s in saved}
    swap = {}
    for h, f in ((ha, fa), (hb, fb)):
        if f is not None and type(h) is Tensor and id(h) not in held and id(h) not in swap:
            swap[id(h)] = _shape_only(h)
    if not swap:
        return ha, hb, ctx
    if type(ctx) is tuple:
        ctx = tuple(swap.get(id(c), c) if type(c) is Tensor else c for c in ctx)
    elif type(ctx) is Tensor:
        ctx = swap.get(id(ctx), ctx)
    return swap.get(id(ha), ha), swap.get(id(hb), hb), ctx


def make_node(name, out, a, b, args, kwargs, lean=False):
    """The node of the op table's op `name` that made `out` from operands a, b (tensors or
    numbers): its rule's context built from the operands themselves (rules.make: what
    pygpu.onnx's tracer watches), then holding them as hold() keeps them (lean: only those
    the rule reads, see _lean)."""
    ha, fa = hold(a)
    hb, fb = (ha, fa) if b is a else hold(b)
    backward, ctx = rules.make(name, out, a, b, args, kwargs)
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        if ctx is a or ctx is b:
            ctx = ha if ctx is a else hb
        elif type(ctx) is tuple:
            ctx = tuple(ha if c is a and c is not None else hb if c is b and c is not None
                        else c for c in ctx)
    saved = rules.saved(name, ctx, ha)
    if lean and (ctx is None or type(ctx) is tuple or type(ctx) is Tensor):
        ha, hb, ctx = _lean(ha, fa, hb, fb, ctx, saved)
    node = Node(rules.pretty(name),
                (ha if isinstance(a, Tensor) else None, hb if isinstance(b, Tensor) else None),
                (fa, fb), backward, ctx, saved)
    for s in saved:
        if type(s) is versions.Output:
            node.out_ref = s.t
    return node


def record(name, out, a, b, args, kwargs):
    """The hook the C bindings call: attach a grad_fn to `out`."""
    node = make_node(name, out, a, b, args, kwargs, lean=name not in rules.VIEW_OPS)
    if name in rules.VIEW_OPS:
        base = out._base
        if base is not None:
            node.view = True
            node.base_fn = base.grad_fn
    out._set_grad_fn(node)


def keep_alive(t, obj):
    """Hold `obj` for as long as t's graph can still be backpropagated, and through the
    whole backward() that runs it (not only until t's node has run): what the rest of
    that backward calls into (a Reducer's hooks on other leaves) then cannot be closed
    by its owner's collection halfway. t may be a tensor or a tuple, list or dict of
    them (a module's output); a tensor without a grad_fn needs nothing kept."""
    if isinstance(t, (tuple, list)):
        for x in t:
            keep_alive(x, obj)
        return
    if isinstance(t, dict):
        for x in t.values():
            keep_alive(x, obj)
        return
    node = t.grad_fn if isinstance(t, Tensor) else None
    if node is None:
        return
    if node.keep is None:
        node.keep = [obj]
    elif not any(k is obj for k in node.keep):
        node.keep.append(obj)


def _ones_like(t):
    return _tensor_create.ones(t.shape, dtype=t.dtype, device=t.device)


def _fit(g, t):
    """A gradient for `t`: same dtype (promotion may have widened it, or made it complex).
    Shapes are the rules' business (tests/test_autograd.py checks every rule against finite
    differences)."""
    if type(g) is _multi_output.Slots:  # a multi-output Function's (_multi_output.py)
        return g
    if g.dtype is not t.dtype:
        if g.dtype.is_complex and not t.dtype.is_complex:
            g = g.real  # a real tensor's gradient is the real part, as PyTorch's engine takes
        g = g.astype(t.dtype)
    return g


def _topological(roots, stop=()):
    """Depth-first post-order from `roots` (nodes), not expanding the nodes in `stop`. A node
    is marked when it is expanded, not when it is first pushed: marking at push time let a
    node reached by two paths of different lengths (d used by y = d * mean(d)) come out
    before one of its consumers, so that consumer's gradient arrived after d's backward had
    run and was lost."""
    order, expanded = [], set()
    stack = [(r, False) for r in reversed(roots)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in expanded:
            continue
        expanded.add(id(node))
        stack.append((node, True))
        if id(node) in stop:
            continue
        for fn in node.fns:
            if fn is not None and id(fn) not in expanded:
                stack.append((fn, False))
    return order  # every node after the nodes it depends on


def _key(t):
    """Where the gradient with respect to t arrives: its grad_fn, or t itself (a leaf)."""
    fn = t.grad_fn
    return id(t) if fn is None else id(fn)


def _useful(order, keys):
    """The ids of the nodes whose backward leads to a target (keys: ids of target nodes and
    leaves): autograd.grad runs only those, as PyTorch's engine does."""
    useful = set()
    for node in order:  # dependencies first
        if node.inputs is None:  # released: running it raises PyTorch's "second time" error
            useful.add(id(node))
            continue
        for t, fn in zip(node.inputs, node.fns):
            if fn is not None:
                if id(fn) in useful or id(fn) in keys:
                    useful.add(id(node))
                    break
            elif t is not None and id(t) in keys:
                useful.add(id(node))
                break
    return useful


def execute(outputs, grads, inputs=None, *, accumulate, retain_graph=False,
            create_graph=False, allow_unused=False, stop_at_inputs=False):
    """The engine (PyTorch's _engine_run_backward): backpropagate `grads` (one tensor per
    output) from `outputs` through the graph. accumulate=True adds the gradients into
    leaves' .grad (all of them, or only `inputs`: PyTorch's backward(inputs=...));
    accumulate=False returns the gradient reaching each of `inputs` (None where none does,
    an error unless allow_unused). create_graph=True runs each backward under grad mode,
    written in differentiable ops, so the gradients have a graph of their own.
    stop_at_inputs: do not backpropagate past the inputs (partial derivatives:
    higher_order's composites)."""
    keys = {}
    if inputs is not None:
        for t in inputs:
            if t._base is not None:
                hold(t)  # a stale view: its history regenerated, as its gradient's key
            keys.setdefault(_key(t), t)
    found = {}

    def capture(key, g):
        prev = found.get(key)
        found[key] = g if prev is None else prev + g

    owned = set()  # ids of gradients some leaf already holds as .grad (never alias two)
    owned.update(id(g) for g in grads if g is not None)  # the caller's: held, so copied
    roots, seeds = [], {}
    callbacks = []  # queue_callback's, run once every gradient has arrived
    stack = _final_callbacks.__dict__.setdefault("stack", [])
    stack.append(callbacks)
    try:
        order = _run_engine(outputs, grads, inputs, keys, found, capture, owned, roots, seeds,
                            accumulate, retain_graph, create_graph, stop_at_inputs)
        while callbacks:  # in order (one may queue another)
            callbacks.pop(0)()
    finally:
        stack.pop()
    if not retain_graph:  # every node has run: what they kept may go now
        for node in order:
            node.keep = None
    if inputs is None or accumulate:
        return None
    result = []
    for i, t in enumerate(inputs):
        g = found.get(_key(t))
        if g is None and not allow_unused:
            raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been "
                               "used in the graph. Set allow_unused=True if this is the "
                               "desired behavior." if len(inputs) > 1 else
                               "One of the differentiated Tensors appears to not have been "
                               "used in the graph. Set allow_unused=True if this is the "
                               "desired behavior.")
        result.append(g)
    return result


def _run_engine(outputs, grads, inputs, keys, found, capture, owned, roots, seeds, accumulate,
                retain_graph, create_graph, stop_at_inputs):
    """execute()'s walk: the seeds, the order, the nodes run; returns the order."""
    order = []
    with set_grad_enabled(create_graph):
        for out, g in zip(outputs, grads):
            if g is None:
                continue
            if out._base is not None:
                hold(out)
            fn = out.grad_fn
            if fn is None:  # a leaf: its own gradient
                if inputs is None:
                    _accumulate(out, g, owned, create_graph)
                elif id(out) in keys:
                    capture(id(out), g)
                continue
            if id(fn) not in seeds:
                roots.append(fn)
                seeds[id(fn)] = g
            else:
                seeds[id(fn)] = seeds[id(fn)] + g
        stop = keys if stop_at_inputs else ()
        order = _topological(roots, stop) if roots else []
        useful = _useful(order, keys) if inputs is not None else None
        _walk(order, seeds, keys, useful, stop, found, owned, accumulate, retain_graph,
              create_graph)
        if inputs is not None and accumulate:  # backward(inputs=...): only their .grad
            for key, t in keys.items():
                if key in found:
                    _accumulate(t, found[key], owned, create_graph)
    return order


_final_callbacks = __import__("threading").local()


def queue_callback(fn):
    """Run fn() once the backward() now running has accumulated every gradient, before it
    returns (PyTorch's Variable._execution_engine.queue_callback). DistributedDataParallel
    finishes its gradient reduction in one."""
    stack = getattr(_final_callbacks, "stack", None)
    if not stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    stack[-1].append(fn)


def _is_leaf_edge(t, fn):
    return t is not None and fn is None and t.requires_grad


def leaf_edges(order):
    """id(leaf) -> how many edges of the nodes in `order` lead to it."""
    count = {}
    for node in order:
        if node.inputs is None:
            continue
        for t, fn in zip(node.inputs, node.fns):
            if _is_leaf_edge(t, fn):
                count[id(t)] = count.get(id(t), 0) + 1
    return count


def reachable_leaves(outputs):
    """The leaf tensors (that require grad) a backward from `outputs` (a tensor, or a tuple,
    list or dict of them) would give a gradient to: DistributedDataParallel's
    find_unused_parameters."""
    found, stack = {}, [outputs]
    roots = []
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, Tensor) and x.requires_grad:
            if x.grad_fn is None:
                found[id(x)] = x
            else:
                roots.append(x.grad_fn)
    seen = set()
    for root in roots:
        if id(root) in seen:
            continue
        for node in _topological([root]):
            if id(node) in seen:
                continue
            seen.add(id(node))
            for t, fn in zip(node.inputs or (), node.fns):
                if _is_leaf_edge(t, fn):
                    found[id(t)] = t
    return list(found.values())


def _walk(order, grads, keys, useful, stop, found, owned, accumulate, retain_graph,
          create_graph):
    """Walk the nodes in reverse topological order, each once. In a backward() (not
    restricted to some inputs) a leaf reached by several edges gets the sum of their
    gradients in one accumulation, once its last edge has run (PyTorch's AccumulateGrad
    node): its hooks and post-accumulate hooks run once per backward."""
    restrict = useful is not None
    edges = {} if restrict else leaf_edges(order)
    pending = {}  # id(leaf) -> (leaf, gradient summed so far or None)

    def leaf_edge_done(t, gi):
        leaf, prev = pending.get(id(t), (t, None))
        if gi is not None:
            prev = gi if prev is None else prev + gi
        left = edges[id(t)] - 1
        edges[id(t)] = left
        if left:
            pending[id(t)] = (leaf, prev)
            return
        pending.pop(id(t), None)
        if prev is not None:
            if _tensor_hooks:
                prev = _run_hooks(leaf, prev)
            _accumulate(leaf, prev, owned, create_graph)

    lazy = not create_graph  # narrow's gradients kept as slices until read (_pieces.py)
    for node in reversed(order):
        g = grads.pop(id(node), None)
        if type(g) is _pieces.Pieces:
            g = g.tensor()
        if g is None:  # nothing reached this node: its edges into leaves deliver nothing
            if not restrict and node.inputs is not None:
                for t, fn in zip(node.inputs, node.fns):
                    if _is_leaf_edge(t, fn):
                        leaf_edge_done(t, None)
            continue
        if _tensor_hooks:  # a non-leaf's hooks see its whole gradient (register_hook)
            g = _run_hooks(node, g)
        if _retained:  # after its hooks, as PyTorch runs retain_grad's hook last
            _retain(node, g)
        if id(node) in keys:
            prev = found.get(id(node))
            found[id(node)] = g if prev is None else prev + g
            if id(node) in stop:
                continue
        if restrict and id(node) not in useful:
            continue
        inputs, fns = node.inputs, node.fns
        anomalous = anomaly_mode.enabled()
        if lazy and not anomalous and not _tensor_hooks and inputs and fns[0] is not None:
            piece = _pieces.piece_for(node, g)
            if piece is not None:  # a narrow's: kept as its slice (_pieces.py)
                grads[id(fns[0])] = _pieces.add(grads.get(id(fns[0])), piece, g)
                if not retain_graph:
                    node.release()
                continue
        if anomalous:
            in_grads = _anomalous_backward(node, g, create_graph)
        else:
            in_grads = node.backward(g, create_graph)
        for t, fn, gi in zip(inputs, fns, in_grads):
            if not restrict and _is_leaf_edge(t, fn):
                leaf_edge_done(t, None if gi is None else _fit(gi, t))
                continue
            if t is None or gi is None or not (fn is not None or t.requires_grad):
                continue
            gi = _fit(gi, t)
            if fn is None:
                if _tensor_hooks:
                    gi = _run_hooks(t, gi)
                if id(t) in keys:
                    prev = found.get(id(t))
                    found[id(t)] = gi if prev is None else prev + gi
            else:
                grads[id(fn)] = _pieces.total(grads.get(id(fn)), gi)
        if not retain_graph:
            node.release()


def _anomalous_backward(node, g, create_graph):
    """node.backward under anomaly mode: PyTorch's warning with the forward stack when it
    fails, and its error for a NaN gradient."""
    from .._printing import grad_fn_name
    name = grad_fn_name(node)
    try:
        in_grads = node.backward(g, create_graph)
        anomaly_mode.check(node, name, in_grads)
    except Exception:
        anomaly_mode.report(name, node.stack)
        raise
    return in_grads


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Tensor.backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)."""
    backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph,
             inputs=inputs)


def _as_tensors(x, what):
    if isinstance(x, Tensor):
        return (x,)
    if x is None:
        return ()
    return tuple(x)


def make_grads(outputs, grads, is_grads_batched=False):
    """PyTorch's _make_grads: each output's gradient, ones for a scalar output given None."""
    new = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if isinstance(g, Tensor):
            first = g[0] if is_grads_batched else g
            if tuple(first.shape) != tuple(out.shape):
                if is_grads_batched:
                    raise RuntimeError(
                        "If `is_grads_batched=True`, we interpret the first dimension of each "
                        "grad_output as the batch dimension. The sizes of the remaining "
                        "dimensions are expected to match the shape of corresponding output, "
                        f"but a mismatch was detected: grad_output[{i}] has a shape of "
                        f"{g.shape} and output[{i}] has a shape of {out.shape}. If you only "
                        "want some tensors in `grad_output` to be considered batched, consider "
                        "using vmap.")
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{first.shape} and output[{i}] has a shape of {out.shape}.")
            if g.device != out.device:
                raise RuntimeError(f"backward(): gradient is on {g.device} but the tensor is on "
                                   f"{out.device}; move it with .to({str(out.device)!r})")
            new.append(g)
        elif g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       f"outputs but got {out.dtype}")
                new.append(_ones_like(out))
            else:
                new.append(None)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
    return new


def _check_outputs(outputs):
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            raise TypeError(f"element {i} of tensors is a {type(out).__name__}, not a Tensor")
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """torch.autograd.backward: accumulate the gradients of `tensors` (weighted by
    grad_tensors) into the leaves' .grad, or only into `inputs`'."""
    if grad_variables is not None:
        warnings.warn("'grad_variables' is deprecated. Use 'grad_tensors' instead.",
                      FutureWarning, stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("'grad_tensors' and 'grad_variables' (deprecated) arguments "
                               "both passed to 'backward'. Please only use 'grad_tensors'.")
        grad_tensors = grad_variables
    outputs = _as_tensors(tensors, "tensors")
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    elif inputs is not None:
        inputs = tuple(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = (None,) * len(outputs) if grad_tensors is None else _as_tensors(grad_tensors,
                                                                              "grad_tensors")
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    _check_outputs(outputs)
    grads = make_grads(outputs, grads)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after "
            "use to break the cycle and avoid the leak.", UserWarning, stacklevel=3)
    execute(outputs, grads, inputs, accumulate=True, retain_graph=bool(retain_graph),
            create_graph=bool(create_graph))


def add_into(acc, g):
    """acc += g in place, in one pass on acc's device, if acc's memory is acc's alone
    (else False). The fused SGD kernel with lr = -1 (p -= lr * g) is exactly that. The engine
    accumulates .grad with it, and DataParallel adds each replica's gradient with it."""
    # 3 references: the leaf's slot, the caller's local, getrefcount's argument
    if (sys.getrefcount(acc) > 4 or acc.shape != g.shape or acc.dtype is not g.dtype
            or acc.device != g.device or not _C._grad_exclusive(acc)):
        return False
    try:
        _C._sgd_update(acc, g, None, -1.0, 0.0, 0.0, 0.0, False, True)
    except (TypeError, ValueError):  # a dtype the fused kernel does not take
        return False
    return True


def memory_exclusive(t):
    """Whether t alone uses its memory: no other tensor or view refers to its storage, and
    the storage is pygpu's own (not NumPy's or a DLPack producer's). Writing such a tensor
    in place changes nothing another tensor can see (Python references to t itself are the
    caller's to count). DistributedDataParallel all-reduces gradients in place under it."""
    return _C._grad_exclusive(t)


# id(leaf) -> leaf: leaves whose .grad is a view that must stay one (DistributedDataParallel's
# gradient_as_bucket_view): a gradient is added into it in place although its bucket shares
# the memory
_grad_views = {}


def number_outputs(outs, input=None):
    """PyTorch's Tensor.output_nr for an op with several differentiable outputs (split,
    unbind, var_mean, aminmax...): PyTorch makes one node with n outputs, pygpu one node per
    output, so each output's node carries its index. An output that is the input itself (a
    split into one piece may return it) keeps its own node's number. Returns outs."""
    own = input.grad_fn if input is not None else None
    for i, t in enumerate(outs):
        fn = getattr(t, "grad_fn", None)
        if fn is not None and fn is not own:
            fn.output_nr = i
    return outs


def keep_grad_view(leaf, on=True):
    """Accumulate into leaf.grad in place even though other tensors see its memory."""
    if on:
        _grad_views[id(leaf)] = leaf
    else:
        _grad_views.pop(id(leaf), None)


def _dtype_codes():
    from .. import _dtype
    return _dtype.ALL


def _accumulate(leaf, g, owned, create_graph=False):
    """leaf.grad += g. Under create_graph the sum is recorded (out of place), as PyTorch's
    AccumulateGrad does with grad mode on."""
    code = leaf._grad_dtype_code  # the dtype .grad must have (Tensor.grad_dtype): cast to it
    if code != 1:
        want = leaf.dtype if code == 0 else _dtype_codes()[code - 2]
        if g.dtype is not want:
            g = g.to(want)
    view = _grad_views.get(id(leaf))
    if view is leaf and leaf.grad is not None and leaf.grad.shape == g.shape and not create_graph:
        leaf.grad.add_(g)
    elif leaf.grad is None:
        if create_graph and g.grad_fn is not None:
            g = g.clone()  # recorded: the gradient's own graph
        elif not create_graph:  # the layout contract (grad_layout.py)
            g = grad_layout.first_grad(g, leaf, stealable=id(g) not in owned)
        elif id(g) in owned:
            g = g.clone()
        owned.add(id(g))
        leaf.grad = g
    else:
        acc = leaf.grad
        if create_graph or not add_into(acc, g):
            leaf.grad = acc + g
        del acc
    hooks = _post_accumulate_hooks.get(id(leaf))
    if hooks and hooks[0] is leaf:
        for fn in list(hooks[1]):
            fn(leaf)


# id(leaf) -> (leaf, [fn, ...]): the leaf is kept, so its id cannot be reused meanwhile
_post_accumulate_hooks = {}

# Tensor.register_hook: id(leaf tensor or non-leaf's grad_fn) -> (that object, [fn, ...]);
# fn(grad) returns a replacement gradient or None (PyTorch's tensor hooks)
_tensor_hooks = {}


def _run_hooks(key, g):
    entry = _tensor_hooks.get(id(key))
    if entry and entry[0] is key:
        for fn in list(entry[1]):
            r = fn(g)
            if r is not None:
                g = r
    return g


class _TensorHookHandle:
    def __init__(self, key, fn):
        self._key, self._fn = key, fn

    def remove(self):
        entry = _tensor_hooks.get(id(self._key))
        if entry and entry[0] is self._key and self._fn in entry[1]:
            entry[1].remove(self._fn)
            if not entry[1]:
                del _tensor_hooks[id(self._key)]


def register_hook(t, fn):
    """t.register_hook(fn): call fn(grad) when backward() has computed t's gradient, and
    use its return value (when not None) in its place. Returns a handle with remove()."""
    if not t.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._base is not None:
        hold(t)
    key = t if t.grad_fn is None else t.grad_fn
    entry = _tensor_hooks.setdefault(id(key), (key, []))
    entry[1].append(fn)
    return _TensorHookHandle(key, fn)


# Tensor.retain_grad: id(non-leaf's grad_fn) -> (grad_fn, the tensor): backward() stores
# the node's whole gradient (after its hooks) in that tensor's .grad. pygpu.Tensor takes no
# weak references, so an entry whose tensor nothing else holds is dropped at the next
# retain_grad (_prune_retained).
_retained = {}


def _prune_retained():
    for key, (_, t) in list(_retained.items()):
        if sys.getrefcount(t) <= 3:  # the entry, `t` here and getrefcount's argument
            del _retained[key]


def _retain(node, g):
    entry = _retained.get(id(node))
    if not entry or entry[0] is not node:
        return
    t = entry[1]
    if not isinstance(g, Tensor) or tuple(g.shape) != tuple(t.shape):
        return  # a node with several outputs: not this tensor's gradient alone
    t.grad = g if t.grad is None else t.grad + g


def retain_grad(t):
    """t.retain_grad(): a non-leaf tensor keeps its gradient in .grad after backward()
    (accumulated across backward calls, as a leaf's is); a leaf keeps its own already."""
    if not t.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if t.grad_fn is None:
        return
    if t._base is not None:
        hold(t)
    _prune_retained()
    _retained[id(t.grad_fn)] = (t.grad_fn, t)


def retains_grad(t):
    """Whether t is a non-leaf tensor whose gradient backward() keeps (retain_grad)."""
    fn = t.grad_fn
    entry = None if fn is None else _retained.get(id(fn))
    return bool(entry and entry[0] is fn and entry[1] is t)


class _HookHandle:
    def __init__(self, leaf, fn):
        self._leaf, self._fn = leaf, fn

    def remove(self):
        entry = _post_accumulate_hooks.get(id(self._leaf))
        if entry and entry[0] is self._leaf and self._fn in entry[1]:
            entry[1].remove(self._fn)
            if not entry[1]:
                del _post_accumulate_hooks[id(self._leaf)]


def register_post_accumulate_grad_hook(leaf, fn):
    """Call fn(leaf) each time backward() has accumulated a gradient into leaf.grad
    (PyTorch's Tensor.register_post_accumulate_grad_hook). DistributedDataParallel
    uses it to start a bucket's all-reduce as soon as its gradients are ready.
    Returns a handle whose remove() unregisters it."""
    if not isinstance(leaf, Tensor):
        raise TypeError(f"register_post_accumulate_grad_hook: expected a Tensor, got "
                        f"{type(leaf).__name__}")
    if not leaf.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if leaf.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                           "tensors")
    entry = _post_accumulate_hooks.setdefault(id(leaf), (leaf, []))
    entry[1].append(fn)
    return _HookHandle(leaf, fn)
