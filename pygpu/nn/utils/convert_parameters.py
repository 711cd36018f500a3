"""nn.utils.parameters_to_vector / vector_to_parameters: all parameters as one flat vector
and back (e.g. for second-order methods or weight averaging)."""
from ... import _C
from ..._tensor.join import cat
from ...autograd import no_grad

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_device(p, device):
    if device is None:
        return p.device
    if p.device != device:
        raise TypeError(f"Found two parameters on different devices, this is currently not "
                        f"supported ({device} and {p.device})")
    return device


def parameters_to_vector(parameters):
    """One 1-d tensor holding every parameter's values, flattened, in order."""
    device, flat = None, []
    for p in parameters:
        device = _check_device(p, device)
        flat.append(p.reshape(-1))
    if not flat:
        raise ValueError("parameters_to_vector: no parameters given")
    return cat(flat) if len(flat) > 1 else flat[0]


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-d `vec` into each parameter, in order."""
    if not isinstance(vec, _C.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    if vec.ndim != 1:
        raise ValueError(f"vector_to_parameters: vec must be 1-d, got shape {vec.shape}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if total != vec.shape[0]:
        raise ValueError(f"vector_to_parameters: vec has {vec.shape[0]} elements but the "
                         f"parameters hold {total}")
    device, pointer = None, 0
    with no_grad():
        for p in params:
            device = _check_device(p, device)
            n = p.numel()
            p.copy_(vec[pointer:pointer + n].reshape(*p.shape))
            pointer += n
