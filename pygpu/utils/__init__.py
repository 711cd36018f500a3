"""pygpu.utils: where PyTorch code looks for torch.utils.data, torch.utils.checkpoint
(activation checkpointing) and torch.utils.hooks (RemovableHandle).

pygpu.utils.data IS pygpu.data (the same module object, registered under both
names), so `from pygpu.utils.data import DataLoader, TensorDataset` and
`pygpu.utils.data.Dataset` work as torch.utils.data's do."""
import sys as _sys

from .. import data

_sys.modules[__name__ + ".data"] = data
# torch.utils.data's own submodules, as programs import them
# (from torch.utils.data.dataloader import DataLoader)
from ..data import dataset as _dataset, distributed as _distributed, loader as _loader  # noqa: E402
from ..data import sampler as _sampler  # noqa: E402
for _sub, _mod in {"dataloader": _loader, "dataset": _dataset, "sampler": _sampler,
                   "distributed": _distributed}.items():
    _sys.modules[f"{__name__}.data.{_sub}"] = _mod
    if not hasattr(data, _sub):
        setattr(data, _sub, _mod)

from . import checkpoint, hooks  # noqa: E402 - torch.utils.checkpoint, torch.utils.hooks



def swap_tensors(t1, t2):
    """torch.utils.swap_tensors(t1, t2): the two tensor objects trade contents (memory,
    autograd state, parameter role), so every reference to t1 sees what t2 held."""
    from .. import _C
    _C._swap_tensors(t1, t2)


__all__ = ["data", "checkpoint", "hooks", "swap_tensors"]
