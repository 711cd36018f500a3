"""einops on pygpu tensors, without aliasing torch: a backend einops finds on its own.

einops.get_backend(x) looks through the subclasses of einops._backends.AbstractBackend for
one whose framework_name is an imported module and whose is_appropriate_type(x) holds. So
pygpu defines PygpuBackend (framework_name "pygpu") as soon as einops._backends exists:
at once if einops was imported before pygpu, else right after einops._backends is first
imported (a finder on sys.meta_path that wraps that one module's loader and then removes
itself). Every einops function (rearrange, reduce, repeat, einsum, pack, unpack, ...) then
runs on pygpu's tensor ops, with their gradients. layers() gives einops' Rearrange,
Reduce and EinMix as pygpu.nn.Modules (einops' own mixins over pygpu's Module)."""
import importlib.abc
import importlib.machinery
import sys

from . import _C

_BACKEND = None


def _define():
    global _BACKEND
    if _BACKEND is not None:
        return _BACKEND
    from einops._backends import AbstractBackend

    class PygpuBackend(AbstractBackend):
        framework_name = "pygpu"

        def is_appropriate_type(self, tensor):
            return isinstance(tensor, _C.Tensor)

        def from_numpy(self, x):
            t = _C.from_numpy(x)
            return t.requires_grad_(True) if t.dtype.is_floating_point else t

        def to_numpy(self, x):
            return x.detach().cpu().numpy()

        def arange(self, start, stop):
            from ._dtype import int64
            from ._tensor.create import arange
            return arange(start, stop, dtype=int64)

        def shape(self, x):
            return tuple(x.shape)

        def reshape(self, x, shape):
            return x.reshape(shape)

        def reduce(self, x, operation, reduced_axes):
            if operation in ("min", "max"):
                return getattr(x, "a" + operation)(dim=tuple(reduced_axes))
            if operation in ("sum", "mean"):
                return getattr(x, operation)(dim=tuple(reduced_axes))
            if operation in ("any", "all", "prod"):
                for i in sorted(reduced_axes)[::-1]:
                    x = getattr(x, operation)(dim=i)
                return x
            raise NotImplementedError("Unknown reduction ", operation)

        def transpose(self, x, axes):
            return x.permute(tuple(axes))

        def stack_on_zeroth_dimension(self, tensors):
            from ._tensor.join import stack
            return stack(list(tensors))

        def add_axis(self, x, new_position):
            return x.unsqueeze(new_position)

        def add_axes(self, x, n_axes, pos2len):
            repeats = [-1] * n_axes
            for axis_position, axis_length in pos2len.items():
                x = self.add_axis(x, axis_position)
                repeats[axis_position] = axis_length
            return x.expand(*repeats)

        def tile(self, x, repeats):
            return x.repeat(*repeats)

        def concat(self, tensors, axis):
            from ._tensor.join import cat
            return cat(list(tensors), dim=axis)

        def is_float_type(self, x):
            return x.dtype.is_floating_point

        def layers(self):
            return _layers()

        def einsum(self, pattern, *x):
            from ._tensor.products import einsum
            return einsum(pattern, *x)

    _BACKEND = PygpuBackend
    return PygpuBackend


_LAYERS = None


def _layers():
    """einops.layers' Rearrange, Reduce and EinMix as pygpu modules (a namespace)."""
    global _LAYERS
    if _LAYERS is not None:
        return _LAYERS
    import types
    from einops.layers import RearrangeMixin, ReduceMixin
    from einops.layers._einmix import _EinmixMixin

    from .nn.module import Module
    from .nn.parameter import Parameter

    class Rearrange(RearrangeMixin, Module):
        def forward(self, input):
            return self._apply_recipe(input)

    class Reduce(ReduceMixin, Module):
        def forward(self, input):
            return self._apply_recipe(input)

    class EinMix(_EinmixMixin, Module):
        def _create_parameters(self, weight_shape, weight_bound, bias_shape, bias_bound):
            from ._tensor.create import rand
            self.weight = Parameter(rand(*weight_shape) * (2 * weight_bound) - weight_bound)
            self.bias = None if bias_shape is None else \
                Parameter(rand(*bias_shape) * (2 * bias_bound) - bias_bound)

        def _create_rearrange_layers(self, pre_reshape_pattern, pre_reshape_lengths,
                                     post_reshape_pattern, post_reshape_lengths):
            self.pre_rearrange = None if pre_reshape_pattern is None else \
                Rearrange(pre_reshape_pattern, **(pre_reshape_lengths or {}))
            self.post_rearrange = None if post_reshape_pattern is None else \
                Rearrange(post_reshape_pattern, **(post_reshape_lengths or {}))

        def forward(self, input):
            from ._tensor.products import einsum
            if self.pre_rearrange is not None:
                input = self.pre_rearrange(input)
            result = einsum(self.einsum_pattern, input, self.weight)
            if self.bias is not None:
                result = result + self.bias
            if self.post_rearrange is not None:
                result = self.post_rearrange(result)
            return result

    for cls in (Rearrange, Reduce, EinMix):
        cls.__module__ = "pygpu.einops_layers"
    _LAYERS = types.SimpleNamespace(Rearrange=Rearrange, Reduce=Reduce, EinMix=EinMix)
    return _LAYERS


class _AfterEinopsBackends(importlib.abc.MetaPathFinder):
    """Defines the backend right after einops._backends executes, then leaves sys.meta_path."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "einops._backends":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            _remove_hook()
            _define()
        loader.exec_module = exec_module
        return spec


_HOOK = _AfterEinopsBackends()


def _remove_hook():
    try:
        sys.meta_path.remove(_HOOK)
    except ValueError:
        pass


def install():
    """Called once by pygpu/__init__.py."""
    if "einops._backends" in sys.modules:
        _define()
    elif _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)
