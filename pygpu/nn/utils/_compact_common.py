"""What prune.compact's two halves share (_compact.py: Linear chains and MLPs;
_compact_cnn.py: convolutional chains): the activations' functions on a neuron's constant,
and a layer's effective (masked) weights on the host."""
import numpy as np

from ..layers import ReLU, Sigmoid, Tanh

_ACT_FNS = {
    ReLU: lambda v: np.maximum(v, 0.0),
    Tanh: np.tanh,
    Sigmoid: lambda v: 1.0 / (1.0 + np.exp(-v)),
}


def _host(t):
    t = t.detach()
    if t.device.type != "cpu":
        t = t.to("cpu")
    return np.array(t.numpy(), dtype=np.float64)


def _effective(module, name):
    """module.<name> as the next forward would see it: <name>_orig * <name>_mask when
    pruned (the cached attribute may predate the last optimizer step), else the parameter."""
    params, bufs = module._parameters, module._buffers
    if name + "_orig" in params and name + "_mask" in bufs:
        return _host(params[name + "_orig"]) * _host(bufs[name + "_mask"]), params[name + "_orig"]
    p = params.get(name)
    return (None, None) if p is None else (_host(p), p)
