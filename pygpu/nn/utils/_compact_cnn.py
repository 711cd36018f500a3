"""prune.compact for convolutional chains: the output channels that structured pruning
zeroed (ln_structured(conv, "weight", amount, n, dim=0)) cut out of each Conv2d, with the
matching channels of the BatchNorm2d after it and the matching input channels of the next
Conv2d or Linear (through a Flatten: each channel's block of H*W columns).

A pruned channel j of a convolution outputs a constant plane c_j = b_j (0 without a bias).
What follows it before the next convolution or Linear acts on each channel alone and keeps
a plane constant: BatchNorm2d with its running statistics (eval: the compacted model's
outputs equal the model's in eval(), the mode it is made for), ReLU/Tanh/Sigmoid, max
pooling, adaptive average pooling, average pooling without padding (or with a zero
constant), Dropout (the identity in eval). The constant's contribution is then folded into
the next layer's bias: a Conv2d without padding (every output sees every tap) adds
sum(W[:, j]) * c_j, a Linear after a Flatten adds W[:, block_j].sum(1) * c_j. Where it cannot
be folded (a padded next convolution, no next bias) and c_j is not zero, the channel stays.
Input channels of the next layer that are all zero (dim=1 pruning) go too. Grouped
convolutions are not cut (their channels are tied to the groups): refused by name."""
import copy

import numpy as np

from ..._tensor import create as _tensor_create
from ..conv import Conv2d
from ..dropout import Dropout
from ..flatten import Flatten
from ..layers import Linear, ReLU, Sequential, Sigmoid, Tanh
from ..module import Module
from ..normalization import BatchNorm2d
from ..parameter import Parameter
from ..pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from ._compact_common import _ACT_FNS, _effective, _host

_PASS = (ReLU, Tanh, Sigmoid, MaxPool2d, AdaptiveAvgPool2d, AvgPool2d, Dropout, BatchNorm2d)


def is_cnn(model):
    return any(type(m) is Conv2d for m in model._modules.values())


class _Layer:
    """A Conv2d's or Linear's effective weight and bias on the host, float64."""

    def __init__(self, mod):
        self.mod = mod
        self.w, self.ref = _effective(mod, "weight")
        self.b, _ = _effective(mod, "bias")


def _param(a, ref):
    t = _tensor_create.tensor(np.ascontiguousarray(a, dtype=np.float32))
    if t.dtype != ref.dtype:
        t = t.astype(ref.dtype)
    if ref.device.type != "cpu":
        t = t.to(ref.device)
    return Parameter(t, requires_grad=ref.requires_grad)


def _buffer(a, ref):
    t = _tensor_create.tensor(np.ascontiguousarray(a)).astype(ref.dtype)
    return t.to(ref.device) if ref.device.type != "cpu" else t


def _through(mods, c, channels):
    """The constants c (one per channel) after the per-channel modules `mods`, or None where
    a module does not keep a plane constant (an average pooling's zero padding)."""
    c = c.copy()
    ok = np.ones_like(c, dtype=bool)
    for m in mods:
        if type(m) is BatchNorm2d:
            rm, rv = _host(m.running_mean), _host(m.running_var)
            w = _host(m.weight) if m.weight is not None else np.ones(channels)
            b = _host(m.bias) if m.bias is not None else np.zeros(channels)
            c = (c - rm) / np.sqrt(rv + m.eps) * w + b
        elif type(m) in _ACT_FNS:
            c = _ACT_FNS[type(m)](c)
        elif type(m) is AvgPool2d:
            pad = m.padding if isinstance(m.padding, tuple) else (m.padding, m.padding)
            if any(pad) and m.count_include_pad:
                ok &= c == 0
    return c, ok


def _pads(conv):
    return conv.padding != "valid" and (conv.padding == "same" or any(conv.padding))


def compact_cnn(model):
    mods = list(model._modules.values())
    for idx, m in enumerate(mods):
        if type(m) is Conv2d and (m.groups != 1 or m.padding_mode != "zeros"):
            raise TypeError(f"compact: Sequential child {idx} is a grouped or non-zero-padded "
                            "Conv2d, whose channels compact cannot cut")
        if type(m) not in (Conv2d, Linear, Flatten) + _PASS:
            raise TypeError(f"compact: Sequential child {idx} is a {type(m).__name__}; compact "
                            "handles Conv2d, BatchNorm2d, ReLU/Tanh/Sigmoid, MaxPool2d, "
                            "AvgPool2d, AdaptiveAvgPool2d, Dropout, Flatten and Linear")
    prod = [i for i, m in enumerate(mods) if type(m) in (Conv2d, Linear)]
    layers = {i: _Layer(mods[i]) for i in prod}
    keep_bn = {}
    for a, b in zip(prod, prod[1:]):
        cur, nxt = layers[a], layers[b]
        if type(mods[a]) is not Conv2d:
            continue  # Linear -> Linear chains: prune.compact's MLP rule is not repeated here
        between = mods[a + 1:b]
        C = cur.w.shape[0]
        flat = any(type(m) is Flatten for m in between)
        if type(mods[b]) is Linear and not flat:
            raise TypeError("compact: a Conv2d followed by a Linear needs a Flatten between")
        block = nxt.w.shape[1] // C if flat else None
        c0 = cur.b.copy() if cur.b is not None else np.zeros(C)
        c, foldable = _through([m for m in between if type(m) is not Flatten], c0, C)
        dead = ~cur.w.reshape(C, -1).any(axis=1)
        if flat:
            cols = nxt.w.reshape(nxt.w.shape[0], C, block)
            unused = ~cols.any(axis=(0, 2))
            contrib = cols.sum(axis=2)  # (out, C)
        else:
            unused = ~nxt.w.any(axis=(0, 2, 3))
            contrib = nxt.w.sum(axis=(2, 3))
            if _pads(mods[b]):
                foldable &= c == 0  # a padded border sees fewer taps: not a constant
        if nxt.b is None:
            foldable &= c == 0
        drop = (dead & foldable) | unused
        if drop.all():
            drop[0] = False
        fold = drop & ~unused
        if fold.any():
            nxt.b = nxt.b + contrib[:, fold] @ c[fold]
        keep = ~drop
        cur.w, cur.b = cur.w[keep], (cur.b[keep] if cur.b is not None else None)
        nxt.w = (cols[:, keep].reshape(nxt.w.shape[0], -1) if flat else nxt.w[:, keep])
        for i in range(a + 1, b):
            if type(mods[i]) is BatchNorm2d:
                keep_bn[i] = keep
    new = []
    for i, m in enumerate(mods):
        if i in layers:
            new.append(_rebuild(layers[i]))
        elif type(m) is BatchNorm2d:
            new.append(_bn(m, keep_bn.get(i)))
        else:
            new.append(copy.deepcopy(m))  # stateless, but not shared with the model
    return Sequential(*new)


def _rebuild(layer):
    m, ref = layer.mod, layer.ref
    out = type(m).__new__(type(m))
    Module.__init__(out)
    if type(m) is Linear:
        out.out_features, out.in_features = layer.w.shape
    else:
        for k in ("kernel_size", "stride", "padding", "dilation", "output_padding", "groups",
                  "padding_mode"):
            setattr(out, k, getattr(m, k))
        out.out_channels, out.in_channels = layer.w.shape[0], layer.w.shape[1]
    out.weight = _param(layer.w, ref)
    if layer.b is not None:
        out.bias = _param(layer.b, ref)
    else:
        out.register_parameter("bias", None)
    return out


def _bn(m, keep):
    out = BatchNorm2d.__new__(BatchNorm2d)
    Module.__init__(out)
    for k in ("eps", "momentum", "affine", "track_running_stats"):
        setattr(out, k, getattr(m, k))
    sel = keep if keep is not None else np.ones(m.num_features, dtype=bool)
    out.num_features = int(sel.sum())
    for name in ("weight", "bias"):
        p = getattr(m, name)
        if p is None:
            out.register_parameter(name, None)
        else:
            setattr(out, name, _param(_host(p)[sel], p))
    for name in ("running_mean", "running_var"):
        b = getattr(m, name)
        out.register_buffer(name, None if b is None else _buffer(_host(b)[sel], b))
    nbt = m.num_batches_tracked
    out.register_buffer("num_batches_tracked", None if nbt is None else nbt.clone())
    return out
