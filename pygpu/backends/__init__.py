"""pygpu.backends: the library switches PyTorch keeps under torch.backends (cudnn)."""
from . import cudnn  # noqa: F401
