"""Batch norm folded into the convolution before it, for inference (issue 45): nn.Sequential
runs Conv2d -> BatchNorm2d (-> ReLU / ReLU6) as one convolution with the folded weight and
bias, then the activation in place on its output, when nothing can see the convolution's own
output (a Sequential's pair, no hooks), no gradient is wanted (no_grad / inference_mode) and
the batch norm normalizes with its running statistics (eval). The module's parameters,
buffers and state_dict are untouched: the folded weight and bias are computed from them and
kept beside the Sequential, recomputed when any source tensor is replaced, given new data
(.data =, .to(), .double(): its data pointer, dtype, device, shape) or written in place (its
_version; the cache holds a view of each source's old storage, so that memory cannot come
back under the same address for another tensor). Under a node-graph capture (pygpu.cpu.graph,
compile's reduce-overhead) and off cpu and sim (a CUDA graph may be capturing) the fold is
computed in the call, not taken from the cache, so that a replay reads the parameters
themselves and follows their later writes. Results agree with the unfolded layers to float32 rounding: the weight is
scaled before the products are summed instead of after.

    w' (O, C/g, kh, kw) = w * s[o],   b' (O) = (b_conv - running_mean) * s + beta,
    s = gamma / sqrt(running_var + eps)   (gamma = 1, beta = 0 without affine)
"""
from .. import _C
from .._ops._common import fused
from ..autograd import is_grad_enabled, no_grad


def foldable(conv, bn):
    """Whether conv's output may be replaced by the folded convolution's: plain Conv2d and
    BatchNorm2d modules (no subclass) without hooks, bn in eval with running statistics over
    conv's output channels, one dtype and device, no gradient wanted."""
    # the classes' own _fold_role (a subclass's __dict__ lacks it): no import of conv.py or
    # normalization.py, which sit above this module (layers.py imports it)
    if (vars(type(conv)).get("_fold_role") != "conv" or
            vars(type(bn)).get("_fold_role") != "batch_norm" or is_grad_enabled()):
        return False
    if bn.training or bn.running_mean is None or bn.running_var is None or \
            conv._has_hooks() or bn._has_hooks() or bn.num_features != conv.out_channels:
        return False
    w = conv.weight
    return all(t is None or (t.dtype == w.dtype and t.device == w.device)
               for t in (conv.bias, bn.weight, bn.bias, bn.running_mean, bn.running_var)) and \
        fused("CLAMP", w)  # float32 / float64 (the fold's own arithmetic)


def _sources(conv, bn):
    return (conv.weight, conv.bias, bn.weight, bn.bias, bn.running_mean, bn.running_var)


def _key(conv, bn):
    """Each source: (the tensor, its state), the state what a write or new data changes."""
    return tuple((t, None if t is None else
                  (t._version, t.data_ptr(), t.dtype, t.device, tuple(t.shape)))
                 for t in _sources(conv, bn)) + ((None, float(bn.eps)),)


def _same(a, b):
    return len(a) == len(b) and all(x[0] is y[0] and x[1] == y[1] for x, y in zip(a, b))


def folded(cache, conv, bn):
    """(w', b') for the pair, from `cache` (a dict the caller keeps) while its sources stand."""
    keep = conv.weight.device.type in ("cpu", "sim") and not _C._graph_capturing()
    key = _key(conv, bn)
    hit = cache.get(id(conv)) if keep else None
    if hit is not None and _same(hit[0], key):
        return hit[1]
    with no_grad():
        w, cb, gamma, beta, rm, rv = _sources(conv, bn)
        s = 1.0 / (rv + bn.eps).sqrt()
        if gamma is not None:
            s = s * gamma
        shift = ((cb - rm) if cb is not None else rm * -1.0) * s
        if beta is not None:
            shift = shift + beta
        weight = w * s.reshape(-1, *([1] * (w.ndim - 1)))
    if keep:
        pins = tuple(t.detach() for t in _sources(conv, bn) if t is not None)  # see the top
        cache[id(conv)] = (key, (weight, shift), pins)
    return weight, shift


def conv_bn(cache, conv, bn, x, act=None):
    """conv then bn (then act: None, "relu" or "relu6", in place) as one folded convolution."""
    weight, shift = folded(cache, conv, bn)
    y = conv._conv(x, weight, shift)
    if act == "relu":
        return y.relu_()
    if act == "relu6":
        from .functional import hardtanh
        return hardtanh(y, 0.0, 6.0, inplace=True)
    return y
