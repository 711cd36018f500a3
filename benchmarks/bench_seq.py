# bench_seq.py - issue 37's three sequence-model targets against PyTorch's CPU path, same
# run, same thread count:
#
#   PYTHONPATH=. python benchmarks/bench_seq.py [--threads 2] [--rounds 5] [--only lstm,sdpa,encoder]
#                                               [--clock cpu|wall] [--profile]
#
#   lstm     nn.LSTM, 2 layers, input and hidden 512, sequence 64, batch 32: one training step
#            (forward, a sum-of-squares loss, backward; gradients zeroed before)
#   sdpa     F.scaled_dot_product_attention, batch 8, 8 heads, T 512, head dim 64, float32:
#            forward + backward (q, k, v require grad)
#   encoder  nn.TransformerEncoder of 4 nn.TransformerEncoderLayer (d_model 256, 8 heads,
#            feed-forward 1024, dropout 0 so both compute the same), batch 16, sequence 128:
#            one training step with SGD
#
# Both libraries run from the same weights and inputs; the outputs (and one gradient) are
# checked against torch once before timing, so a fast wrong kernel cannot win. Timing: each
# case times pygpu and torch in alternating blocks with a short pause between them; the
# figure is the median block over --rounds, per step. --clock cpu (default) times by the
# process's CPU time (time.process_time, every thread), which a machine shared with other
# jobs disturbs far less than the wall clock. Prints a markdown table: speed-up =
# torch time / pygpu time (>= 1: pygpu at least as fast). --profile prints where one pygpu
# step of each case spends its time, by function (cProfile: each C entry point, such as
# _C._rnn_forward or _C._sdpa_bwd, is one row). A script, not a test.
import argparse
import statistics
import time

import numpy as np

import pygpu

CASES = ("lstm", "sdpa", "encoder")


def _copy_state(tmod, pmod, device="cpu"):
    pmod.load_state_dict({k: pygpu.tensor(v.detach().numpy().copy(), device=device)
                          for k, v in tmod.state_dict().items()})


def case_lstm(torch):
    T_, B, I, H = 64, 32, 512, 512
    torch.manual_seed(0)
    tm = torch.nn.LSTM(I, H, num_layers=2)
    pm = pygpu.nn.LSTM(I, H, num_layers=2)
    _copy_state(tm, pm)
    x = np.random.default_rng(0).standard_normal((T_, B, I)).astype(np.float32)
    tx, px = torch.from_numpy(x), pygpu.tensor(x)

    def tstep():
        tm.zero_grad()
        out, _ = tm(tx)
        (out * out).sum().backward()
        return out, tm.weight_hh_l0.grad

    def pstep():
        pm.zero_grad()
        out, _ = pm(px)
        (out * out).sum().backward()
        return out, pm.weight_hh_l0.grad
    return pstep, tstep, 1e-4


def case_sdpa(torch):
    B, Hh, T_, D = 8, 8, 512, 64
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((B, Hh, T_, D)).astype(np.float32) for _ in range(3))
    tq, tk, tv = (torch.from_numpy(a).requires_grad_() for a in (q, k, v))
    pq, pk, pv = (pygpu.tensor(a).requires_grad_() for a in (q, k, v))
    import pygpu.nn.functional as pF
    tF = torch.nn.functional

    def tstep():
        tq.grad = tk.grad = tv.grad = None
        o = tF.scaled_dot_product_attention(tq, tk, tv)
        o.sum().backward()
        return o, tq.grad

    def pstep():
        pq.grad = pk.grad = pv.grad = None
        o = pF.scaled_dot_product_attention(pq, pk, pv)
        o.sum().backward()
        return o, pq.grad
    return pstep, tstep, 1e-4


def case_encoder(torch):
    B, T_, E, nhead, ff, L = 16, 128, 256, 8, 1024, 4
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(E, nhead, ff, dropout=0.0, batch_first=True)
    tm = torch.nn.TransformerEncoder(tl, L, enable_nested_tensor=False)
    pl = pygpu.nn.TransformerEncoderLayer(E, nhead, ff, dropout=0.0, batch_first=True)
    pm = pygpu.nn.TransformerEncoder(pl, L)
    _copy_state(tm, pm)
    x = np.random.default_rng(0).standard_normal((B, T_, E)).astype(np.float32)
    tx, px = torch.from_numpy(x), pygpu.tensor(x)
    topt = torch.optim.SGD(tm.parameters(), lr=1e-4)
    popt = pygpu.optim.SGD(pm.parameters(), lr=1e-4)

    def tstep(update=True):
        topt.zero_grad()
        out = tm(tx)
        (out * out).mean().backward()
        g = tm.layers[0].linear1.weight.grad.clone()
        if update:
            topt.step()
        return out, g

    def pstep(update=True):
        popt.zero_grad()
        out = pm(px)
        (out * out).mean().backward()
        g = pm.layers[0].linear1.weight.grad.clone()
        if update:
            popt.step()
        return out, g
    return pstep, tstep, 2e-3


def _check(pstep, tstep, tol):
    import inspect
    kw = {"update": False} if "update" in inspect.signature(pstep).parameters else {}
    po, pg = pstep(**kw)
    to, tg = tstep(**kw)
    for p, t, what in ((po, to, "output"), (pg, tg, "gradient")):
        a, b = p.numpy(), t.detach().numpy()
        err = np.abs(a - b).max() / max(1e-6, np.abs(b).max())
        if err > tol:
            raise SystemExit(f"{what} differs from torch's: relative error {err:.2e}")


def _time_block(fn, clock, min_s):
    n, t0 = 0, clock()
    while True:
        fn()
        n += 1
        dt = clock() - t0
        if dt >= min_s:
            return dt / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=",".join(CASES))
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--block-s", type=float, default=1.0)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(args.threads)
    pygpu.set_num_threads(args.threads)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    rows = []
    for name in args.only.split(","):
        pstep, tstep, tol = globals()["case_" + name](torch)
        _check(pstep, tstep, tol)
        if args.profile:  # where one pygpu step's time goes, by function (C calls included)
            import cProfile
            import pstats
            prof = cProfile.Profile()
            prof.runcall(pstep)
            print(f"## {name}: one pygpu step, by function (cProfile, tottime)\n")
            pstats.Stats(prof).sort_stats("tottime").print_stats(12)
        pt, tt = [], []
        for _ in range(args.rounds):
            pt.append(_time_block(pstep, clock, args.block_s))
            time.sleep(0.2)
            tt.append(_time_block(tstep, clock, args.block_s))
            time.sleep(0.2)
        p, t = statistics.median(pt), statistics.median(tt)
        rows.append((name, p, t, [b / a for a, b in zip(pt, tt)]))
    print(f"\n{args.threads} threads, {args.clock} clock, median of {args.rounds} rounds\n")
    print("| case | pygpu ms | torch ms | speed-up (torch / pygpu) | range |")
    print("|---|---|---|---|---|")
    for name, p, t, r in rows:
        print(f"| {name} | {p * 1e3:.1f} | {t * 1e3:.1f} | {t / p:.2f}x | "
              f"{min(r):.2f}-{max(r):.2f} |")


if __name__ == "__main__":
    main()
