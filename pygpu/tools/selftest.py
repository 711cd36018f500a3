"""python -m pygpu.selftest (or pygpu.tools.selftest) [--device cuda:0]: check the ops on a device against NumPy.

For a person with a GPU (or anyone): runs a table of checks on each requested
device (default: every device present) and compares with NumPy at the
tolerances the test suite uses. Exit status 0 when everything matches.
Three groups, each reaching code a small example does not:
  ops       elementwise, matmul, reductions on 33x17 inputs;
  large     reductions over a million elements and over tall or wide
            matrices: on cuda these take the split (two-pass) reduction
            kernels, which small inputs never reach;
  copies    non-blocking copies through pinned host memory both ways, with
            compute queued behind them before anything waits;
  training  the fused training ops: linear (+ReLU) forward and backward,
            cross-entropy forward and backward, one SGD-with-momentum and
            one Adam step, against NumPy written out here.
It runs on sim:0 as well (the suite checks that); on cuda:0 it is the first
thing to run on a new GPU (docs/cuda.md has the whole checklist).
From a source checkout, the whole suite runs on a GPU with
`pytest --device cuda`."""
import argparse
import sys

import numpy as np

import pygpu

RTOL = {"float32": 1e-5, "float64": 1e-12}


def _tensor(a, device):
    return pygpu.tensor(a, device=device)


def _host(t):
    return t.detach().cpu().numpy()


# -- ops: (name, fn, args) applied to NumPy arrays and to tensors alike ----------------------

def _op_cases(rng):
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


def _large_cases(rng):
    # rows x len chosen so that a GPU with ~100+ SMs splits each row: one long row
    # (contiguous: pieces per block), a few long contiguous rows, and a few long
    # strided rows (axis 0 of a tall matrix: pieces per thread)
    flat = rng.standard_normal(1 << 20)
    wide = rng.standard_normal((6, 1 << 17))
    tall = rng.standard_normal((1 << 17, 5))
    yield "sum 2^20", lambda x: x.sum(), (flat,)
    yield "mean 2^20", lambda x: x.mean(), (flat,)
    yield "max 2^20", lambda x: x.max(), (flat,)
    yield "argmax 2^20", lambda x: x.argmax(), (flat,)
    yield "sum wide axis 1", lambda x: x.sum(axis=1), (wide,)
    yield "min wide axis 1", lambda x: x.min(axis=1), (wide,)
    yield "sum tall axis 0", lambda x: x.sum(axis=0), (tall,)
    yield "argmax tall axis 0", lambda x: x.argmax(axis=0), (tall,)
    yield "max tall.T axis 1", lambda x: x.T.max(axis=1), (tall,)


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


def _close(got, want, dtype, scale=1.0):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "biu":
        return np.array_equal(got, want)
    return np.allclose(got, want, rtol=RTOL[dtype] * 100 * scale, atol=RTOL[dtype] * 10 * scale)


def _run_table(cases, device, dtype, scale=1.0):
    failures = []
    for name, fn, args in cases:
        args = [a.astype(dtype) for a in args]
        want = fn(*args)
        try:
            got = _host(fn(*[_tensor(a, device) for a in args]))
        except Exception as e:  # a device failure is a failed check, named
            failures.append(f"{name} ({type(e).__name__}: {e})")
            continue
        # sums over 2^20 elements round differently in any order: scale by sqrt(len)
        if not _close(got, want, dtype, scale):
            failures.append(name)
    return failures


# -- copies: pinned, non-blocking both ways, compute queued behind them ---------------------

def _check_copies(device, dtype, rng):
    failures = []
    n = 1 << 18
    src = rng.standard_normal((4, n)).astype(dtype)
    host = [pygpu.tensor(src[i]).pin_memory() for i in range(4)]
    if not all(h.is_pinned() for h in host):
        failures.append("pin_memory")
    # four uploads queued without waiting, compute on each, downloads into pinned memory
    dev = [h.to(device, non_blocking=True) for h in host]
    out = [(d * 2.0 + 1.0).to("cpu", non_blocking=True) for d in dev]
    if not all(o.is_pinned() for o in out):
        failures.append("non-blocking download lands in pinned memory")
    pygpu.synchronize()
    for i, o in enumerate(out):
        if not np.array_equal(o.numpy(), src[i] * 2 + 1):
            failures.append(f"pinned round trip {i}")
    # an in-place copy_ into a device tensor, non-blocking, then a reduction of it
    target = pygpu.zeros((n,), dtype=getattr(pygpu, dtype), device=device)
    target.copy_(host[1], non_blocking=True)
    got = float(target.sum().item())
    if not np.isclose(got, src[1].sum(), rtol=RTOL[dtype] * 1000, atol=RTOL[dtype] * 1000):
        failures.append("copy_(non_blocking) then sum")
    return failures


# -- training ops against NumPy ---------------------------------------------------------------

def _check_training(device, dtype, rng):
    failures = []
    n, fin, fout, classes = 64, 48, 32, 10
    x = rng.standard_normal((n, fin)).astype(dtype)
    w = (rng.standard_normal((fout, fin)) * 0.2).astype(dtype)
    b = rng.standard_normal(fout).astype(dtype) * 0.1
    w2 = (rng.standard_normal((classes, fout)) * 0.2).astype(dtype)
    labels = rng.integers(0, classes, n)

    # NumPy reference: h = relu(x W^T + b); logits = h W2^T; loss = mean xent
    z = x @ w.T + b
    h = np.maximum(z, 0)
    logits = h @ w2.T
    m = logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(axis=1)) + m[:, 0]
    loss = np.mean(lse - logits[np.arange(n), labels])
    p = np.exp(logits - lse[:, None])
    p[np.arange(n), labels] -= 1
    dlogits = p / n
    dw2 = dlogits.T @ h
    dh = dlogits @ w2
    dz = dh * (z > 0)
    dw, db, dx = dz.T @ x, dz.sum(axis=0), dz @ w

    T = lambda a, rg=False: (_tensor(a, device).requires_grad_() if rg else _tensor(a, device))
    tx, tw, tb, tw2 = T(x, True), T(w, True), T(b, True), T(w2, True)
    try:
        th = pygpu.nn.functional.linear(tx, tw, tb, activation="relu")
        tlogits = pygpu.nn.functional.linear(th, tw2)
        tloss = pygpu.cross_entropy(tlogits, _tensor(labels.astype(np.int64), device))
        tloss.backward()
        checks = [("linear+relu forward", _host(th), h), ("cross_entropy forward", tloss.item(), loss),
                  ("linear backward dW", _host(tw.grad), dw), ("linear backward db", _host(tb.grad), db),
                  ("linear backward dx", _host(tx.grad), dx),
                  ("cross_entropy backward (dW2)", _host(tw2.grad), dw2)]
        for name, got, want in checks:
            if not _close(got, want, dtype, 10):
                failures.append(name)
    except Exception as e:
        return failures + [f"training forward/backward ({type(e).__name__}: {e})"]

    # one optimizer step each, on the gradients above
    for name, make, update in (
            ("SGD momentum step", lambda ps: pygpu.optim.SGD(ps, lr=0.1, momentum=0.9), _sgd_ref),
            ("Adam step", lambda ps: pygpu.optim.Adam(ps, lr=0.01), _adam_ref)):
        try:
            pw = pygpu.nn.Parameter(_tensor(w, device))
            pw.grad = _tensor(dw, device)
            opt = make([pw])
            opt.step()
            pw.grad = _tensor(dw * 0.5, device)
            opt.step()
            if not _close(_host(pw.detach()), update(w, [dw, dw * 0.5]), dtype, 10):
                failures.append(name)
        except Exception as e:
            failures.append(f"{name} ({type(e).__name__}: {e})")
    return failures


def _sgd_ref(w, grads, lr=0.1, momentum=0.9):
    buf = None
    for g in grads:
        buf = g.copy() if buf is None else momentum * buf + g
        w = w - lr * buf
    return w


def _adam_ref(w, grads, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t, g in enumerate(grads, 1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat, vhat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        w = w - lr * mhat / (np.sqrt(vhat) + eps)
    return w


GROUPS = ("ops", "large", "copies", "training")


def check(device, dtype, groups=GROUPS):
    """Names of the checks that failed on `device` in `dtype` (empty: all passed)."""
    rng = np.random.default_rng(0)
    failures = []
    if "ops" in groups:
        failures += _run_table(_op_cases(rng), device, dtype)
    if "large" in groups:
        failures += _run_table(_large_cases(rng), device, dtype, scale=100)
    if "copies" in groups:
        failures += _check_copies(device, dtype, rng)
    if "training" in groups:
        failures += _check_training(device, dtype, rng)
    return failures


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pygpu.selftest", description=__doc__.splitlines()[0])
    p.add_argument("--device", action="append", help="device(s) to check (default: all present)")
    p.add_argument("--only", action="append", choices=GROUPS,
                   help="run only these groups (default: all)")
    args = p.parse_args(argv)
    devices = args.device or [str(d) for d in pygpu.devices()]
    groups = tuple(args.only) if args.only else GROUPS
    if not pygpu.cuda.is_available():
        print(f"cuda: not available ({pygpu.cuda.unavailable_reason()})")
    bad = 0
    for dev in devices:
        for dtype in ("float32", "float64"):
            failures = check(dev, dtype, groups)
            pygpu.synchronize()
            status = "ok" if not failures else "FAILED: " + ", ".join(failures)
            print(f"{dev:<8} {dtype:<8} {'+'.join(groups)}: {status}")
            bad += len(failures)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
