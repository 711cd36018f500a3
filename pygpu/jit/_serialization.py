"""torch.jit.save / torch.jit.load of a traced module or function, in pygpu's own archive.

The archive is a zip, as PyTorch's is, but not PyTorch's layout (PyTorch's holds TorchScript
source and a pickle of its own classes; pygpu writes the graph itself):
    <name>/version            "pygpu-traced 1"
    <name>/code/<method>.ir   each method's graph as IR text (what str(graph) prints)
    <name>/data.pkl           the module tree: each submodule's path and class name, each
                              parameter and buffer by path (pygpu.save's pickle of tensors)
    <name>/extra/<file>       _extra_files
load reads the IR back with parse_ir, so the graph runs from its text through the table of
_aten_run.py, without the Python class the module was traced from; save refuses a graph with
a node that table cannot run (naming it). PyTorch's own TorchScript archives are not read."""
import io
import os
import zipfile

from . import _archive
from ._parse_ir import parse_ir
from ._script import ScriptFunction, ScriptModule
from ._tracer import deprecated


def save(m, f, _extra_files=None):
    """torch.jit.save: write a traced module or function to f (a path or binary file)."""
    deprecated("save", "`torch.export`")
    if not isinstance(m, (ScriptModule, ScriptFunction)):
        raise TypeError(f"torch.jit.save: expected a ScriptModule or ScriptFunction (from "
                        f"pygpu.jit.trace), got {type(m).__name__}")
    _archive.write(m, f, _extra_files)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """torch.jit.load: a ScriptModule / ScriptFunction from an archive jit.save wrote."""
    deprecated("load", "`torch.export`")
    from .. import serialization
    from ..nn.parameter import Parameter
    own = not hasattr(f, "read")
    fh = open(os.fspath(f), "rb") if own else f
    try:
        with zipfile.ZipFile(fh) as z:
            names = z.namelist()
            stem = names[0].split("/")[0] if names else ""
            if f"{stem}/version" not in names or \
                    z.read(f"{stem}/version").decode() != _archive.VERSION:
                raise RuntimeError("torch.jit.load: not an archive pygpu.jit.save wrote "
                                   "(PyTorch's TorchScript archives are not read)")
            graphs = {n[len(stem) + 6:-3]: parse_ir(z.read(n).decode()) for n in names
                      if n.startswith(f"{stem}/code/") and n.endswith(".ir")}
            state = serialization.load(io.BytesIO(z.read(f"{stem}/data.pkl")),
                                       map_location=map_location, weights_only=True)
            if _extra_files is not None:
                for name in list(_extra_files):
                    key = f"{stem}/extra/{name}"
                    if key in names:
                        _extra_files[name] = z.read(key)
    finally:
        if own:
            fh.close()
    if state["kind"] == "function":
        return ScriptFunction(graphs["forward"], state["name"])
    root = ScriptModule()
    for path in sorted(state["modules"], key=lambda p: p.count(".")):
        owner, _, name = path.rpartition(".")
        parent = root.get_submodule(owner) if owner else root
        child = ScriptModule()
        object.__setattr__(child, "original_name", state["modules"][path])
        object.__setattr__(child, "_methods", {})
        parent._modules[name] = child
    for kind in ("parameters", "buffers"):
        for path, t in state[kind].items():
            owner, _, name = path.rpartition(".")
            mod = root.get_submodule(owner) if owner else root
            if kind == "parameters":
                mod._parameters[name] = Parameter(t, requires_grad=t.requires_grad)
            else:
                mod._buffers[name] = t
    tmp = ScriptModule()
    tmp.training = state["training"]
    root._adopt(tmp, graphs)
    object.__setattr__(root, "original_name", state["name"])
    root.train(state["training"])
    return root
