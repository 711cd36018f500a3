"""The composite ops, each written once: softmax and log_softmax (_softmax.py), layer_norm
(_layer_norm.py), clamp/clip and their in-place forms (_clamp.py), and the composed losses'
common part with mse_loss (_losses.py).

Each is tensor ops, with an autograd Function only where a hand-written backward pays
(softmax's and layer_norm's, which keep less than the recorded composition would). Each
has one fork, _common.fused: the backend's fused node (a PG_NODE row) where its
supports_op has the kind for the tensor's dtype, the composition where not; no op here
asks which device type it runs on. pygpu, pygpu.nn.functional and the Tensor methods
(clamp, clip, clamp_, clip_: _tensor/surface.py installs _clamp.METHODS) export these."""
from ._clamp import clamp, clip
from ._layer_norm import _LayerNorm, layer_norm  # noqa: F401 - the op table's "LayerNorm" row
from ._losses import mse_loss
from ._softmax import _LogSoftmax, _Softmax, log_softmax, softmax  # noqa: F401 - table rows

__all__ = ["clamp", "clip", "layer_norm", "mse_loss", "log_softmax", "softmax"]
