"""pygpu.optim: SGD and Adam, each parameter update one fused op on its device."""
from .adam import Adam
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam"]
