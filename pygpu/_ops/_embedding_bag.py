"""embedding_bag: the sum, mean or max of each bag of embedding rows, without forming the
(bags, length, dim) tensor PyTorch's users avoid by calling it.

The bags are runs of a flat index list: given by `offsets` (a 1-d input) or the rows of a
2-d input. The rows are looked up with F.embedding (its gradient, padding row and frequency
scale are embedding's: pygpu/_ops/_embedding.py); sum and mean add each row into its bag
with one index_add (rows equal to padding_idx left out and not counted, per_sample_weights
multiplied in for sum); max gathers each bag's rows into a (bags, longest, dim) table padded
with -inf and takes the maximum. An empty bag is zeros, as PyTorch's."""
import numpy as np

from .. import _C, _dtype

from .._tensor import create as _tensor_create
from ._embedding import embedding

Tensor = _C.Tensor
_MODES = ("sum", "mean", "max")


def _bags(input, offsets, include_last_offset, fn="embedding_bag"):
    """(flat indices, bag of each index (host int64 array), number of bags)."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated "
                             f"is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets)}")
        B, L = input.shape
        return input.reshape(-1), np.repeat(np.arange(B), L), B
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    offs = np.asarray(offsets.tolist(), dtype=np.int64)
    n = input.shape[0]
    if include_last_offset:  # B + 1 offsets (CSR's): the last is the input's length
        if offs.size == 0:
            raise RuntimeError("include_last_offset: number of offsets should be at least 1")
        starts, ends = offs[:-1], offs[1:]
    else:
        starts, ends = offs, np.append(offs[1:], n)
    if starts.size and starts[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {starts[0]}")
    if starts.size and (np.any(np.diff(starts) < 0) or starts[-1] > n):
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n}, but got "
                           f"offsets[-1] of {int(starts[-1])}")
    bag = np.empty(n, dtype=np.int64)
    bag[:] = -1
    for b, (s, e) in enumerate(zip(starts, ends)):
        bag[s:e] = b
    return input, bag, int(starts.size)


def _bag_table(keep, bags, B, longest, fill):
    """(B, longest) host table: row b lists the positions (in the flat input) of bag b's
    kept indices in order, then `fill`."""
    table = np.full((B, longest), fill, dtype=np.int64)
    slot = np.zeros(B, dtype=np.int64)
    for i, b in zip(np.nonzero(keep)[0], bags):
        table[b, slot[b]] = i
        slot[b] += 1
    return table


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """torch.nn.functional.embedding_bag: (bags, D) of weight's rows reduced per bag."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("embedding_bag(): input and weight must be pygpu.Tensor")
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    flat, bag, B = _bags(input, offsets, include_last_offset)
    V, D = weight.shape
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise AssertionError("padding_idx must be within num_embeddings")
        padding_idx %= V
    rows = embedding(flat, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
    keep = bag >= 0  # indices after the last bag's end (include_last_offset) are in no bag
    if padding_idx is not None:
        keep &= np.asarray(flat.tolist(), dtype=np.int64) != padding_idx
    dev, dt = weight.device, weight.dtype
    where = _tensor_create.tensor(np.nonzero(keep)[0].astype(np.int64), device=dev)
    bags = bag[keep]
    if mode == "max":
        counts = np.bincount(bags, minlength=B)
        longest = int(counts.max()) if counts.size else 0
        if longest == 0:
            return _tensor_create.zeros((B, D), dtype=dt, device=dev)
        table = _bag_table(keep, bags, B, longest, rows.shape[0])  # fill: the -inf row
        neg = _tensor_create.full((1, D), float("-inf"), dtype=dt, device=dev)
        from .._tensor.join import cat
        padded = cat([rows, neg], 0).index_select(
            0, _tensor_create.tensor(table.reshape(-1), device=dev)).reshape(B, longest, D)
        out = padded.max(dim=1).values
        empty = _tensor_create.tensor((counts == 0).astype(np.float64).reshape(B, 1),
                                      dtype=dt, device=dev)
        return _C.where(empty > 0, 0.0, out).to(dt) if (counts == 0).any() else out
    vals = rows.index_select(0, where)
    if per_sample_weights is not None:
        vals = vals * per_sample_weights.reshape(-1).index_select(0, where).reshape(-1, 1)
    out = _tensor_create.zeros((B, D), dtype=dt, device=dev).index_add(
        0, _tensor_create.tensor(bags, device=dev), vals)
    if mode == "mean":
        counts = np.maximum(np.bincount(bags, minlength=B), 1).astype(np.float64)
        out = out * _tensor_create.tensor((1.0 / counts).reshape(B, 1), dtype=dt, device=dev)
    return out


def torch_embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0,
                        sparse=False, per_sample_weights=None, include_last_offset=False,
                        padding_idx=None):
    """torch.embedding_bag, ATen's op behind F.embedding_bag: (output, offset2bag, bag_size,
    max_indices), with mode 0/1/2 = sum/mean/max and padding_idx None (no padding row) or a
    row, a negative one counting from the end. The three extra results are the bookkeeping ATen's CPU
    kernel keeps for its backward, in the indices' dtype: offset2bag is each index's bag
    (empty for sum without padding_idx, which needs none), bag_size each bag's count of
    non-padding indices (zeros for sum), max_indices the weight row that won each bag's
    column (max; 0 for an empty bag), bag_size again for mean, zeros for sum. The output is
    F.embedding_bag's (its gradient included); the bookkeeping is computed from the host
    copy of indices and offsets that F.embedding_bag reads anyway, and for max from the
    device-side argmax over each bag's rows."""
    if not isinstance(mode, int) or isinstance(mode, bool) or mode not in (0, 1, 2):
        raise RuntimeError(f"embedding_bag: unknown mode {mode}: expected 0 (sum), 1 (mean) "
                           f"or 2 (max)")
    pad = None
    if padding_idx is not None:  # ATen's range check; a negative one counts from the end
        V = weight.shape[0]
        if not -V <= padding_idx < V:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, {-V} "
                               f"through {V - 1}, but got {padding_idx}")
        pad = padding_idx % V
    out = embedding_bag(indices, weight, offsets, None, 2, scale_grad_by_freq, _MODES[mode],
                        sparse, per_sample_weights, include_last_offset, pad)
    flat, _, B = _bags(indices, offsets, include_last_offset)
    n, dev, it = flat.shape[0], indices.device, indices.dtype
    offs = np.asarray(offsets.tolist(), dtype=np.int64)
    starts = offs[:-1] if include_last_offset else offs
    # each index's bag: the last start at or before it (the last bag runs to the end, as
    # ATen's kernel counts it)
    bag = np.searchsorted(starts, np.arange(n), side="right") - 1
    host = np.asarray(flat.tolist(), dtype=np.int64)
    kept = host != pad if pad is not None else np.ones(n, dtype=bool)
    sizes = np.bincount(bag[kept], minlength=B)[:B] if n else np.zeros(B, dtype=np.int64)

    def ints(a):
        return _tensor_create.tensor(np.asarray(a, dtype=np.int64), device=dev).to(it)
    if mode == 0:  # ATen's sum keeps no counts: zeros, one per offset given
        zeros = ints(np.zeros(offs.size))
        offset2bag = ints(bag) if pad is not None else ints(np.zeros(0))
        return out, offset2bag, zeros, zeros
    if mode == 1:
        return out, ints(bag), ints(sizes), ints(sizes)
    D = weight.shape[1]
    longest = int(sizes.max()) if sizes.size else 0
    if longest == 0:
        return out, ints(bag), ints(sizes), ints(np.zeros((B, D)))
    table = _bag_table(kept & (bag >= 0), bag[kept & (bag >= 0)], B, longest, n)
    from .._tensor.join import cat
    rows = weight.detach().index_select(0, flat.to(_dtype.int64))
    neg = _tensor_create.full((1, D), float("-inf"), dtype=weight.dtype, device=dev)
    slot = cat([rows, neg], 0).index_select(
        0, _tensor_create.tensor(table.reshape(-1), device=dev)).reshape(B, longest, D).max(
        dim=1).indices  # (B, D): which of the bag's entries won the column
    winners = np.append(host, 0)[table]  # (B, longest): the weight row of each entry
    max_indices = _tensor_create.tensor(winners, device=dev).gather(1, slot)
    return out, ints(bag), ints(sizes), max_indices.to(it)
