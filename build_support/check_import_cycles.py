#!/usr/bin/env python3
"""check_import_cycles.py - fail when a file of pygpu reaches back to itself.

Layers must read one way (bindings -> core -> backends; pygpu's public modules
-> their helpers). Two graphs are built from the sources alone, no build needed:

  C: file A -> file B when A uses a function or global that B defines (not
     static). What a header's static inline function or function-like macro
     uses counts for every file that uses it (pg_ag_record in tensor_object.h
     calls pg_ag_record_slow in autograd.c), so the call graph behind the
     #includes is seen, not only the #include lines.
  Python: module A -> module B for every import of B in A, at module level or
     inside a function (an import inside a function hides a circle; it does
     not break it). A submodule importing its own package (`from .. import
     zeros` in pygpu/nn/x.py) is an edge to that package's __init__ like any
     other: the package imports the submodule, so that is a circle; import the
     module that defines the name (`from .._tensor_create import zeros`). The
     compiled extension (pygpu._C) imports nothing from Python: a leaf.

Python's layers also read one way: PY_LAYERS names them, lowest first, and a module
that imports a module of a higher layer (an "upward import") fails unless KNOWN_UPWARD
lists it with its reason; a module in no layer fails too (place it first).

Every strongly connected component of more than one file is a cycle. Cycles
that belong to work in progress elsewhere are listed in KNOWN with the issue
that removes them: they are reported, not failed; a KNOWN entry that no longer
matches a cycle fails (so the list only shrinks; the lead empties it at merge).

    python build_support/check_import_cycles.py [--root DIR] [-v]
Exit status 0: no cycles and no upward imports but the known ones; 1: a new one (listed).
"""
import argparse
import ast
import os
import re
import sys

# Cycles owned by work elsewhere: (files the cycle runs through, who breaks it). A cycle
# found is known when it contains every file of an entry (merges may add files to it); an
# entry that no cycle contains any more is stale, and fails: delete it.
KNOWN = [
]

# pygpu's Python layers, lowest first (docs/architecture.md). A module imports its own layer
# and those below; it belongs to the layer of the longest prefix naming it (pygpu._tensor.surface
# is "namespace" although pygpu._tensor is "tensor"; "pygpu" is the package's __init__ alone, so
# a new file in the root must be placed). The compiled pygpu._C is below them all.
PY_LAYERS = [
    ("loading: the compiled extension and what must run before it",
     ["pygpu._extension", "pygpu._numpy_blas", "pygpu._version"]),
    ("values: dtypes, devices, defaults, counters, RNG state, switches (on _C only)",
     ["pygpu._dtype", "pygpu._dtype_info", "pygpu._device", "pygpu._defaults",
      "pygpu._stats", "pygpu._guard", "pygpu._trace", "pygpu._printing", "pygpu._hooks",
      "pygpu._random", "pygpu._accel", "pygpu.random", "pygpu.amp.autocast_mode",
      "pygpu.backends.opt_einsum", "pygpu.profiler", "pygpu.overrides"]),
    ("tensor: the Tensor surface's op families, autograd, storages",
     ["pygpu._tensor", "pygpu.autograd", "pygpu._storage", "pygpu._legacy", "pygpu._ops._common"]),
    ("ops: composites (pygpu/_ops), linalg, special, sparse, distributions, amp",
     ["pygpu._ops", "pygpu.linalg", "pygpu.special", "pygpu.sparse", "pygpu.distributions",
      "pygpu.amp", "pygpu.fft"]),
    ("namespace: the Tensor's methods and torch's names, assembled from the layers below",
     ["pygpu._tensor.surface", "pygpu._tensor.spellings", "pygpu._tensor.compat",
      "pygpu._tensor.backend_kernels", "pygpu._tensor.aten_natives", "pygpu._tensor.spectral"]),
    ("devices: torch.cuda-style modules (typed tensors, amp, streams, memory)",
     ["pygpu.cpu", "pygpu.sim", "pygpu.cuda", "pygpu.accelerator", "pygpu._sync",
      "pygpu._node_graph"]),
    ("libraries: the training and tooling packages, on the tensor API",
     ["pygpu.nn", "pygpu.optim", "pygpu.data", "pygpu.distributed", "pygpu.cost",
      "pygpu.serialization", "pygpu.onnx", "pygpu.quantization", "pygpu.multiprocessing",
      "pygpu.backends", "pygpu.utils", "pygpu.trainer", "pygpu._dynamo", "pygpu.compiler",
      "pygpu.testing", "pygpu.func", "pygpu.futures", "pygpu.jit", "pygpu.hub"]),
    ("package: `import pygpu` and what it installs (einops, `import torch`)",
     ["pygpu", "pygpu._einops_backend", "pygpu._torch_alias"]),
    ("programs: python -m entry points, run as their own processes",
     ["pygpu.tools", "pygpu.__main__", "pygpu.selftest", "pygpu.smi",
      "pygpu.distributed.scaling", "pygpu.distributed._scaling_validate"]),
]

# Upward imports kept on purpose: (importer, imported, why). Each is an import inside a
# function (the higher module is loaded by then). An entry that no import matches any more is
# stale and fails: delete it, so the list only shrinks.
KNOWN_UPWARD = [
    ("pygpu._tensor.complex", "pygpu._tensor.compat",
     "a complex op's result dtype is torch.result_type, written once in compat"),
    ("pygpu._tensor.spellings", "pygpu.nn._grid_sample",
     "torch.grid_sampler(_2d/_3d) and affine_grid_generator are nn.functional's grid_sample and "
     "affine_grid in ATen's argument order"),
    ("pygpu._tensor.math", "pygpu.distributions.distribution",
     "igamma broadcasts its operands with the distributions' broadcast_all (numbers too)"),
    ("pygpu._tensor.math", "pygpu.distributions.gamma_sampling",
     "igamma's series is the gamma sampler's regularized_gamma_p, written once there"),
    ("pygpu._tensor.numeric", "pygpu.nn._pointwise",
     "Tensor.prelu is nn.functional.prelu (an autograd Function of nn's)"),
    ("pygpu._tensor.random", "pygpu.distributions.discrete",
     "Tensor.multinomial draws with torch.multinomial, written once in distributions"),
    ("pygpu._tensor.spellings", "pygpu.nn.functional",
     "torch.dropout, torch.alpha_dropout, ... are nn.functional's ops in ATen's argument order"),
    ("pygpu._tensor.backend_kernels", "pygpu.nn.functional",
     "cudnn_*/miopen_*/mkldnn_* are nn.functional's convolutions, batch norm and pools in ATen's "
     "argument order"),
    ("pygpu._tensor.backend_kernels", "pygpu.nn._grid_sample",
     "cudnn_grid_sampler and cudnn_affine_grid_generator are grid_sample and affine_grid with "
     "cuDNN's one mode"),
    ("pygpu._tensor.backend_kernels", "pygpu.backends.cudnn",
     "cudnn_is_acceptable asks torch.backends.cudnn whether cuDNN would take the tensor"),
    ("pygpu._tensor.aten_natives", "pygpu.nn.functional",
     "native_layer_norm's output is nn.functional.layer_norm's"),
    ("pygpu._tensor.spectral", "pygpu.nn.functional",
     "stft pads with nn.functional.pad's modes and istft overlap-adds with fold"),
]

_C_EXTS = (".c", ".h", ".cu", ".cuh")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")


def _strip_c(text):
    """Comments and string/char literals blanked (lines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _body(text, start):
    """The text of the brace block opening at or after `start`."""
    i = text.find("{", start)
    if i < 0:
        return ""
    depth = 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i:j + 1]
    return text[i:]


_DEF = re.compile(r"^(?!static\b|extern\b|typedef\b|struct\b|enum\b|union\b|#)"
                  r"[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*(\(|\[|=)", re.M)
_INLINE = re.compile(r"^static\s+(?:inline\s+)?[\w \t\*]*?\b([A-Za-z_]\w*)\s*\([^;{]*\)\s*\{", re.M)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(((?:[^\n]*\\\n)*[^\n]*)", re.M)


def c_graph(root):
    files, raw_includes = {}, {}
    for top in ("csrc",):  # the CUDA kernels live in csrc/backends/cuda/kernels
        for d, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith(_C_EXTS):
                    path = os.path.join(d, name)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        raw = f.read()
                    rel = os.path.relpath(path, root)
                    files[rel] = _strip_c(raw)  # string literals blanked: read includes first
                    raw_includes[rel] = _INCLUDE.findall(raw)
    defines = {}  # symbol -> file defining it (non-static)
    expand = {}  # header -> {inline function / macro it defines -> identifiers it uses}
    includes = {}  # file -> headers it includes directly
    for path, text in files.items():
        d = os.path.dirname(path)
        includes[path] = set()
        for inc in raw_includes[path]:
            for base in (d, "csrc/core", "csrc/backends/cuda/kernels", "csrc"):
                cand = os.path.normpath(os.path.join(base, inc))
                if cand in files:
                    includes[path].add(cand)
                    break
        if path.endswith((".c", ".cu")):
            for m in _DEF.finditer(text):
                rest = text[m.end() - 1:]
                semi, brace = rest.find(";"), rest.find("{")
                is_def = m.group(2) == "=" or (brace >= 0 and (semi < 0 or brace < semi))
                if is_def and m.group(1) not in ("if", "for", "while", "switch", "return"):
                    defines.setdefault(m.group(1), path)
        else:
            ex = expand[path] = {}
            for m in _INLINE.finditer(text):
                ex[m.group(1)] = set(_IDENT.findall(_body(text, m.end() - 1)))
            for m in _MACRO.finditer(text):
                ex.setdefault(m.group(1), set()).update(_IDENT.findall(m.group(2)))
    graph = {}
    for path, text in files.items():
        seen, todo = set(), [path]  # the headers this file sees, transitively
        while todo:
            for h in includes.get(todo.pop(), ()):
                if h not in seen:
                    seen.add(h)
                    todo.append(h)
        visible = {}
        for h in seen:
            for name, ids in expand.get(h, {}).items():
                visible.setdefault(name, set()).update(ids)
        used, work = set(), set(_IDENT.findall(text))
        while work:  # through header inline functions and macros, transitively
            ident = work.pop()
            if ident in used:
                continue
            used.add(ident)
            work |= visible.get(ident, set()) - used
        graph[path] = {defines[s] for s in used if s in defines and defines[s] != path}
    return graph


def _module_name(root, path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] == "__init__":
        rel = rel[:-1]
    return ".".join(rel)


# Compiled modules (setup.py's Extension names): imported like modules, with no Python
# imports of their own.
EXTENSIONS = ("pygpu._C",)


def py_graph(root, package="pygpu"):
    mods = {}
    for d, _, names in os.walk(os.path.join(root, package)):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(d, name)
                mods[_module_name(root, path)] = path
    graph = {}
    for mod, path in mods.items():
        is_pkg = path.endswith("__init__.py")
        base = mod if is_pkg else mod.rpartition(".")[0]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    targets.add(a.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = base.split(".")
                    parts = parts[:len(parts) - (node.level - 1)]
                    src = ".".join(parts + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                for a in node.names:
                    sub = f"{src}.{a.name}"
                    targets.add(sub if sub in mods or sub in EXTENSIONS else src)
        edges = set()
        for t in targets:
            if t in EXTENSIONS:
                continue
            while t and t not in mods:  # pygpu.cuda.foo -> pygpu.cuda
                t = t.rpartition(".")[0]
            if not t or t == mod:
                continue
            edges.add(t)
        graph[os.path.relpath(path, root)] = {os.path.relpath(mods[t], root) for t in edges}
    return graph


def py_layer(module):
    """The index in PY_LAYERS of the layer `module` belongs to, or None."""
    best = None
    for i, (_, prefixes) in enumerate(PY_LAYERS):
        for p in prefixes:
            inside = module.startswith(p + ".") and p != "pygpu"  # "pygpu": __init__ alone
            if (module == p or inside) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    return None if best is None else best[0]


def upward_imports(root, graph=None):
    """(importer, imported) module pairs where the imported module's layer is above the
    importer's, and the modules in no layer."""
    graph = py_graph(root) if graph is None else graph
    name = {p: _module_name(root, os.path.join(root, p)) for p in graph}
    up, unplaced = [], sorted(m for m in name.values() if py_layer(m) is None)
    for p, targets in graph.items():
        a = name[p]
        for t in targets:
            b = name[t]
            la, lb = py_layer(a), py_layer(b)
            if la is not None and lb is not None and lb > la:
                up.append((a, b))
    return sorted(up), unplaced


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(tuple(sorted(comp)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _edges_within(graph, comp):
    return [f"{a} -> {b}" for a in comp for b in sorted(graph.get(a, ())) if b in comp]


def _known(comp):
    for anchors, why in KNOWN:
        if set(anchors) <= set(comp):
            return why
    return None


def check(root, verbose=False, out=sys.stdout):
    """Print the cycles; return the new ones (not in KNOWN) and stale KNOWN entries."""
    found, new = [], []
    for kind, graph in (("C", c_graph(root)), ("Python", py_graph(root))):
        for comp in cycles(graph):
            key = " <-> ".join(comp)
            found.append(comp)
            why = _known(comp)
            print(f"{kind} cycle{' (known: ' + why + ')' if why else ''}: {key}", file=out)
            if verbose or not why:
                for e in _edges_within(graph, comp):
                    print(f"    {e}", file=out)
            if not why:
                new.append(key)
    up, unplaced = upward_imports(root)
    known_up = {(a, b): why for a, b, why in KNOWN_UPWARD}
    for a, b in up:
        la, lb = PY_LAYERS[py_layer(a)][0], PY_LAYERS[py_layer(b)][0]
        why = known_up.get((a, b))
        if why:
            print(f"upward import (known: {why}): {a} -> {b}", file=out)
        else:
            print(f"upward import: {a} ({la.split(':')[0]}) -> {b} ({lb.split(':')[0]})", file=out)
            new.append(f"{a} -> {b}")
    for m in unplaced:
        print(f"module in no layer (add it to PY_LAYERS): {m}", file=out)
        new.append(m)
    stale = [" <-> ".join(a) for a, _ in KNOWN if not any(set(a) <= set(c) for c in found)]
    stale += [f"{a} -> {b}" for a, b, _ in KNOWN_UPWARD if (a, b) not in set(up)]
    for k in stale:
        print(f"KNOWN/KNOWN_UPWARD lists one that is gone (remove it): {k}", file=out)
    return new, stale


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("-v", "--verbose", action="store_true", help="print the edges of known cycles too")
    args = ap.parse_args(argv)
    new, stale = check(args.root, args.verbose)
    if new or stale:
        print(f"{len(new)} new import cycle(s) or upward import(s), {len(stale)} stale KNOWN "
              "entr(y/ies)")
        return 1
    print("no import cycles and no upward imports but the known ones")
    return 0


if __name__ == "__main__":
    sys.exit(main())
