"""embedding: rows of a weight table gathered by index, and its backward a scatter-add.

F.embedding(input, weight) is weight's rows at input's indices: one INDEX_SELECT node
(csrc/core/pg_ops_index.h), whose kernel checks every index (PyTorch's IndexError, "index
out of range in self", for a negative index too; on sim and cuda the values live on the
device, so it is raised at the next read as pygpu.AsyncIndexError, an IndexError).
Its backward adds each row of the gradient into the row it came from (an INDEX_ADD node:
a scatter-add, duplicates summed), the padding_idx row getting none; scale_grad_by_freq
divides each by its index's count in the batch. sparse=True is accepted and the gradient
is dense (as before: optim.SparseAdam updates only the rows that moved). max_norm renormalizes the
looked-up rows of the weight in place first (embedding_renorm_), as PyTorch does.

The two directions are autograd Functions that are each other's backward (_Rows gathers,
_AddRows scatters), so the backward is itself differentiable: create_graph=True reaches
through it. The forward's own backward is PyTorch's embedding_backward (the padding row and
the frequency scale are rules of the op, not a derivative); every other step is the exact
adjoint of the one before it."""
from .. import _C
from .._tensor import create as _tensor_create
from ..autograd import no_grad
from ..autograd.function import Function

Tensor = _C.Tensor
_INDEX_DTYPES = ("int64", "int32")


def _as_index(input):
    if not isinstance(input, Tensor):
        raise TypeError(f"embedding(): argument 'indices' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype.name not in _INDEX_DTYPES:
        raise _C.DTypeError(f"Expected tensor for argument #1 'indices' to have one of the "
                            f"following scalar types: Long, Int; but got {input.dtype} instead "
                            f"(while checking arguments for embedding)")
    idx = input.reshape(-1)
    return idx if idx.dtype.name == "int64" else idx.long()


def _pad_mask(idx, padding_idx, like):
    """(M, 1): 0 where the index is the padding row, 1 elsewhere."""
    return (idx != padding_idx).to(like.dtype).reshape(-1, 1)


class _Rows(Function):
    """out (M, D) = weight[idx]; with `exact`, times the padding mask and the frequency
    scale too (the adjoint of _AddRows, used as its backward)."""

    @staticmethod
    def forward(ctx, weight, idx, padding_idx, scale, exact):
        ctx.idx, ctx.padding_idx, ctx.scale, ctx.rows = idx, padding_idx, scale, weight.shape[0]
        out = _C._index_select(weight, 0, idx)
        if exact:
            if padding_idx is not None:
                out = out * _pad_mask(idx, padding_idx, out)
            if scale is not None:
                out = out * scale
        return out

    @staticmethod
    def backward(ctx, g):
        return _AddRows.apply(g, ctx.idx, ctx.rows, ctx.padding_idx, ctx.scale), None, None, \
            None, None


class _AddRows(Function):
    """out (rows, D) = zeros with each row of g (M, D) (times scale) added at its index; the
    padding row stays zero. PyTorch's embedding_backward (sparse=False)."""

    @staticmethod
    def forward(ctx, g, idx, rows, padding_idx, scale):
        ctx.idx, ctx.padding_idx, ctx.scale = idx, padding_idx, scale
        if scale is not None:
            g = g * scale
        out = _tensor_create.zeros((rows, g.shape[-1]), dtype=g.dtype, device=g.device)
        _C._scatter("INDEX_ADD", out, 0, idx, g.contiguous())  # index_add_: duplicates summed
        if padding_idx is not None:
            out[padding_idx] = 0.0
        return out

    @staticmethod
    def backward(ctx, gg):
        return _Rows.apply(gg, ctx.idx, ctx.padding_idx, ctx.scale, True), None, None, None, \
            None


def _frequency_scale(idx, rows, like):
    """(M, 1): 1 / (how many times each index occurs in idx), counted on the device."""
    ones = _tensor_create.ones((idx.shape[0],), dtype=like.dtype, device=like.device)
    counts = _tensor_create.zeros((rows,), dtype=like.dtype, device=like.device)
    _C._scatter("INDEX_ADD", counts, 0, idx, ones)
    return (1.0 / _C._index_select(counts, 0, idx)).reshape(-1, 1)


def embedding_renorm_(weight, input, max_norm, norm_type):
    """torch.embedding_renorm_: the rows of weight that input looks up, each scaled in place
    to a norm of at most max_norm (by max_norm / (norm + 1e-7), as PyTorch)."""
    idx = _as_index(input)
    with no_grad():
        rows = _C._index_select(weight, 0, idx)
        norms = rows.norm(p=norm_type, dim=1, keepdim=True)
        scale = _C.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).to(rows.dtype)
        _C._scatter("INDEX_COPY", weight, 0, idx, (rows * scale).contiguous())  # index_copy_
    return weight


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """torch.nn.functional.embedding: (...) integer indices into weight (V, D) -> (..., D)."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"embedding(): argument 'weight' must be Tensor, not "
                        f"{type(weight).__name__}")
    idx = _as_index(input)
    if weight.ndim != 2:
        raise _C.ShapeError(f"'weight' must be 2-D (embedding got a {weight.ndim}-D weight of "
                            f"shape {list(weight.shape)})")
    rows, dim = weight.shape
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= rows
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    if weight.requires_grad and _C.is_grad_enabled():
        scale = _frequency_scale(idx, rows, weight) if scale_grad_by_freq else None
        out = _Rows.apply(weight, idx, padding_idx, scale, False)
    else:
        out = _C._index_select(weight, 0, idx)
    return out.reshape(*input.shape, dim)


def torch_embedding(weight, input, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding(weight, indices, padding_idx=-1, ...): ATen's argument order, where
    -1 means no padding row."""
    return embedding(input, weight, None if padding_idx < 0 else padding_idx,
                     scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)
