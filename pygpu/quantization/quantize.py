"""quantize_dynamic, prepare and convert: PyTorch's eager-mode quantization flow.

  quantize_dynamic(model, {nn.Linear}, dtype=qint8)  every chosen Linear becomes
      nn.quantized.dynamic.Linear (int8 weights, activations quantized per call).
  prepare(model, observer=MinMaxObserver)             every chosen Linear is wrapped in an
      ObservedLinear that records its input and output; run calibration batches through it.
  convert(prepared)                                   each ObservedLinear becomes a static
      nn.quantized.Linear with the calibrated scales; consecutive int8 layers of a
      Sequential or an MLP pass u8 to each other (requantized in the GEMM's epilogue).

The spec (qconfig_spec) picks the layers, as PyTorch's qconfig dicts do: a set of types
(nn.Linear), or a dict whose keys are types or module names ("layers.2") and whose values
are pygpu.qint8 (quantize) or None (keep float); a name beats a type. A Linear followed by
ReLU/Tanh/Sigmoid in a Sequential is fused: the activation runs in the int8 layer's
epilogue and its module becomes nn.quantized.Identity. inplace=False (the default) leaves
the float model as it was."""
import copy
from collections import OrderedDict

from .. import _C
from ..nn import layers as _layers
from ..nn.module import Module
from ..nn.parameter import Parameter
from ._qtensor import QDType, qint8
from .observer import MinMaxObserver, ObserverBase

# the activation modules the int8 layers fuse: the op table's PG_ACT rows, as nn.Sequential
# fuses them into the float linear layers (nn/layers.py)
_FUSABLE = _layers._FUSABLE


# ---- the spec -------------------------------------------------------------------------------

def _check_dtype(dtype, who):
    if dtype is qint8:
        return
    if isinstance(dtype, QDType) or hasattr(dtype, "itemsize") or isinstance(dtype, str):
        raise ValueError(f"{who}: dtype must be pygpu.qint8 (int8 weights; activations are "
                         f"quint8), got {dtype}; float64, float32 and quint8 weights are not "
                         "supported")
    raise TypeError(f"{who}: dtype must be pygpu.qint8, got {type(dtype).__name__}")


def _normalize_spec(spec, who, dtype):
    """(types: set, names: {name: bool})"""
    if spec is None:
        spec = {_layers.Linear}
    items = spec.items() if isinstance(spec, dict) else ((k, dtype) for k in spec)
    types, names = set(), {}
    for key, val in items:
        on = val is not None and val is not False
        if on and val is not True:
            _check_dtype(val, who)
        if isinstance(key, str):
            names[key] = on
        elif isinstance(key, type):
            if not issubclass(key, _layers.Linear):
                raise TypeError(f"{who}: {key.__name__} in the spec is not a Linear; only "
                                "nn.Linear layers can be quantized (give types such as "
                                "nn.Linear, or module names)")
            if on:
                types.add(key)
        else:
            raise TypeError(f"{who}: spec keys must be module types or names, got "
                            f"{type(key).__name__}")
    return types, names


def _selected(model, types, names, who):
    """{name: module} of the Linear layers to quantize."""
    found = dict(model.named_modules())
    for n, on in names.items():
        if n not in found:
            raise ValueError(f"{who}: the spec names {n!r}, which is not a module of the model "
                             f"(its modules: {[k for k in found if k][:12]})")
        if on and not isinstance(found[n], _layers.Linear):
            raise TypeError(f"{who}: {n!r} in the spec is a {type(found[n]).__name__}, not a "
                            "Linear; only nn.Linear layers can be quantized")
    out = {}
    for n, m in found.items():
        if not isinstance(m, _layers.Linear):
            continue
        on = names.get(n, any(isinstance(m, t) for t in types))
        if on:
            out[n] = m
    return out


# ---- walking and copying ---------------------------------------------------------------------

def _copy_module(m):
    """A copy of a module tree with its own parameters and buffers (pygpu tensors cannot be
    deep-copied)."""
    new = copy.copy(m)
    object.__setattr__(new, "_parameters", OrderedDict(
        (k, None if p is None else Parameter(p.detach().clone(), p.requires_grad))
        for k, p in m._parameters.items()))
    object.__setattr__(new, "_buffers", OrderedDict(
        (k, b.clone() if isinstance(b, _C.Tensor) else b) for k, b in m._buffers.items()))
    object.__setattr__(new, "_modules", OrderedDict(
        (k, None if c is None else _copy_module(c)) for k, c in m._modules.items()))
    return new


def _parent_of(model, name):
    parts = name.split(".")
    parent = model
    for p in parts[:-1]:
        parent = parent._modules[p]
    return parent, parts[-1]


def _replace(model, name, new):
    if name == "":
        return new
    parent, leaf = _parent_of(model, name)
    parent._modules[leaf] = new
    return model


def _fused_activation(model, name):
    """(activation, the activation module's name) if `name` is followed by an activation
    module the op table's PG_ACT rows name (ReLU, Tanh, Sigmoid, LeakyReLU at its default
    slope) in a Sequential, else (None, None)."""
    if not name:
        return None, None
    parent, leaf = _parent_of(model, name)
    if not isinstance(parent, _layers.Sequential):
        return None, None
    keys = list(parent._modules)
    i = keys.index(leaf)
    nxt = parent._modules[keys[i + 1]] if i + 1 < len(keys) else None
    if type(nxt) in _FUSABLE and _layers._fusable_as_row(nxt):
        prefix = name[: -len(leaf)]
        return _FUSABLE[type(nxt)], prefix + keys[i + 1]
    return None, None


def _start(model, who, inplace):
    if not isinstance(model, Module):
        raise TypeError(f"{who}: expected a pygpu.nn.Module, got {type(model).__name__}")
    return model if inplace else _copy_module(model)


# ---- dynamic ------------------------------------------------------------------------------------

def quantize_dynamic(model, qconfig_spec=None, dtype=qint8, inplace=False):
    """The model with each chosen Linear replaced by nn.quantized.dynamic.Linear."""
    from ..nn.quantized import Identity, dynamic
    who = "quantize_dynamic"
    _check_dtype(dtype, who)
    types, names = _normalize_spec(qconfig_spec, who, dtype)
    model = _start(model, who, inplace)
    for name, lin in _selected(model, types, names, who).items():
        act, act_name = _fused_activation(model, name)
        model = _replace(model, name, dynamic.Linear.from_float(lin, activation=act))
        if act_name:
            model = _replace(model, act_name, Identity())
    return model


# ---- static: prepare, calibrate, convert ---------------------------------------------------------

class ObservedLinear(Module):
    """A float Linear with observers on its input and its (activated) output: what prepare()
    puts in the model; calibration batches run through it in float32, as before."""

    def __init__(self, linear, observer, activation=None):
        super().__init__()
        self.linear = linear
        self.activation = activation
        self.input_observer = observer()
        self.output_observer = observer()
        if not isinstance(self.input_observer, ObserverBase):
            raise TypeError("prepare: observer must make pygpu.quantization observers (e.g. "
                            f"MinMaxObserver), got {type(self.input_observer).__name__}")

    def forward(self, x, activation=None):
        act = self.activation if activation is None else activation
        self.input_observer(x)
        return self.output_observer(self.linear(x, activation=act))


def prepare(model, observer=MinMaxObserver, qconfig_spec=None, inplace=False):
    """The model with observers on each chosen Linear's input and output.
    observer: an observer class or a factory (e.g. functools.partial(HistogramObserver,
    method="percentile"))."""
    from ..nn.quantized import Identity
    who = "prepare"
    if not callable(observer):
        raise TypeError(f"{who}: observer must be an observer class or factory, got "
                        f"{type(observer).__name__}")
    types, names = _normalize_spec(qconfig_spec, who, qint8)
    model = _start(model, who, inplace)
    for name, lin in _selected(model, types, names, who).items():
        act, act_name = _fused_activation(model, name)
        model = _replace(model, name, ObservedLinear(lin, observer, act))
        if act_name:
            model = _replace(model, act_name, Identity())
    return model


def _chains(model):
    """Pairs (producer name, consumer name) of ObservedLinear layers that follow each other
    directly in a Sequential (Identity between them) or in an MLP's layer list."""
    from ..nn.quantized import Identity
    pairs = []
    for pname, parent in model.named_modules():
        if isinstance(parent, _layers.Sequential):
            seq = [(k, m) for k, m in parent._modules.items() if not isinstance(m, Identity)]
        elif isinstance(parent, _layers.MLP):
            seq = [("layers." + k, m) for k, m in parent.layers._modules.items()]
        else:
            continue
        pre = pname + "." if pname else ""
        for (ka, a), (kb, b) in zip(seq, seq[1:]):
            if isinstance(a, ObservedLinear) and isinstance(b, ObservedLinear):
                pairs.append((pre + ka, pre + kb))
    return pairs


def convert(prepared, inplace=False):
    """Each ObservedLinear -> a static nn.quantized.Linear with its calibrated qparams."""
    from ..nn import quantized
    who = "convert"
    if not isinstance(prepared, Module):
        raise TypeError(f"{who}: expected a model from pygpu.quantization.prepare, got "
                        f"{type(prepared).__name__}")
    observed = {n: m for n, m in prepared.named_modules() if isinstance(m, ObservedLinear)}
    if not observed:
        raise ValueError(f"{who}: the model has no observed layers; call "
                         "pygpu.quantization.prepare(model) first, then run calibration batches")
    for n, m in observed.items():
        if m.input_observer.batches_seen == 0:
            raise ValueError(f"{who}: layer {n or '(the model)'!r} has seen no calibration batch; "
                             "run the prepared model on representative data (a few batches) "
                             "before convert()")
    qp = {n: (m.input_observer.calculate_qparams(), m.output_observer.calculate_qparams())
          for n, m in observed.items()}
    emit = set()
    for a, b in _chains(prepared):
        emit.add(a)
        qp[b] = (qp[a][1], qp[b][1])  # b reads a's u8 output: a's output qparams are b's input's
    model = _start(prepared, who, inplace)
    for n in observed:
        m = dict(model.named_modules())[n]
        q = quantized.Linear.from_observed(m.linear, qp[n][0], qp[n][1], activation=m.activation,
                                           emit_int8=n in emit)
        model = _replace(model, n, q)
    return model
