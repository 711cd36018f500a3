"""The convolutional layers' differentiable ops: convolution (and its transpose), 2-d
pooling, batch normalization in training, and padding.

One fork, in one place per op: where the tensor's backend runs the CONV, POOL or
BATCH_NORM node (`_C._has_node` asks it, with the convolution's operands and geometry: cpu,
sim and cuda have all three; CONV on cuda runs on cuDNN, whose rules, symmetric padding and
the library loaded, are the cuda backend's supports_node), each op is an autograd Function
calling one C op each way (csrc/core/pg_ops_conv.c, pg_ops_pool.c, pg_ops_norm.c); elsewhere
it is composed from tensor ops that every device runs (index_select gathers the windows, a
matmul applies the weight or the averaging), which autograd differentiates by itself.
Everything here is 2-d over (N, C, H, W); nn.functional's 1-d and unbatched forms reshape
to it (pygpu/nn/_conv.py). A geometry `geom` is (sh, sw, dh, dw, pad_top, pad_bottom,
pad_left, pad_right, groups)."""
import numpy as np

from .. import _C
from .._tensor import create as _tensor_create
from .._dtype import bfloat16, float16, float32, float64, int64
from ..autograd import Function

Tensor = _C.Tensor

# the poolings are POOL rows of csrc/core/pg_subops.def, named by their IDs; each row's flags
# (MAX, ADAPTIVE) and its gradient's ID (its `grad` column) are read from the table
POOL_MAX, POOL_AVG, POOL_ADAPTIVE_AVG, POOL_ADAPTIVE_MAX = (
    "MAX_FWD", "AVG_FWD", "ADAPTIVE_AVG_FWD", "ADAPTIVE_MAX_FWD")
_POOL_ROWS = {row[1]: row for row in _C._subop_table() if row[0] == "POOL"}


def _pool_is(kind, flag):
    """Whether the POOL row `kind` has `flag` ("MAX", "ADAPTIVE")."""
    return flag in _POOL_ROWS[kind][4]


def _half(x):
    return x.dtype is float16 or x.dtype is bfloat16


def _widened(fn, x, *tensors_then_args, n_tensors=0):
    """fn on float16/bfloat16 operands computed in float32 and the result rounded back once
    (autocast's convolutions: the half values multiplied exactly, accumulated in float32,
    as PyTorch's CPU kernels and cuDNN do). The casts are recorded: gradients flow back."""
    dt = x.dtype
    ts = [None if t is None else t.astype(float32) if t.dtype is not float32 else t
          for t in tensors_then_args[:n_tensors]]
    out = fn(x.astype(float32), *ts, *tensors_then_args[n_tensors:])
    if isinstance(out, tuple):
        return (out[0].astype(dt),) + out[1:]
    return out.astype(dt)


def has_node(kind, x, *more):
    """Whether x's backend runs the node `kind` ("POOL", "BATCH_NORM", "CONV" with its weight
    and geometry): float32/float64 (the nodes' dtypes), then the backend's answer for the
    node as the op would launch it (supports_op, supports_node), never the device type."""
    return x.dtype in (float32, float64) and _C._has_node(kind, x, *more)


def _index(values, device):
    return _tensor_create.tensor(np.ascontiguousarray(values, dtype=np.int64), device=device)


# ---- padding ---------------------------------------------------------------------------------

class _ConstantPad(Function):
    """x placed inside a tensor filled with `value`, pads (before, after) per trailing axis
    (negative: cropped); backward: the gradient's matching slice."""

    @staticmethod
    def forward(ctx, x, pads, value):
        shape, src, dst = list(x.shape), [], []
        k = len(pads)
        for i, (lo, hi) in enumerate(pads):
            d = x.ndim - k + i
            n = x.shape[d]
            shape[d] = n + lo + hi
            src.append(slice(max(-lo, 0), n - max(-hi, 0)))
            dst.append(slice(max(lo, 0), max(lo, 0) + (n - max(-lo, 0) - max(-hi, 0))))
        lead = (slice(None),) * (x.ndim - k)
        out = _tensor_create.full(tuple(shape), value, dtype=x.dtype, device=x.device)
        nonempty = all(s.stop > s.start for s in dst)
        if nonempty:
            out[lead + tuple(dst)] = x[lead + tuple(src)]
        ctx.slices = (lead + tuple(src), lead + tuple(dst), tuple(x.shape), nonempty)
        return out

    @staticmethod
    def backward(ctx, g):
        src, dst, shape, nonempty = ctx.slices
        gx = _tensor_create.zeros(shape, dtype=g.dtype, device=g.device)
        if nonempty:
            gx[src] = g[dst]
        return gx, None, None


def _mode_index(n, lo, hi, mode):
    """Source positions along an axis of length n padded by (lo, hi) in `mode`."""
    pos = np.arange(-lo, n + hi)
    if mode == "reflect":
        period = 2 * (n - 1)
        pos = np.abs(pos) % period if period else np.zeros_like(pos)
        pos = np.where(pos >= n, period - pos, pos)
    elif mode == "replicate":
        pos = np.clip(pos, 0, n - 1)
    else:  # circular
        pos = pos % n
    return pos


def pad(input, pad, mode="constant", value=None):
    """PyTorch's F.pad: `pad` is (left, right) of the last axis, then of the one before, ...
    mode: constant (value, default 0; negative pads crop), reflect, replicate, circular."""
    if not isinstance(input, Tensor):
        raise TypeError(f"pad: input must be a pygpu.Tensor, got {type(input).__name__}")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the "
                           "input dimension but got padding length "
                           f"{len(pad)} and input of dimension {input.ndim}")
    pairs = [(pad[2 * (k - 1 - i)], pad[2 * (k - 1 - i) + 1]) for i in range(k)]  # leading first
    if mode == "constant":
        for i, (lo, hi) in enumerate(pairs):
            n = input.shape[input.ndim - k + i]
            if n + lo + hi < 0:
                raise RuntimeError(f"The input size {n}, plus negative padding {lo} and {hi} "
                                   f"resulted in a negative output size, which is invalid. "
                                   f"Check dimension {input.ndim - k + i} of your input.")
        return _ConstantPad.apply(input, tuple(pairs), 0.0 if value is None else float(value))
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value not in (None, 0, 0.0):
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if k > 3 or input.ndim < k + 1:
        raise NotImplementedError(f"Only 2D, 3D, 4D, 5D padding with non-constant padding are "
                                  f"supported for now")
    out = input
    for i, (lo, hi) in enumerate(pairs):
        d = input.ndim - k + i
        n = input.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{d} of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if lo < 0 or hi < 0:
            raise RuntimeError(f"negative padding is not supported with mode {mode}")
        if lo or hi:
            out = out.index_select(d, _index(_mode_index(n, lo, hi, mode), input.device))
    return out


# ---- convolution -----------------------------------------------------------------------------

class _Convolution(Function):
    """y = conv2d(x, w) + b: one CONV node forward; backward: the input gradient
    (BWD_DATA) and the weight and bias gradients (BWD_WEIGHT), each one node, each only
    when wanted."""

    @staticmethod
    def forward(ctx, x, w, b, geom):
        ctx.save(x, w)
        ctx.geom = geom
        ctx.needs = (x.requires_grad, w.requires_grad, b is not None and b.requires_grad)
        return _C._conv2d(x, w, b, geom)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved
        nx, nw, nb = ctx.needs
        dx = dw = db = None
        if nx:
            dx = _C._conv2d_input_backward(g, w, None, tuple(x.shape), ctx.geom)
        if nw or nb:
            dw, db = _C._conv2d_weight_backward(g, x, tuple(w.shape), ctx.geom, nb)
            dw = dw if nw else None
        return dx, dw, db, None


class _ConvolutionTranspose(Function):
    """y = conv_transpose2d(x, w) + b, the input gradient of a convolution whose input is
    y: one BWD_DATA node forward (the bias added in it); backward: dx is that
    convolution's forward of g, dW its weight gradient with the roles of x and g swapped."""

    @staticmethod
    def forward(ctx, x, w, b, geom, out_shape):
        ctx.save(x, w)
        ctx.geom = geom
        ctx.needs = (x.requires_grad, w.requires_grad, b is not None and b.requires_grad)
        return _C._conv2d_input_backward(x, w, b, out_shape, geom)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved
        nx, nw, nb = ctx.needs
        dx = _C._conv2d(g, w, None, ctx.geom) if nx else None
        dw = _C._conv2d_weight_backward(x, g, tuple(w.shape), ctx.geom, False)[0] if nw else None
        db = g.sum(axis=(0, 2, 3)) if nb else None
        return dx, dw, db, None, None


def _windows(x, kh, kw, sh, sw, dh, dw, oh, ow):
    """The (N, C, kh*kw, oh*ow) windows of x (N, C, H, W) (already padded), gathered."""
    N, C, H, W = x.shape
    i = (np.arange(kh) * dh)[:, None, None, None]
    j = (np.arange(kw) * dw)[None, :, None, None]
    r = (np.arange(oh) * sh)[None, None, :, None]
    c = (np.arange(ow) * sw)[None, None, None, :]
    idx = ((r + i) * W + c + j).reshape(-1)
    cols = x.reshape(N, C, H * W).index_select(2, _index(idx, x.device))
    return cols.reshape(N, C, kh * kw, oh * ow)


def _conv_composed(x, w, b, geom):
    sh, sw, dh, dw, pt, pb, pl, pr, G = geom
    N, C, H, W = x.shape
    O, Cg, KH, KW = w.shape
    if pt or pb or pl or pr:
        x = pad(x, (pl, pr, pt, pb))
    Hp, Wp = H + pt + pb, W + pl + pr
    OH, OW = (Hp - dh * (KH - 1) - 1) // sh + 1, (Wp - dw * (KW - 1) - 1) // sw + 1
    K, L = Cg * KH * KW, OH * OW
    cols = _windows(x, KH, KW, sh, sw, dh, dw, OH, OW).reshape(N, G, K, L)
    # one sample needs no permutation (and cuda's reshape of a permuted view with a length-1
    # axis inside fails with "unknown error", where cpu's and sim's do not)
    if N > 1:
        cols = cols.permute(1, 2, 0, 3).contiguous().reshape(G, K, N * L)
    else:
        cols = cols.reshape(G, K, L)
    y = w.reshape(G, O // G, K) @ cols  # (G, O/G, N*L)
    if N > 1:
        y = y.reshape(G, O // G, N, OH, OW).permute(2, 0, 1, 3, 4).contiguous()
    y = y.reshape(N, O, OH, OW)
    return y if b is None else y + b.reshape(1, O, 1, 1)


def _check_composed(x, w, b, geom, bias_channels):
    """What pg_ops_conv.c checks before its node, for the composed path (PyTorch's words)."""
    sh, sw, dh, dw, pt, pb, pl, pr, G = geom
    if w.shape[0] % G:
        raise RuntimeError(f"Given groups={G}, expected weight to be divisible by {G} at "
                           f"dimension 0, but got weight of size {list(w.shape)} instead")
    padded = (x.shape[2] + pt + pb, x.shape[3] + pl + pr)
    span = (dh * (w.shape[2] - 1) + 1, dw * (w.shape[3] - 1) + 1)
    if padded[0] < span[0] or padded[1] < span[1]:
        raise RuntimeError(f"Calculated padded input size per channel: ({padded[0]} x "
                           f"{padded[1]}). Kernel size: ({span[0]} x {span[1]}). Kernel size "
                           f"can't be greater than actual input size")
    if b is not None and (b.ndim != 1 or b.shape[0] != bias_channels):
        raise RuntimeError(f"Given weight of size {list(w.shape)}, expected bias to be "
                           f"1-dimensional with {bias_channels} elements, but got bias of size "
                           f"{list(b.shape)} instead")
    for t, what in ((w, "weight"), (b, "bias")):
        if t is not None and (t.dtype != x.dtype or t.device != x.device):
            raise TypeError(f"conv2d: {what} is {t.dtype} on {t.device} but the input is "
                            f"{x.dtype} on {x.device}")


def conv2d(x, w, b, geom):
    """The 2-d convolution of checked operands (x (N, C, H, W), w (O, C/g, KH, KW))."""
    if _half(x):
        return _widened(conv2d, x, w, b, geom, n_tensors=2)
    if has_node("CONV", x, w, geom):
        return _Convolution.apply(x, w, b, geom)
    _check_composed(x, w, b, geom, w.shape[0])
    return _conv_composed(x, w, b, geom)


def _dilate(x, sh, sw):
    """x (N, C, H, W) with (s - 1) zeros between its elements along H and W."""
    if sh == 1 and sw == 1:
        return x
    N, C, H, W = x.shape
    Hd, Wd = (H - 1) * sh + 1, (W - 1) * sw + 1
    idx = (np.arange(H)[:, None] * sh * Wd + np.arange(W)[None, :] * sw).reshape(-1)
    flat = _tensor_create.zeros((N, C, Hd * Wd), dtype=x.dtype, device=x.device)
    index = _index(idx, x.device).reshape(1, 1, H * W).expand(N, C, H * W)
    return flat.scatter(2, index, x.reshape(N, C, H * W)).reshape(N, C, Hd, Wd)


def conv_transpose2d(x, w, b, geom, out_hw):
    """The transposed 2-d convolution of checked operands: x (N, Cin, H, W),
    w (Cin, Cout/g, KH, KW), to (N, Cout, *out_hw)."""
    if _half(x):
        return _widened(conv_transpose2d, x, w, b, geom, out_hw, n_tensors=2)
    N = x.shape[0]
    G = geom[8]
    Cout = w.shape[1] * G
    out_shape = (N, Cout) + tuple(out_hw)
    if has_node("CONV", x, w, geom, out_shape):  # the input gradient's node
        return _ConvolutionTranspose.apply(x, w, b, geom, out_shape)
    # composed: the convolution of x dilated by the stride, padded by d(k-1) - p (cropped
    # where negative), with the weight's groups transposed and its taps reversed
    if b is not None and (b.ndim != 1 or b.shape[0] != Cout):
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected bias "
                           f"to be 1-dimensional with {Cout} elements, but got bias of size "
                           f"{list(b.shape)} instead")
    return _conv_transpose_composed(x, w, b, geom, out_hw)


def _conv_transpose_composed(x, w, b, geom, out_hw):
    """The convolution of x dilated by the stride, padded by d(k-1) - p (cropped where
    negative), with the weight's groups transposed and its taps reversed."""
    G = geom[8]
    sh, sw, dh, dw, pt, _, pl, _, _ = geom
    Cin, Cg, KH, KW = w.shape
    xd = _dilate(x, sh, sw)
    ph, pw = dh * (KH - 1) - pt, dw * (KW - 1) - pl
    eh = out_hw[0] + 2 * pt - ((xd.shape[2] - 1) + dh * (KH - 1) + 1) + pt
    ew = out_hw[1] + 2 * pl - ((xd.shape[3] - 1) + dw * (KW - 1) + 1) + pl
    xp = pad(xd, (pw, pw + ew - pl, ph, ph + eh - pt))
    wt = w.reshape(G, Cin // G, Cg, KH, KW).permute(0, 2, 1, 3, 4).contiguous().reshape(G * Cg, Cin // G,
                                                                         KH, KW)
    wt = wt.index_select(2, _index(np.arange(KH)[::-1], w.device))
    wt = wt.index_select(3, _index(np.arange(KW)[::-1], w.device))
    return _conv_composed(xp, wt, b, (1, 1, dh, dw, 0, 0, 0, 0, G))


# the fused nodes' composites: their gradients under create_graph=True (autograd/higher_order)
_Convolution.composite = staticmethod(_conv_composed)
_ConvolutionTranspose.composite = staticmethod(
    lambda x, w, b, geom, out_shape: _conv_transpose_composed(x, w, b, geom, out_shape[2:]))


# ---- pooling ---------------------------------------------------------------------------------

class _Pool2d(Function):
    """Max, average or adaptive pooling: one POOL node each way (max: the gradient goes to
    each window's maximum through the saved indices, which forward also appends to
    `indices_out`, a list, for return_indices)."""

    @staticmethod
    def forward(ctx, x, kind, kernel, stride, padding, dilation, out_hw, cip, divisor,
                indices_out):
        y, idx = _C._pool2d(kind, x, kernel, stride, padding, dilation, out_hw, cip, divisor,
                            _pool_is(kind, "MAX"))
        if _pool_is(kind, "MAX"):  # the windows' extent: max backward may scatter if disjoint
            kernel = ((0, 0) if _pool_is(kind, "ADAPTIVE")  # of varying size: may overlap
                      else tuple((k - 1) * d + 1 for k, d in zip(kernel, dilation)))
        ctx.args = (kind, tuple(x.shape), kernel, stride, padding, cip, divisor)
        ctx.idx = idx
        if idx is not None:
            indices_out.append(idx)
        return y

    @staticmethod
    def backward(ctx, g):
        kind, shape, kernel, stride, padding, cip, divisor = ctx.args
        grad = _POOL_ROWS[kind][5][0]  # the row's grad column: its gradient's row
        dx = _C._pool2d_backward(grad, g, ctx.idx, shape, kernel, stride, padding, cip, divisor)
        return (dx,) + (None,) * 9


def _max_composed(x, kernel, stride, padding, dilation, out_hw, adaptive):
    N, C, H, W = x.shape
    OH, OW = out_hw
    if adaptive:  # windows of varying size: each output element by itself, gathered
        hs = [(i * H // OH, -(-(i + 1) * H // OH)) for i in range(OH)]
        ws = [(j * W // OW, -(-(j + 1) * W // OW)) for j in range(OW)]
        kh = max(b - a for a, b in hs)
        kw = max(b - a for a, b in ws)
        pos = np.full((kh * kw, OH * OW), -1, dtype=np.int64)
        for oi, (h0, h1) in enumerate(hs):
            for oj, (w0, w1) in enumerate(ws):
                cells = [r * W + c for r in range(h0, h1) for c in range(w0, w1)]
                cells += [cells[0]] * (kh * kw - len(cells))  # repeats never change a max
                pos[:, oi * OW + oj] = cells
    else:
        kh, kw = kernel
        i = (np.arange(kh) * dilation[0])[:, None, None, None]
        j = (np.arange(kw) * dilation[1])[None, :, None, None]
        r = (np.arange(OH) * stride[0] - padding[0])[None, None, :, None]
        c = (np.arange(OW) * stride[1] - padding[1])[None, None, None, :]
        rr, cc = np.broadcast_arrays(r + i, c + j)
        inside = (rr >= 0) & (rr < H) & (cc >= 0) & (cc < W)
        first = np.argmax(inside.reshape(kh * kw, OH * OW), axis=0)  # some tap is inside
        flat = np.where(inside, rr * W + cc, -1).reshape(kh * kw, OH * OW)
        pos = np.where(flat >= 0, flat, flat[first, np.arange(OH * OW)][None, :])
    cols = x.reshape(N, C, H * W).index_select(2, _index(pos.reshape(-1), x.device))
    cols = cols.reshape(N, C, pos.shape[0], OH * OW)
    k = cols.argmax(axis=2, keepdims=True)  # the first maximum, as PyTorch's kernel
    y = cols.gather(2, k).reshape(N, C, OH, OW)
    table = _index(pos, x.device).reshape(1, 1, pos.shape[0], OH * OW).expand(N, C, pos.shape[0],
                                                                             OH * OW)
    idx = table.gather(2, k).reshape(N, C, OH, OW)
    return y, idx


def _avg_matrix(H, W, kernel, stride, padding, out_hw, cip, divisor, adaptive):
    OH, OW = out_hw
    P = np.zeros((H * W, OH * OW))
    for oh in range(OH):
        for ow in range(OW):
            if adaptive:
                h0, h1 = oh * H // OH, -(-(oh + 1) * H // OH)
                w0, w1 = ow * W // OW, -(-(ow + 1) * W // OW)
                div = (h1 - h0) * (w1 - w0)
            else:
                h0, w0 = oh * stride[0] - padding[0], ow * stride[1] - padding[1]
                h1 = min(h0 + kernel[0], H + padding[0])
                w1 = min(w0 + kernel[1], W + padding[1])
                size = (h1 - h0) * (w1 - w0)
                h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, H), min(w1, W)
                div = divisor or (size if cip else (h1 - h0) * (w1 - w0))
            if h1 > h0 and w1 > w0:
                for r in range(h0, h1):
                    P[r * W + w0:r * W + w1, oh * OW + ow] = 1.0 / div
    return P


def pool2d(x, kind, kernel, stride, padding, dilation, out_hw, cip=True, divisor=0,
           return_indices=False):
    """Pooling of a checked x (N, C, H, W) to (N, C, *out_hw): y, or (y, indices)."""
    is_max = _pool_is(kind, "MAX")
    if _half(x):
        return _widened(pool2d, x, kind, kernel, stride, padding, dilation, out_hw, cip, divisor,
                        return_indices)
    if has_node("POOL", x):
        holder = []
        y = _Pool2d.apply(x, kind, kernel, stride, padding, dilation, out_hw, cip, divisor,
                          holder)
        return (y, holder[0]) if return_indices else y
    if is_max:
        y, idx = _max_composed(x, kernel, stride, padding, dilation, out_hw,
                               _pool_is(kind, "ADAPTIVE"))
        return (y, idx) if return_indices else y
    return _pool_composite(x, kind, kernel, stride, padding, dilation, out_hw, cip, divisor,
                           None)


# ---- batch normalization in training ---------------------------------------------------------

class _BatchNorm(Function):
    """Batch norm with the batch's statistics: one BATCH_NORM node forward (statistics,
    running statistics, output, and a ReLU after it when `relu`: nn.Sequential fuses
    BatchNorm + ReLU), one backward (dx, dweight, dbias; through the ReLU's mask)."""

    @staticmethod
    def forward(ctx, x, w, b, running_mean, running_var, momentum, eps, relu):
        y, save = _C._batch_norm_train(x, w, b, running_mean, running_var, momentum, eps, relu)
        ctx.save(x, w, save, y.detach() if relu else None)
        ctx.needs = (w is not None and w.requires_grad, b is not None and b.requires_grad)
        return y

    @staticmethod
    def backward(ctx, g):
        x, w, save, y = ctx.saved
        dx, dw, db = _C._batch_norm_backward(g, x, w, save, *ctx.needs, y)
        return dx, dw, db, None, None, None, None, None


def _pool_composite(x, kind, kernel, stride, padding, dilation, out_hw, cip, divisor,
                    indices_out):
    if _pool_is(kind, "MAX"):
        return _max_composed(x, kernel, stride, padding, dilation, out_hw,
                             _pool_is(kind, "ADAPTIVE"))[0]
    N, C, H, W = x.shape
    P = _avg_matrix(H, W, kernel, stride, padding, out_hw, cip, divisor,
                    _pool_is(kind, "ADAPTIVE"))
    Pt = _tensor_create.tensor(P, dtype=x.dtype, device=x.device)
    return (x.reshape(N * C, H * W) @ Pt).reshape(N, C, out_hw[0], out_hw[1])


_Pool2d.composite = staticmethod(_pool_composite)


def batch_norm_train(x, w, b, running_mean, running_var, momentum, eps, relu=False):
    """Batch norm of x (N, C, ...) with its batch's statistics; running_mean/running_var
    (or None) updated in place with momentum (running_var with the unbiased variance);
    relu: max(., 0) after it."""
    if _half(x):  # the statistics and the parameters stay float32
        return batch_norm_train(x.astype(float32), w, b, running_mean, running_var, momentum,
                                eps, relu).astype(x.dtype)
    if has_node("BATCH_NORM", x) and all(t is None or (t.dtype == x.dtype and t.device == x.device)
                              for t in (w, b, running_mean, running_var)):
        return _BatchNorm.apply(x, w, b, running_mean, running_var, float(momentum),
                                float(eps), bool(relu))
    out = _batch_norm_composed(x, w, b, running_mean, running_var, momentum, eps)
    return out.relu() if relu else out


def _batch_norm_composed(x, w, b, running_mean, running_var, momentum, eps):
    C = x.shape[1]
    axes = (0,) + tuple(range(2, x.ndim))
    bshape = (1, C) + (1,) * (x.ndim - 2)
    count = x.numel() // C
    mean = x.mean(axis=axes, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=axes, keepdims=True)
    if running_mean is not None and running_var is not None:
        from ..autograd import no_grad
        with no_grad():
            m = float(momentum)
            running_mean.copy_(running_mean * (1.0 - m) +
                               mean.detach().reshape(C).astype(running_mean.dtype) * m)
            unbiased = var.detach().reshape(C) * (count / (count - 1))
            running_var.copy_(running_var * (1.0 - m) + unbiased.astype(running_var.dtype) * m)
    out = d / _C.sqrt(var + eps)
    if w is not None:
        out = out * w.reshape(*bshape)
    if b is not None:
        out = out + b.reshape(*bshape)
    return out


def _batch_norm_composite(x, w, b, running_mean, running_var, momentum, eps, relu):
    """The training-mode batch norm from tensor ops (the running statistics were updated by
    the forward: not again)."""
    out = _batch_norm_composed(x, w, b, None, None, momentum, eps)
    return out.relu() if relu else out


_BatchNorm.composite = staticmethod(_batch_norm_composite)
