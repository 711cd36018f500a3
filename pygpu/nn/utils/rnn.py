"""nn.utils.rnn: PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence,
pack_sequence, unpad_sequence, unpack_sequence, with PyTorch's semantics and errors.

A PackedSequence holds the rows of every sequence time-major: step t's rows are the
first batch_sizes[t] sequences (sorted by decreasing length), which is the layout the
recurrent kernels walk (pygpu/_ops/_rnn.py). Packing and padding are one index_select
each (a gather, differentiable), with the index built on the host from the lengths;
batch_sizes, like PyTorch's, is an int64 tensor on the cpu."""
from collections import namedtuple

import numpy as np

from ... import _C
from ..._tensor.create import full, tensor as _tensor
from ..._tensor.join import cat

Tensor = _C.Tensor

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence"]


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """(data (N, *), batch_sizes (T,) int64 on the cpu, sorted_indices, unsorted_indices)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        dev = data.device
        s = self.sorted_indices.to(dev) if self.sorted_indices is not None else None
        u = self.unsorted_indices.to(dev) if self.unsorted_indices is not None else None
        return type(self)(data, self.batch_sizes, s, u)

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self._replace(data=self.data.double())

    def float(self):
        return self._replace(data=self.data.float())

    @property
    def is_cuda(self):
        return self.data.device.type == "cuda"

    def is_pinned(self):
        return False


def _invert(perm):
    p = np.asarray(perm.tolist(), dtype=np.int64)
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size, dtype=np.int64)
    return _tensor(inv, device=perm.device)


def _lengths_list(lengths):
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [int(v) for v in lengths]


def _batch_sizes(lengths):
    """Sorted-descending lengths -> batch size of each step."""
    T = lengths[0] if lengths else 0
    return [sum(1 for n in lengths if n > t) for t in range(T)]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) ((B, T, *) with batch_first) of sequences of the given
    lengths; unsorted lengths are sorted (and remembered) unless enforce_sorted."""
    lens = _lengths_list(lengths)
    B = input.shape[0 if batch_first else 1]
    if len(lens) != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={B})")
    if any(n <= 0 for n in lens):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if enforce_sorted:
        if any(lens[i] < lens[i + 1] for i in range(len(lens) - 1)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        order = list(range(B))
        sorted_indices = None
    else:
        order = sorted(range(B), key=lambda i: -lens[i])  # stable, as torch.sort(descending)
        sorted_indices = _tensor(np.asarray(order, dtype=np.int64), device=input.device)
    slens = [lens[i] for i in order]
    T = input.shape[1 if batch_first else 0]
    if slens and slens[0] > T:
        raise RuntimeError(f"pack_padded_sequence: a length {slens[0]} is longer than the "
                           f"padded sequence ({T} steps)")
    bs = _batch_sizes(slens)
    # row (t, order[b]) of the padded input, flattened as (T*B) or (B*T) rows
    idx = [(order[b] * T + t) if batch_first else (t * B + order[b])
           for t, n in enumerate(bs) for b in range(n)]
    flat = input.reshape(T * B, *input.shape[2:])
    data = flat.index_select(0, _tensor(np.asarray(idx, dtype=np.int64), device=input.device))
    return PackedSequence(data, _tensor(np.asarray(bs, dtype=np.int64)), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded, lengths), in the original order."""
    data, batch_sizes, _, unsorted = sequence
    bs = [int(v) for v in batch_sizes.tolist()]
    B, T = (bs[0] if bs else 0), len(bs)
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {T}")
        T_out = total_length
    else:
        T_out = T
    N = data.shape[0]
    # padded row (t, b) -> its packed row, or the padding row N
    where = np.full((T_out, B), N, dtype=np.int64)
    row = 0
    for t, n in enumerate(bs):
        where[t, :n] = np.arange(row, row + n)
        row += n
    if batch_first:
        where = where.T
    pad = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    src = cat([data, pad], 0)
    out = src.index_select(0, _tensor(where.reshape(-1), device=data.device))
    out = out.reshape(*where.shape, *data.shape[1:])
    lengths = np.asarray([sum(1 for n in bs if n > b) for b in range(B)], dtype=np.int64)
    if unsorted is not None:
        out = out.index_select(0 if batch_first else 1, unsorted)
        lengths = lengths[np.asarray(unsorted.tolist(), dtype=np.int64)]
    return out, _tensor(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shapes (L_i, *) into (T, B, *) ((B, T, *) with batch_first),
    padding each to the longest with padding_value (on the right, or the left). The result
    is contiguous in either layout, as PyTorch's (pad_sequence(seqs).view(-1) works)."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    T = max(s.shape[0] for s in seqs)
    rest = seqs[0].shape[1:]
    parts = []
    for s in seqs:
        n = s.shape[0]
        if n < T:
            pad = full((T - n, *rest), padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, pad] if padding_side == "right" else [pad, s], 0)
        parts.append(s.reshape(1, T, *rest) if batch_first else s.reshape(T, 1, *rest))
    return cat(parts, 0 if batch_first else 1)  # (B, T, *) or (T, B, *), new memory


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of (L_i, *) sequences (pad_sequence, then pack_padded_sequence)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences a padded batch holds, each cut to its length."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def unpack_sequence(packed_sequences):
    """The list of sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)

