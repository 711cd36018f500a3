"""benchmarks/bench_models.py at tiny shapes, as a smoke test (issue 45): every model builds on
both sides from the same weights, its first losses agree (bench_models exits otherwise), a
training step, batch-1 and batch-4 inference and the memory subprocesses run, and the tables
come out. Timing is never asserted."""
import importlib.util
import os

import pytest

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bench():
    path = os.path.join(ROOT, "benchmarks", "bench_models.py")
    spec = importlib.util.spec_from_file_location("bench_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_models_tiny_training_and_inference(capsys):
    bench = _bench()
    bench.main(["--tiny", "--rounds", "1", "--steps", "1", "--threads", "1", "--no-memory"])
    out = capsys.readouterr().out
    for row in bench.DEFAULT_ROWS:
        assert f"| {row} | 1 |" in out, row  # its training row
    for name in ("resnet18", "mobilenetv2", "gpt", "vit", "lstm"):
        assert f"| {name} |" in out, name  # its inference row
    assert "### Summary" in out and "eager/compile" in out
    assert "### pygpu eager against pygpu.compile" in out


def test_bench_models_tiny_memory(capsys):
    bench = _bench()
    bench.main(["--tiny", "--rows", "gpt@8", "--threads", "1", "--no-train", "--no-infer"])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("| gpt@8 |"))
    peaks = line.split("|")[2].split("/")
    assert all(float(p) > 0 for p in peaks)  # measured resident sizes, MiB


def test_bench_models_overhead_rows(capsys):
    """--overhead: the models at full depth with tiny tensors, both sides timed and their op
    calls per step counted (a step makes some ops on each side)."""
    bench = _bench()
    bench.main(["--overhead", "--rows", "resnet18@32,lstm@32", "--rounds", "1", "--steps", "1",
                "--threads", "1"])
    out = capsys.readouterr().out
    for name in ("resnet18", "lstm"):
        line = next(ln for ln in out.splitlines() if ln.startswith(f"| {name} |"))
        ops = [int(n) for n in line.split("|")[5].split("/")]
        assert len(ops) == 2 and min(ops) > 0, line


def test_perf_outside_nodes_classifies_each_stack_once():
    """benchmarks/perf_outside_nodes.py's sample classes: a stack through cpu_launch is a
    node's, a pool worker's is a task or a wait, the rest by what else it holds."""
    path = os.path.join(ROOT, "benchmarks", "perf_outside_nodes.py")
    spec = importlib.util.spec_from_file_location("perf_outside_nodes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    stacks = [("1", ["sgemm_kernel", "pg_cpu_run", "cpu_launch", "f_conv2d"]),
              ("1", ["_PyEval_EvalFrameDefault"]),
              ("1", ["visit_decref", "gc_collect_main", "_PyEval_EvalFrameDefault"]),
              ("1", ["PyObject_Call", "pg_ag_backward"]),
              ("1", ["pg_storage_new (/x/pygpu/_C.cpython-311-x86_64-linux-gnu.so)"]),
              ("2", ["input_task", "run_task", "work", "worker_main"]),
              ("2", ["sched_yield", "wait_for_job", "worker_main"])]
    got = mod.classify(stacks)
    assert got["1"] == {"in nodes": 1, "Python interpreter": 1, "python gc": 1,
                        "backward engine outside nodes": 1, "other pygpu C outside nodes": 1}
    assert got["2"] == {"pool worker: task": 1, "pool worker: waiting for a job": 1}


def test_profile_flop_counts_read_each_ops_recorded_operands():
    """The --profile table's GFLOP/s: FLOPs from the shapes pygpu.profiler records for linear
    (x, weight, bias, out) and linear_backward (grad_out, x, weight, grad_weight), a 3-D input
    folded into M rows; the backward's dX and dW are two products of the forward's size."""
    import pygpu
    from pygpu.profiler import ProfilerActivity, profile
    bench = _bench()
    lin = pygpu.nn.Linear(7, 5)
    x = pygpu.randn(3, 4, 7, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        lin(x).sum().backward()
    got = {e.name: bench.op_flops(e.name, e.input_shapes) for e in prof.events()
           if e.name in ("linear", "linear_backward")}
    forward = 2.0 * (3 * 4) * 7 * 5
    assert got == {"linear": forward, "linear_backward": 2 * forward}


def test_bench_model_shapes_tiny(capsys):
    """benchmarks/bench_model_shapes.py at small shapes: each product is checked against
    torch before it is timed, and every row of both tables comes out."""
    path = os.path.join(ROOT, "benchmarks", "bench_model_shapes.py")
    spec = importlib.util.spec_from_file_location("bench_model_shapes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(["--tiny", "--rounds", "1"])
    out = capsys.readouterr().out
    for M, K, N in mod.TINY_LINEAR:
        assert f"| {M} x {K} x {N} forward |" in out
        assert f"| {M} x {K} x {N} forward + backward |" in out
    assert out.count(" forward + backward |") == len(mod.TINY_LINEAR) + len(mod.TINY_SDPA)
    assert "| 1, 2, 70, 16 causal forward |" in out
