"""In-place fills, as PyTorch's Tensor methods: zero_, fill_ (the random ones are in
_tensor/random.py), and apply_/map_/map2_, which fill a CPU tensor with a Python function of
its elements (PyTorch's, CPU-only as there: the function runs on the host per element).

Each makes its value on the tensor's own device (a FILL node) and writes it with copy_, so a
fill moves no data between host and device and the counters see no transfer; copy_ refuses
a leaf that requires grad, as PyTorch does."""
from . import create as _tensor_create


def _same_place(self, value):
    return _tensor_create.full((), value, dtype=self.dtype, device=self.device)


def zero_(self):
    """Fill with zeros, in place; returns self. A shell dtype (uint4, bits8, ...: no copy
    kernel in PyTorch, whose zero_ still runs) zeroes its bytes through a same-size view."""
    if self.dtype._is_shell:
        from .. import _C, _dtype
        _C._view_dtype(self, _dtype.uint16 if self.dtype.itemsize == 2 else _dtype.uint8).zero_()
        return self
    return self.copy_(_same_place(self, 0))


def fill_(self, value):
    """Fill with one value (a number or a one-element tensor), in place; returns self."""
    if hasattr(value, "item"):  # a one-element tensor, as PyTorch allows
        if value.numel() != 1:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions")
        return self.copy_(value.to(device=self.device, dtype=self.dtype).reshape(()))
    return self.copy_(_same_place(self, value))


def _host_elementwise(name, self, others, fn):
    """self's elements replaced by fn(self's element, the others' elements), broadcast."""
    import numpy as np
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")
    arrays = [self.numpy()] + [np.broadcast_to(o.detach().numpy(), tuple(self.shape))
                               for o in others]
    out = np.empty(arrays[0].shape, dtype=arrays[0].dtype)
    flat = [a.reshape(-1) for a in arrays]
    res = out.reshape(-1)
    for i in range(res.size):
        res[i] = fn(*(a[i].item() for a in flat))
    return self.copy_(_tensor_create.tensor(out, dtype=self.dtype))


def apply_(self, callable):
    """Each element x replaced by callable(x), in place (CPU tensors)."""
    return _host_elementwise("apply_", self, (), callable)


def map_(self, tensor, callable):
    """Each element x replaced by callable(x, y), y tensor's (broadcast), in place."""
    return _host_elementwise("map_", self, (tensor,), callable)


def map2_(self, x, y, callable):
    """Each element a replaced by callable(a, b, c), b and c x's and y's (broadcast)."""
    return _host_elementwise("map2_", self, (x, y), callable)


METHODS = {"zero_": zero_, "fill_": fill_, "apply_": apply_, "map_": map_, "map2_": map2_}
