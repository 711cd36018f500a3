"""In-place fills, as PyTorch's Tensor methods: zero_, fill_ (the random ones are in
_tensor/random.py).

Each makes its value on the tensor's own device (a FILL node) and writes it with copy_, so a
fill moves no data between host and device and the counters see no transfer; copy_ refuses
a leaf that requires grad, as PyTorch does."""
from . import create as _tensor_create


def _same_place(self, value):
    return _tensor_create.full((), value, dtype=self.dtype, device=self.device)


def zero_(self):
    """Fill with zeros, in place; returns self."""
    return self.copy_(_same_place(self, 0))


def fill_(self, value):
    """Fill with one value (a number or a one-element tensor), in place; returns self."""
    if hasattr(value, "item"):  # a one-element tensor, as PyTorch allows
        if value.numel() != 1:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions")
        return self.copy_(value.to(device=self.device, dtype=self.dtype).reshape(()))
    return self.copy_(_same_place(self, value))


METHODS = {"zero_": zero_, "fill_": fill_}
