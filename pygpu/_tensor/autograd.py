"""Tensor autograd methods with PyTorch's names that the C type lacks: register_hook and
detach_ (the engine runs the hooks: pygpu/autograd/engine.py)."""
from .. import _C
from ..autograd import engine


def register_hook(self, hook):
    """register_hook(fn): fn(grad) runs when backward() has computed this tensor's
    gradient; a returned tensor replaces it. Returns a handle with remove()."""
    return engine.register_hook(self, hook)


def detach_(self):
    """Detach in place: this tensor becomes a leaf that does not require grad."""
    if self.grad_fn is not None:
        self._set_grad_fn(None)
    else:
        _C.Tensor.requires_grad_(self, False)
    return self


METHODS = {"register_hook": register_hook, "detach_": detach_}
