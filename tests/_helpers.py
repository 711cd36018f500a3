# _helpers.py - small functions the test files share (imported, not fixtures).
#
# Moving NumPy data to a device and back is written once here so that every
# test does it the same way: pygpu.tensor(a, device=d) in, t.numpy() out. The
# tensor type is looked up from a created tensor because the spec names the
# factory functions, not the class. The timing tests' controls (timed, best_of,
# two_thread_ratio) are here too, so that every timing test measures the same way.
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np

import pygpu

TENSOR_TYPE = type(pygpu.zeros(1))

# The dtypes pygpu supports, by NumPy name.
DTYPES = ("float32", "float64", "int64", "bool")


def to_device(a, device):
    """Copy NumPy data `a` (any array-like) onto `device`."""
    return pygpu.tensor(np.asarray(a), device=device)


def to_numpy(t):
    """Bring a tensor's values back as a NumPy array (synchronizes; detached: numpy() refuses
    a tensor that requires grad, as PyTorch's)."""
    out = t.detach().numpy()
    assert isinstance(out, np.ndarray), f"numpy() returned {type(out).__name__}"
    return out


def same_device(a, b):
    """True when two device specs (Device or string, "sim" == "sim:0") name one device."""
    return str(pygpu.device(a)) == str(pygpu.device(b))


def rss_bytes():
    """Resident set size of this process, from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        resident_pages = int(f.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def timed(fn, *args, **kwargs):
    """(seconds fn took, its result)."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def best_of(runs, fn):
    """The shortest of `runs` timings of fn() (noise on a shared machine only slows a run)."""
    return min(timed(fn)[0] for _ in range(runs))


def two_thread_ratio(job, runs=3):
    """Control for the timing tests: best-of-`runs` time of `job` on two Python threads at
    once over its time alone. Near 1.0 with a spare core; near 2.0 when other processes
    hold the cores, in which case a test of parallel speed-up has nothing to measure."""
    def two_jobs():
        threads = [threading.Thread(target=job) for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()

    return best_of(runs, two_jobs) / best_of(runs, job)


def random_array(rng, shape, dtype, domain="any"):
    """Reproducible test data of `dtype` for an op's domain.

    domain: "any" (normals / small ints / coin flips), "positive" (>= 0.5,
    for log and sqrt), "nonzero" (|x| >= 0.5, for divisors), "shift" (integers: a shift's
    count, 0 to the width); for the math functions' domains (floats only): "unit" (-0.95, 0.95: asin, atanh, erfinv), "prob" (0.05, 0.95:
    logit), "gt1" (> 1.1: acosh, zeta's exponent).
    """
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if domain == "shift":  # a shift's count: 0 to the width (exclusive), where NumPy agrees
        return rng.integers(0, 8 * dtype.itemsize, size=shape).astype(dtype)
    if dtype.kind == "u":
        return rng.integers(1 if domain in ("positive", "nonzero") else 0, 20, size=shape, dtype=dtype)
    if dtype.kind == "i":
        if domain == "positive":
            return rng.integers(1, 20, size=shape, dtype=dtype)
        a = rng.integers(-9, 10, size=shape, dtype=dtype)
        if domain == "nonzero":
            a[a == 0] = 3
        return a
    if domain == "unit":
        return rng.uniform(-0.95, 0.95, shape).astype(dtype)
    if domain == "prob":
        return rng.uniform(0.05, 0.95, shape).astype(dtype)
    a = rng.standard_normal(shape).astype(dtype)
    if domain == "gt1":
        a = np.abs(a) + dtype.type(1.1)
    elif domain == "positive":
        a = np.abs(a) + dtype.type(0.5)
    elif domain == "nonzero":
        a = np.where(a < 0, a - dtype.type(0.5), a + dtype.type(0.5)).astype(dtype)
    return a


# the directory holding the pygpu under test (the checkout when built in place)
PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(pygpu.__file__)))


def run_child(code, env=None, timeout=120):
    """Run `code` in a fresh interpreter importing the pygpu under test; (rc, stdout, stderr).

    For cases that once crashed the interpreter (or touch process shutdown): a crash then
    fails its test, as a negative return code, instead of taking pytest down with it."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = PKG_ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=full_env, timeout=timeout, cwd=PKG_ROOT)
    return proc.returncode, proc.stdout, proc.stderr


def run_under_isa(isa, code, timeout=600):
    """Run `code` in a fresh interpreter with PYGPU_ISA=isa (the vector kernels' level is read
    once, at import, so each level needs a process of its own), the tests folder importable
    and current; fail with the child's stderr unless it exits 0. Returns its stdout."""
    tests = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYGPU_ISA=isa, PYTHONPATH=os.pathsep.join([PKG_ROOT, tests]))
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=tests, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, f"PYGPU_ISA={isa}: {r.stderr[-3000:]}"
    return r.stdout

# The fused linear layers' activations (the op table's PG_ACT rows, csrc/core/pg_ops.def):
# NumPy references of f(x) and of f'(x) written through y = f(x), by name. Codes come
# from the table (ACT_CODE), never written out by hand; tests/test_op_registry.py fails
# when a row has no reference here.
ACT_NP = {
    None: (lambda z: z, lambda y: np.ones_like(y)),
    "relu": (lambda z: np.maximum(z, 0), lambda y: (y > 0).astype(y.dtype)),
    "tanh": (np.tanh, lambda y: 1 - y * y),
    "sigmoid": (lambda z: 1 / (1 + np.exp(-z)), lambda y: y * (1 - y)),
    "leaky_relu": (lambda z: np.where(z > 0, z, z / 100),
                   lambda y: np.where(y > 0, 1, 0.01).astype(y.dtype)),
}
ACT_CODE = {None: 0, **{name: code for name, code, _ in pygpu._C._act_table()}}
ACT_NAME = {code: name for name, code in ACT_CODE.items()}
ACTS = tuple(ACT_CODE)  # None first, then the table's rows


def act_np(v, code):
    """f(v) for the activation with this code (0: none)."""
    return ACT_NP[ACT_NAME[code]][0](v)


def dact_np(c, y, code):
    """c * f'(x), through the activation's output y."""
    return c * ACT_NP[ACT_NAME[code]][1](y)


class OptionalTorch:
    """`torch` for tests that use PyTorch as their oracle when it is installed: touching
    any attribute skips the test where PyTorch is absent, so the tests in the same file
    that need no oracle (finite differences, NumPy comparisons) still run there."""

    def __getattr__(self, name):
        if name.startswith("_"):  # pytest's collection probes objects for dunder attributes
            raise AttributeError(name)
        return getattr(pytest_importorskip_torch(), name)


def pytest_importorskip_torch():
    import pytest
    return pytest.importorskip("torch")


def same_repr(ours, ref):
    """Assert a module prints as PyTorch's does. PyTorch versions disagree on which norm
    layers print `bias=`: 2.13 (pygpu's form) prints it for LayerNorm only, 2.11 (the H200
    runs' PyTorch) for BatchNorm and InstanceNorm only; where exactly one side prints it, the
    two are compared without a `bias=True` field."""
    got, want = repr(ours), repr(ref)
    if ("bias=" in got) != ("bias=" in want):
        got, want = got.replace(", bias=True", ""), want.replace(", bias=True", "")
    assert got == want, (got, want)


def check_against_torch(device, ours, ref, arrays, rtol=1e-9, atol=1e-10, grads=True):
    """ours(*pygpu tensors) against ref(*torch tensors): the value(s), then the gradient of
    every array under a random upstream gradient (of the first output); torch is imported
    here, by the tests that compare with it."""
    import torch
    ps = [pygpu.tensor(a, device=device).requires_grad_(grads) for a in arrays]
    ts = [torch.tensor(a, requires_grad=grads) for a in arrays]
    po, to = ours(*ps), ref(*ts)
    if isinstance(to, tuple):
        for p, t in zip(po, to):
            np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
        po, to = po[0], to[0]
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol)
    if not grads:
        return
    g = np.random.default_rng(1).standard_normal(tuple(to.shape))
    (po * pygpu.tensor(g, device=device)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    for p, t in zip(ps, ts):
        if t.grad is None:  # an argument the op does not use
            assert p.grad is None
            continue
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)
