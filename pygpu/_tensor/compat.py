"""PyTorch's other spellings of ops pygpu already has, as Tensor methods and torch.* functions.

Programs write torch.greater(a, b), x.multiply(y), x.ravel(), torch.concat(...), x.eq_(y),
x.new(3, 4), torch.pi: each here is the existing op under PyTorch's second name, or a
one-line composition of existing ops (an in-place comparison is the comparison copied back
into self, in self's dtype, as PyTorch's). No kernel lives here. Also the small process-wide
names programs call on their first lines: torch.Generator, torch.seed/initial_seed and
get/set_rng_state (from pygpu/_random.py), use_deterministic_algorithms and the float32
matmul precision switch (pygpu's kernels are deterministic for a device and thread count;
the switch is kept and reported)."""
import math

from .. import _C, _dtype as _dtype_mod, _random
from .._dtype_info import finfo, iinfo
from .join import cat

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
    from .._legacy import _make
    return _make(self.dtype, args, self.device)


def get_device(self):
    return -1 if self.device.type == "cpu" else self.device.index


def is_signed(self):
    return self.dtype.is_signed  # PyTorch's: bool and uint8 are not


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
    from .._device import device as as_device
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


def _inplace_view(name):
    """x.unsqueeze_(0), x.t_(), ...: the view op's result becomes x itself (same object, new
    shape and strides over the same memory). Refused under autograd on a tensor that requires
    grad: pygpu does not record a view's in-place change of shape."""
    def method(self, *args, **kwargs):
        if self.requires_grad and _C.is_grad_enabled():
            raise RuntimeError(f"{name}_: pygpu does not change the shape of a tensor that "
                               f"requires grad in place; use the out-of-place {name}()")
        self.data = getattr(self, name)(*args, **kwargs)
        return self
    method.__name__ = name + "_"
    return method


def resize_(self, *sizes):
    """PyTorch's resize_: self takes the new shape; the elements that fit keep their values in
    flat order, new ones are uninitialised (a new allocation when the size changes)."""
    from .create import _shape, empty
    shape = _shape(sizes, "resize_")
    n = 1
    for s in shape:
        n *= s
    if n == self.numel():
        self.data = self.reshape(shape)
        return self
    new = empty(shape, dtype=self.dtype, device=self.device)
    keep = min(n, self.numel())
    if keep:
        new.reshape(-1)[:keep] = self.reshape(-1)[:keep]
    self.data = new
    return self


def argwhere(self):
    return self.nonzero()


def ger(self, vec2):
    return self.outer(vec2)


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
                "resize_": resize_, "argwhere": argwhere,
                "ger": ger})
METHODS.update({f"{name}_": _inplace_view(name) for name in
                ("squeeze", "unsqueeze", "t", "transpose", "swapaxes", "swapdims")})


def _softmax_method(name):
    """Tensor.softmax / log_softmax(dim, dtype=None): the composite in pygpu/_ops (issue 46:
    libraries call them as methods, perceiver-pytorch's attention among them)."""
    def method(self, dim=None, dtype=None, *, _stacklevel=3):
        from .. import _ops
        x = self if dtype is None else self.to(dtype)
        return getattr(_ops, name)(x, -1 if dim is None else dim)
    method.__name__ = name
    return method


METHODS.update({"softmax": _softmax_method("softmax"),
                "log_softmax": _softmax_method("log_softmax")})


def _function(name):
    def fn(input, *args, **kwargs):
        return getattr(Tensor, name)(input, *args, **kwargs)
    fn.__name__ = name
    return fn


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
    from .create import tensor
    from .._dtype import float32
    t = tensor(float(value), dtype=dtype or float32, device=device)
    return t.requires_grad_(True) if requires_grad else t


def _wrapped(x):
    """(dtype code, priority) of one operand of torch.result_type: a tensor with dimensions
    (0), a 0-d tensor (1), a Python number (2: bool, int64, or the default float dtype)."""
    from .. import _defaults, _dtype
    if isinstance(x, Tensor):
        return x.dtype._code, 0 if x.ndim else 1
    if isinstance(x, bool):
        return _dtype.bool_._code, 2
    if isinstance(x, int):
        return _dtype.int64._code, 2
    if isinstance(x, float):
        return _defaults.dtype()._code, 2
    if isinstance(x, complex):  # the default dtype's complex (complex64 beside float32)
        return _defaults.dtype().to_complex()._code, 2
    raise TypeError(f"result_type(): expected a Tensor or a Python number, got "
                    f"{x.__class__.__name__}")


def result_type(tensor, other):
    """torch.result_type: the dtype an elementwise op of the two gives (PyTorch's promotion:
    c10's table over the operands with dimensions, then 0-d tensors, then Python numbers,
    a lower priority counting only when its category is higher: pg_dtype.h)."""
    from .. import _dtype
    return _dtype.ALL[_C._result_type([_wrapped(tensor), _wrapped(other)])]


promote_types, can_cast = _dtype_mod.promote_types, _dtype_mod.can_cast


def as_tensor(data, dtype=None, device=None):
    """A tensor sharing data's memory where it can (a tensor of the same dtype and device is
    returned as it is), else a copy (PyTorch's as_tensor)."""
    from .create import tensor
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (device or dtype) else data
    return tensor(data, dtype=dtype, device=device)


def functions():
    """The torch.* functions of this module (only those pygpu does not define elsewhere)."""
    out = {name: _function(name) for name in
           ("eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
            "not_equal", "clone", "detach", "reshape", "ravel", "is_floating_point",
            "is_nonzero", "is_same_size", "is_signed", "bitwise_not")}
    from ..autograd.grad_mode import inference_mode, is_inference_mode_enabled
    out.update(inference_mode=inference_mode, is_inference_mode_enabled=is_inference_mode_enabled)
    out.update(finfo=finfo, iinfo=iinfo, result_type=result_type, promote_types=promote_types,
               can_cast=can_cast, argwhere=_function("argwhere"), ger=_function("ger"))
    out.update(concat=cat, concatenate=cat, scalar_tensor=scalar_tensor, as_tensor=as_tensor,
               asarray=as_tensor, Generator=_random.Generator,
               default_generator=_random.default_generator, seed=_random.seed,
               initial_seed=_random.initial_seed, get_rng_state=_random.get_rng_state,
               set_rng_state=_random.set_rng_state,
               use_deterministic_algorithms=use_deterministic_algorithms,
               are_deterministic_algorithms_enabled=are_deterministic_algorithms_enabled,
               is_deterministic_algorithms_warn_only_enabled=(
                   is_deterministic_algorithms_warn_only_enabled),
               set_float32_matmul_precision=set_float32_matmul_precision,
               get_float32_matmul_precision=get_float32_matmul_precision,
               e=math.e, pi=math.pi, inf=math.inf, nan=math.nan, newaxis=None)
    return out
