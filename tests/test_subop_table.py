# test_subop_table.py - the sub-op kinds are rows (csrc/core/pg_subops.def's PG_SUBOP), not
# integers restated by hand (issue 44).
#
# Each node kind whose work comes in forms (INDEX, POOL, CONV, BATCH_NORM, TERNARY, RNN_CELL,
# RANDOM, SOFTMAX, LINALG) has one row per form; the codes, the CUDA kernels' view of them, the
# per-sub-op functions and columns and the names Python passes come from the rows. Here: the
# rows are well formed, no file switches on a sub-op or keeps a copy of its codes, Python
# names every sub-op by its row's ID (never a number), an ID outside the rows is refused by
# name, the core includes no backend header (LINALG is a node kind now), and
# docs/architecture.md's worked example of a sub-op is the code.
import ast
import os
import re

import numpy as np
import pytest

import pygpu
from pygpu import _C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")
ROWS = _C._subop_table()  # (node, ID, name, code, flags, columns)
KINDS = {r[0] for r in _C._node_table()}
# the bindings that take a sub-op, and the node kind whose rows name it
BINDINGS = {"_scatter": "INDEX", "_pool2d": "POOL", "_pool2d_backward": "POOL",
            "_ternary": "TERNARY", "_linalg": "LINALG", "_random": "RANDOM",
            "_rnn_forward": "RNN_CELL", "_rnn_backward": "RNN_CELL", "_rnn_save_width": "RNN_CELL"}


def _files(root, exts):
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(exts):
                path = os.path.join(d, f)
                yield os.path.relpath(path, ROOT), open(path).read()


def test_the_rows_are_well_formed():
    assert [r[3] for r in ROWS] == list(range(len(ROWS))), "a code is its row's position"
    seen = set()
    for node, id_, name, code, flags, cols in ROWS:
        assert node in KINDS, f"{node}_{id_}: {node} is not a PG_NODE row"
        assert (node, id_) not in seen, f"{node}_{id_} twice"
        seen.add((node, id_))
        assert re.fullmatch(r"[A-Z][A-Z0-9_]*", id_) and name, (node, id_, name)
    kinds = [r[0] for r in ROWS]  # each kind's rows together: one section per kind
    assert kinds == sorted(kinds, key=kinds.index)
    for node in ("INDEX", "POOL", "CONV", "BATCH_NORM", "TERNARY", "RNN_CELL", "RANDOM",
                 "SOFTMAX", "LINALG"):
        assert node in kinds, f"{node}'s sub-ops are not rows"


def test_the_kinds_columns_name_what_exists():
    cpu = dict(_files(os.path.join(CSRC, "backends", "cpu"), (".c",)))
    cuda = "\n".join(t for _, t in _files(os.path.join(CSRC, "backends", "cuda"), (".c", ".cu")))
    by_id = {(r[0], r[1]): r for r in ROWS}
    for node, id_, _, _, flags, cols in ROWS:
        if node == "INDEX":  # the family's kernel on the CPU and on cuda
            assert f"index_{cols[0]}(const pg_node" in cpu["csrc/backends/cpu/cpu_index.c"]
            assert f"pg_kernel_index_{cols[0]}(" in cuda and f"args_{cols[0]}" in cuda
        elif node == "POOL":  # a forward's gradient is a gradient row
            assert ("BWD" in flags) == (cols[0] == "NONE"), id_
            if cols[0] != "NONE":
                assert "BWD" in by_id[("POOL", cols[0])][4], id_
        elif node == "CONV":  # each of x, w, y in one slot, dst among them
            assert sorted(cols[:3]) == ["DST", "SRC0", "SRC1"], id_
        elif node == "LINALG":  # the CPU's function, cuSOLVER's (or NO_CUDA), the message
            assert f"static pg_status {cols[2]}(const pg_node *n)" in \
                cpu["csrc/backends/cpu/cpu_linalg.c"], id_
            assert cols[3] == "NO_CUDA" or f"static pg_status {cols[3]}(linalg_job *j)" in \
                cuda, id_
            assert cols[0] in ("1", "2") and cols[4], id_


def test_no_file_switches_on_a_subop_or_keeps_its_codes():
    """The issue's bar: 62 `case` lines switched on the index, pool, conv, linalg and ternary
    sub-ops, and the CUDA kernels kept copies of their codes; now neither."""
    codes = {f"PG_{node}_{id_}" for node, id_, *_ in ROWS}
    for path, text in _files(CSRC, (".c", ".h", ".cu", ".cuh")):
        for m in re.finditer(r"case\s+(PG_\w+)\s*:", text):
            assert m.group(1) not in codes, f"{path}: case {m.group(1)}; read its row's columns"
        assert not re.search(r"PG_CUDA_(IDX|POOL|CELL|RANDOM)_", text), \
            f"{path}: a CUDA copy of sub-op codes (the kernels read pg_subops.def's)"
        assert not re.search(r"PG_(IDX|CELL|BN_TRAIN)_\w+", text), f"{path}: an old sub-op name"


def test_python_names_every_subop_by_its_rows_id():
    """No number names a sub-op: every call of a binding that takes one passes a row's ID
    (a string constant checked here, or a variable holding one, checked by the binding)."""
    ids = {}
    for node, id_, *_ in ROWS:
        ids.setdefault(node, set()).add(id_)
    calls = 0
    for path, text in _files(os.path.join(ROOT, "pygpu"), (".py",)):
        for call in ast.walk(ast.parse(text)):
            f = getattr(call, "func", None)
            if not (isinstance(f, ast.Attribute) and f.attr in BINDINGS and call.args):
                continue
            calls += 1
            first = call.args[0]
            where = f"{path}:{call.lineno}: _C.{f.attr}"
            assert not (isinstance(first, ast.Constant) and isinstance(first.value, int)), \
                f"{where} names a sub-op by a number"
            if isinstance(first, ast.Constant):
                assert first.value in ids[BINDINGS[f.attr]], f"{where}: no row {first.value!r}"
            elif isinstance(first, ast.IfExp):
                for arm in (first.body, first.orelse):
                    assert arm.value in ids[BINDINGS[f.attr]], f"{where}: no row {arm.value!r}"
    assert calls >= 20, calls
    # the spellings Python keeps: module constants that are rows' IDs
    from pygpu._ops import _conv as _conv_ops, _rnn as _rnn_ops
    from pygpu._tensor import math as _tensor_math
    for name in ("POOL_MAX", "POOL_AVG", "POOL_ADAPTIVE_AVG", "POOL_ADAPTIVE_MAX"):
        assert getattr(_conv_ops, name) in ids["POOL"], name
    for name in ("_ADDCMUL", "_ADDCDIV", "_LERP", "_LERP_TENSOR"):
        assert getattr(_tensor_math, name) in ids["TERNARY"], name
    assert set(_rnn_ops.GATES) == ids["RNN_CELL"] and _rnn_ops.GATES["LSTM"] == 4


def test_an_id_that_is_not_a_row_is_refused_naming_the_rows():
    x = pygpu.zeros(3)
    with pytest.raises(ValueError, match=r"_scatter: GATHER is not one of its INDEX sub-ops "
                                         r"\(SCATTER, SCATTER_ADD, INDEX_COPY, INDEX_ADD;"):
        _C._scatter("GATHER", x, 0, pygpu.tensor([0]), pygpu.ones(1))
    with pytest.raises(ValueError, match=r"_linalg: CHOL is not one of its LINALG sub-ops"):
        _C._linalg("CHOL", pygpu.eye(2), None, 0, 0.0, True)
    with pytest.raises(ValueError, match="_pool2d_backward: MAX_FWD is not one of"):
        _C._pool2d_backward("MAX_FWD", pygpu.zeros(1, 1, 1, 1), None, (1, 1, 2, 2), (2, 2),
                            (2, 2), (0, 0), True, 0)
    with pytest.raises(TypeError):
        _C._ternary(0, x, x, x, 1.0, False)


def test_the_core_includes_no_backend_header():
    """The core's one arrow upward was linalg's LAPACK header: LINALG is a node kind now,
    whose kernel is the CPU backend's (cpu_linalg.c)."""
    for path, text in _files(os.path.join(CSRC, "core"), (".c", ".h")):
        assert not re.search(r'#include\s+"[^"]*backends/', text), f"{path} includes a backend"
    linalg = next(r for r in _C._node_table() if r[0] == "LINALG")
    assert linalg[1:4] == ("linalg", "pg_cpu_linalg", "SERIAL")


@pytest.mark.parametrize("dev", ["cpu", "sim"])
def test_linalg_runs_as_one_node_where_the_data_is(dev):
    a = pygpu.tensor(np.array([[4.0, 1.0], [1.0, 3.0]]), device=dev)
    before = pygpu.stats()
    L = pygpu.linalg.cholesky(a)
    assert (pygpu.stats() - before).ops == 1  # one LINALG node, no copy to the cpu
    np.testing.assert_allclose(L.numpy(), np.linalg.cholesky(a.numpy()), rtol=1e-12)
    bad = pygpu.tensor(np.stack([np.eye(2), -np.eye(2)]), device=dev)
    with pytest.raises(pygpu.linalg.LinAlgError, match=r"linalg\.cholesky: \(Batch element 1\): "
                                                       r".*minor of order 1 is not"):
        pygpu.linalg.cholesky(bad)
    LU, piv, info = pygpu.linalg.lu_factor_ex(pygpu.tensor(np.zeros((3, 2, 2)), device=dev))
    assert info.tolist() == [1, 1, 1] and LU.device == bad.device  # info returned, not raised


def test_the_worked_example_in_docs_architecture_is_the_code():
    """docs/architecture.md's "Adding a sub-op": each line it quotes is in the file it names."""
    text = open(os.path.join(ROOT, "docs", "architecture.md")).read()
    section = text[text.index("## Adding a sub-op"):text.index("## Adding a backend")]
    steps = re.findall(r"\*\*\d\. [^*]+\*\* \(`([^`]+)`.*?```text\n(.*?)```", section, re.S)
    assert [p for p, _ in steps] == [
        "csrc/core/pg_subops.def", "csrc/backends/cpu/cpu_ternary.c",
        "csrc/backends/cuda/kernels/ternary.cu", "pygpu/_tensor/math.py"]
    for path, code in steps:
        source = open(os.path.join(ROOT, path)).read()
        for line in code.strip("\n").split("\n"):
            assert line in source, f"{path} no longer has: {line!r}"


def test_the_supports_node_example_in_docs_architecture_is_the_code():
    """docs/architecture.md's "Adding a backend" quotes the slot and cuda's cuDNN rule: each
    line is in the backend interface or the cuda backend, so the example cannot drift."""
    text = open(os.path.join(ROOT, "docs", "architecture.md")).read()
    section = text[text.index("## Adding a backend"):text.index("## Composite ops")]
    code = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    sources = "".join(open(os.path.join(CSRC, *p.split("/"))).read() for p in (
        "core/pg_backend.h", "backends/cuda/cuda_plugin.c", "backends/cuda/cuda_cudnn.c"))
    for line in code.strip("\n").split("\n"):
        assert line in sources, f"no longer in the code: {line!r}"
