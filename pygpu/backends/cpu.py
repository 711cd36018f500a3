"""torch.backends.cpu: get_cpu_capability(), the vector ISA the CPU kernels run
(pygpu.cpu_isa() in PyTorch's words: "DEFAULT", "AVX2", "AVX512")."""

_NAMES = {"baseline": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512", "avx512_bf16": "AVX512"}


def get_cpu_capability():
    from .. import _C
    return _NAMES.get(_C._cpu_isa(False), "DEFAULT")
