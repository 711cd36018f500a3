"""pygpu.nn: modules, layers and losses with PyTorch's interface, on the tensor API."""
from . import functional
from .layers import MLP, Linear, ModuleList, ReLU, Sequential, Sigmoid, Tanh
from .loss import CrossEntropyLoss, MSELoss
from .module import Module
from .parameter import Parameter
from . import parallel
from .parallel import DataParallel

__all__ = ["functional", "Module", "Parameter", "Linear", "ReLU", "Tanh", "Sigmoid",
           "Sequential", "ModuleList", "MLP", "CrossEntropyLoss", "MSELoss", "parallel",
           "DataParallel"]

from .memory import MemoryEstimate, estimate_memory  # noqa: E402 - trainloop's addition
__all__ += ["estimate_memory", "MemoryEstimate"]
