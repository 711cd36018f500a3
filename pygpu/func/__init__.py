"""torch.func: vmap (pygpu/func/_vmap.py: PyTorch's arguments and errors; one call for the
ops that are batched already, a per-sample loop and a stack otherwise). torch.func's
transforms of gradients (grad, jacrev, jvp, functional_call, ...) are not here: pygpu's are
torch.autograd.functional's (pygpu.autograd.functional)."""
from ._vmap import vmap

__all__ = ["vmap"]
