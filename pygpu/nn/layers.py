"""The layers: Linear, the containers (Sequential, ModuleList, ModuleDict,
ParameterList, ParameterDict) and MLP.

Linear's default initialisation is PyTorch's (Kaiming-uniform with a=sqrt(5):
weight and bias ~ U(-1/sqrt(in), 1/sqrt(in))), drawn from pygpu's Philox
generator on the layer's device, so the same pygpu.manual_seed gives the same
weights on every device. Sequential and MLP run a Linear followed by an
activation as one fused op (nn.functional.linear(..., activation=))."""
import math
import numbers
from collections import OrderedDict

from .._tensor import create as _tensor_create
from .._ops._train import ACT_TABLE
from ..autograd import no_grad
from . import _fold, activation, functional as F
from .activation import ReLU, Sigmoid, Tanh  # noqa: F401 - nn's names
from .module import Module
from .parameter import Parameter

_ACTIVATIONS = tuple(name for name, _, _ in ACT_TABLE)  # the op table's PG_ACT rows


def _uniform(shape, bound, device, dtype):
    with no_grad():
        return _tensor_create.rand(*shape, device=device, dtype=dtype) * (2.0 * bound) - bound


class Linear(Module):
    """y = x @ weight.T + bias; weight (out_features, in_features), bias (out_features,)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        for n, v in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(v, numbers.Integral) or v <= 0:
                raise ValueError(f"Linear: {n} must be a positive int, got {v!r}")
        self.in_features, self.out_features = int(in_features), int(out_features)
        bound = 1.0 / math.sqrt(in_features)
        self.weight = Parameter(_uniform((out_features, in_features), bound, device, dtype))
        if bias:
            self.bias = Parameter(_uniform((out_features,), bound, device, dtype))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self):
        """weight and bias drawn again from U(-1/sqrt(in_features), 1/sqrt(in_features))."""
        from . import init
        bound = 1.0 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x, activation=None):
        if self.__dict__.get("_mask_fused"):  # pruned: the mask goes into the GEMM's pack
            return F.linear(x, self.weight_orig, self.bias, activation, _mask=self.weight_mask)
        return F.linear(x, self.weight, self.bias, activation)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


def _norm_relu_classes():
    from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
    return (BatchNorm1d, BatchNorm2d, BatchNorm3d)


_NORM_RELU = _norm_relu_classes()  # batch norms that fuse a ReLU after them (Sequential)
# the activations a folded Conv2d + BatchNorm2d applies in place on its output (Sequential)
_FOLD_ACTS = {ReLU: "relu", activation.ReLU6: "relu6"}

# the module class each activation row names -> its activation, which a Linear before it fuses
_FUSABLE = {getattr(activation, module): name for name, _, module in ACT_TABLE}


def _fusable_as_row(m):
    """The row fixes a LeakyReLU's slope at PyTorch's default 0.01: another slope runs as
    its own module."""
    return getattr(m, "negative_slope", 0.01) == 0.01


class _Container(Module):
    """What Sequential and ModuleList share: an ordered list of child modules named
    "0", "1", ... (so the parent's parameters() and state_dict() see them), with
    len, iteration, indexing (a slice gives a container of the same kind) and
    append/extend. Subclasses build themselves from a list through _from_list."""

    @classmethod
    def _from_list(cls, modules):
        raise NotImplementedError

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, i):
        mods = list(self._modules.values())
        if isinstance(i, slice):
            return type(self)._from_list(mods[i])
        return mods[i]

    def __setitem__(self, i, module):
        """Replace the i-th child (its name and place are kept), as PyTorch's."""
        keys = list(self._modules)
        setattr(self, keys[i], module)

    def __delitem__(self, i):
        """Drop the i-th child (or a slice); the rest are renumbered "0", "1", ... as
        PyTorch's."""
        keys = list(self._modules)
        for k in (keys[i] if isinstance(i, slice) else [keys[i]]):
            del self._modules[k]
        mods = list(self._modules.values())
        self._modules.clear()
        for j, m in enumerate(mods):
            self._modules[str(j)] = m

    def pop(self, i):
        module = self[i]
        del self[i]
        return module


class Sequential(_Container):
    """Modules applied in order; Linear + activation pairs run as one fused op, and so do
    BatchNorm + ReLU pairs (and BatchNorm + ReLU6 in evaluation); in inference (eval, no
    gradient) Conv2d + BatchNorm2d (+ ReLU / ReLU6) runs as one folded convolution
    (nn/_fold.py)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            self.extend(modules)

    @classmethod
    def _from_list(cls, modules):
        return cls(*modules)

    def forward(self, x):
        mods = list(self._modules.values())
        i = 0
        while i < len(mods):
            m = mods[i]
            nxt = mods[i + 1] if i + 1 < len(mods) else None
            if nxt is not None and _fold.foldable(m, nxt):  # inference: one convolution
                act = mods[i + 2] if i + 2 < len(mods) else None
                act = _FOLD_ACTS.get(type(act)) if act is not None and \
                    not act._has_hooks() else None
                cache = self.__dict__.setdefault("_folded", {})
                x = _fold.conv_bn(cache, m, nxt, x, act)
                i += 3 if act else 2
            elif type(m) is Linear and type(nxt) in _FUSABLE and not m._has_hooks() \
                    and not nxt._has_hooks() and _fusable_as_row(nxt):
                x = m(x, activation=_FUSABLE[type(nxt)])
                i += 2
            elif type(m) in _NORM_RELU and type(nxt) is ReLU and not m._has_hooks() \
                    and not nxt._has_hooks():
                x = m(x, activation="relu")  # one batch norm node each way, ReLU inside
                i += 2
            elif type(m) in _NORM_RELU and type(nxt) is activation.ReLU6 and not m.training \
                    and not m._has_hooks() and not nxt._has_hooks():
                x = m(x, activation="relu6")  # evaluation: one node without a gradient
                i += 2
            else:
                x = m(x)
                i += 1
        return x


class ModuleList(_Container):
    """A list of modules whose parameters the parent module sees."""

    def __init__(self, modules=None):
        super().__init__()
        self.extend(modules or ())

    @classmethod
    def _from_list(cls, modules):
        return cls(modules)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward(); iterate over it in yours")

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        self.extend(mods)

    def _child_lines(self):
        """Runs of identical children collapsed, as PyTorch prints them: (0-2): 3 x Linear(...)."""
        reprs = [repr(m).replace("\n", "\n  ") for m in self._modules.values()]
        lines, i = [], 0
        while i < len(reprs):
            j = i
            while j + 1 < len(reprs) and reprs[j + 1] == reprs[i]:
                j += 1
            lines.append(f"({i}): {reprs[i]}" if j == i else f"({i}-{j}): {j - i + 1} x {reprs[i]}")
            i = j + 1
        return lines


class ModuleDict(Module):
    """An ordered dict of modules whose parameters the parent module sees."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def pop(self, key):
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self.add_module(k, m)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward(); index it in yours")


class ParameterList(Module):
    """A list of Parameters registered as "0", "1", ... (plain tensors become Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def append(self, value):
        self.register_parameter(str(len(self._parameters)), _as_param(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __getitem__(self, i):
        ps = list(self._parameters.values())
        if isinstance(i, slice):
            return ParameterList(ps[i])
        return ps[i]

    def __setitem__(self, i, value):
        self.register_parameter(str(i % len(self)), _as_param(value))

    def extra_repr(self):
        return "\n".join(f"({i}): Parameter containing: [{p.dtype} of size {tuple(p.shape)}"
                         f"{'' if p.device.type == 'cpu' else ' (' + str(p.device) + ')'}]"
                         for i, p in enumerate(self._parameters.values()))


class ParameterDict(Module):
    """A dict of Parameters registered under their keys."""

    def __init__(self, parameters=None):
        super().__init__()
        for k, v in (parameters.items() if hasattr(parameters, "items") else parameters or ()):
            self[k] = v

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        self.register_parameter(key, _as_param(value))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()


def _as_param(value):
    return value if isinstance(value, Parameter) else Parameter(value)


class MLP(Module):
    """MLP(sizes, activation="relu"): Linear layers sizes[0] -> sizes[1] -> ... with the
    activation after every layer but the last (which gives logits). Each hidden layer
    is one fused linear+bias+activation op."""

    def __init__(self, sizes, activation="relu", bias=True, device=None, dtype=None):
        super().__init__()
        sizes = list(sizes)
        if len(sizes) < 2:
            raise ValueError(f"MLP: sizes needs at least an input and an output size, got "
                             f"{sizes}")
        if activation not in _ACTIVATIONS:
            raise ValueError(f"MLP: activation must be one of {_ACTIVATIONS}, got "
                             f"{activation!r}")
        self.sizes, self.activation = sizes, activation
        self.layers = ModuleList([Linear(a, b, bias=bias, device=device, dtype=dtype)
                                  for a, b in zip(sizes[:-1], sizes[1:])])

    def forward(self, x):
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            x = layer(x, activation=None if i == last else self.activation)
        return x

    def extra_repr(self):
        return f"sizes={self.sizes}, activation={self.activation!r}"


class Bilinear(Module):
    """y = x1^T A x2 + b; weight (out_features, in1_features, in2_features), bias
    (out_features,), both U(-1/sqrt(in1), 1/sqrt(in1)) as PyTorch's."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        bound = 1.0 / math.sqrt(in1_features)
        self.weight = Parameter(_uniform((out_features, in1_features, in2_features), bound,
                                         device, dtype))
        if bias:
            self.bias = Parameter(_uniform((out_features,), bound, device, dtype))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self):
        from . import init
        bound = 1.0 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Container(Module):
    """The deprecated nn.Container: a Module holding the modules given as keywords."""

    def __init__(self, **kwargs):
        super().__init__()
        import warnings
        warnings.warn("nn.Container is deprecated. All of it's functionality is now "
                      "implemented in nn.Module. Subclass that instead.", stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)
