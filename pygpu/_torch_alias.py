"""pygpu.install_as_torch(): `import torch` gives pygpu, in your code and in every library.

The convention of PyMySQL's install_as_MySQLdb(): sys.modules["torch"] becomes pygpu, and a
finder first on sys.meta_path maps every torch.* submodule to pygpu's of the same path
(torch.nn.functional -> pygpu.nn.functional, torch.utils.data -> pygpu.utils.data,
torch.optim.lr_scheduler -> pygpu.optim.lr_scheduler, ...), so `import torch.nn as nn`,
`from torch.utils.data import DataLoader` and `class Net(torch.nn.Module)` inside a
library (einops.layers.torch, perceiver-pytorch, mlp-mixer-pytorch) all resolve to pygpu.
A torch.* module pygpu has none of is a ModuleNotFoundError naming both.

What it cannot do:
- Call it before anything imports the real torch: a module that already holds the real
  torch keeps it, so install_as_torch() refuses to run once torch is in sys.modules.
- PyTorch's C++ and CUDA extensions (torch.ops, torch.utils.cpp_extension, torchvision's
  and torchaudio's compiled ops) do not load: there is no libtorch behind pygpu.
- Code that asks for PyTorch internals pygpu does not have (torch._C, torch.fx, torch.jit's
  compiler) fails where it asks. torch._dynamo is the part programs touch (pygpu/_dynamo)."""
import importlib
import importlib.abc
import importlib.util
import sys


class _AliasLoader(importlib.abc.Loader):
    """Hands out an already imported pygpu module under its torch name."""

    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """torch.<path> -> pygpu.<path>."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        mine = "pygpu" + fullname[len("torch"):]
        try:
            module = importlib.import_module(mine)
        except ModuleNotFoundError as e:
            if e.name and (mine == e.name or mine.startswith(e.name + ".")):
                raise ModuleNotFoundError(
                    f"No module named {fullname!r}: pygpu.install_as_torch() maps torch.* to "
                    f"pygpu.*, and pygpu has no {mine}", name=fullname) from None
            raise
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module))


_FINDER = TorchAliasFinder()


def install_as_torch():
    """Make `import torch` (and every torch.* submodule) import pygpu, for this process.
    Call it first, before anything imports the real torch; it raises ImportError if the real
    torch is already imported. Calling it again is a no-op."""
    pygpu = _package()
    held = sys.modules.get("torch")
    if held is pygpu:
        return
    loaded = sorted(n for n in sys.modules if n == "torch" or n.startswith("torch."))
    if loaded:
        raise ImportError(
            "pygpu.install_as_torch(): the real torch is already imported "
            f"({', '.join(loaded[:3])}{', ...' if len(loaded) > 3 else ''}), and modules that "
            "imported it keep it; call pygpu.install_as_torch() first, before anything "
            "imports torch")
    sys.modules["torch"] = pygpu
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def is_installed():
    return sys.modules.get("torch") is _package()


def _package():
    """pygpu itself (imported: this module is part of it)."""
    return sys.modules[__name__.rpartition(".")[0]]
