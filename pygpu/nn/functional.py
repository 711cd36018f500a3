"""pygpu.nn.functional: the stateless ops layers are made of.

linear(x, weight, bias=None, activation=None) is the fused layer: matmul,
bias and activation in one op each way (see pygpu/_train_ops.py and
csrc/core/pg_ops_train.c); the rest are the differentiable tensor ops."""
from .. import _C
from .._train_ops import cross_entropy, linear, log_softmax, mse_loss, softmax


def relu(x):
    return _C.relu(x)


def tanh(x):
    return _C.tanh(x)


def sigmoid(x):
    return _C.sigmoid(x)


__all__ = ["linear", "relu", "tanh", "sigmoid", "softmax", "log_softmax", "cross_entropy",
           "mse_loss"]
