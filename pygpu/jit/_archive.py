"""The archive jit.save writes and jit.load reads (_serialization.py has the two entry
points; ScriptModule.save and ScriptFunction.save write here too): a zip of each method's IR
text, the module tree's tensors and the extra files.

    archive/version            "pygpu-traced 1"
    archive/code/<method>.ir   each method's graph as IR text (what str(graph) prints)
    archive/data.pkl           the module tree: each submodule's path and class name, each
                               parameter and buffer by path (pygpu.save's pickle of tensors)
    archive/extra/<file>       _extra_files
A graph is written only if every node runs from its IR (_aten_run.py), so the archive loads
without the Python class it was traced from."""
import io
import os
import zipfile

from . import _aten_run

VERSION = "pygpu-traced 1"


def _check_runnable(graph, what):
    bad = sorted({n.kind() for n in graph.nodes() if _aten_run.runner(n) is None})
    if bad:
        raise RuntimeError(f"torch.jit.save: {what}'s graph has nodes pygpu cannot run from "
                           f"their IR ({', '.join(bad)}); the archive would not load")


def write(m, f, _extra_files=None):
    """jit.save without its deprecation warning (ScriptModule.save, as PyTorch's)."""
    from .. import serialization
    if getattr(m, "_methods", None) is not None:  # a ScriptModule
        methods = {name: meth.graph for name, meth in m._methods.items()}
        state = {"kind": "module", "name": m.original_name, "training": m.training,
                 "modules": {p: type(sub).__name__ for p, sub in m.named_modules() if p},
                 "parameters": dict(m.named_parameters()),
                 "buffers": dict(m.named_buffers())}
    elif getattr(m, "graph", None) is not None and getattr(m, "name", None):  # ScriptFunction
        methods = {"forward": m.graph}
        state = {"kind": "function", "name": m.name}
    else:
        raise TypeError(f"torch.jit.save: expected a ScriptModule or ScriptFunction (from "
                        f"pygpu.jit.trace), got {type(m).__name__}")
    for name, g in methods.items():
        _check_runnable(g, name)
    stem = "archive"
    buf = io.BytesIO()
    serialization.save(state, buf)
    own = not hasattr(f, "write")
    fh = open(os.fspath(f), "wb") if own else f
    try:
        with zipfile.ZipFile(fh, "w") as z:
            z.writestr(f"{stem}/version", VERSION)
            for name, g in methods.items():
                z.writestr(f"{stem}/code/{name}.ir", str(g))
            z.writestr(f"{stem}/data.pkl", buf.getvalue())
            for name, data in (_extra_files or {}).items():
                z.writestr(f"{stem}/extra/{name}", data)
    finally:
        if own:
            fh.close()
