"""nn.estimate_memory: how much device memory a training step needs, before running it.

The GPU-monitoring guide's rule of thumb, made exact for the layers pygpu has:

    total = parameters x copies + batch x activations x 2 (+ the input batch)

copies: the parameters themselves, their gradients, and the optimizer's
state per parameter (SGD with momentum: one buffer; Adam: two; plain SGD:
none). activations: the values one sample produces on its way through the
model (each Linear's output, each standalone activation module's output),
kept for backward; x 2 because backward makes a gradient of the same size
for each. The input batch (and its labels) is counted once.

Every figure is in the bytes the device's caching allocator hands out, which
is what memory_allocated() reports: each tensor rounded up to a multiple of
512 B up to 1 MiB and of 2 MiB above (csrc/core/pg_allocator.c; PyTorch's
CUDA allocator rounds the same way).

The estimate walks the model's leaf modules in order, so it knows Linear and
the elementwise activations; a model with another kind of leaf module gets a
ValueError naming it rather than a silent guess.

precision= follows pygpu.Trainer's: "32" counts everything in the parameters'
dtype; "bf16-mixed" / "16-mixed" (autocast) keep float32 parameters, gradients
and optimizer state, add the per-step 16-bit copies of the weights (the cast
cache) to `parameters`, and count activations and the input batch at 2 bytes
per value (the float32 loss is a few bytes). Half parameters (Module.half())
with precision "32" count the optimizers' float32 master copies in
`optimizer_state`."""
import dataclasses

from .layers import _FUSABLE, Linear

_ELEMENTWISE = tuple(_FUSABLE)  # the op table's activations (pg_ops.def's PG_ACT rows)


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per category; `total` is their sum."""
    parameters: int
    gradients: int
    optimizer_state: int
    activations: int
    inputs: int

    @property
    def total(self):
        return self.parameters + self.gradients + self.optimizer_state + self.activations + self.inputs

    def __str__(self):
        mib = lambda b: f"{b / 2**20:.2f} MiB"  # noqa: E731
        return (f"MemoryEstimate(total {mib(self.total)}: parameters {mib(self.parameters)}, "
                f"gradients {mib(self.gradients)}, optimizer state {mib(self.optimizer_state)}, "
                f"activations {mib(self.activations)}, inputs {mib(self.inputs)})")


_SMALL_QUANTUM, _SMALL_LIMIT, _LARGE_QUANTUM = 512, 1 << 20, 2 << 20  # as pg_allocator.c


def device_bytes(nbytes):
    """What the caching allocator hands out for a tensor of `nbytes` bytes."""
    q = _SMALL_QUANTUM if nbytes <= _SMALL_LIMIT else _LARGE_QUANTUM
    return max(q, -(-nbytes // q) * q) if nbytes > 0 else 0


def _state_copies(optimizer):
    """Buffers per parameter that the optimizer keeps."""
    if optimizer is None:
        return 0
    name = type(optimizer).__name__
    if name == "Adam":
        return 2  # exp_avg, exp_avg_sq
    if name == "SGD":
        return int(any(float(g.get("momentum", 0)) != 0 for g in optimizer.param_groups))
    raise ValueError(f"estimate_memory: don't know how much state a {name} optimizer keeps "
                     "(SGD and Adam are known)")


def _leaves(model):
    return [m for m in model.modules() if not list(m.children())]


def _activations_per_sample(model):
    """(widths of the tensors kept for backward, per sample; input features per sample)."""
    widths, width, in_features = [], None, None
    for leaf in _leaves(model):
        if isinstance(leaf, Linear):
            if in_features is None:
                in_features = leaf.in_features
            width = leaf.out_features
            widths.append(width)
        elif isinstance(leaf, _ELEMENTWISE):
            if width is None:
                raise ValueError(f"estimate_memory: {type(leaf).__name__} before any Linear: its "
                                 "width is unknown")
            widths.append(width)
        else:
            raise ValueError(f"estimate_memory: don't know the activation size of a "
                             f"{type(leaf).__name__} module (Linear and "
                             f"{', '.join(c.__name__ for c in _ELEMENTWISE)} are known)")
    if in_features is None:
        raise ValueError("estimate_memory: the model has no Linear layer")
    return widths, in_features


_PRECISIONS = ("32", "32-true", "bf16-mixed", "16-mixed")


def estimate_memory(model, batch_size, optimizer=None, label_bytes=8, precision="32"):
    """Estimate the device memory of one training step of `model` at `batch_size`
    (float parameters; int64 labels by default, label_bytes=0 for none; precision as
    pygpu.Trainer's: "32", "bf16-mixed" or "16-mixed")."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"estimate_memory: batch_size must be a positive int, got {batch_size!r}")
    if precision not in _PRECISIONS:
        raise ValueError(f"estimate_memory: precision must be one of {', '.join(_PRECISIONS)}, "
                         f"got {precision!r}")
    params = list(model.parameters())
    p_bytes = sum(device_bytes(p.nbytes) for p in params)
    g_bytes = sum(device_bytes(p.nbytes) for p in params if p.requires_grad)
    itemsize = params[0].itemsize if params else 4
    state = p_bytes * _state_copies(optimizer)
    if itemsize == 2 and optimizer is not None:  # float32 masters and float32 state
        state = 2 * p_bytes * (1 + _state_copies(optimizer))
    if precision.endswith("-mixed"):
        p_bytes += sum(device_bytes(p.numel() * 2) for p in params if p.ndim >= 1)
        itemsize = 2
    widths, in_features = _activations_per_sample(model)
    return MemoryEstimate(
        parameters=p_bytes,
        gradients=g_bytes,
        optimizer_state=state,
        activations=2 * sum(device_bytes(batch_size * w * itemsize) for w in widths),
        inputs=device_bytes(batch_size * in_features * itemsize) + device_bytes(batch_size * label_bytes),
    )
