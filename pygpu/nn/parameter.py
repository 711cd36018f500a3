"""nn.Parameter: a leaf tensor that requires grad and that a Module registers; nn.Buffer,
a tensor a Module registers as a buffer; UninitializedParameter/UninitializedBuffer, the
tensors-to-be of lazy modules (pygpu/nn/lazy.py).

pygpu.Tensor is a C type that cannot be subclassed, so Parameter is a factory
that flags the tensor (`_is_param`); `isinstance(t, nn.Parameter)` checks the
flag, so code written for PyTorch's Parameter class reads the same."""
from .. import _C


class _ParameterMeta(type):
    def __instancecheck__(cls, obj):
        # an UninitializedParameter is one too (its subclass in PyTorch)
        return (isinstance(obj, _C.Tensor) and obj._is_param) or isinstance(
            obj, UninitializedParameter)


class Parameter(metaclass=_ParameterMeta):
    """Parameter(data, requires_grad=True) -> a Tensor sharing data's memory,
    a leaf flagged as a parameter."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .._tensor.create import empty
            data = empty(0)
        if not isinstance(data, _C.Tensor):
            raise TypeError(f"Parameter: data must be a pygpu.Tensor, got {type(data).__name__}")
        p = data.detach()
        p._is_param = True
        p.requires_grad_(bool(requires_grad))
        return p


class _BufferMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Tensor) and obj._buffer_kind != 0


class Buffer(metaclass=_BufferMeta):
    """Buffer(data=None, *, persistent=True) -> a Tensor sharing data's memory, flagged as a
    buffer: assigned as a Module attribute, it registers as one (in state_dict unless
    persistent=False), as register_buffer would. isinstance(t, nn.Buffer) reads the flag."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from .._tensor.create import empty
            data = empty(0)
        if not isinstance(data, _C.Tensor):
            raise TypeError(f"Buffer: data must be a pygpu.Tensor, got {type(data).__name__}")
        t = data.detach().requires_grad_(data.requires_grad)
        t._buffer_kind = 1 if persistent else 2
        return t


_UNINITIALIZED_USE = ("Attempted to use an uninitialized parameter in {}. This error happens "
                      "when you are using a `LazyModule` or explicitly manipulating "
                      "`torch.nn.parameter.UninitializedParameter` objects. When using "
                      "LazyModules Call `forward` with a dummy batch to initialize the "
                      "parameters before calling torch functions")


class UninitializedUseError(ValueError, AttributeError):
    """Using a tensor-to-be: PyTorch's ValueError (an AttributeError too, so that
    getattr(p, name, default) answers the default)."""


class _Uninitialized:
    """What UninitializedParameter and UninitializedBuffer share: a tensor-to-be that
    knows its device, dtype and requires_grad but has no shape or memory yet. pygpu.Tensor
    is a C type that cannot change its class, so materialize() returns the new tensor
    (PyTorch turns the object itself into one); the lazy modules put it in its place.
    Anything else asked of it raises PyTorch's ValueError."""
    cls_to_become = None

    def __init__(self, requires_grad=True, device=None, dtype=None):
        self.requires_grad = bool(requires_grad)
        self.device, self.dtype = device, dtype
        self.grad = None

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error "
            "usually happens in `load_state_dict` when trying to load an uninitialized "
            "parameter into an initialized one. Call `forward` to initialize the parameters "
            "before accessing their attributes.")

    def size(self, dim=None):
        return self.shape

    def to(self, *args, **kwargs):
        """Record a device and/or dtype for the tensor materialize() will make."""
        from .._dtype import DType as _dtype_cls
        for a in list(args) + [kwargs.get("device"), kwargs.get("dtype")]:
            if isinstance(a, _dtype_cls):
                self.dtype = a
            elif a is not None and not isinstance(a, (bool, _C.Tensor)):
                self.device = a
            elif isinstance(a, _C.Tensor):
                self.device, self.dtype = a.device, a.dtype
        return self

    def cpu(self):
        return self.to("cpu")

    def detach(self):
        return self  # a state_dict keeps it as it is

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = bool(requires_grad)
        return self

    def materialize(self, shape, device=None, dtype=None):
        """The uninitialised tensor of `shape` (on device, of dtype: default this object's)
        that takes this object's place."""
        from .._tensor.create import empty
        t = empty(tuple(shape), device=self.device if device is None else device,
                  dtype=self.dtype if dtype is None else dtype)
        return self._become(t)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise UninitializedUseError(_UNINITIALIZED_USE.format(name))

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad, self.device, self.dtype))


class UninitializedParameter(_Uninitialized):
    """UninitializedParameter(requires_grad=True, device=None, dtype=None): a parameter
    whose shape a lazy module learns from its first input. isinstance(p, nn.Parameter) is
    True, as in PyTorch (a subclass there)."""

    def _become(self, t):
        return Parameter(t, self.requires_grad)


UninitializedParameter.cls_to_become = Parameter


class UninitializedBuffer(_Uninitialized):
    """UninitializedBuffer(requires_grad=False, device=None, dtype=None, persistent=True): a
    buffer whose shape a lazy module learns from its first input."""

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        super().__init__(requires_grad, device, dtype)
        self.persistent = persistent

    def _become(self, t):
        return t.requires_grad_(self.requires_grad)


UninitializedBuffer.cls_to_become = _C.Tensor


def is_lazy(param):
    """Whether param is an UninitializedParameter or UninitializedBuffer."""
    return isinstance(param, _Uninitialized)
