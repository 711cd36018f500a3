# bench_kernels.py - the CPU kernels themselves: pygpu vs NumPy vs PyTorch CPU.
#
# Every unary op, add/mul/div (and the bias-add broadcast (64,512)+(512,)),
# sum/max/argmax over everything and along each axis, at 100 elements (call
# overhead), 64x512 (a training-sized activation, in cache) and 4M elements
# (memory-bound), in float32 and float64. One pytest-benchmark group per
# op/size/dtype, members numpy / pygpu / torch, so the ratio is read off the
# group. Each member's result is checked against NumPy once before timing.
#
# Threads: NumPy's elementwise ops and reductions are single-threaded. pygpu's
# thread count is what the library reports (1 while the cpu device runs kernels
# on the calling thread); torch is set to the same count, so the comparison is
# like for like; BENCH_KERNEL_THREADS overrides both (e.g. to compare
# single-thread kernels after the device pool lands). Rounds are fixed per size
# so the whole file runs in about a minute.
import functools
import os

import numpy as np
import pytest

import pygpu

try:
    import torch
except ImportError:  # torch is never a dependency: its members are skipped
    torch = None


def pygpu_threads():
    """Threads pygpu's cpu device runs one kernel on (1 before the device pool)."""
    if os.environ.get("BENCH_KERNEL_THREADS"):
        return int(os.environ["BENCH_KERNEL_THREADS"])
    fn = getattr(pygpu, "num_threads", None) or getattr(pygpu, "get_num_threads", None)
    return int(fn()) if callable(fn) else 1


THREADS = pygpu_threads()
if torch is not None:
    torch.set_num_threads(THREADS)

SIZES = {"100": (100,), "64x512": (64, 512), "4M": (4 * 1024 * 1024,)}
# (rounds, iterations) per size: ~10-50 ms of timing per benchmark
ROUNDS = {"100": (100, 50), "64x512": (50, 5), "4M": (8, 1)}
DTYPES = ("float32", "float64")


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name -> (numpy, pygpu, torch, domain); each takes the operand(s) of its library
UNARY = {
    "neg": (np.negative, lambda x: -x, lambda x: -x, "any"),
    "abs": (np.abs, abs, abs, "any"),
    "exp": (np.exp, pygpu.exp, lambda x: torch.exp(x), "any"),
    "log": (np.log, pygpu.log, lambda x: torch.log(x), "positive"),
    "sqrt": (np.sqrt, pygpu.sqrt, lambda x: torch.sqrt(x), "positive"),
    "tanh": (np.tanh, pygpu.tanh, lambda x: torch.tanh(x), "any"),
    "sigmoid": (_np_sigmoid, pygpu.sigmoid, lambda x: torch.sigmoid(x), "any"),
    "relu": (lambda x: np.maximum(x, 0), pygpu.relu, lambda x: torch.relu(x), "any"),
}
BINARY = {
    "add": lambda x, y: x + y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
}


def _reductions(ndim):
    axes = [("all", None)] + ([("axis0", 0), ("axis1", 1)] if ndim == 2 else [])
    out = {}
    for label, ax in axes:
        kw = {} if ax is None else {"axis": ax}
        tkw = {} if ax is None else {"dim": ax}
        out[f"sum_{label}"] = (lambda x, k=kw: x.sum(**k), lambda x, k=kw: x.sum(**k),
                               lambda x, k=tkw: x.sum(**k))
        out[f"max_{label}"] = (lambda x, k=kw: x.max(**k), lambda x, k=kw: x.max(**k),
                               lambda x, k=tkw: torch.amax(x, **k) if k else x.max())
        out[f"argmax_{label}"] = (lambda x, k=kw: x.argmax(**k), lambda x, k=kw: x.argmax(**k),
                                  lambda x, k=tkw: x.argmax(**k))
    return out


def _cases():
    for size, shape in SIZES.items():
        for dt in DTYPES:
            for name in UNARY:
                yield ("unary", name, size, dt)
            for name in BINARY:
                yield ("binary", name, size, dt)
            if len(shape) == 2:
                yield ("bias", "bias_add", size, dt)
            for name in _reductions(len(shape)):
                yield ("reduce", name, size, dt)


@functools.lru_cache(maxsize=2)
def _data(size, dt):
    """Two standard-normal arrays of the size (made once: 4M normals are slow)."""
    rng = np.random.default_rng(0)
    return tuple(rng.standard_normal(SIZES[size]).astype(dt) for _ in range(2))


@functools.lru_cache(maxsize=3)
def _operands(kind, name, size, dt):
    x, y = _data(size, dt)
    if kind == "unary" and UNARY[name][3] == "positive":
        x = np.abs(x) + np.dtype(dt).type(0.5)
    if kind == "binary":
        return (x, np.where(y < 0, y - 0.5, y + 0.5).astype(dt))  # nonzero divisors
    if kind == "bias":
        return (x, y[0])  # (64,512) + (512,)
    return (x,)


def _functions(kind, name, ndim):
    """(numpy fn, pygpu fn, torch fn), each taking that library's operands."""
    if kind == "unary":
        return UNARY[name][:3]
    if kind in ("binary", "bias"):
        f = BINARY.get(name, BINARY["add"])
        return f, f, f
    return _reductions(ndim)[name]


def _to(lib, arrays):
    if lib == "numpy":
        return arrays
    if lib == "pygpu":
        return tuple(pygpu.from_numpy(a) for a in arrays)
    return tuple(torch.from_numpy(a) for a in arrays)


def _as_numpy(r):
    if isinstance(r, np.ndarray) or np.isscalar(r) or isinstance(r, np.generic):
        return np.asarray(r)
    if torch is not None and isinstance(r, torch.Tensor):
        return r.numpy()
    return r.numpy()


@pytest.mark.parametrize("lib", ["numpy", "pygpu", "torch"])
@pytest.mark.parametrize("kind,name,size,dt", list(_cases()), ids=lambda v: str(v))
def test_kernel(benchmark, kind, name, size, dt, lib):
    if lib == "torch" and torch is None:
        pytest.skip("torch not installed")
    benchmark.group = f"kernel {name} {size} {dt}"
    benchmark.extra_info["threads"] = THREADS
    arrays = _operands(kind, name, size, dt)
    fns = _functions(kind, name, len(SIZES[size]))
    fn = fns[("numpy", "pygpu", "torch").index(lib)]
    ops = _to(lib, arrays)
    ref = np.asarray(fns[0](*arrays))
    got = _as_numpy(fn(*ops))
    tol = 1e-4 if dt == "float32" else 1e-10
    if ref.dtype.kind == "i":
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * max(1.0, float(np.abs(ref).max())))
    rounds, iterations = ROUNDS[size]
    benchmark.pedantic(fn, args=ops, rounds=rounds, iterations=iterations, warmup_rounds=1)


# --- half kernels: float16/bfloat16 read and written natively vs pygpu float32 -------------
# Issue 16: a half op loads each element, computes in float32 and rounds once at the store,
# with no widened temporary; a half sum accumulates in float32. Each group times the same
# op on pygpu float32 (the baseline), pygpu float16 and bfloat16, NumPy float16 and
# PyTorch bfloat16 (same thread count), on 4M elements (memory-bound: half moves half the
# bytes) and on 64x512 (in cache: the conversions show). The ratios half/float32 are
# printed at the end of the module, from one run.
#   python -m pytest -q benchmarks/bench_kernels.py -k half -s
HALF_OPS = {  # name -> (fn of (x, y), operands used); each works on all three libraries
    "add": (lambda x, y: x + y, 2),
    "exp": (lambda x, y: np.exp(x) if isinstance(x, np.ndarray) else x.exp(), 1),
    "sum": (lambda x, y: x.sum(), 1),
    "sum_axis0": (lambda x, y: x.sum(axis=0), 1),
}
HALF_MEMBERS = ["pygpu-float32", "pygpu-float16", "pygpu-bfloat16", "numpy-float16", "torch-bfloat16"]
HALF_SIZES = {"64x512": (64, 512), "4M": (2048, 2048)}
_half_times = {}


def _half_operands(member, size):
    lib, dt = member.split("-")
    x, y = (np.random.default_rng(k).standard_normal(HALF_SIZES[size]).astype(np.float32)
            for k in (1, 2))
    if lib == "numpy":
        return x.astype(dt), y.astype(dt)
    if lib == "torch":
        return tuple(torch.from_numpy(a).to(getattr(torch, dt)) for a in (x, y))
    return tuple(pygpu.from_numpy(a).astype(getattr(pygpu, dt)) for a in (x, y))


@pytest.mark.parametrize("member", HALF_MEMBERS)
@pytest.mark.parametrize("size", list(HALF_SIZES))
@pytest.mark.parametrize("op", list(HALF_OPS))
def test_half_kernel(benchmark, op, size, member):
    if member.startswith("torch") and torch is None:
        pytest.skip("torch not installed")
    benchmark.group = f"half kernel {op} {size}: half vs pygpu float32"
    benchmark.extra_info["threads"] = THREADS
    fn, nargs = HALF_OPS[op]
    ops = _half_operands(member, size)[:nargs] + (None,) * (2 - nargs)
    got = fn(*ops)
    if member.startswith("pygpu"):  # against the float32 op, rounded once (loose for sums)
        wide = fn(*(o.astype(pygpu.float32) if o is not None else None for o in ops))
        np.testing.assert_allclose(got.astype(pygpu.float32).numpy(), wide.numpy(),
                                   rtol=2e-2, atol=2e-2 * max(1.0, float(np.abs(wide.numpy()).max())))
    rounds, iterations = ROUNDS[size]
    benchmark.pedantic(fn, args=ops, rounds=rounds, iterations=iterations, warmup_rounds=1)
    if benchmark.stats:
        _half_times[(op, size, member)] = benchmark.stats.stats.min


def teardown_module(module):
    if not _half_times:
        return
    lines = [f"\nhalf kernels, best time / pygpu float32's, same run, {THREADS} thread(s), "
             f"ISA {pygpu.cpu_isa()}",
             f"{'op':>10}{'size':>8}" + "".join(f"{m:>16}" for m in HALF_MEMBERS[1:])]
    for op in HALF_OPS:
        for size in HALF_SIZES:
            base = _half_times.get((op, size, "pygpu-float32"))
            cells = []
            for m in HALF_MEMBERS[1:]:
                t = _half_times.get((op, size, m))
                cells.append(f"{t / base:>16.2f}" if t and base else f"{'-':>16}")
            lines.append(f"{op:>10}{size:>8}" + "".join(cells))
    print("\n".join(lines))
