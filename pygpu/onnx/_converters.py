"""The ONNX converters of pygpu's layers: one function per module type, in one table.

The tracer (_trace.py) records a call of a module whose type (or a base whose forward it
keeps) has a row here as one op, and the ops inside it not at all; other modules are traced
op by op (_op_converters.py). A converter gets the graph being built (_graph.Graph, with
node(), weight() and const()), the module, the value names of its input tensors and the
names its outputs must have, and the call's inputs (for shapes). A layer added to pygpu.nn
later adds its row with register(ModuleType)(fn)."""
import math

from .. import nn

CONVERTERS = {}


def register(*module_types):
    """@register(nn.Conv2d) def convert(g, module, inputs, outputs, example_inputs): ..."""
    def add(fn):
        for t in module_types:
            CONVERTERS[t] = fn
        return fn
    return add


@register(nn.Linear)
def _linear(g, m, x, y, example):
    w = g.weight(m.weight, "weight")  # (out, in): Gemm's B with transB, MatMul's for N-d
    if example[0].ndim == 2:
        ins = [x[0], w] + ([g.weight(m.bias, "bias")] if m.bias is not None else [])
        g.node("Gemm", ins, y, transB=1)
        return
    wt = g.fresh("weight_t")
    g.node("Transpose", [w], [wt], perm=[1, 0])
    if m.bias is None:
        g.node("MatMul", [x[0], wt], y)
        return
    mm = g.fresh("matmul")
    g.node("MatMul", [x[0], wt], [mm])
    g.node("Add", [mm, g.weight(m.bias, "bias")], y)


def _unary(op, **attrs):
    def convert(g, m, x, y, example):
        g.node(op, x, y, **attrs)
    return convert


register(nn.ReLU)(_unary("Relu"))
register(nn.Tanh)(_unary("Tanh"))
register(nn.Sigmoid)(_unary("Sigmoid"))
register(nn.Identity)(_unary("Identity"))
register(nn.Dropout)(_unary("Identity"))  # exported in eval mode: the identity


@register(nn.LeakyReLU)
def _leaky_relu(g, m, x, y, example):
    g.node("LeakyRelu", x, y, alpha=float(m.negative_slope))


@register(nn.ELU)
def _elu(g, m, x, y, example):
    g.node("Elu", x, y, alpha=float(m.alpha))


@register(nn.SiLU)
def _silu(g, m, x, y, example):
    s = g.fresh("sigmoid")
    g.node("Sigmoid", x, [s])
    g.node("Mul", [x[0], s], y)


@register(nn.GELU)
def _gelu(g, m, x, y, example):
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh form; opset 20's Gelu op is not assumed."""
    half = g.const(0.5, "half", "float32")
    one = g.const(1.0, "one", "float32")
    inner = g.fresh("gelu_inner")
    if m.approximate == "tanh":
        c = g.const(math.sqrt(2.0 / math.pi), "c", "float32")
        k = g.const(0.044715, "k", "float32")
        x3, kx3, s, cs = (g.fresh(n) for n in ("x3", "kx3", "s", "cs"))
        three = g.const(3.0, "three", "float32")
        g.node("Pow", [x[0], three], [x3])
        g.node("Mul", [x3, k], [kx3])
        g.node("Add", [x[0], kx3], [s])
        g.node("Mul", [s, c], [cs])
        g.node("Tanh", [cs], [inner])
    else:
        r = g.const(1.0 / math.sqrt(2.0), "rsqrt2", "float32")
        xs = g.fresh("x_scaled")
        g.node("Mul", [x[0], r], [xs])
        g.node("Erf", [xs], [inner])
    p1, hx = g.fresh("one_plus"), g.fresh("half_x")
    g.node("Add", [inner, one], [p1])
    g.node("Mul", [x[0], half], [hx])
    g.node("Mul", [hx, p1], y)


def _softmax_axis(m, example):
    d = m.dim if m.dim is not None else (0 if example[0].ndim in (0, 1, 3) else 1)
    return d


@register(nn.Softmax)
def _softmax(g, m, x, y, example):
    g.node("Softmax", x, y, axis=_softmax_axis(m, example))


@register(nn.LogSoftmax)
def _log_softmax(g, m, x, y, example):
    g.node("LogSoftmax", x, y, axis=_softmax_axis(m, example))


@register(nn.Flatten)
def _flatten(g, m, x, y, example):
    nd = example[0].ndim
    s, e = m.start_dim % max(nd, 1), m.end_dim % max(nd, 1)
    shape = list(example[0].shape)
    new = [0] * s + [-1] + [0] * (nd - e - 1)  # 0 copies the input's size (batch stays free)
    if not shape[s:e + 1]:
        g.node("Identity", x, y)
        return
    g.node("Reshape", [x[0], g.const(new, "shape")], y)


@register(nn.LayerNorm)
def _layer_norm(g, m, x, y, example):
    n = len(m.normalized_shape)
    import numpy as np
    w = (g.weight(m.weight, "ln_weight") if m.weight is not None
         else g.const(np.ones(m.normalized_shape), "ln_weight", "float32"))
    ins = [x[0], w] + ([g.weight(m.bias, "ln_bias")] if getattr(m, "bias", None) is not None
                       else [])
    g.node("LayerNormalization", ins, y, axis=-n, epsilon=float(m.eps))


@register(nn.BatchNorm1d)
def _batch_norm(g, m, x, y, example):
    import numpy as np
    c = m.num_features
    scale = g.weight(m.weight, "bn_scale") if m.affine else g.const(np.ones(c), "bn_scale",
                                                                    "float32")
    bias = g.weight(m.bias, "bn_bias") if m.affine else g.const(np.zeros(c), "bn_bias",
                                                                "float32")
    if m.running_mean is None:
        raise NotImplementedError("onnx.export: BatchNorm1d without running statistics "
                                  "(track_running_stats=False) normalizes by the batch's own")
    ins = [x[0], scale, bias, g.weight(m.running_mean, "bn_mean"),
           g.weight(m.running_var, "bn_var")]
    g.node("BatchNormalization", ins, y, epsilon=float(m.eps))


@register(nn.Embedding)
def _embedding(g, m, x, y, example):
    g.node("Gather", [g.weight(m.weight, "embedding"), x[0]], y, axis=0)


# ---- convolution and pooling (issue 35's layers) ------------------------------------------

def _pair(v, n):
    return list(v) if isinstance(v, (tuple, list)) else [int(v)] * n


def _conv_pads(m, n, example):
    """ONNX pads [begin..., end...] for PyTorch's padding (ints, 'valid' or 'same')."""
    if m.padding == "valid":
        return [0] * (2 * n)
    if m.padding == "same":
        total = [d * (k - 1) for d, k in zip(_pair(m.dilation, n), _pair(m.kernel_size, n))]
        return [t // 2 for t in total] + [t - t // 2 for t in total]
    p = _pair(m.padding, n)
    return p + p


def _conv(g, m, x, y, example):
    n = example[0].ndim - 2
    if m.padding_mode != "zeros":
        raise NotImplementedError(f"onnx.export: {type(m).__name__}(padding_mode="
                                  f"{m.padding_mode!r}) is not converted (zeros only)")
    ins = [x[0], g.weight(m.weight, "conv_weight")]
    if m.bias is not None:
        ins.append(g.weight(m.bias, "conv_bias"))
    g.node("Conv", ins, y, kernel_shape=_pair(m.kernel_size, n), strides=_pair(m.stride, n),
           dilations=_pair(m.dilation, n), group=int(m.groups), pads=_conv_pads(m, n, example))


def _max_pool(g, m, x, y, example):
    n = example[0].ndim - 2
    if m.return_indices:
        raise NotImplementedError("onnx.export: max pooling with return_indices=True")
    p = _pair(m.padding, n)
    g.node("MaxPool", x, y, kernel_shape=_pair(m.kernel_size, n), strides=_pair(m.stride, n),
           pads=p + p, dilations=_pair(m.dilation, n), ceil_mode=int(bool(m.ceil_mode)))


def _avg_pool(g, m, x, y, example):
    n = example[0].ndim - 2
    if getattr(m, "divisor_override", None) is not None:
        raise NotImplementedError("onnx.export: average pooling with divisor_override")
    p = _pair(m.padding, n)
    g.node("AveragePool", x, y, kernel_shape=_pair(m.kernel_size, n), strides=_pair(m.stride, n),
           pads=p + p, ceil_mode=int(bool(m.ceil_mode)),
           count_include_pad=int(bool(getattr(m, "count_include_pad", True))))


def _adaptive_avg_pool(g, m, x, y, example):
    size = _pair(m.output_size, example[0].ndim - 2)
    if any(s != 1 for s in size):
        raise NotImplementedError(f"onnx.export: adaptive average pooling to {m.output_size} "
                                  f"(only to 1, global average pooling, is converted)")
    g.node("GlobalAveragePool", x, y)


for _names, _fn in ((("Conv1d", "Conv2d", "Conv3d"), _conv),
                    (("MaxPool1d", "MaxPool2d", "MaxPool3d"), _max_pool),
                    (("AvgPool1d", "AvgPool2d", "AvgPool3d"), _avg_pool),
                    (("AdaptiveAvgPool1d", "AdaptiveAvgPool2d"), _adaptive_avg_pool),
                    (("BatchNorm2d", "BatchNorm3d"), _batch_norm)):
    for _name in _names:  # the layers this pygpu has (issue 35's branch adds them)
        if hasattr(nn, _name):
            register(getattr(nn, _name))(_fn)
