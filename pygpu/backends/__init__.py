"""torch.backends: the per-backend switches programs set on their first lines.

One module per backend, each with PyTorch's names: cudnn (enabled, benchmark,
deterministic, allow_tf32), cuda (matmul.allow_tf32, ...), mps (is_available() is
False: pygpu has no Metal backend), cpu (get_cpu_capability), mkldnn (oneDNN's CPU
convolutions: is_available, enabled, conv_path), opt_einsum (einsum's
contraction order: enabled, strategy). _cusolver (private) hands the CUDA plugin the
cuSOLVER libraries to try for the cuda factorizations. pygpu keeps the values
programs set; where a switch changes what pygpu computes, its module says so."""
from . import _cufft, _cusolver, cpu, cuda, cudnn, mkldnn, mps, opt_einsum  # noqa: F401 (_cufft, _cusolver: their offer hooks)

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "opt_einsum"]
