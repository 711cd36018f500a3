"""prune.compact(model): a smaller model with the same outputs, without the hidden neurons
that pruning made useless (not in PyTorch).

Structured pruning along dim=0 of a Linear's weight (ln_structured / random_structured on
"weight", dim=0) zeroes whole output neurons; masks alone save no time, since the GEMM still
multiplies the zeros. compact() cuts them out: for each hidden layer between Linear i and
Linear i+1 of a chain, neuron j goes when
  - row j of W_i is all zero: its output is the constant c_j = act(b_j) (act(0) without a
    bias), which is folded into the next layer's bias, b_{i+1} += W_{i+1}[:, j] * c_j
    (so the outputs stay the same even where PyTorch's pruning left the bias); or
  - column j of W_{i+1} is all zero (structured pruning on dim=1 of the next layer): nothing
    reads the neuron.
The model's inputs and outputs are never cut. Masks are applied (weight = orig * mask) and
the reparametrization is dropped in the result; the input model is left as it was.

Topologies handled (anything else is refused with a TypeError naming the module):
  - nn.Sequential whose children are nn.Linear and the elementwise activations nn.ReLU,
    nn.Tanh, nn.Sigmoid, in any order (activations act on each neuron alone, so a neuron's
    constant passes through them);
  - nn.MLP.
A constant that cannot be folded because the next Linear has no bias (and act(b_j) != 0)
keeps its neuron. If every neuron of a layer would go, one stays (a Linear needs >= 1)."""
import numpy as np

from ..._tensor import create as _tensor_create
from ..layers import MLP, Linear, ModuleList, ReLU, Sequential, Sigmoid, Tanh
from ..module import Module
from ..parameter import Parameter
from ._compact_cnn import compact_cnn, is_cnn
from ._compact_common import _ACT_FNS, _effective, _host

_MLP_ACTS = {"relu": ReLU, "tanh": Tanh, "sigmoid": Sigmoid}


class _Layer:
    """A Linear's effective weight (out, in) and bias (out,) on the host, float64."""

    def __init__(self, lin):
        self.w, ref = _effective(lin, "weight")
        self.b, _ = _effective(lin, "bias")
        self.ref = ref  # the parameter whose device, dtype and requires_grad the copy keeps


def _new_linear(layer):
    ref = layer.ref
    lin = Linear.__new__(Linear)
    Module.__init__(lin)  # no random init: the weights are given
    lin.out_features, lin.in_features = layer.w.shape

    def param(a):
        t = _tensor_create.tensor(np.ascontiguousarray(a, dtype=np.float32))
        if t.dtype != ref.dtype:
            t = t.astype(ref.dtype)
        if ref.device.type != "cpu":
            t = t.to(ref.device)
        return Parameter(t, requires_grad=ref.requires_grad)
    lin.weight = param(layer.w)
    if layer.b is not None:
        lin.bias = param(layer.b)
    else:
        lin.register_parameter("bias", None)
    return lin


def _shrink(layers, acts_between):
    """Cut removable hidden neurons in place; layers: [_Layer], acts_between[i]: the
    activation functions between layers[i] and layers[i+1]."""
    for i in range(len(layers) - 1):
        cur, nxt = layers[i], layers[i + 1]
        if cur.w.shape[0] != nxt.w.shape[1]:
            raise ValueError(f"compact: Linear {i} has {cur.w.shape[0]} outputs but the next "
                             f"Linear takes {nxt.w.shape[1]} inputs; the chain is broken")
        const = cur.b.copy() if cur.b is not None else np.zeros(cur.w.shape[0])
        for f in acts_between[i]:
            const = f(const)
        dead_row = ~cur.w.any(axis=1)        # (out_i,) neurons with a constant output
        unused = ~nxt.w.any(axis=0)          # (out_i,) neurons nobody reads
        if nxt.b is None:
            dead_row &= const == 0           # nowhere to fold a nonzero constant
        drop = dead_row | unused
        if drop.all():
            drop[0] = False
        fold = drop & ~unused
        if fold.any():
            nxt.b = nxt.b + nxt.w[:, fold] @ const[fold]
        keep = ~drop
        cur.w = cur.w[keep]
        if cur.b is not None:
            cur.b = cur.b[keep]
        nxt.w = nxt.w[:, keep]


def _compact_sequential(model):
    mods = list(model._modules.values())
    layers, acts_between, pending = [], [], []
    for idx, m in enumerate(mods):
        if type(m) is Linear:
            if layers:
                acts_between.append(pending)
            layers.append(_Layer(m))
            pending = []
        elif type(m) in _ACT_FNS:
            pending.append(_ACT_FNS[type(m)])
        else:
            raise TypeError(f"compact: Sequential child {idx} is a {type(m).__name__}; compact "
                            "handles Sequential chains of nn.Linear, nn.ReLU, nn.Tanh and "
                            "nn.Sigmoid (and nn.MLP) only")
    _shrink(layers, acts_between)
    new, it = [], iter(layers)
    for m in mods:
        new.append(_new_linear(next(it)) if type(m) is Linear else type(m)())
    return Sequential(*new)


def _compact_mlp(model):
    layers = [_Layer(m) for m in model.layers]
    act = _ACT_FNS[_MLP_ACTS[model.activation]]
    _shrink(layers, [[act]] * (len(layers) - 1))
    out = MLP.__new__(MLP)
    Module.__init__(out)
    out.sizes = [layers[0].w.shape[1]] + [layer.w.shape[0] for layer in layers]
    out.activation = model.activation
    out.layers = ModuleList([_new_linear(layer) for layer in layers])
    return out


def compact(model):
    """A new model, smaller, with the same outputs as `model`: hidden neurons whose weight
    row is zero (structured pruning on dim=0) or whose column in the next Linear is zero
    (dim=1) removed, their constant output folded into the next bias. Takes nn.Sequential
    chains of Linear/ReLU/Tanh/Sigmoid and nn.MLP, and convolutional nn.Sequential chains
    (Conv2d, BatchNorm2d, pools, Flatten, Linear: _compact_cnn.py, whose outputs equal the
    model's in eval()); `model` is not modified."""
    if type(model) is Sequential and is_cnn(model):
        out = compact_cnn(model)
    elif type(model) is Sequential:
        out = _compact_sequential(model)
    elif type(model) is MLP:
        out = _compact_mlp(model)
    else:
        raise TypeError(f"compact: cannot compact a {type(model).__name__}; it handles "
                        "nn.Sequential chains of nn.Linear, nn.ReLU, nn.Tanh and nn.Sigmoid, and "
                        "nn.MLP (wrap other models' Linear chains in an nn.Sequential)")
    out.train(model.training)
    return out
