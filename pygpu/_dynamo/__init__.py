"""pygpu._dynamo: the parts of torch._dynamo that PyTorch programs call (reset, disable,
config, list_backends, mark_dynamic, ...), so `import torch._dynamo` code runs on pygpu.
There is no frame evaluation behind them: pygpu.compile runs eagerly (compiled_function.py)."""
from . import config, eval_frame
from .compiled_function import (InvalidBackend, allow_in_graph, is_compiling,
                                list_backends, mark_dynamic, mark_static, maybe_mark_dynamic,
                                register_backend, reset, set_stance)
from .eval_frame import OptimizedModule, disable, optimize

is_dynamo_compiling = is_compiling

__all__ = ["InvalidBackend", "OptimizedModule", "allow_in_graph", "config", "disable",
           "eval_frame", "is_compiling", "is_dynamo_compiling", "list_backends", "mark_dynamic",
           "mark_static", "maybe_mark_dynamic", "optimize", "register_backend", "reset",
           "set_stance"]
