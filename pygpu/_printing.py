"""Printing tensors as PyTorch prints them, and set_printoptions.

    tensor([0.2858, 0.4472], grad_fn=<AddBackward0>)
    tensor([[1, 2]], device='sim:0')
    tensor([1., 2.], dtype=torch.float64, requires_grad=True)

The layout follows PyTorch's documented printing (torch.set_printoptions): floats with
`precision` decimals (4), integral float tensors as `1.`, scientific notation when the
finite nonzero magnitudes span more than 1000x or pass 1e8 or fall below 1e-4; every
element padded to the widest; lines wrapped at `linewidth` (80); tensors of more than
`threshold` (1000) elements summarized to `edgeitems` (3) per edge with `...`. The dtype
is shown when it is not the default for its kind (float32, int64, bool), the device when
it is not cpu, then grad_fn or requires_grad. A device tensor is copied to the host to be
printed: one implicit transfer, counted with the trigger "repr"."""
import math

import numpy as np

_DEFAULTS = dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)
_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)}
options = dict(_DEFAULTS)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """PyTorch's torch.set_printoptions: a profile ("default", "short", "full") first,
    then each option given; sci_mode True/False forces or forbids scientific notation,
    None lets the values decide."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}: use one of "
                             f"{', '.join(_PROFILES)}")
        options.update(_PROFILES[profile])
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            options[key] = value
    options["sci_mode"] = sci_mode


def get_printoptions():
    return dict(options)


class _Formatter:
    """One format for every element shown: the width of the widest."""

    def __init__(self, values, floating):
        self.floating, self.int_mode, self.sci_mode = floating, True, False
        prec = options["precision"]
        if not floating:
            self.width = max((len(str(v)) for v in values), default=1)
            return
        finite = values[np.isfinite(values)]
        nonzero = np.abs(finite[finite != 0])
        if nonzero.size:
            lo, hi = float(nonzero.min()), float(nonzero.max())
            self.int_mode = bool(np.all(nonzero == np.ceil(nonzero)))
            if self.int_mode:
                self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
            else:
                self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        if options["sci_mode"] is not None:
            self.sci_mode = options["sci_mode"]
        self.prec = prec
        self.width = max((len(self._text(float(v))) for v in values), default=1)

    def _text(self, v):
        if not self.floating:
            return str(v)
        if math.isnan(v) or math.isinf(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        if self.sci_mode:
            return f"{v:.{self.prec}e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.{self.prec}f}"

    def format(self, v):
        if not self.floating:
            text = str(v)
        else:
            text = self._text(float(v))
        return " " * (self.width - len(text)) + text


def _bool_text(v):
    return "True" if v else "False"


def _vector(arr, indent, summarize, fmt):
    edge = options["edgeitems"]
    if summarize and arr.shape[0] > 2 * edge:
        items = [fmt(v) for v in arr[:edge]] + [" ..."] + [fmt(v) for v in arr[-edge:]]
    else:
        items = [fmt(v) for v in arr]
    width = max((len(s) for s in items), default=1) + 2
    per_line = max(1, (options["linewidth"] - indent) // width)
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(arr, indent, summarize, fmt):
    if arr.ndim == 0:
        return fmt(arr.item())
    if arr.ndim == 1:
        return _vector(arr, indent, summarize, fmt)
    edge = options["edgeitems"]
    n = arr.shape[0]
    if summarize and n > 2 * edge:
        parts = [_nested(arr[i], indent + 1, summarize, fmt) for i in range(edge)]
        parts += ["..."] + [_nested(arr[i], indent + 1, summarize, fmt)
                            for i in range(n - edge, n)]
    else:
        parts = [_nested(arr[i], indent + 1, summarize, fmt) for i in range(n)]
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def _shown(arr, summarize):
    """The elements printing shows (every one, or the edges of each axis): the formatter's
    width comes from these only, as PyTorch's does."""
    if not summarize or arr.ndim == 0:
        return arr.reshape(-1)
    edge = options["edgeitems"]
    for axis in range(arr.ndim):
        if arr.shape[axis] > 2 * edge:
            idx = list(range(edge)) + list(range(arr.shape[axis] - edge, arr.shape[axis]))
            arr = np.take(arr, idx, axis=axis)
    return arr.reshape(-1)


def format_values(arr, indent):
    """The bracketed values of a host array, PyTorch's layout."""
    summarize = arr.size > options["threshold"]
    if arr.dtype == np.bool_:
        shown = _shown(arr, summarize)
        width = 5 if shown.size and not shown.all() else 4
        return _nested(arr, indent, summarize,
                       lambda v: " " * (width - len(_bool_text(v))) + _bool_text(v))
    if arr.dtype.kind == "c":  # PyTorch's: the parts' own formatters, "re+imj"
        shown = _shown(arr, summarize)
        fr = _Formatter(shown.real.astype(np.float64), True)
        fi = _Formatter(shown.imag.astype(np.float64), True)

        def complex_text(v):
            im = (fi.format(v.imag) + "j").lstrip()
            re = fr.format(v.real)
            return re + im if im[0] in "+-" else re + "+" + im
        return _nested(arr, indent, summarize, complex_text)
    floating = arr.dtype.kind == "f"
    f = _Formatter(_shown(arr, summarize).astype(np.float64) if floating else
                   _shown(arr, summarize).tolist(), floating)
    return _nested(arr, indent, summarize, f.format)


_DEFAULT_DTYPES = ("float32", "int64", "bool")


# pygpu op name -> PyTorch's, where they differ for the same op (a composite, such as
# mse_loss written as a mean of squares, shows its last op: MeanBackward0)
_TORCH_NAMES = {"MatMul": "Mm", "Reshape": "View", "Linear": "Addmm", "LinearMasked": "Addmm",
                "CrossEntropy": "NllLoss", "LayerNorm": "NativeLayerNorm",
                "AExtreme": "Max"}


def grad_fn_name(node):
    """PyTorch's name of a grad_fn, AddBackward0, from a pygpu node's op name ("Add", or a
    Function class such as "_LogSoftmax")."""
    if node.name in ("CopySlices", "CopyBackwards", "Error"):  # PyTorch prints these as is
        return node.name
    name = node.name.lstrip("_")
    name = name[:-2] if name.endswith("Fn") else name
    return f"{_TORCH_NAMES.get(name, name)}Backward0"


def tensor_repr(t, host):
    """repr(t) from its host copy `host` (a NumPy array; bfloat16 data already widened by
    the caller), or None for a 'meta' tensor, which has no values: tensor(..., size=(2, 3))."""
    from . import _defaults
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    arr = np.asarray(host) if host is not None else None
    dev = t.device
    default_dev = _defaults.device()
    if dev.type != "cpu" and not (default_dev is not None and default_dev == dev):
        suffixes.append(f"device='{dev}'")
    if arr is None:
        body = "..."
        suffixes.append(f"size={tuple(t.shape)}")
    elif arr.size == 0:
        body = "[]"
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
    else:
        body = format_values(arr, indent)
    default_float = _defaults.dtype().name
    default_complex = _defaults.dtype().to_complex().name  # complex64 beside float32
    if t.dtype.name not in ("int64", "bool", default_float, default_complex) or (
            arr is not None and arr.size == 0 and t.dtype.name != default_float):
        suffixes.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name(t.grad_fn)}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return join_suffixes(prefix + body, suffixes, indent)


def join_suffixes(out, suffixes, indent):
    """out + ", suffix" for each, wrapped at the line width as PyTorch's _add_suffixes."""
    last = len(out) - out.rfind("\n") + 1  # PyTorch's count: two more than the line's length
    for s in suffixes:
        if last + len(s) + 2 > options["linewidth"]:
            out += ",\n" + " " * indent + s
            last = indent + len(s)
        else:
            out += ", " + s
            last += len(s) + 2
    return out + ")"


def quantized_repr(q):
    """repr of a quantized tensor (pygpu/quantization/_quantized.py), PyTorch's: the
    dequantized values, then size, dtype, quantization_scheme and its parameters."""
    from . import _defaults
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    dev = q.device
    default_dev = _defaults.device()
    if dev.type != "cpu" and not (default_dev is not None and default_dev == dev):
        suffixes.append(f"device='{dev}'")
    values = q.dequantize()
    arr = np.asarray((values if dev.type == "cpu" else values.cpu()).numpy())
    body = format_values(arr, indent) if arr.size else "[]"
    suffixes += [f"size={tuple(q.shape)}", f"dtype={q.dtype}",
                 f"quantization_scheme={q.qscheme()}"]
    if q.qscheme().per_channel:
        suffixes += [f"scale={q.q_per_channel_scales()!r}",
                     f"zero_point={q.q_per_channel_zero_points()!r}",
                     f"axis={q.q_per_channel_axis()}"]
    else:
        suffixes += [f"scale={q.q_scale()}", f"zero_point={q.q_zero_point()}"]
    return join_suffixes(prefix + body, suffixes, indent)
