"""The autograd graph and backward(): nodes, the recording hook, the engine.

A Node is what `t.grad_fn` holds: the op's name, its operands (`inputs`,
None where an operand was a Python scalar) and a backward function mapping
the gradient of the output to one gradient per operand. The C bindings call
`record()` after an op whenever grad mode is on and an operand requires grad
(see csrc/bindings/autograd.c); Python-level ops (pygpu/autograd/function.py)
build nodes through Function.apply. backward() sorts the nodes reachable from
the root topologically and walks them once in reverse, summing gradients that
meet, and accumulates into each leaf's `.grad`. Every gradient op runs on the
device of the data: nothing here moves a tensor.

Memory, as PyTorch keeps it: each node's saved tensors are dropped as soon as
its backward has run (not when the next loss replaces the graph), and a
gradient is added into an existing `.grad` in place when nothing else can see
that memory (no other tensor, view or Python reference: _grad_exclusive), so a
training step holds one set of gradients, not two.

Lifetime: what backward needs is held by the graph itself, strongly. A node's
`keep` holds objects that must outlive the node's own backward until the whole
backward() returns: a DataParallel forward keeps its replicas (whose Reducer's
post-accumulate hooks fire on the replicas' leaves after the gather node has run)
and a DistributedDataParallel forward its wrapper (whose Reducer averages the
gradients), so a wrapper used as a temporary, `loss_fn(DataParallel(m)(x), y)`,
still reduces every gradient (keep_alive)."""
import sys

from .. import _C, _tensor_create
from .grad_mode import no_grad
from . import rules, versions

Tensor = _C.Tensor


class Node:
    """One recorded op: backward(g) -> tuple of gradients, one per input.

    `fns` holds each input's grad_fn as it was when the op ran (the graph's edges): an
    in-place op that later gives an input a new grad_fn does not change what this node
    backpropagates into. `saved` holds (tensor, write stamp, version) for each tensor
    whose values the backward reads, taken when the op ran: backward refuses to run on
    one modified since (PyTorch's version counter check, versions.check)."""
    __slots__ = ("name", "inputs", "fns", "_backward", "ctx", "keep", "saved", "view")

    def __init__(self, name, inputs, backward, ctx, saved=(), view=False):
        self.name = name
        self.inputs = inputs
        self.fns = tuple([None if t is None else t.grad_fn for t in inputs])
        self._backward = backward
        self.ctx = ctx
        self.keep = None  # objects held until backward() returns, not just until release()
        self.saved = versions.stamp(saved) if saved else ()
        self.view = view  # the output is a view of inputs[0] (inplace.py refuses writing it)

    def __repr__(self):  # PyTorch's: <AddBackward0 object at 0x7f...>
        from .._printing import grad_fn_name
        return f"<{grad_fn_name(self)} object at {id(self):#x}>"

    @property
    def next_functions(self):
        """PyTorch's ((grad_fn, 0), ...): one pair per input, (None, 0) where the input has
        no grad_fn (a leaf, or no grad)."""
        if self.inputs is None:
            return ()
        return tuple((f, 0) for f in self.fns)

    def backward(self, g):
        if self.inputs is None:
            raise RuntimeError(
                f"trying to backward through the graph a second time ({self!r}): its saved "
                "tensors were freed after the first backward(); pass retain_graph=True to the "
                "first call if you need to")
        if self.saved:
            versions.check(self)
        return self._backward(self.ctx, g)

    def release(self):
        self.inputs = None
        self.fns = ()
        self.ctx = None
        self.saved = ()


def record(name, out, a, b, args, kwargs):
    """The hook the C bindings call: attach a grad_fn to `out`."""
    backward, ctx = rules.make(name, out, a, b, args, kwargs)
    inputs = (a if isinstance(a, Tensor) else None, b if isinstance(b, Tensor) else None)
    out._set_grad_fn(Node(rules.pretty(name), inputs, backward, ctx, rules.saved(name, ctx, a),
                         name in rules.VIEW_OPS))


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
    """A gradient for `t`: same dtype (promotion may have widened it). Shapes are the
    rules' business (tests/test_autograd.py checks every rule against finite differences)."""
    if g.dtype is not t.dtype:
        g = g.astype(t.dtype)
    return g


def _topological(root):
    """Depth-first post-order. A node is marked when it is expanded, not when it is first
    pushed: marking at push time let a node reached by two paths of different lengths
    (d used by y = d * mean(d)) come out before one of its consumers, so that consumer's
    gradient arrived after d's backward had run and was lost."""
    order, expanded = [], set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in expanded:
            continue
        expanded.add(id(node))
        stack.append((node, True))
        for fn in node.fns:
            if fn is not None and id(fn) not in expanded:
                stack.append((fn, False))
    return order  # every node after the nodes it depends on


def backward(root, gradient=None, retain_graph=False):
    """root.backward(gradient): accumulate d(root)/d(leaf) . gradient into leaves' .grad."""
    if not root.requires_grad:
        raise RuntimeError("backward(): this tensor does not require grad and has no grad_fn "
                           "(did you compute it under no_grad(), or from tensors without "
                           "requires_grad=True?)")
    if gradient is None:
        if root.numel() != 1:
            raise RuntimeError(
                f"backward(): grad can be implicitly created only for scalar outputs; this "
                f"tensor has shape {root.shape}: pass backward(gradient=...) with a tensor of "
                "that shape (or reduce it first, e.g. loss.sum())")
        gradient = _ones_like(root)
    else:
        if not isinstance(gradient, Tensor):
            raise TypeError(f"backward(): gradient must be a pygpu.Tensor, got "
                            f"{type(gradient).__name__}")
        if gradient.shape != root.shape:
            raise RuntimeError(f"backward(): gradient has shape {gradient.shape} but the tensor "
                               f"has shape {root.shape}")
        if gradient.device != root.device:
            raise RuntimeError(f"backward(): gradient is on {gradient.device} but the tensor is "
                               f"on {root.device}; move it with .to({str(root.device)!r})")
    owned = {id(gradient)}  # tensors some leaf already holds as .grad (never alias two)
    callbacks = []
    stack = _final_callbacks.__dict__.setdefault("stack", [])
    stack.append(callbacks)
    try:
        with no_grad():
            if root.grad_fn is None:
                _accumulate(root, gradient, owned)
            else:
                order = _topological(root.grad_fn)
                grads = {id(root.grad_fn): gradient}
                _run(order, grads, owned, retain_graph)
                if not retain_graph:  # every node has run: what they kept may go now
                    for node in order:
                        node.keep = None
        while callbacks:  # queue_callback's, in order (one may queue another)
            callbacks.pop(0)()
    finally:
        stack.pop()


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
        for node in _topological(root):
            if id(node) in seen:
                continue
            seen.add(id(node))
            for t, fn in zip(node.inputs or (), node.fns):
                if _is_leaf_edge(t, fn):
                    found[id(t)] = t
    return list(found.values())


def _run(order, grads, owned, retain_graph):
    """Walk the nodes in reverse topological order, each once. A leaf reached by several
    edges gets the sum of their gradients in one accumulation, once its last edge has run
    (PyTorch's AccumulateGrad node): its hooks and post-accumulate hooks run once per
    backward."""
    edges = leaf_edges(order)
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
            _accumulate(leaf, prev, owned)

    for node in reversed(order):
        g = grads.pop(id(node), None)
        if g is None:  # nothing reached this node: its edges into leaves deliver nothing
            if node.inputs is not None:
                for t, fn in zip(node.inputs, node.fns):
                    if _is_leaf_edge(t, fn):
                        leaf_edge_done(t, None)
            continue
        if _tensor_hooks:  # a non-leaf's hooks see its whole gradient (register_hook)
            g = _run_hooks(node, g)
        inputs, fns = node.inputs, node.fns
        in_grads = node.backward(g)
        for t, fn, gi in zip(inputs, fns, in_grads):
            if _is_leaf_edge(t, fn):
                leaf_edge_done(t, None if gi is None else _fit(gi, t))
                continue
            if t is None or gi is None or not (t.requires_grad or fn is not None):
                continue
            gi = _fit(gi, t)
            prev = grads.get(id(fn))
            grads[id(fn)] = gi if prev is None else prev + gi
        if not retain_graph:
            node.release()


def _add_into(acc, g):
    """acc += g in place, in one pass on acc's device, if acc's memory is acc's alone
    (else False). The fused SGD kernel with lr = -1 (p -= lr * g) is exactly that."""
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


def keep_grad_view(leaf, on=True):
    """Accumulate into leaf.grad in place even though other tensors see its memory."""
    if on:
        _grad_views[id(leaf)] = leaf
    else:
        _grad_views.pop(id(leaf), None)


def _accumulate(leaf, g, owned):
    view = _grad_views.get(id(leaf))
    if view is leaf and leaf.grad is not None and leaf.grad.shape == g.shape:
        leaf.grad.add_(g)
    elif leaf.grad is None:
        if id(g) in owned:
            g = g.clone()
        owned.add(id(g))
        leaf.grad = g
    else:
        acc = leaf.grad
        if not _add_into(acc, g):
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
    key = t if t.grad_fn is None else t.grad_fn
    entry = _tensor_hooks.setdefault(id(key), (key, []))
    entry[1].append(fn)
    return _TensorHookHandle(key, fn)


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
    if not isinstance(leaf, Tensor) or leaf.grad_fn is not None or not leaf.requires_grad:
        raise RuntimeError("register_post_accumulate_grad_hook: only a leaf tensor that "
                           "requires grad accumulates gradients")
    entry = _post_accumulate_hooks.setdefault(id(leaf), (leaf, []))
    entry[1].append(fn)
    return _HookHandle(leaf, fn)
