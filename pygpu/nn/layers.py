"""The layers: Linear, ReLU, Tanh, Sigmoid, Sequential, ModuleList, MLP.

Linear's default initialisation is PyTorch's (Kaiming-uniform with a=sqrt(5):
weight and bias ~ U(-1/sqrt(in), 1/sqrt(in))), drawn from pygpu's Philox
generator on the layer's device, so the same pygpu.manual_seed gives the same
weights on every device. Sequential and MLP run a Linear followed by an
activation as one fused op (nn.functional.linear(..., activation=))."""
import math
import numbers

from .. import _creation
from .._train_ops import ACT_TABLE
from ..autograd import no_grad
from . import functional as F
from .module import Module
from .parameter import Parameter

_ACTIVATIONS = tuple(name for name, _, _ in ACT_TABLE)  # the op table's PG_ACT rows


def _uniform(shape, bound, device, dtype):
    with no_grad():
        return _creation.rand(*shape, device=device, dtype=dtype) * (2.0 * bound) - bound


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

    def forward(self, x, activation=None):
        return F.linear(x, self.weight, self.bias, activation)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class ReLU(Module):
    def forward(self, x):
        return F.relu(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


# the module class each activation row names -> its activation, which a Linear before it fuses
_FUSABLE = {globals()[module]: name for name, _, module in ACT_TABLE}


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


class Sequential(_Container):
    """Modules applied in order; Linear + activation pairs run as one fused op."""

    def __init__(self, *modules):
        super().__init__()
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
            if type(m) is Linear and type(nxt) in _FUSABLE:
                x = m(x, activation=_FUSABLE[type(nxt)])
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
