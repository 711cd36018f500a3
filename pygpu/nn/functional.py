"""pygpu.nn.functional: the stateless ops layers are made of.

linear(x, weight, bias=None, activation=None) is the fused layer: matmul,
bias and activation in one op each way (see pygpu/_train_ops.py and
csrc/core/pg_ops_train.c); the rest are the differentiable tensor ops."""
from .. import _C
from .._train_ops import cross_entropy, linear, log_softmax, mse_loss, softmax

relu = _C.relu        # the tensor API's own functions (pygpu.relu, ...), differentiable
tanh = _C.tanh
sigmoid = _C.sigmoid


__all__ = ["linear", "relu", "tanh", "sigmoid", "softmax", "log_softmax", "cross_entropy",
           "mse_loss"]
