"""pygpu.autograd: reverse-mode automatic differentiation over pygpu tensors (docs/autograd.md).

Design: the C Tensor object carries requires_grad, grad, grad_fn and _base; each
differentiable op binding, when grad mode is on and an operand requires grad, calls
engine.record() to attach a node; backward() and grad() run engine.execute, a topological
walk. Backward rules: rules.py and rules_math.py (C-recorded ops) and Function subclasses
(Python-level and fused ops), all written in differentiable ops, so create_graph=True
gives higher-order gradients (higher_order.py). In-place writes: inplace.py (elementwise),
writes.py (indexed and masked), views.py (a write through a view rebases its base);
versions.py is the version-counter check. functional.py: jacobian, hessian, vjp, jvp, hvp,
vhp; _gradcheck.py: gradcheck and gradgradcheck; anomaly_mode.py: detect_anomaly."""
from .engine import Node, backward, record, register_post_accumulate_grad_hook
from .grad import grad
from .function import Context, Function, once_differentiable
from .variable import Variable
from ._gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import function, functional
from . import higher_order, views  # noqa: F401 - they plug into the engine (engine.plug)
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled)

__all__ = ["Node", "backward", "grad", "record", "register_post_accumulate_grad_hook", "Context",
           "Function", "Variable", "once_differentiable", "function", "functional",
           "gradcheck", "gradgradcheck", "GradcheckError", "enable_grad",
           "is_grad_enabled", "no_grad", "set_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly"]

# torch.autograd's small public names beside the engine (issue 43): the __torch_function__
# protocol's helpers, the multithreading switch, DeviceType, ProfilerActivity (overrides.py)
from . import overrides as _overrides  # noqa: E402
from ..profiler import ProfilerActivity  # noqa: E402 - pygpu.profiler's, as torch.autograd's
globals().update(_overrides.NAMES)
__all__ += sorted(_overrides.NAMES) + ["ProfilerActivity"]
# the gradient layout contract's switch (grad_layout.py)
from .grad_layout import enforce_grad_layout_policy  # noqa: E402
__all__ += ["enforce_grad_layout_policy"]
# the legacy profiler's types and switches (pygpu/profiler/_legacy.py)
from ..profiler._legacy import ProfilerConfig, ProfilerEvent, ProfilerState  # noqa: E402
from ..profiler._legacy import disable_legacy as _disable_profiler_legacy  # noqa: E402,F401
from ..profiler._legacy import enable_legacy as _enable_profiler_legacy  # noqa: E402,F401
__all__ += ["ProfilerConfig", "ProfilerEvent", "ProfilerState"]
from ._nested_io import NestedIOFunction  # noqa: E402 - the legacy nested-argument Function
__all__ += ["NestedIOFunction"]
