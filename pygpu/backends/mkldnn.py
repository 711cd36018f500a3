"""torch.backends.mkldnn: oneDNN on the CPU, for convolutions (cpu and sim devices).

float32 CPU convolutions (forward, input gradient, weight gradient) run on oneDNN's
primitives where a per-shape table says oneDNN measured faster than pygpu's own kernels
(csrc/backends/cpu/cpu_conv_dnnl.c; the table is in docs/performance.md), and on pygpu's own
(im2col + GEMM, Winograd, direct depthwise) everywhere else, and always when oneDNN is absent.
float32 GEMM panels with few rows or a short K run on oneDNN's sgemm on AVX-512 CPUs
(csrc/backends/cpu/cpu_sgemm_dnnl.c; PYGPU_SGEMM=auto|openblas|dnnl forces the path).
oneDNN is the `onednn-cpu-gomp` wheel (`pip install pygpu[cpu-fast]`), loaded on the first
CPU convolution or such GEMM panel, never at `import pygpu`: pygpu offers the paths here (`library_candidates()`).

    pygpu.backends.mkldnn.is_available()   # loads it; unavailable_reason() says why not
    pygpu.backends.mkldnn.enabled = False  # pygpu's own convolutions only (PYGPU_CONV=own)
    pygpu.backends.mkldnn.set_conv_path("dnnl")   # "auto" (the table), "own" or "dnnl"
    pygpu.backends.mkldnn.conv_path(x_shape, w_shape, stride=1, padding=0, dilation=1,
                                    groups=1, which="forward") -> ("dnnl" | "own", why)

The environment variable PYGPU_CONV=auto|own|dnnl sets the path at start; PYGPU_DNNL_LIBRARY
names a libdnnl.so.3 to try first (none: oneDNN is not loaded); PYGPU_ISA caps oneDNN's
instruction set too."""
import glob
import os
import site
import sys
import types

from .. import _C

_WHICH = {"forward": 0, "input": 1, "weight": 2}


def library_candidates():
    """Where libdnnl.so.3 may be, most specific first: PYGPU_DNNL_LIBRARY, the onednn-cpu-*
    wheel's lib folder (<prefix>/lib: the wheel installs its library there), then the
    loader's own search path. PYGPU_DNNL_LIBRARY=none: no path at all (oneDNN absent)."""
    env = os.environ.get("PYGPU_DNNL_LIBRARY", "")
    if env == "none":
        return []
    out = [env] if env else []
    prefixes = [sys.prefix, sys.base_prefix, site.getuserbase()]
    for p in prefixes:
        out += sorted(glob.glob(os.path.join(p, "lib", "libdnnl.so.3")))
    seen, unique = set(), []
    for p in out:
        if p not in seen and os.path.exists(p):
            seen.add(p)
            unique.append(p)
    return unique + ["libdnnl.so.3"]


_C._cpu_dnnl_offer("\n".join(library_candidates()))


def is_available():
    """Whether oneDNN is loaded or loadable (loads it)."""
    return _C._cpu_dnnl_info()[0] is not None


def version():
    """oneDNN's version ("3.2.0"), or None when it is not available."""
    return _C._cpu_dnnl_info()[0]


def calls():
    """How many convolution nodes oneDNN has run in this process (the tests' proof of path)."""
    return _C._cpu_dnnl_info()[2]


def unavailable_reason():
    """None when oneDNN is loaded or loadable, else one line saying why not."""
    v, why, _ = _C._cpu_dnnl_info()
    return None if v is not None else f"{why} (pip install pygpu[cpu-fast])"


def set_conv_path(path):
    """The CPU convolutions' path: "auto" (oneDNN where the table says it wins), "own"
    (pygpu's kernels only) or "dnnl" (oneDNN wherever it takes the shape). Returns the path
    before."""
    return _C._cpu_conv_mode(path)


def get_conv_path():
    return _C._cpu_conv_mode(None)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv_path(x_shape, w_shape, stride=1, padding=0, dilation=1, groups=1, which="forward",
              dtype="float32", bias=False):
    """Which path a CPU convolution of these shapes takes, and why: ("dnnl" | "own", why).
    which: "forward", "input" (the input gradient) or "weight" (the weight gradient)."""
    if which not in _WHICH:
        raise ValueError(f"which must be one of {sorted(_WHICH)}, got {which!r}")
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    geom = (sh, sw, dh, dw, ph, ph, pw, pw, groups)
    return _C._cpu_conv_path(_WHICH[which], x_shape[1], x_shape[2] * x_shape[3], w_shape[2],
                             w_shape[3], geom,
                             str(dtype).replace("torch.", "").replace("pygpu.", "") == "float32",
                             bool(bias))


class _Module(types.ModuleType):
    """enabled as a settable module attribute (PyTorch's spelling): False runs pygpu's own
    convolutions only, True the table ("auto")."""

    def __getattr__(self, name):
        if name == "enabled":
            return _C._cpu_conv_mode(None) != "own"
        raise AttributeError(f"module 'pygpu.backends.mkldnn' has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name == "enabled":
            _C._cpu_conv_mode("auto" if value else "own")
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Module
