"""nn.functional.multi_head_attention_forward: the whole multi-head attention of
nn.MultiheadAttention as one function of its weights, with PyTorch's signature, shape
checks and every option: packed or separate input projections, bias_k/bias_v rows, a zero
attention row, static keys and values, attn_mask (2-d or 3-d, bool or additive) and
key_padding_mask, need_weights (averaged or per head) and is_causal.

Sequence-first shapes, as PyTorch's: query (L, N, E) or unbatched (L, E), key and value
(S, N, E_k/E_v). The heads are split by views; with need_weights the weights are computed
explicitly (softmax(q k^T / sqrt(d) + mask)) to be returned, else the attention runs
through F.scaled_dot_product_attention (one fused node each way where the device has it)."""
import math

from .. import _C
from .._tensor.create import zeros
from .._tensor.join import cat
from .._dtype import float32, float64
from .._ops._attention import bmm, scaled_dot_product_attention
from .._ops._conv import pad
from .._ops._train import linear
from ._activations import dropout, softmax

Tensor = _C.Tensor


def _bool_to_float(mask, dtype, name):
    """A mask where True means "not allowed" (MultiheadAttention's convention) as the
    additive float mask (-inf there, 0 elsewhere); a float mask as it is."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"MultiheadAttention: {name} must be a pygpu.Tensor, got "
                        f"{type(mask).__name__}")
    if mask.dtype.name == "bool":
        return zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask,
                                                                              float("-inf"))
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask.astype(dtype) if mask.dtype is not dtype else mask


def _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched (3-d), with PyTorch's AssertionErrors for mixed ranks:
    one set of rules, the batched and unbatched forms differing only in the ranks named."""
    if query.ndim not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.ndim}-D query tensor")
    batched = query.ndim == 3
    kind, mask_ndim = ("batched (3-D)", 2) if batched else ("unbatched (2-D)", 1)
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be "
                             f"{query.ndim}-D but found {key.ndim}-D and {value.ndim}-D tensors "
                             f"respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != mask_ndim:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
                             f"{mask_ndim}-D but found {key_padding_mask.ndim}-D tensor instead")
    if attn_mask is not None and attn_mask.ndim not in (2, 3):
        raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                             f"but found {attn_mask.ndim}-D tensor instead")
    if not batched and attn_mask is not None and attn_mask.ndim == 3 and \
            tuple(attn_mask.shape) != (num_heads, query.shape[0], key.shape[0]):
        raise AssertionError(f"Expected `attn_mask` shape to be "
                             f"{(num_heads, query.shape[0], key.shape[0])} but got "
                             f"{tuple(attn_mask.shape)}")
    return batched


def _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate, wq, wk, wv, E):
    b = in_proj_bias
    bq, bk, bv = (None, None, None) if b is None else (b[:E], b[E:2 * E], b[2 * E:])
    if not separate:
        if query is key and key is value:  # self-attention: one GEMM for q, k and v
            qkv = linear(query, in_proj_weight, b)
            return qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
        wq, wk, wv = in_proj_weight[:E], in_proj_weight[E:2 * E], in_proj_weight[2 * E:]
        if key is value:
            kv = linear(key, in_proj_weight[E:], None if b is None else b[E:])
            return linear(query, wq, bq), kv[..., :E], kv[..., E:]
    for name, w in (("q_proj_weight", wq), ("k_proj_weight", wk), ("v_proj_weight", wv)):
        if w is None:
            raise AssertionError(f"use_separate_proj_weight is True but {name} is None")
    return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """(attn_output (L, N, E), attn_weights (N, L, S) averaged over heads, (N, H, L, S)
    per head, or None without need_weights); unbatched input gives unbatched results."""
    batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    same = query is key and key is value
    if not batched:
        query = query.unsqueeze(1)
        key, value = (query, query) if same else (key.unsqueeze(1), value.unsqueeze(1))
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    dt = query.dtype if query.dtype in (float32, float64) else float32
    key_padding_mask = _bool_to_float(key_padding_mask, dt, "key_padding_mask")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # sdpa's causal flag stands for the mask
    else:
        attn_mask = _bool_to_float(attn_mask, dt, "attn_mask")
        if key_padding_mask is not None:
            is_causal = False
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {E}")
    hd = E // num_heads
    if hd * num_heads != E:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not "
                                 f"match value's {tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape "
                             f"{tuple(value.shape)}")
    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias,
                             use_separate_proj_weight, q_proj_weight, k_proj_weight,
                             v_proj_weight, E)
    S = key.shape[0]
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (L, S):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, "
                                   f"but should be {(L, S)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (N * num_heads, L, S):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, "
                                   f"but should be {(N * num_heads, L, S)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key and value.")
        k = cat([k, bias_k.repeat(1, N, 1)])
        v = cat([v, bias_v.repeat(1, N, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k and bias_v must both be given or both be None")
    # the heads: (N*H, L|S, hd), batch-major as PyTorch folds them
    q = q.reshape(L, N * num_heads, hd).transpose(0, 1)
    k = _heads(k, static_k, N, num_heads, hd, "static_k")
    v = _heads(v, static_v, N, num_heads, hd, "static_v")
    if add_zero_attn:
        k = cat([k, zeros((N * num_heads, 1, hd), dtype=k.dtype, device=k.device)], 1)
        v = cat([v, zeros((N * num_heads, 1, hd), dtype=v.dtype, device=v.device)], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    S = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (N, S):
            raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kp = key_padding_mask.reshape(N, 1, 1, S).expand(N, num_heads, 1, S).reshape(
            N * num_heads, 1, S)
        attn_mask = kp if attn_mask is None else attn_mask + kp
    p = dropout_p if training else 0.0
    if need_weights:
        s = bmm(q * math.sqrt(1.0 / hd), k.transpose(-2, -1))
        if attn_mask is not None:
            s = s + attn_mask
        w = softmax(s, -1)
        if p > 0:
            w = dropout(w, p)
        o = bmm(w, v)  # (N*H, L, hd)
        out = linear(o.transpose(0, 1).reshape(L * N, E), out_proj_weight, out_proj_bias)
        out = out.reshape(L, N, out.shape[1])
        w = w.reshape(N, num_heads, L, S)
        if average_attn_weights:
            w = w.mean(axis=1)
        if not batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w
    if attn_mask is not None:
        attn_mask = (attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 and attn_mask.ndim == 3
                     else attn_mask.reshape(N, num_heads, -1, S))
    o = scaled_dot_product_attention(q.reshape(N, num_heads, L, hd),
                                       k.reshape(N, num_heads, S, hd),
                                       v.reshape(N, num_heads, S, hd), attn_mask, p,
                                       is_causal=is_causal)
    out = linear(o.permute(2, 0, 1, 3).reshape(N * L, E), out_proj_weight, out_proj_bias)
    out = out.reshape(L, N, out.shape[1])
    return (out if batched else out.squeeze(1)), None


def _heads(t, static, N, H, hd, name):
    if static is None:
        return t.reshape(t.shape[0], N * H, hd).transpose(0, 1)
    if static.shape[0] != N * H or static.shape[2] != hd:
        raise AssertionError(f"expecting {name} of shape ({N * H}, *, {hd}), but got "
                             f"{tuple(static.shape)}")
    return static
