"""pygpu.compiler: torch.compiler's functions (disable, reset, is_compiling, list_backends,
set_stance, ...). pygpu.compile captures no graph yet, so these answer as PyTorch answers
for code running eagerly: see pygpu/_dynamo/compiled_function.py."""
from .._dynamo.compiled_function import (allow_in_graph, is_compiling, list_backends, reset,
                                        set_stance)
from .._dynamo.eval_frame import disable

is_dynamo_compiling = is_compiling


def is_exporting():
    """False: pygpu has no torch.export."""
    return False


def assume_constant_result(fn):
    """fn unchanged (there is no graph to fold its result into)."""
    return fn


def cudagraph_mark_step_begin():
    """Nothing to mark: pygpu.compile records no CUDA graph trees."""


__all__ = ["allow_in_graph", "assume_constant_result", "cudagraph_mark_step_begin", "disable",
           "is_compiling", "is_dynamo_compiling", "is_exporting", "list_backends", "reset",
           "set_stance"]
