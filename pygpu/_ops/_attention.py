"""scaled_dot_product_attention: PyTorch's function as one fused node each way where the
device's backend has the kernel (csrc/core/pg_ops_attention.c: the CPU's tiles over the
GEMM contract with an online softmax, never an L x S buffer), else (a backend without it)
composed of matmul, softmax and dropout with autograd's rules: one fork, here.

Shapes: query (..., Hq, L, E), key (..., Hk, S, E), value (..., Hk, S, Ev) -> (..., Hq, L,
Ev); a 3-d query (N, L, E) has no head axis. attn_mask: bool (True takes part) or float
(added to the scores), broadcastable to (..., Hq, L, S). is_causal keeps key j <= query i
(top-left, PyTorch's), and refuses a mask beside it (as PyTorch's). enable_gqa lets Hq be a multiple of Hk.
A fully masked row gives zeros, as PyTorch's. float32 and float64 run as they are;
float16/bfloat16 (and float32 under an autocast region, whose dtype the result takes, as
PyTorch's CPU autocast lists the op) compute in float32. The mask receives no gradient."""
import math

from .. import _C
from .._tensor.create import arange, rand
from .._dtype import float32, float64
from ..amp.autocast_mode import region_dtype as _autocast_low
from ..autograd import Function

# torch.backends.cuda's attention switches (pygpu/backends/cuda.py sets them): "flash" and
# "mem_efficient" allow the fused kernels (the cuda plugin's "flash_sdp" option, which its
# supports_node reads); "math" allows the composition below, used where a backend declines
# the node (only cuda does, so the switches matter there only, as PyTorch's)
sdp_switches = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}

Tensor = _C.Tensor


class _SDPA(Function):
    """The fused kernel, forward and backward (the backward recomputes the scores)."""

    @staticmethod
    def forward(ctx, q, k, v, mask, scale, causal, p):
        out, lse, seed, offset = _C._sdpa_fwd(q, k, v, mask, scale, causal, p)
        ctx.save(q, k, v, out, lse)
        ctx.mask, ctx.args = mask, (scale, causal, p, seed, offset)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, out, lse = ctx.saved
        scale, causal, p, seed, offset = ctx.args
        dq, dk, dv = _C._sdpa_bwd(q, k, v, ctx.mask, out, g, lse, scale, causal, p, seed, offset)
        return dq, dk, dv, None, None, None, None


def _check(query, key, value, attn_mask, enable_gqa):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention: {name} must be a pygpu.Tensor, got "
                            f"{type(t).__name__}")
    if query.ndim < 2 or key.ndim != query.ndim or value.ndim != query.ndim:
        raise RuntimeError(f"scaled_dot_product_attention: query, key and value must have one "
                           f"rank (at least 2), got {query.ndim}, {key.ndim} and {value.ndim}")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"{list(key.shape[:-2])} but got: {key.shape[-1]} features in key, "
                           f"{query.shape[-1]} in query")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: key has {key.shape[-2]} rows but "
                           f"value has {value.shape[-2]}")
    nb = query.ndim - 2
    for d in range(nb):
        a, b, c = query.shape[d], key.shape[d], value.shape[d]
        heads = d == nb - 1 and query.ndim >= 4
        if b != c or (a != b and not (heads and enable_gqa and b and a % b == 0)):
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b "
                               f"({b}) at non-singleton dimension {d}")
    if attn_mask is not None:
        if not isinstance(attn_mask, Tensor):
            raise TypeError(f"scaled_dot_product_attention: attn_mask must be a pygpu.Tensor, "
                            f"got {type(attn_mask).__name__}")
        if attn_mask.dtype.is_floating_point is False and attn_mask.dtype.name != "bool":
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {attn_mask.dtype} and "
                               f"query.dtype: {query.dtype} instead.")
        want = (*query.shape[:-1], key.shape[-2])
        ms = attn_mask.shape
        if len(ms) > len(want):
            raise RuntimeError(f"attn_mask of shape {tuple(ms)} does not broadcast to the "
                               f"scores' shape {want}")
        for i in range(1, len(ms) + 1):
            if ms[-i] != 1 and ms[-i] != want[-i]:
                raise RuntimeError(f"The size of tensor a ({want[-i]}) must match the size of "
                                   f"tensor b ({ms[-i]}) at non-singleton dimension "
                                   f"{len(want) - i}")


def _as4(t, nb):
    """(..., R, F) with nb batch axes -> (Bt, H, R, F): a view where one exists."""
    if nb == 0:
        return t.reshape(1, 1, *t.shape)
    if nb == 1:
        return t.unsqueeze(1)
    if nb == 2:
        return t
    return t.reshape(-1, *t.shape[-3:])


def _mask4(mask, q_shape, S, nb):
    """The mask as a 4-d tensor broadcastable to (Bt, H, L, S) (leading 1s: views)."""
    nd = nb + 2
    m = mask.reshape(*((1,) * (nd - mask.ndim)), *mask.shape) if mask.ndim < nd else mask
    if nb <= 2:
        return _as4(m, nb)
    full = m.expand(*q_shape[:-1], S) if hasattr(m, "expand") else m
    return full.reshape(-1, *full.shape[-3:])


def bmm(a, b):
    """a (..., M, K) @ b (..., K, N) for batch axes of equal sizes (pygpu's matmul is 3-d)."""
    lead = a.shape[:-2]
    out = a.reshape(-1, *a.shape[-2:]) @ b.reshape(-1, *b.shape[-2:])
    return out.reshape(*lead, *out.shape[-2:])


def _composite(q, k, v, mask, scale, causal, p, group):
    """The same function from recorded tensor ops (a backend without the fused kernel)."""
    if group > 1:  # each key/value head repeated for its group of query heads
        Bt, Hk, S, E = k.shape
        k = k.unsqueeze(2).expand(Bt, Hk, group, S, E).reshape(Bt, Hk * group, S, E)
        v = v.unsqueeze(2).expand(Bt, Hk, group, S, v.shape[3]).reshape(Bt, Hk * group, S,
                                                                        v.shape[3])
    s = bmm(q, k.transpose(-2, -1)) * scale
    L, S = q.shape[-2], k.shape[-2]
    keep = None
    if causal:
        keep = (arange(L, device=q.device).reshape(L, 1) >=
                arange(S, device=q.device).reshape(1, S))
    if mask is not None:
        if mask.dtype.name == "bool":
            keep = mask if keep is None else keep & mask
        else:
            s = s + mask.astype(s.dtype)
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    mx = s.max(axis=-1, keepdims=True).detach()
    mx = mx.masked_fill(mx == float("-inf"), 0.0)
    e = (s - mx).exp()
    w = e / e.sum(axis=-1, keepdims=True).clamp(min=1e-300 if q.dtype is float64 else 1e-38)
    if p > 0:  # nn.functional.dropout's rule (not imported: nn sits above this file)
        keep = rand(*w.shape, device=w.device, dtype=float32) >= p
        w = w * (keep.astype(w.dtype) * (1.0 / (1.0 - p)))
    return bmm(w, v)


def _sdpa_composite(q, k, v, mask, scale, causal, p):
    """The fused node's function from tensor ops, for its gradients under create_graph=True
    (autograd/higher_order.py). With dropout the forward's mask cannot be drawn again."""
    if p > 0:
        raise RuntimeError("scaled_dot_product_attention: the derivative of its backward "
                           "(double backward) with dropout_p > 0 is not implemented in pygpu")
    return _composite(q, k, v, mask, scale, causal, p, q.shape[1] // k.shape[1])


_SDPA.composite = staticmethod(_sdpa_composite)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, with dropout on the weights; one fused
    node each way where the device has the kernel (no L x S buffer)."""
    _check(query, key, value, attn_mask, enable_gqa)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    E = query.shape[-1]
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    nb = query.ndim - 2
    out_dtype = query.dtype
    low = _autocast_low(query.device.type)
    if low is not None and out_dtype is float32:
        out_dtype = low
    work = float64 if query.dtype is float64 else float32
    q, k, v = (t if t.dtype is work else t.astype(work) for t in (query, key, value))
    mask = attn_mask
    if mask is not None and mask.dtype.name != "bool" and mask.dtype is not work:
        mask = mask.astype(work)
    q4, k4, v4 = _as4(q, nb), _as4(k, nb), _as4(v, nb)
    m4 = _mask4(mask, q.shape, k.shape[-2], nb) if mask is not None else None
    # the backend's answer for this node (its dtype; on cuda, the kernel's head dimensions)
    if _C._has_node("SDPA", q4, k4, v4, m4):
        out = _SDPA.apply(q4, k4, v4, m4, scale, bool(is_causal), float(dropout_p))
    else:
        if not sdp_switches["math"]:
            raise RuntimeError("No available kernel. Aborting execution. (the fused attention "
                               "kernels decline this call or are disabled, and "
                               "torch.backends.cuda.enable_math_sdp(False) disabled the math "
                               "implementation)")
        group = q4.shape[1] // k4.shape[1]
        out = _composite(q4, k4, v4, m4, scale, bool(is_causal), float(dropout_p), group)
    out = out.reshape(*query.shape[:-1], value.shape[-1])
    return out if out.dtype is out_dtype else out.astype(out_dtype)

