"""default_collate: a list of samples -> one batch, as torch.utils.data's.

Recursive over the sample's structure: tensors and NumPy arrays are stacked
along a new first axis (one host copy, or one cat on a device), Python numbers
become a 1-d tensor (float64 for floats, int64 for ints, bool), strings stay a
list, and tuples, lists, dicts and namedtuples are collated field by field.
NumPy arrays of every dtype and other frameworks' tensors (a torch Dataset's samples)
become pygpu tensors as _convert.py says: DLPack without a copy, dtypes pygpu lacks
widened exactly."""
import collections.abc
import numbers

import numpy as np

from .. import _C
from .._tensor.join import cat
from ._convert import from_foreign, host_array, is_foreign_tensor

__all__ = ["default_collate", "default_convert"]


def _stack(tensors):
    first = tensors[0]
    for t in tensors[1:]:
        if t.shape != first.shape:
            raise RuntimeError(f"default_collate: stack expects each tensor to be equal size, "
                               f"but got {first.shape} and {t.shape}")
        if t.device != first.device:
            raise _C.DeviceMismatchError(f"default_collate: samples are on {first.device} and "
                                         f"{t.device}; put the dataset on one device")
    if first.device.type == "cpu":
        return _C.from_numpy(np.stack([t.detach().numpy() for t in tensors]))
    return cat([t.reshape(1, *t.shape) for t in tensors])


def default_collate(batch):
    elem = batch[0]
    if isinstance(elem, _C.Tensor):
        return _stack(batch)
    if is_foreign_tensor(elem):  # a torch (or CuPy, JAX) tensor: shared through DLPack
        return _stack([from_foreign(t) for t in batch])
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OSU":
            raise TypeError(f"default_collate: arrays of dtype {elem.dtype} cannot be batched")
        if any(a.shape != elem.shape for a in batch):
            raise RuntimeError(f"default_collate: stack expects each array to be equal size, "
                               f"but got {elem.shape} and "
                               f"{next(a.shape for a in batch if a.shape != elem.shape)}")
        return _C.from_numpy(host_array(np.stack(batch), "default_collate: an array"))
    if isinstance(elem, np.generic):
        return _C.from_numpy(host_array(np.array(batch), "default_collate: a NumPy scalar"))
    if isinstance(elem, bool):
        return _C.from_numpy(np.array(batch, dtype=np.bool_))
    if isinstance(elem, numbers.Integral):
        return _C.from_numpy(np.array(batch, dtype=np.int64))
    if isinstance(elem, numbers.Real):
        return _C.from_numpy(np.array(batch, dtype=np.float64))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        out = {k: default_collate([d[k] for d in batch]) for k in elem}
        try:
            return type(elem)(out)  # the sample's own mapping type, as PyTorch keeps it
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of "
                               "equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, NumPy arrays, numbers, "
                    f"dicts or lists; found {type(elem).__name__}")


def default_convert(data):
    """What DataLoader does to each sample when batch_size=None: arrays become tensors."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OSU":
        return _C.from_numpy(host_array(data, "default_convert: an array"))
    if is_foreign_tensor(data):
        return from_foreign(data)
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)) and not isinstance(data, str):
        return [default_convert(d) for d in data]
    return data
