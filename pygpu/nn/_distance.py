"""nn.functional's distances, normalizations and the bilinear form, with PyTorch's
arguments: normalize, cosine_similarity, pairwise_distance, pdist, rms_norm, bilinear.
Compositions of differentiable tensor ops (reductions, elementwise ops, one matmul)."""
from .. import _C
from .._tensor import create as _tensor_create
from .._ops._clamp import clamp
from .._ops._common import want_tensor as _want_tensor


def _pnorm(x, p, dim, keepdim):
    """The p-norm of x along dim (p a number, inf or -inf)."""
    return x.norm(p, dim, keepdim=keepdim)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    _want_tensor(input, "normalize")
    denom = clamp(_pnorm(input, float(p), dim, True), min=float(eps))
    result = input / denom
    return result if out is None else out.copy_(result)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along dim (the operands
    broadcast)."""
    _want_tensor(x1, "cosine_similarity")
    n1 = clamp(_pnorm(x1, 2.0, dim, True), min=float(eps))
    n2 = clamp(_pnorm(x2, 2.0, dim, True), min=float(eps))
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last axis."""
    _want_tensor(x1, "pairwise_distance")
    one = x1.ndim == 1 and x2.ndim == 1
    d = x1 - x2 + float(eps)
    out = _pnorm(d, float(p), -1, keepdim and not one)
    return out


def pdist(input, p=2.0):
    """The distances between each pair of rows i < j of a 2-d input, in row-major order of
    (i, j), as PyTorch's."""
    _want_tensor(input, "pdist")
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    n = input.shape[0]
    if n < 2:
        return _tensor_create.empty(0, dtype=input.dtype, device=input.device)
    from .._tensor.shape import triu_indices
    ij = triu_indices(n, n, 1, device=input.device)
    diff = input.index_select(0, ij[0]) - input.index_select(0, ij[1])
    return _pnorm(diff, float(p), 1, False)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x**2 over the trailing normalized_shape axes) + eps) (* weight); eps
    defaults to the dtype's machine epsilon, as PyTorch's."""
    _want_tensor(input, "rms_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    k = len(shape)
    if tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in shape)}], but got input of size"
                           f"{list(input.shape)}")
    if eps is None:
        from .._tensor.compat import finfo
        eps = finfo(input.dtype).eps
    dims = tuple(range(input.ndim - k, input.ndim))
    out = input * _C.rsqrt((input * input).mean(dims, keepdim=True) + float(eps))
    return out * weight if weight is not None else out


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] (+ bias[o])."""
    _want_tensor(input1, "bilinear")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D, got {weight.ndim}-D")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input sizes {input1.shape[-1]} and "
                           f"{input2.shape[-1]} do not match the weight's {in1} and {in2}")
    lead = tuple(input1.shape[:-1])
    a = input1.reshape(-1, in1)
    b = input2.reshape(-1, in2)
    t = a @ weight.permute(1, 0, 2).reshape(in1, out_f * in2)  # (N, out * in2)
    y = (t.reshape(-1, out_f, in2) * b.unsqueeze(1)).sum(-1)  # (N, out)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, out_f)


FUNCTIONS = {"normalize": normalize, "cosine_similarity": cosine_similarity,
             "pairwise_distance": pairwise_distance, "pdist": pdist, "rms_norm": rms_norm,
             "bilinear": bilinear}
