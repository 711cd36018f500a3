"""pygpu.utils: where PyTorch code looks for torch.utils.data.

pygpu.utils.data IS pygpu.data (the same module object, registered under both
names), so `from pygpu.utils.data import DataLoader, TensorDataset` and
`pygpu.utils.data.Dataset` work as torch.utils.data's do."""
import sys as _sys

from .. import data

_sys.modules[__name__ + ".data"] = data

__all__ = ["data"]
