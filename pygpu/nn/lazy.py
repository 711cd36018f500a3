"""Lazy modules: layers whose input size (in_features, in_channels, num_features) is read
from the first input, as PyTorch's LazyLinear, LazyConv*, LazyConvTranspose*,
LazyBatchNorm* and LazyInstanceNorm*.

Until the first call the parameters and buffers that depend on that size are
UninitializedParameter/UninitializedBuffer (pygpu/nn/parameter.py). The first call (a
forward pre-hook) materializes them, initialises them as the eager layer does
(reset_parameters), and the module becomes that layer (its class is cls_to_become).
load_state_dict before the first call takes the checkpoint's shapes; state_dict before it
holds the uninitialised objects themselves. Build optimizers after the first call: the
materialized tensors are new objects (pygpu.Tensor cannot change its class in place)."""
import itertools

from ..autograd import no_grad
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .layers import Linear
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d,
                            InstanceNorm2d, InstanceNorm3d)
from .parameter import UninitializedBuffer, UninitializedParameter, is_lazy


class LazyModuleMixin:
    """Materialize-on-first-call: a subclass defines initialize_parameters(input)."""
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        object.__setattr__(self, "_initialize_hook",
                           self.register_forward_pre_hook(self._infer_parameters))

    def _materialize(self, name, shape):
        """Put the tensor of `shape` in place of the uninitialised `name`."""
        for table in (self._parameters, self._buffers):
            if name in table and is_lazy(table[name]):
                table[name] = table[name].materialize(shape)

    def _lazy_load_hook(self, state_dict, prefix):
        """load_state_dict: each uninitialised entry the checkpoint holds initialised takes
        its shape (the copy follows)."""
        for name, value in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and value is not None and is_lazy(value) \
                    and not is_lazy(state_dict[key]):
                with no_grad():
                    self._materialize(name, tuple(state_dict[key].shape))
        if not self.has_uninitialized_params():
            self._lazy_size_from_params()

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self):
        """Whether a parameter or buffer is still uninitialised."""
        return any(is_lazy(v) for v in
                   itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module, args):
        module.initialize_parameters(*args)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {type(self).__name__} has not been fully initialized")
        module._initialize_hook.remove()
        del module.__dict__["_initialize_hook"]
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")


class LazyLinear(LazyModuleMixin, Linear):
    """LazyLinear(out_features, bias=True, device=None, dtype=None): a Linear whose
    in_features is the last size of its first input."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(1, out_features, False, device, dtype)
        self.in_features = 0
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            Linear.reset_parameters(self)

    def _lazy_size_from_params(self):
        self.in_features = self.weight.shape[-1]

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self._materialize("weight", (self.out_features, self.in_features))
                if self.bias is not None:
                    self._materialize("bias", (self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:
            self.in_features = input.shape[-1]


class _LazyConvXdMixin(LazyModuleMixin):
    """in_channels from the first input's channel axis (axis 0 when unbatched)."""

    def _lazy_conv_init(self, out_channels, bias, device, dtype):
        self.in_channels = 0
        self.out_channels = out_channels
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            type(self).cls_to_become.reset_parameters(self)

    def _lazy_size_from_params(self):
        w = self.weight.shape
        self.in_channels = w[0] if self.transposed else w[1] * self.groups

    def _get_in_channels(self, input):
        n = self._n + 1
        if input.ndim not in (n, n + 1):
            raise RuntimeError(f"Expected {n}D (unbatched) or {n + 1}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: "
                               f"{list(input.shape)}")
        return input.shape[1] if input.ndim == n + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            with no_grad():
                if self.transposed:
                    shape = (self.in_channels, self.out_channels // self.groups)
                else:
                    shape = (self.out_channels, self.in_channels // self.groups)
                self._materialize("weight", shape + tuple(self.kernel_size))
                if self.bias is not None:
                    self._materialize("bias", (self.out_channels,))
                self.reset_parameters()


def _lazy_conv(base, transposed):
    """The Lazy class of the convolution `base`: base's signature without in_channels."""
    if transposed:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                     groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                     dtype=None):
            base.__init__(self, groups, out_channels, kernel_size, stride, padding,
                          output_padding, groups, False, dilation, padding_mode, device, dtype)
            self._lazy_conv_init(out_channels, bias, device, dtype)
    else:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                     groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
            base.__init__(self, groups, out_channels, kernel_size, stride, padding, dilation,
                          groups, False, padding_mode, device, dtype)
            self._lazy_conv_init(out_channels, bias, device, dtype)
    name = "Lazy" + base.__name__

    def init(self, *args, **kwargs):
        __init__(self, *args, **kwargs)
        object.__setattr__(self, "_initialize_hook",
                           self.register_forward_pre_hook(self._infer_parameters))
    init.__doc__ = (f"{name}(out_channels, kernel_size, ...): a {base.__name__} whose "
                    f"in_channels is read from its first input")
    return type(name, (_LazyConvXdMixin, base), {
        "__init__": init, "cls_to_become": base, "__module__": __name__,
        "__doc__": init.__doc__})


LazyConv1d = _lazy_conv(Conv1d, False)
LazyConv2d = _lazy_conv(Conv2d, False)
LazyConv3d = _lazy_conv(Conv3d, False)
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, True)
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, True)
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, True)


class _LazyNormBase(LazyModuleMixin):
    """num_features from the first input's axis 1 (axis 0 for an unbatched instance norm)."""

    def _lazy_norm_init(self, affine, track_running_stats, bias, device, dtype):
        self.num_features = 0
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            from .._tensor import create as _tensor_create
            from .._dtype import int64
            self._buffers["running_mean"] = UninitializedBuffer(device=device, dtype=dtype)
            self._buffers["running_var"] = UninitializedBuffer(device=device, dtype=dtype)
            self._buffers["num_batches_tracked"] = _tensor_create.zeros((), device=device,
                                                                        dtype=int64)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            type(self).cls_to_become.reset_parameters(self)

    def _lazy_size_from_params(self):
        t = self.weight if self.affine else self.running_mean
        if t is not None:
            self.num_features = t.shape[0]

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            unbatched = isinstance(self, _LAZY_INSTANCE) and input.ndim == min(self._dims) - 1
            self.num_features = input.shape[0 if unbatched else 1]
            with no_grad():  # as the eager layer starts: weight 1, bias 0, mean 0, var 1
                for name, value in (("weight", 1.0), ("bias", 0.0), ("running_mean", 0.0),
                                    ("running_var", 1.0)):
                    self._materialize(name, (self.num_features,))
                    t = getattr(self, name)
                    if t is not None:
                        t.fill_(value)


def _lazy_norm(base):
    # affine and track_running_stats default to True for the instance norms too, as
    # PyTorch's lazy classes have them (unlike InstanceNorm*d's own defaults)
    def init(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
             dtype=None, *, bias=True):
        base.__init__(self, 1, eps, momentum, False, False, device, dtype, bias=False)
        self._lazy_norm_init(affine, track_running_stats, bias, device, dtype)
        object.__setattr__(self, "_initialize_hook",
                           self.register_forward_pre_hook(self._infer_parameters))
    name = "Lazy" + base.__name__
    init.__doc__ = (f"{name}(eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, "
                    f"...): a {base.__name__} whose num_features is read from its first input")
    return type(name, (_LazyNormBase, base), {
        "__init__": init, "cls_to_become": base, "__module__": __name__,
        "__doc__": init.__doc__})


LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)
_LAZY_INSTANCE = (LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
