"""python -m pygpu.selftest (or pygpu.tools.selftest) [--device cuda]: check every op on a device against NumPy.

For a person with a GPU (or anyone): runs a compact table of ops on each
requested device (default: every device present) and compares with NumPy at
the tolerances the test suite uses. Exit status 0 when everything matches.
From a source checkout, the whole suite runs on a GPU with
`pytest --device cuda`."""
import argparse
import sys

import numpy as np

import pygpu

RTOL = {"float32": 1e-5, "float64": 1e-12}


def _cases(rng):
    a = rng.standard_normal((33, 17))
    b = rng.standard_normal((17, 9))
    c = rng.standard_normal((1, 17))
    pos = np.abs(a) + 0.1
    yield "add broadcast", lambda x, y: x + y, (a, c)
    yield "sub", lambda x, y: x - y, (a, a[::-1])
    yield "mul scalar", lambda x: x * 2.5, (a,)
    yield "div", lambda x, y: x / y, (a, pos)
    yield "neg", lambda x: -x, (a,)
    yield "maximum", lambda x, y: (pygpu.maximum(x, y) if isinstance(x, pygpu.Tensor)
                                   else np.maximum(x, y)), (a, c)
    yield "matmul", lambda x, y: x @ y, (a, b)
    yield "matmul T", lambda x, y: x.T @ y, (a, a)
    for name in ("exp", "tanh", "sqrt", "log", "sigmoid", "relu"):
        src = pos if name in ("sqrt", "log") else a
        yield name, _unary(name), (src,)
    yield "sum axis 0", lambda x: x.sum(axis=0), (a,)
    yield "mean", lambda x: x.mean(), (a,)
    yield "max axis 1", lambda x: x.max(axis=1), (a,)
    yield "argmax axis 1", lambda x: x.argmax(axis=1), (a,)
    yield "compare", lambda x, y: x < y, (a, c)
    yield "transpose copy", lambda x: (x.T.contiguous() if isinstance(x, pygpu.Tensor)
                                       else np.ascontiguousarray(x.T)), (a,)


def _unary(name):
    def f(x):
        if isinstance(x, pygpu.Tensor):
            return getattr(x, name)()
        if name == "sigmoid":
            return 1 / (1 + np.exp(-x))
        if name == "relu":
            return np.maximum(x, 0)
        return getattr(np, name)(x)
    return f


def check(device, dtype):
    rng = np.random.default_rng(0)
    failures = []
    for name, fn, args in _cases(rng):
        args = [a.astype(dtype) for a in args]
        want = fn(*args)
        got = fn(*[pygpu.tensor(a, device=device) for a in args]).cpu().numpy()
        ok = got.shape == np.shape(want) and np.allclose(got, want, rtol=RTOL[dtype] * 100,
                                                          atol=RTOL[dtype] * 10)
        if not ok:
            failures.append(name)
    return failures


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pygpu.selftest", description=__doc__.splitlines()[0])
    p.add_argument("--device", action="append", help="device(s) to check (default: all present)")
    args = p.parse_args(argv)
    devices = args.device or [str(d) for d in pygpu.devices()]
    if not pygpu.cuda.is_available():
        print(f"cuda: not available ({pygpu.cuda.unavailable_reason()})")
    bad = 0
    for dev in devices:
        for dtype in ("float32", "float64"):
            failures = check(dev, dtype)
            pygpu.synchronize()
            status = "ok" if not failures else "FAILED: " + ", ".join(failures)
            print(f"{dev:<8} {dtype:<8} {status}")
            bad += len(failures)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
