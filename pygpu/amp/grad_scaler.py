"""GradScaler: dynamic loss scaling, with PyTorch's interface (torch/amp/grad_scaler.py).

float16 has 5 exponent bits: gradients below about 6e-8 flush to zero. The
scaler multiplies the loss by `scale` (2**16 to start), so every gradient of
the backward pass is scaled too; before the optimizer step it divides them
back (unscale_) and checks them for inf/NaN in the same pass:

    scaler.scale(loss).backward()
    scaler.step(optimizer)     # unscales if not yet done; skips the step on inf/NaN
    scaler.update()            # backoff after a skipped step, growth after
                               # `growth_interval` good ones in a row

Unscale and check are one fused op per gradient (_C._amp_unscale_: g *= 1/scale
in place in the same pass that looks for inf/NaN), all raising one 0-d float32
flag per device; step() reads that flag once per device: the step's only
implicit read. (A device without the kernel, cuda today, uses tensor ops.) A skipped step leaves
the parameters (and the optimizer's state) untouched, bit for bit. The scale
itself is a Python float on the host, so scaling the loss costs no read."""
import math

from .. import _C
from .._tensor import create as _tensor_create
from .._dtype import float32
from ..autograd import no_grad

_READY, _UNSCALED, _STEPPED = 0, 1, 2


def _unscale_one(p, g, inv, flag):
    """p.grad *= inv in place, raising `flag` if it held inf/NaN: one fused op
    (pg_ops_amp.c). Where the device has no such kernel (cuda today) or the gradient
    is a strided view: tensor ops, with the flag then summing g * 0 (NaN if any inf/NaN).
    Returns the flag to use from now on."""
    if g.is_contiguous():
        try:
            _C._amp_unscale_(g, inv, flag)
            return flag
        except TypeError:
            if g.device.type != "cuda":
                raise
    g = g * inv
    p.grad = g
    return flag + (g * 0.0).sum().astype(float32)


class GradScaler:
    """GradScaler(init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True). With enabled=False every method is a
    pass-through (scale returns its input, step calls optimizer.step())."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if isinstance(init_scale, str):  # torch.amp.GradScaler("cuda", ...): a device first
            init_scale = 2.0 ** 16
        for name, v in (("init_scale", init_scale), ("growth_factor", growth_factor),
                        ("backoff_factor", backoff_factor)):
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"GradScaler: {name} must be a finite number > 0, got {v!r}")
        if growth_factor <= 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if backoff_factor >= 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be < 1, got {backoff_factor}")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) \
                or growth_interval < 1:
            raise ValueError(f"GradScaler: growth_interval must be an int >= 1, got "
                             f"{growth_interval!r}")
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._per_opt = {}  # id(optimizer) -> {"stage", "found": [device scalars], "inf": bool}
        self.last_step_skipped = False

    # ---- the loop's calls ----------------------------------------------------------------

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """outputs (a tensor, or a list/tuple of them) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, _C.Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"GradScaler.scale: expected a Tensor or a list/tuple of them, got "
                        f"{type(outputs).__name__}")

    def _state(self, optimizer):
        return self._per_opt.setdefault(id(optimizer), {"stage": _READY, "found": []})

    @no_grad()
    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, in one pass per device that also
        checks them for inf/NaN. At most once per optimizer between two update() calls."""
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["stage"] == _UNSCALED:
            raise RuntimeError("GradScaler.unscale_() has already been called on this optimizer "
                               "since the last update()")
        if st["stage"] == _STEPPED:
            raise RuntimeError("GradScaler.unscale_() is being called after step(); call "
                               "update() first")
        inv = 1.0 / self._scale
        found = {}  # device -> 0-d float32 flag: 0, or 1 once a gradient held inf/NaN
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                key = str(g.device)
                flag = found.get(key)
                if flag is None:
                    flag = found[key] = _tensor_create.zeros((), dtype=float32, device=g.device)
                found[key] = _unscale_one(p, g, inv, flag)
        st["found"] = list(found.values())
        st["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) unless the (unscaled) gradients hold inf/NaN:
        then the step is skipped and the parameters stay exactly as they were."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        st = self._state(optimizer)
        if st["stage"] == _STEPPED:
            raise RuntimeError("GradScaler.step() has already been called since the last "
                               "update()")
        if st["stage"] == _READY:
            self.unscale_(optimizer)
        inf = False
        for flag in st["found"]:  # one implicit read per device
            v = float(flag)
            inf = inf or v != 0.0 or math.isnan(v)
        st["inf"] = inf
        st["stage"] = _STEPPED
        self.last_step_skipped = inf
        if inf:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Back off (scale *= backoff_factor) if any optimizer skipped its step since the
        last update, else count a good step and grow (scale *= growth_factor) after
        growth_interval good steps in a row. new_scale: set the scale to this instead."""
        if not self._enabled:
            return
        if new_scale is not None:
            v = float(new_scale)
            if not math.isfinite(v) or v <= 0:
                raise ValueError(f"GradScaler.update: new_scale must be a finite number > 0, "
                                 f"got {new_scale!r}")
            self._scale = v
        else:
            stepped = [s for s in self._per_opt.values() if s["stage"] == _STEPPED]
            if not stepped:
                raise RuntimeError("GradScaler.update(): no optimizer step was recorded with "
                                   "this scaler since the last update (call scaler.step(opt))")
            if any(s.get("inf") for s in stepped):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_opt = {}

    # ---- checkpoints ---------------------------------------------------------------------

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def state_dict(self):
        """{"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}
        (empty when disabled), as PyTorch's."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty (it was "
                               "saved by a disabled scaler)")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
