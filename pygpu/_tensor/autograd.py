"""Tensor autograd methods with PyTorch's names that the C type lacks: register_hook,
register_post_accumulate_grad_hook, retain_grad and retains_grad, and detach_ (the engine
runs the hooks and keeps the retained gradients: pygpu/autograd/engine.py)."""
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


def register_post_accumulate_grad_hook(self, hook):
    """hook(self) runs each time backward() has accumulated a gradient into this leaf's
    .grad. Returns a handle with remove()."""
    return engine.register_post_accumulate_grad_hook(self, hook)


def retain_grad(self):
    """Keep this non-leaf tensor's gradient in .grad after backward() (a no-op on a leaf)."""
    engine.retain_grad(self)


METHODS = {"register_hook": register_hook, "detach_": detach_,
           "register_post_accumulate_grad_hook": register_post_accumulate_grad_hook,
           "retain_grad": retain_grad,
           "retains_grad": property(engine.retains_grad)}
