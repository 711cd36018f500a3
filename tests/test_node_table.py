# test_node_table.py - the node kinds are rows (csrc/core/pg_ops.def's PG_NODE), not cases.
#
# Each row names the node's parameters, its CPU kernel, how a pool splits it, its use of the
# bf16 weight panels, its CUDA launcher and whether a CUDA graph may capture it; the CPU
# dispatch, the split table, the panel uses, cuda's launch table and supported set and the
# capture refusals are generated from the rows. Here: no file switches on the node kind,
# every row's columns name things that exist, and docs/architecture.md's worked example of
# adding a node kind is the code.
import os
import re

from pygpu import _C

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSRC = os.path.join(ROOT, "csrc")
ROWS = _C._node_table()  # (ID, params, cpu, split, panels, cuda, graph, doc)
SPLITS = {"SERIAL", "ELEM", "UNARY", "RANDOM", "ROWS", "UPDATE", "TOPK", "MATMUL", "OWN",
          "REDUCE"}
PANELS = {"NO_PANELS", "PANELS_FWD", "PANELS_BWD", "PANELS_STEP"}


def _sources(*under, exts=(".c", ".h", ".cu", ".cuh")):
    out = {}
    for sub in under:
        for d, _, files in os.walk(os.path.join(CSRC, sub)):
            for f in files:
                if f.endswith(exts):
                    path = os.path.join(d, f)
                    out[os.path.relpath(path, ROOT)] = open(path).read()
    return out


def test_no_file_switches_on_the_node_kind():
    """The issue's bar: no `case PG_OP_` in csrc/ (82 in 7 switches before), and no switch
    on a node's op, outside the tables generated from the rows."""
    for path, text in _sources("").items():
        assert "case PG_OP_" not in text, f"{path}: a case on the node kind; make it a column"
        assert not re.search(r"switch\s*\(\s*\w+\s*(->|\.)\s*op\s*\)", text), \
            f"{path}: a switch on a node's op; make it a column of the PG_NODE rows"


def test_the_rows_are_well_formed():
    ids = [r[0] for r in ROWS]
    assert len(ids) == len(set(ids)) and ids[:2] == ["FILL", "COPY"]
    node_h = open(os.path.join(CSRC, "core", "pg_node.h")).read()
    union = node_h[node_h.index("union {"):node_h.index("} p;")]
    for id_, params, cpu, split, panels, cuda, graph, doc in ROWS:
        assert re.search(r"[\w}]\s+" + params + ";", union), f"{id_}: no pg_node.p.{params}"
        assert cpu.startswith("pg_cpu_"), (id_, cpu)
        assert split in SPLITS and panels in PANELS, (id_, split, panels)
        assert cuda == "NO_CUDA" or re.fullmatch(r"CUDA(_HALF|_ALL)?\(pg_cuda_launch_\w+\)", cuda), cuda
        assert graph in ("GRAPH_OK", "GRAPH_AS_ENTRIES") or graph.startswith(
            ("GRAPH_REFUSE(", "GRAPH_REFUSE_IF(")), graph
        assert doc, id_


def test_every_row_names_a_kernel_and_a_launcher_that_exist():
    """The build would fail anyway (the tables take their addresses); this names the file
    to write them in."""
    cpu = "\n".join(_sources(os.path.join("backends", "cpu")).values())
    cuda = "\n".join(_sources(os.path.join("backends", "cuda"), exts=(".c",)).values())
    for id_, _, fn, split, _, launch, _, _ in ROWS:
        assert re.search(r"pg_status\s+" + fn + r"\s*\(const pg_node \*", cpu) or \
            re.search(r"OPTIM_KERNEL\(" + fn[len("pg_cpu_"):] + ",", cpu), \
            f"{id_}: write its CPU kernel {fn} in csrc/backends/cpu/"
        if split == "OWN":
            assert re.search(r"pg_status\s+" + fn + r"_on\s*\(", cpu), f"{id_}: {fn}_on"
        if launch != "NO_CUDA":
            name = launch[launch.index("(") + 1:-1]
            assert re.search(r"pg_status\s+" + name + r"\s*\(pg_cuda_device \*", cuda) or \
                (name[len("pg_cuda_launch_"):] in _optim_names()), \
                f"{id_}: write its CUDA launcher {name} in csrc/backends/cuda/"


def _optim_names():
    text = open(os.path.join(CSRC, "core", "pg_ops.def")).read()
    return set(re.findall(r"^PG_OPTIM\(\w+, (\w+),", text, re.M))


def test_the_optimizer_rows_are_node_kinds():
    text = open(os.path.join(CSRC, "core", "pg_ops.def")).read()
    kinds = re.findall(r"^PG_OPTIM\((\w+), (\w+),", text, re.M)
    rows = {r[0]: r for r in ROWS}
    assert kinds, "no PG_OPTIM rows"
    for id_, name in kinds:
        assert rows[id_][2] == "pg_cpu_" + name and rows[id_][1] == "optim", id_
        assert rows[id_][5] in (f"CUDA(pg_cuda_launch_{name})", f"CUDA_HALF(pg_cuda_launch_{name})",
                                f"CUDA_ALL(pg_cuda_launch_{name})")


def test_the_worked_example_in_docs_architecture_is_the_code():
    """docs/architecture.md's "Adding a node kind": each line it quotes is in the file it
    names, and the row it shows is the table's row, so the example cannot drift."""
    text = open(os.path.join(ROOT, "docs", "architecture.md")).read()
    section = text[text.index("## Adding a node kind"):text.index("## Adding a sub-op")]
    steps = re.findall(r"\*\*\d\. [^*]+\*\* \(`([^`]+)`.*?```text\n(.*?)```", section, re.S)
    assert [p for p, _ in steps] == [
        "csrc/core/pg_ops.def", "csrc/core/pg_node.h", "csrc/core/pg_ops_amp.c",
        "csrc/backends/cpu/cpu_amp.c", "csrc/backends/cuda/cuda_launch.c"], \
        "a row, its parameters, the core function, a CPU kernel, a CUDA launcher"
    for path, code in steps:
        source = open(os.path.join(ROOT, path)).read()
        for line in code.strip("\n").split("\n"):
            assert line in source, f"{path} no longer has: {line!r}"
    row = re.match(r"PG_NODE\((\w+), (\w+), (\w+), (\w+), (\w+), (\w+\(\w+\)|NO_CUDA),",
                   steps[0][1])
    assert row, steps[0][1]
    assert next(r for r in ROWS if r[0] == row[1])[:6] == row.groups()

