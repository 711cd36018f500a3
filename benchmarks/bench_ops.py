# bench_ops.py - issue 27's ten representative tensor-surface ops against PyTorch and NumPy,
# same run, same thread count.
#
#   PYTHONPATH=. python benchmarks/bench_ops.py [--threads 2] [--rounds 7] [--device cpu]
#                                               [--only clamp_,topk] [--block-ms 40] [--clock wall]
#
# Ops: a view chain (view, view, permute, unsqueeze, expand, narrow: no data moves), clamp_
# (in place, both bounds), where(cond, x, y), gather(1, idx) with 8 indices per row,
# softmax(dim=1), layer_norm over the last axis with weight and bias, dropout(p=0.1,
# training), topk(8, dim=1), sum(dim=1) and one AdamW step on a parameter of the shape.
# Shapes 64x512 (a training activation, in cache) and 2048x2048 (4M elements, memory-bound),
# float32. pygpu and torch run at --threads (pygpu.set_num_threads, torch.set_num_threads);
# NumPy is timed where it has the op in one call (its elementwise ops are single-threaded).
#
# Timing: each (op, shape) times every library in alternating blocks of about --block-ms,
# with a short pause between blocks; the figure is the median block over --rounds, per call.
# --clock wall (default) times blocks by the wall clock; --clock cpu by the process's CPU time
# (time.process_time: every thread of the process), which a machine shared with other jobs
# disturbs far less (time spent descheduled is not counted; a pool's spinning is).
# Every result is checked against torch once before timing (the random ops by their
# statistics), so a fast wrong kernel cannot win. Prints a markdown table: the ratio column
# is pygpu / torch (< 1: pygpu faster). A script, not a test: the default suite never runs it.
import argparse
import statistics
import time

import numpy as np

import pygpu
import pygpu.nn.functional as pF

SHAPES = [(64, 512), (2048, 2048)]
K = 8  # topk's k and gather's indices per row


def _views(mod_is_np):
    if mod_is_np:
        return lambda x: np.broadcast_to(
            x.reshape(-1).reshape(x.shape[0], -1).transpose(1, 0)[None],
            (3, x.shape[1], x.shape[0]))[:, 1:5]
    return lambda x: (x.view(-1).view(x.shape[0], -1).permute(1, 0).unsqueeze(0)
                      .expand(3, -1, -1).narrow(1, 1, 4))


def _adamw_step(lib, data, grad, device=None):
    """A zero-argument callable doing one AdamW step on a parameter holding data (a copy)."""
    if lib == "torch":
        import torch
        p = torch.nn.Parameter(torch.from_numpy(data.copy()))
        p.grad = torch.from_numpy(grad.copy())
        opt = torch.optim.AdamW([p], lr=1e-3)
    else:
        p = pygpu.nn.Parameter(pygpu.tensor(data, device=device))
        p.grad = pygpu.tensor(grad, device=device)
        opt = pygpu.optim.AdamW([p], lr=1e-3)
    return opt.step, p


def cases(shape, device):
    """name -> {library: zero-argument callable}, plus the check run before timing."""
    import torch
    import torch.nn.functional as tF
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    cond = rng.random(shape) < 0.5
    idx = rng.integers(0, shape[1], (shape[0], K))
    w = rng.standard_normal(shape[1]).astype(np.float32)
    bias = rng.standard_normal(shape[1]).astype(np.float32)
    P = lambda v: pygpu.tensor(v, device=device)  # noqa: E731
    T = torch.from_numpy
    px, pb, pc, pi, pw, pbias = P(a), P(b), P(cond), P(idx), P(w), P(bias)
    tx, tb, tc, ti, tw, tbias = T(a.copy()), T(b), T(cond), T(idx), T(w), T(bias)
    # clamp_ writes scratch copies made once: after the first call the values are clamped
    # already, but every call still reads and writes every element
    pcl, tcl, ncl = P(a), T(a.copy()), a.copy()
    vp, vn = _views(False), _views(True)
    ps, pparam = _adamw_step("pygpu", a, b, device)
    ts, tparam = _adamw_step("torch", a, b)
    sync = (lambda r: r) if device == "cpu" else (lambda r: (pygpu.synchronize(), r)[1])
    out = {
        "view chain": {"pygpu": lambda: vp(px), "torch": lambda: vp(tx), "numpy": lambda: vn(a)},
        "clamp_": {"pygpu": lambda: sync(pcl.clamp_(-0.5, 0.5)),
                   "torch": lambda: tcl.clamp_(-0.5, 0.5),
                   "numpy": lambda: np.clip(ncl, -0.5, 0.5, out=ncl)},
        "where": {"pygpu": lambda: sync(pygpu.where(pc, px, pb)),
                  "torch": lambda: torch.where(tc, tx, tb), "numpy": lambda: np.where(cond, a, b)},
        f"gather dim=1 ({K}/row)": {"pygpu": lambda: sync(px.gather(1, pi)),
                                    "torch": lambda: tx.gather(1, ti),
                                    "numpy": lambda: np.take_along_axis(a, idx, 1)},
        "softmax dim=1": {"pygpu": lambda: sync(pF.softmax(px, dim=1)),
                          "torch": lambda: tF.softmax(tx, dim=1)},
        "layer_norm": {"pygpu": lambda: sync(pF.layer_norm(px, (shape[1],), pw, pbias)),
                       "torch": lambda: tF.layer_norm(tx, (shape[1],), tw, tbias)},
        "dropout p=0.1": {"pygpu": lambda: sync(pF.dropout(px, 0.1, training=True)),
                          "torch": lambda: tF.dropout(tx, 0.1, training=True)},
        f"topk k={K} dim=1": {"pygpu": lambda: sync(px.topk(K, dim=1)),
                              "torch": lambda: tx.topk(K, dim=1)},
        "sum dim=1": {"pygpu": lambda: sync(px.sum(dim=1)), "torch": lambda: tx.sum(dim=1),
                      "numpy": lambda: a.sum(axis=1)},
        "AdamW step": {"pygpu": lambda: sync(ps()), "torch": ts},
    }

    def check():
        np_ = lambda t: t.numpy() if hasattr(t, "numpy") else t  # noqa: E731
        tn = lambda t: t.detach().numpy()  # noqa: E731
        ok = np.testing.assert_allclose
        ok(np_(vp(px)), tn(vp(tx)))
        ok(np_(pygpu.where(pc, px, pb)), tn(torch.where(tc, tx, tb)))
        ok(np_(px.gather(1, pi)), tn(tx.gather(1, ti)))
        ok(np_(pF.softmax(px, dim=1)), tn(tF.softmax(tx, dim=1)), rtol=1e-5, atol=1e-7)
        ok(np_(pF.layer_norm(px, (shape[1],), pw, pbias)),
           tn(tF.layer_norm(tx, (shape[1],), tw, tbias)), rtol=1e-4, atol=1e-4)
        pv, pidx = px.topk(K, dim=1)
        tv, tidx = tx.topk(K, dim=1)
        ok(np_(pv), tn(tv))
        ok(np_(pidx), tn(tidx))
        ok(np_(px.sum(dim=1)), tn(tx.sum(dim=1)), rtol=1e-4, atol=1e-3)
        ok(np_(pcl.clone().clamp_(-0.5, 0.5)), np.clip(a, -0.5, 0.5))
        d = np_(pF.dropout(px, 0.1, training=True))
        kept = d != 0
        assert abs(kept.mean() - 0.9) < 0.02, kept.mean()
        ok(d[kept], a[kept] / 0.9, rtol=1e-6)
        ps()
        ts()
        ok(np_(pparam.detach()), tn(tparam), rtol=1e-5, atol=1e-6)

    return out, check


_clock = time.perf_counter


def _block(fn, n):
    t0 = _clock()
    for _ in range(n):
        fn()
    return (_clock() - t0) / n


def measure(fns, rounds, block_s):
    """library -> median seconds per call, over `rounds` alternating blocks."""
    n = {}
    for lib, fn in fns.items():  # warm up, then size each library's block to ~block_s
        fn()
        t = _block(fn, 3)
        n[lib] = max(1, int(block_s / max(t, 1e-7)))
    times = {lib: [] for lib in fns}
    for _ in range(rounds):
        for lib, fn in fns.items():
            times[lib].append(_block(fn, n[lib]))
            time.sleep(0.01)
    return {lib: statistics.median(v) for lib, v in times.items()}


def _fmt(s):
    if s is None:
        return "-"
    us = s * 1e6
    return f"{us:.2f}" if us < 10 else f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--block-ms", type=float, default=40.0)
    ap.add_argument("--device", default="cpu", help="pygpu's device: cpu or sim (sim:0)")
    ap.add_argument("--only", default="", help="comma-separated op-name prefixes")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = ap.parse_args()
    global _clock
    _clock = time.perf_counter if args.clock == "wall" else time.process_time
    import torch
    torch.set_num_threads(args.threads)
    pygpu.set_num_threads(args.threads)
    only = [s for s in args.only.split(",") if s]
    print(f"pygpu {pygpu.__version__} ({pygpu.cpu_isa()}) on {args.device}, torch "
          f"{torch.__version__}, NumPy {np.__version__}; {args.threads} threads; median of "
          f"{args.rounds} alternating blocks, {args.clock} clock, microseconds per call\n")
    print("| op | shape | pygpu | torch | numpy | pygpu/torch |")
    print("|---|---|--:|--:|--:|--:|")
    for shape in SHAPES:
        ops, check = cases(shape, args.device)
        check()
        for name, fns in ops.items():
            if only and not any(name.startswith(o) for o in only):
                continue
            t = measure(fns, args.rounds, args.block_ms / 1e3)
            print(f"| {name} | {shape[0]}x{shape[1]} | {_fmt(t['pygpu'])} | {_fmt(t['torch'])} "
                  f"| {_fmt(t.get('numpy'))} | {t['pygpu'] / t['torch']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
