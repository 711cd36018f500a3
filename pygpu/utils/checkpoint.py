"""torch.utils.checkpoint: activation checkpointing. checkpoint(fn, *args) runs fn without
keeping its intermediate tensors for backward, and runs it again during backward to
rebuild them, trading compute for memory as PyTorch's does; checkpoint_sequential splits
a Sequential (or list of modules) into segments that are each checkpointed.

How, here: one autograd Function (the reentrant form PyTorch's use_reentrant=True uses).
Its forward runs fn under no_grad and keeps only the inputs; its backward restores the RNG
state of the forward (preserve_rng_state, so dropout draws the same masks), reruns fn with
grad enabled on detached inputs, and backpropagates the incoming gradient through that
graph (gradients of parameters fn uses accumulate into their .grad, as PyTorch's reentrant
backward does) to hand back the inputs' gradients. use_reentrant=False takes the same path
with one empty tensor that requires grad added to the inputs, so that parameters used inside
get gradients even when no input requires grad (as PyTorch's non-reentrant form gives them,
and its reentrant form does not); it takes keyword arguments and context_fn too. pygpu's
engine has no saved-tensor hooks, so where PyTorch's non-reentrant form supports more
(autograd.grad with parameters as `inputs`) pygpu's gives the reentrant answer. A function
with several outputs is a Function with several outputs (pygpu/autograd/_multi_output.py)."""
import warnings

from .. import _C, _device
from .._random import get_rng_state, set_rng_state
from ..autograd import Function, backward as _backward
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "noop_context_fn", "detach_variable", "check_backward_validity",
           "get_device_states", "set_device_states", "set_checkpoint_debug_enabled",
           "set_checkpoint_early_stop", "DefaultDeviceType"]

Tensor = _C.Tensor


class CheckpointError(RuntimeError):
    """Raised when a recomputation does not match the forward (PyTorch's class)."""


def noop_context_fn():
    """The default context_fn: no context around the forward or the recomputation."""
    import contextlib
    return contextlib.nullcontext(), contextlib.nullcontext()


class DefaultDeviceType:
    """The device type whose RNG state checkpoint preserves besides the cpu's."""
    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        return DefaultDeviceType._default_device_type


def detach_variable(inputs):
    """Each tensor of the tuple detached, keeping its requires_grad."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: ",
                           type(inputs).__name__)
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(isinstance(inp, Tensor) and inp.requires_grad for inp in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None")


def get_device_states(*args):
    """(device indices, their RNG states) of the non-cpu devices the tensors are on."""
    devices = sorted({(a.device.type, a.device.index or 0) for a in args
                      if isinstance(a, Tensor) and a.device.type not in ("cpu", "meta")})
    states = [_device.accelerator(t).get_rng_state(i) for t, i in devices]
    return devices, states


def set_device_states(devices, states, *, device_type=None):
    for (t, i), st in zip(devices, states):
        _device.accelerator(t).set_rng_state(st, i)


_debug = [False]
_early_stop = [True]


def set_checkpoint_debug_enabled(enabled):
    """Context manager (as PyTorch's) setting the default of checkpoint's debug flag."""
    import contextlib

    @contextlib.contextmanager
    def ctx():
        old = _debug[0]
        _debug[0] = enabled
        try:
            yield
        finally:
            _debug[0] = old
    return ctx()


def set_checkpoint_early_stop(enable):
    """Context manager setting early_stop (accepted; a recomputation here always runs the
    whole function)."""
    import contextlib

    @contextlib.contextmanager
    def ctx():
        old = _early_stop[0]
        _early_stop[0] = enable
        try:
            yield
        finally:
            _early_stop[0] = old
    return ctx()


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward without a graph, backward by recomputation."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        if getattr(run_function, "_pygpu_recompute_context", None) is None:
            check_backward_validity(args)  # the reentrant form's warning
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.recompute_context = getattr(run_function, "_pygpu_recompute_context", None)
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
            ctx.fwd_devices, ctx.fwd_device_states = get_device_states(*args)
        ctx.inputs = list(args)
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        if ctx.preserve_rng_state:
            cpu_now = get_rng_state()
            devs_now = get_device_states(*detached)
            set_rng_state(ctx.fwd_cpu_state)
            set_device_states(ctx.fwd_devices, ctx.fwd_device_states)
        try:
            with enable_grad():
                if ctx.recompute_context is not None:
                    with ctx.recompute_context:
                        outputs = ctx.run_function(*detached)
                else:
                    outputs = ctx.run_function(*detached)
        finally:
            if ctx.preserve_rng_state:
                set_rng_state(cpu_now)
                set_device_states(*devs_now)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(d.grad if isinstance(d, Tensor) else None
                                    for d in detached)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """Run function(*args, **kwargs) keeping none of its activations; backward recomputes
    them (torch.utils.checkpoint.checkpoint, with its arguments and warnings)."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. Starting in PyTorch 2.9, calling checkpoint without "
                      "use_reentrant will raise an exception. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant and (context_fn is not noop_context_fn or debug is not False):
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if use_reentrant:
        return _apply(function, preserve, args)
    # the non-reentrant form: parameters used inside get their gradients even when no
    # input requires grad (PyTorch's reentrant form gives them none): one empty tensor that
    # requires grad rides along as the last input, so the output always has the node
    forward_ctx, recompute_ctx = context_fn()

    def fn(*a):
        return function(*a[:-1], **kwargs)
    fn._pygpu_recompute_context = recompute_ctx
    with forward_ctx:
        return _apply(fn, preserve, args + (_ride_along(),))


def _ride_along():
    from .._tensor import create as _create
    return _create.empty(0).requires_grad_(True)


def _apply(fn, preserve, args):
    if not is_grad_enabled():  # nothing to recompute for: run it as it is
        return fn(*args)
    return CheckpointFunction.apply(fn, preserve, *args)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoint a Sequential (or a list of modules/functions) in `segments` chunks; the
    last chunk runs normally, as PyTorch's."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
                      "parameter should be passed explicitly. In version 2.9 we will raise an "
                      "exception if use_reentrant is not passed. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
