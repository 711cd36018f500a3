"""pygpu.optim: PyTorch's optimizers, each parameter update one fused op on its device,
and optim.lr_scheduler."""
from .adam import Adam, AdamW
from .adaptive import Adadelta, Adagrad, RMSprop
from .optimizer import Optimizer
from .sgd import SGD
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "lr_scheduler"]
