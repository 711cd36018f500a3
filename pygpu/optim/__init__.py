"""pygpu.optim: PyTorch's optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta: each
parameter update one fused op on its device; NAdam, RAdam, Adamax: a few in-place ops;
LBFGS with its strong-Wolfe line search; SparseAdam for sparse gradients; ASGD, Rprop,
Adafactor, Muon: more_optimizers.py), optim.lr_scheduler and optim.swa_utils (weight
averaging and SWALR)."""
from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .adaptive import Adadelta, Adagrad, RMSprop
from .lbfgs import LBFGS
from .more_optimizers import ASGD, Adafactor, Muon, Rprop
from .sparse_adam import SparseAdam
from .optimizer import Optimizer
from .sgd import SGD
from . import lr_scheduler, swa_utils
from ._swap import swap_in_optimizer_params_and_state

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "NAdam",
           "RAdam", "Adamax", "LBFGS", "SparseAdam", "ASGD", "Rprop", "Adafactor", "Muon",
           "lr_scheduler", "swa_utils"]
