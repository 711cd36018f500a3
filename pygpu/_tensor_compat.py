"""PyTorch's other spellings of ops pygpu already has, as Tensor methods and torch.* functions.

Programs write torch.greater(a, b), x.multiply(y), x.ravel(), torch.concat(...), x.eq_(y),
x.new(3, 4), torch.pi: each here is the existing op under PyTorch's second name, or a
one-line composition of existing ops (an in-place comparison is the comparison copied back
into self, in self's dtype, as PyTorch's). No kernel lives here. Also the small process-wide
names programs call on their first lines: torch.Generator (a seed holder the samplers and
random_split accept), torch.seed/initial_seed, use_deterministic_algorithms and the float32
matmul precision switch (pygpu's kernels are deterministic for a device and thread count;
the switch is kept and reported)."""
import math

from . import _C

Tensor = _C.Tensor

# PyTorch's second name -> the Tensor method pygpu has
_ALIASES = {"greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
            "not_equal": "ne", "multiply": "mul", "divide": "div", "subtract": "sub",
            "true_divide": "div", "bitwise_not": "__invert__"}


def _alias(target):
    def method(self, *args, **kwargs):
        return getattr(self, target)(*args, **kwargs)
    method.__name__ = target
    return method


def _inplace(target):
    """x.eq_(y): the comparison (or op) written back into x, in x's dtype."""
    def method(self, *args, **kwargs):
        return self.copy_(getattr(self, target)(*args, **kwargs))
    method.__name__ = target + "_"
    return method


def ravel(self):
    return self.reshape(-1)


def reshape_as(self, other):
    return self.reshape(tuple(other.shape))


def new(self, *args):
    """The legacy x.new(sizes) / x.new(data): x's dtype and device."""
    from ._legacy import _make
    return _make(self.dtype, args, self.device)


def get_device(self):
    return -1 if self.device.type == "cpu" else self.device.index


def is_signed(self):
    return self.dtype.name != "bool"


def is_nonzero(self):
    if self.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous"
                           if self.numel() else "Boolean value of Tensor with no values is "
                           "ambiguous")
    return bool(self.item())


def is_same_size(self, other):
    return tuple(self.shape) == tuple(other.shape)


def cuda(self, device=None, non_blocking=False, memory_format=None):
    """x.cuda(): a copy on the current (or given) CUDA device; self if already there."""
    from ._device import device as as_device
    if device is None:
        target = as_device("cuda")
    elif isinstance(device, int):
        target = as_device("cuda", device)
    else:
        target = as_device(device)
    return self.to(target, non_blocking=non_blocking)


def data_ptr(self):
    """The address of the tensor's first element on its device (for libraries that take
    raw pointers; a number, never dereferenced by Python)."""
    return _C._data_ptr(self)


def _is_type(name):
    return property(lambda self: self.device.type == name,
                    doc=f"whether the tensor is on a {name} device")


METHODS = {name: _alias(target) for name, target in _ALIASES.items()}
METHODS.update({f"{name}_": _inplace(target) for name, target in _ALIASES.items()
                if target.isalpha() and name not in ("true_divide", "bitwise_not")})
METHODS.update({f"{op}_": _inplace(op) for op in ("eq", "ne", "lt", "le", "gt", "ge")})
METHODS.update({"bitwise_and_": _inplace("__and__"), "bitwise_or_": _inplace("__or__"),
                "bitwise_xor_": _inplace("__xor__"), "bitwise_not_": _inplace("__invert__"),
                "logical_and_": _inplace("logical_and"), "logical_or_": _inplace("logical_or"),
                "cumsum_": _inplace("cumsum"), "cumprod_": _inplace("cumprod"),
                "ravel": ravel, "reshape_as": reshape_as, "new": new, "get_device": get_device,
                "is_signed": is_signed, "is_nonzero": is_nonzero, "is_same_size": is_same_size,
                "cuda": cuda, "data_ptr": data_ptr, "is_cuda": _is_type("cuda"),
                "is_cpu": _is_type("cpu"), "is_meta": _is_type("meta"),
                "is_inference": lambda self: False})


def _function(name):
    def fn(input, *args, **kwargs):
        return getattr(Tensor, name)(input, *args, **kwargs)
    fn.__name__ = name
    return fn


class Generator:
    """torch.Generator(): a seed holder. pygpu's random functions draw from each device's
    own generator (manual_seed); a Generator is what samplers and random_split accept as
    generator= (they read initial_seed()), as in `random_split(ds, [0.8, 0.2],
    generator=torch.Generator().manual_seed(42))`."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721  # PyTorch's default seed

    def manual_seed(self, seed):
        self._seed = int(seed)
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        import random
        self._seed = random.getrandbits(63)
        return self._seed


class _DefaultGenerator(Generator):
    """torch.default_generator: seeding it seeds pygpu's generators (manual_seed)."""

    def manual_seed(self, seed):
        from ._creation import manual_seed
        manual_seed(seed)
        return super().manual_seed(seed)


default_generator = _DefaultGenerator()


def seed():
    """Seed the generators from fresh entropy; returns the seed (PyTorch's torch.seed)."""
    import random
    s = random.getrandbits(63)
    default_generator.manual_seed(s)
    return s


def initial_seed():
    return default_generator.initial_seed()


_switches = {"deterministic": False, "warn_only": False, "matmul_precision": "highest"}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Kept for programs that set it: pygpu's kernels give the same result for the same device
    and thread count, so there is no nondeterministic algorithm to refuse."""
    _switches["deterministic"], _switches["warn_only"] = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _switches["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _switches["warn_only"]


def set_float32_matmul_precision(precision):
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision {precision!r}: use 'highest', 'high' or 'medium'")
    _switches["matmul_precision"] = precision


def get_float32_matmul_precision():
    return _switches["matmul_precision"]


def scalar_tensor(value, dtype=None, device=None, requires_grad=False):
    from ._creation import tensor
    from ._dtype import float32
    t = tensor(float(value), dtype=dtype or float32, device=device)
    return t.requires_grad_(True) if requires_grad else t


def as_tensor(data, dtype=None, device=None):
    """A tensor sharing data's memory where it can (a tensor of the same dtype and device is
    returned as it is), else a copy (PyTorch's as_tensor)."""
    from ._creation import tensor
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (device or dtype) else data
    return tensor(data, dtype=dtype, device=device)


def functions():
    """The torch.* functions of this module (only those pygpu does not define elsewhere)."""
    from ._train_ops import cat
    out = {name: _function(name) for name in
           ("eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
            "not_equal", "clone", "detach", "reshape", "ravel", "is_floating_point",
            "is_nonzero", "is_same_size", "is_signed", "bitwise_not")}
    from .autograd.grad_mode import inference_mode, is_inference_mode_enabled
    out.update(inference_mode=inference_mode, is_inference_mode_enabled=is_inference_mode_enabled)
    out.update(concat=cat, concatenate=cat, scalar_tensor=scalar_tensor, as_tensor=as_tensor,
               asarray=as_tensor, Generator=Generator, default_generator=default_generator,
               seed=seed, initial_seed=initial_seed,
               use_deterministic_algorithms=use_deterministic_algorithms,
               are_deterministic_algorithms_enabled=are_deterministic_algorithms_enabled,
               is_deterministic_algorithms_warn_only_enabled=(
                   is_deterministic_algorithms_warn_only_enabled),
               set_float32_matmul_precision=set_float32_matmul_precision,
               get_float32_matmul_precision=get_float32_matmul_precision,
               e=math.e, pi=math.pi, inf=math.inf, nan=math.nan, newaxis=None)
    return out
