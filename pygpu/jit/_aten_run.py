"""How a node runs from its IR alone: TorchScript kind -> a pygpu call taking the node's
inputs in PyTorch's schema order (aten::add(self, other, alpha), aten::linear(input,
weight, bias), ...).

A traced node keeps the call it recorded (_tracer.py); a node read from IR text (parse_ir,
jit.load) has only its kind, attributes and inputs, and runs through this table. The traced
nodes print their inputs in the same schema order, so a traced graph written as text
(jit.save) reads back into a graph that runs. A kind missing here is refused by jit.save
and raises when a parsed graph reaches it."""
from .. import _C
from .._tensor import create as _create
from .._tensor import join as _join

Tensor = _C.Tensor


def _F():
    from ..nn import functional as F
    return F


def _binary(name):
    """aten::<op>(self, other[, alpha]) as Tensor.<name> (a number as self is made a
    tensor of other's dtype and device)."""
    method = getattr(Tensor, name)

    def run(a, b, alpha=1):
        if alpha != 1:
            b = b * alpha
        if not isinstance(a, Tensor):
            a = _create.tensor(a, dtype=b.dtype, device=b.device)
        return method(a, b)
    return run


def _unary(name):
    return getattr(Tensor, name)


def _reduce(name):
    def run(x, *rest):
        if len(rest) >= 2:  # (dims, keepdim[, dtype])
            return getattr(x, name)(dim=tuple(rest[0]), keepdim=bool(rest[1]))
        return getattr(x, name)()
    return run


def _to(x, device, dtype, *_):
    return x.to(device=device, dtype=dtype)


def _slice(x, dim, start, end, step):
    return x[(slice(None),) * dim + (slice(start, end, step),)]


def _conv(x, w, b, stride, padding, dilation, transposed, output_padding, groups, *_):
    F = _F()
    if transposed:
        return F.conv_transpose2d(x, w, b, tuple(stride), tuple(padding), tuple(output_padding),
                                  groups, tuple(dilation))
    return F.conv2d(x, w, b, tuple(stride), tuple(padding), tuple(dilation), groups)


_RUN = {
    "aten::add": _binary("add"), "aten::sub": _binary("sub"), "aten::mul": _binary("mul"),
    "aten::div": _binary("div"), "aten::pow": _binary("pow"), "aten::matmul": _binary("matmul"),
    "aten::maximum": _binary("maximum"), "aten::minimum": _binary("minimum"),
    "aten::eq": _binary("eq"), "aten::ne": _binary("ne"), "aten::lt": _binary("lt"),
    "aten::le": _binary("le"), "aten::gt": _binary("gt"), "aten::ge": _binary("ge"),
    "aten::relu": _unary("relu"), "aten::sigmoid": _unary("sigmoid"),
    "aten::tanh": _unary("tanh"), "aten::exp": _unary("exp"), "aten::log": _unary("log"),
    "aten::neg": _unary("neg"), "aten::abs": _unary("abs"), "aten::sqrt": _unary("sqrt"),
    "aten::sin": _unary("sin"), "aten::cos": _unary("cos"),
    "aten::gelu": lambda x, approximate="none": _F().gelu(x, approximate=approximate),
    "aten::sum": _reduce("sum"), "aten::mean": _reduce("mean"),
    "aten::linear": lambda x, w, b=None: _F().linear(x, w, b),
    "aten::where": lambda c, x, y: x.where(c, y),
    "aten::rand": lambda size, dtype, layout, device, pin: _create.rand(*size, dtype=dtype,
                                                                        device=device),
    "aten::randn": lambda size, dtype, layout, device, pin: _create.randn(*size, dtype=dtype,
                                                                          device=device),
    "aten::leaky_relu": lambda x, slope=0.01: _F().leaky_relu(x, slope),
    "aten::_convolution": _conv,
    "aten::max_pool2d": lambda x, k, s, p, d, ceil: _F().max_pool2d(x, k, s, p, d, ceil),
    "aten::avg_pool2d": lambda x, k, s, p, ceil, cip, div: _F().avg_pool2d(x, k, s, p, ceil,
                                                                          cip, div),
    "aten::adaptive_avg_pool2d": lambda x, size: _F().adaptive_avg_pool2d(x, size),
    "aten::softmax": lambda x, dim, dtype=None: _F().softmax(x, dim),
    "aten::log_softmax": lambda x, dim, dtype=None: _F().log_softmax(x, dim),
    "aten::cat": lambda ts, dim=0: _join.cat(ts, dim),
    "aten::reshape": lambda x, shape: x.reshape(shape),
    "aten::view": lambda x, shape: x.reshape(shape),
    "aten::permute": lambda x, perm: x.permute(perm),
    "aten::expand": lambda x, size, implicit=False: x.expand(size),
    "aten::select": lambda x, dim, i: x.select(dim, i),
    "aten::slice": _slice,
    "aten::clone": lambda x, fmt=None: x.clone(),
    "aten::to": _to,
    "prim::ListConstruct": lambda *vs: list(vs),
    "prim::TupleConstruct": lambda *vs: tuple(vs),
    "prim::DictConstruct": lambda *vs: dict(zip(vs[::2], vs[1::2])),
}


def runner(node):
    """The call that runs node from its IR (None if pygpu has none for its kind)."""
    kind = node.kind()
    if kind == "prim::Constant":
        value = node._attrs["value"][1] if "value" in node._attrs else None
        return lambda: value
    if kind == "prim::GetAttr":
        name = node.s("name")
        return lambda obj: getattr(obj, name)
    return _RUN.get(kind)
