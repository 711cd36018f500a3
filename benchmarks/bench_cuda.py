"""bench_cuda.py - pygpu against PyTorch on the same GPU, in one process (issue 38).

    python benchmarks/bench_cuda.py                      # every row, on cuda:0
    python benchmarks/bench_cuda.py --rows matmul,softmax --blocks 5
    python benchmarks/bench_cuda.py --quick              # tiny sizes: the code path only
    python benchmarks/bench_cuda.py --json out.json      # the figures as JSON too
    python benchmarks/bench_cuda.py --profile prof/      # and each row's kernel profile

Each row times the same work in pygpu and in PyTorch: a warm-up call, then the best of
--blocks timed blocks (3), each of enough calls to last about --block-seconds (0.2 s) and
ending in a synchronize. TF32 is off on both sides (torch.backends.cuda.matmul.allow_tf32,
pygpu.backends.cuda.matmul.allow_tf32). The rows: matmul fp32/bf16; x*2+1, sum, softmax
and layer_norm over 64M float32 elements; pinned and pageable copies; launch overhead; the
small (784-512-512-10) and the wide (4096x4) MLP training in fp32 and bf16 autocast; a
CIFAR-10-shaped CNN's training step (convolution, batch norm, max pooling); causal
attention forward and backward and a 2-layer LSTM's step; inference MLP 4096x3 in fp32,
bf16 autocast and int8 (dynamic and static, against PyTorch's bf16); and a small training
step as a CUDA graph replay. It prints a markdown
table, pygpu/PyTorch speed per row (above 1: pygpu faster), and the results of each pair
are checked against each other first.

Without a CUDA build of PyTorch (the emulated device, tests/cuda_emu) PyTorch runs on the
CPU and the table says so: that run checks this script's code path, not speed."""
import argparse
import json
import os
import sys
import time

import numpy as np

try:
    import pygpu
except ImportError:  # run from a checkout built in place: its pygpu/
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import pygpu
from pygpu import nn  # noqa: E402

GIB = 1 << 30


def _torch():
    try:
        import torch
    except ImportError:
        sys.exit("bench_cuda.py compares with PyTorch: pip install torch (a CUDA build)")
    return torch


class Bench:
    def __init__(self, args):
        self.args = args
        self.torch = _torch()
        self.tdev = "cuda" if self.torch.cuda.is_available() else "cpu"
        self.dev = args.device
        self.quick = args.quick
        self.rows = []
        self.torch.backends.cuda.matmul.allow_tf32 = False
        self.torch.backends.cudnn.allow_tf32 = False
        pygpu.backends.cuda.matmul.allow_tf32 = False

    # -- timing ----------------------------------------------------------------------------
    def psync(self):
        pygpu.cuda.synchronize()

    def tsync(self):
        if self.tdev == "cuda":
            self.torch.cuda.synchronize()

    def best(self, fn, sync):
        """Seconds per call: best of the blocks, each ending in a synchronize."""
        fn()
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        one = max(time.perf_counter() - t0, 1e-7)
        calls = max(1, min(10000, int(self.args.block_seconds / one)))
        if self.quick:
            calls = 1
        best = float("inf")
        for _ in range(self.args.blocks):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            best = min(best, (time.perf_counter() - t0) / calls)
        return best

    def row(self, name, pfn, tfn, work, unit, note=""):
        """work / seconds for both; unit names what work counts (TFLOP/s, GB/s, ...)."""
        if self.args.rows and not any(r in name for r in self.args.rows):
            return
        tp = self.best(pfn, self.psync)
        tt = self.best(tfn, self.tsync)
        if self.args.profile:
            self.profile(name, pfn)
        scale = {"TFLOP/s": 1e12, "GB/s": 1e9}.get(unit, 1.0)
        p, t = work / tp / scale, work / tt / scale
        self.rows.append({"row": name, "pygpu": p, "torch": t, "unit": unit, "ratio": p / t,
                          "note": note})
        print(f"  {name}: pygpu {p:.4g} {unit}, torch {t:.4g} {unit}, pygpu/torch {p / t:.2f}",
              file=sys.stderr, flush=True)

    def profile(self, name, pfn):
        """pygpu.profiler over three calls of the row: its table (sorted by device time) and
        Chrome trace in --profile's folder, so a miss comes with the kernels that made it."""
        from pygpu.profiler import ProfilerActivity, profile
        slug = "".join(c if c.isalnum() else "_" for c in name).strip("_")[:60]
        os.makedirs(self.args.profile, exist_ok=True)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     record_shapes=True) as prof:
            for _ in range(3):
                pfn()
            self.psync()
        base = os.path.join(self.args.profile, slug)
        with open(base + ".txt", "w") as f:
            f.write(f"##### pygpu {name}\n")
            f.write(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=25))
        prof.export_chrome_trace(base + ".trace.json")

    # -- helpers ---------------------------------------------------------------------------
    def pair(self, a):
        """The same NumPy data as a pygpu tensor on the device and a torch tensor."""
        return pygpu.tensor(a, device=self.dev), self.torch.tensor(a, device=self.tdev)

    def check(self, name, got, want, rtol):
        got = np.asarray(got, dtype=np.float64)
        want = np.asarray(want, dtype=np.float64)
        if not np.allclose(got, want, rtol=rtol, atol=rtol):
            err = float(np.max(np.abs(got - want)))
            raise SystemExit(f"{name}: pygpu and PyTorch disagree (max abs diff {err:.3g})")

    # -- the rows ---------------------------------------------------------------------------
    def matmul(self):
        sizes = [64] if self.quick else [1024, 4096, 8192]
        rng = np.random.default_rng(0)
        for dtype in ("fp32", "bf16"):
            for n in sizes:
                a = rng.standard_normal((n, n)).astype(np.float32)
                pa, ta = self.pair(a)
                if dtype == "bf16":
                    pa, ta = pa.astype(pygpu.bfloat16), ta.to(self.torch.bfloat16)
                if n <= 1024:
                    self.check(f"matmul {dtype}", (pa @ pa).astype(pygpu.float32).numpy(),
                               (ta @ ta).float().cpu().numpy(), 2e-2 if dtype == "bf16" else 1e-3)
                self.row(f"matmul {dtype} n={n}", lambda: pa @ pa, lambda: ta @ ta, 2.0 * n ** 3,
                         "TFLOP/s")

    def memory_bound(self):
        n = 1 << 12 if self.quick else 1 << 26  # 64M float32
        cols = 64 if self.quick else 4096
        x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
        px, tx = self.pair(x)
        self.check("x*2+1", (px * 2 + 1).numpy()[:1000], (tx * 2 + 1).cpu().numpy()[:1000], 1e-6)
        self.row(f"x*2+1 fp32 n={n} (2 kernels each)", lambda: px * 2 + 1, lambda: tx * 2 + 1,
                 16.0 * n, "GB/s")
        self.check("sum", px.sum().item(), tx.sum().item(), 1e-4)
        self.row(f"sum fp32 n={n}", lambda: px.sum(), lambda: tx.sum(), 4.0 * n, "GB/s")
        p2, t2 = px.reshape(n // cols, cols), tx.reshape(n // cols, cols)
        F, TF = nn.functional, self.torch.nn.functional
        self.check("softmax", F.softmax(p2, 1).numpy()[:4], TF.softmax(t2, 1).cpu().numpy()[:4],
                   1e-5)
        self.row(f"softmax rows {cols} fp32 n={n}", lambda: F.softmax(p2, 1),
                 lambda: TF.softmax(t2, 1), 8.0 * n, "GB/s")
        self.check("layer_norm", F.layer_norm(p2, (cols,)).numpy()[:4],
                   TF.layer_norm(t2, (cols,)).cpu().numpy()[:4], 1e-4)
        self.row(f"layer_norm rows {cols} fp32 n={n}", lambda: F.layer_norm(p2, (cols,)),
                 lambda: TF.layer_norm(t2, (cols,)), 8.0 * n, "GB/s")
        self.row(f"clamp fp32 n={n}", lambda: px.clamp(-1, 1), lambda: tx.clamp(-1, 1), 8.0 * n,
                 "GB/s")

    def copies(self):
        nbytes = (1 << 16) if self.quick else 256 << 20
        n = nbytes // 4
        host = np.ones(n, dtype=np.float32)
        pin = pygpu.tensor(host).pin_memory()
        tpin = self.torch.tensor(host).pin_memory() if self.tdev == "cuda" else self.torch.tensor(host)
        pd, td = self.pair(host)
        mib = nbytes >> 20 or 1
        self.row(f"H2D pinned {mib} MiB", lambda: pin.to(self.dev), lambda: tpin.to(self.tdev),
                 nbytes, "GB/s")
        self.row(f"D2H {mib} MiB (pageable dst)", lambda: pd.numpy(), lambda: td.cpu().numpy(),
                 nbytes, "GB/s")
        self.row(f"H2D pageable {mib} MiB", lambda: pygpu.tensor(host, device=self.dev),
                 lambda: self.torch.tensor(host, device=self.tdev), nbytes, "GB/s")

    def overhead(self):
        a = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)
        pa, ta = self.pair(a)
        self.row("64x64 matmul+sum+item round trip", lambda: (pa @ pa).sum().item(),
                 lambda: (ta @ ta).sum().item(), 1.0, "calls/s")
        s, ts = self.pair(np.ones(4, np.float32))
        self.row("tiny add, queued (launch overhead)", lambda: s + s, lambda: ts + ts, 1.0, "ops/s")

    def _mlps(self, sizes, batch, low, momentum=0.9):
        """pygpu and torch training steps of one MLP, same weights and data."""
        torch = self.torch
        pygpu.manual_seed(0)
        pm = nn.MLP(sizes).to(self.dev)
        tm = torch.nn.Sequential(*[m for a, b, last in zip(sizes, sizes[1:],
                                                            [i == len(sizes) - 2
                                                             for i in range(len(sizes) - 1)])
                                   for m in ([torch.nn.Linear(a, b)] +
                                             ([] if last else [torch.nn.ReLU()]))]).to(self.tdev)
        with torch.no_grad():
            for p, q in zip(pm.parameters(), tm.parameters()):
                q.copy_(torch.tensor(p.numpy()))
        po = pygpu.optim.SGD(pm.parameters(), lr=0.01, momentum=momentum)
        to = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=momentum)
        rng = np.random.default_rng(3)
        x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
        y = rng.integers(0, sizes[-1], batch)
        return self._sgd_steps(pm, tm, po, to, x, y, low)

    def _sgd_steps(self, pm, tm, po, to, x, y, low=False):
        """pygpu's and torch's SGD step (cross-entropy of pm(x) against y, under bf16 autocast
        when low) on the same NumPy data."""
        torch = self.torch
        px, tx = self.pair(x)
        py, ty = self.pair(y)
        ploss, tloss = nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss()

        def pstep():
            po.zero_grad()
            with pygpu.autocast("cuda", dtype=pygpu.bfloat16, enabled=low):
                loss = ploss(pm(px), py)
            loss.backward()
            po.step()
            return loss

        def tstep():
            to.zero_grad()
            with torch.autocast(self.tdev, dtype=torch.bfloat16, enabled=low):
                loss = tloss(tm(tx), ty)
            loss.backward()
            to.step()
            return loss
        return pstep, tstep

    def training(self):
        small = [784, 512, 512, 10]
        wide = [4096, 4096, 4096, 4096, 10]
        cases = [(small, 64), (small, 512), (small, 4096), (wide, 4096)]
        if self.quick:
            cases = [([32, 16, 10], 8), ([64, 64, 10], 16)]
        for sizes, batch in cases:
            for low in (False, True):
                pstep, tstep = self._mlps(sizes, batch, low)
                lp, lt = pstep().item(), tstep().item()
                self.check("MLP loss", lp, lt, 2e-2 if low else 1e-3)
                name = "x".join(map(str, sizes))
                self.row(f"MLP {name} {'bf16' if low else 'fp32'} b{batch} (SGD step)", pstep,
                         tstep, float(batch), "samples/s")

    def cnn(self):
        """A CIFAR-10-shaped CNN's SGD step in fp32, same weights and data: (conv 3x3, batch
        norm, ReLU, 2x2 max pooling) twice, then a linear layer. The convolutions are cuDNN's
        on both sides; pooling and batch norm are pygpu's own kernels (conv_layers.cu)
        against PyTorch's."""
        torch = self.torch
        b, hw = (4, 8) if self.quick else (256, 32)

        def layers(m):
            return [m.Conv2d(3, 32, 3, padding=1), m.BatchNorm2d(32), m.ReLU(), m.MaxPool2d(2),
                    m.Conv2d(32, 64, 3, padding=1), m.BatchNorm2d(64), m.ReLU(), m.MaxPool2d(2),
                    m.Flatten(), m.Linear(64 * (hw // 4) ** 2, 10)]
        pygpu.manual_seed(0)
        pm = nn.Sequential(*layers(nn)).to(self.dev)
        tm = torch.nn.Sequential(*layers(torch.nn)).to(self.tdev)
        with torch.no_grad():
            for p, q in zip(pm.parameters(), tm.parameters()):
                q.copy_(torch.tensor(p.numpy()))
        po = pygpu.optim.SGD(pm.parameters(), lr=0.01, momentum=0.9)
        to = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9)
        rng = np.random.default_rng(5)
        pstep, tstep = self._sgd_steps(pm, tm, po, to,
                                       rng.standard_normal((b, 3, hw, hw)).astype(np.float32),
                                       rng.integers(0, 10, b))
        self.check("CNN loss", pstep().item(), tstep().item(), 1e-3)
        self.row(f"CIFAR CNN fp32 b{b} (SGD step)", pstep, tstep, float(b), "samples/s")

    def sequence(self):
        """Fused causal attention (kernels/attention.cu) forward and backward, and a 2-layer
        LSTM's training step (kernels/rnn.cu and the GEMMs), same data and weights; PyTorch's
        SDPA picks its own kernel (flash or memory-efficient) and its LSTM runs cuDNN's."""
        torch = self.torch
        F, TF = nn.functional, torch.nn.functional
        B, H, T, D = (1, 2, 16, 8) if self.quick else (8, 8, 512, 64)
        rng = np.random.default_rng(6)
        qkv = [rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(4)]
        (pq, tq), (pk, tk), (pv, tv), (pg, tg) = [self.pair(a) for a in qkv]
        for t in (pq, pk, pv, tq, tk, tv):
            t.requires_grad_(True)
        self.check("SDPA", F.scaled_dot_product_attention(pq, pk, pv, is_causal=True)
                   .detach().numpy()[0, 0, :4],
                   TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
                   .detach().cpu().numpy()[0, 0, :4], 1e-4)
        self.row(f"SDPA causal fp32 {B}x{H}x{T}x{D} fwd+bwd",
                 lambda: F.scaled_dot_product_attention(pq, pk, pv, is_causal=True).backward(pg),
                 lambda: TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True).backward(tg),
                 1.0, "calls/s")
        from pygpu.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel(SDPBackend.MATH):  # pygpu composed (batched GEMMs, row softmax)
            self.row(f"SDPA causal fp32 {B}x{H}x{T}x{D} fwd+bwd, pygpu's math path",
                     lambda: F.scaled_dot_product_attention(pq, pk, pv, is_causal=True)
                     .backward(pg),
                     lambda: TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
                     .backward(tg), 1.0, "calls/s")
        hidden, seq, batch = (16, 8, 4) if self.quick else (512, 64, 32)
        pygpu.manual_seed(0)
        pm = nn.LSTM(hidden, hidden, num_layers=2).to(self.dev)
        tm = torch.nn.LSTM(hidden, hidden, num_layers=2).to(self.tdev)
        with torch.no_grad():
            for (pn, p), (tn, q) in zip(pm.named_parameters(), tm.named_parameters()):
                assert pn == tn, (pn, tn)
                q.copy_(torch.tensor(p.numpy()))
        px, tx = self.pair(rng.standard_normal((seq, batch, hidden)).astype(np.float32))
        self.check("LSTM", pm(px)[0].detach().numpy()[-1, :2],
                   tm(tx)[0].detach().cpu().numpy()[-1, :2], 1e-4)

        def pstep():
            pm.zero_grad()
            pm(px)[0].sum().backward()

        def tstep():
            tm.zero_grad()
            tm(tx)[0].sum().backward()
        self.row(f"LSTM 2x{hidden} seq {seq} b{batch} fp32 (fwd+bwd)", pstep, tstep,
                 float(batch), "samples/s")

    def inference(self):
        torch = self.torch
        d, b = (64, 16) if self.quick else (4096, 4096)
        sizes = [d, d, d, d]
        pygpu.manual_seed(0)
        pm = nn.MLP(sizes).to(self.dev)
        tm = torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.ReLU(), torch.nn.Linear(d, d),
                                 torch.nn.ReLU(), torch.nn.Linear(d, d)).to(self.tdev)
        with torch.no_grad():
            for p, q in zip(pm.parameters(), tm.parameters()):
                q.copy_(torch.tensor(p.numpy()))
        x = np.random.default_rng(4).standard_normal((b, d)).astype(np.float32)
        px, tx = self.pair(x)
        flops = 2.0 * b * d * d * 3
        with pygpu.no_grad(), torch.no_grad():
            self.row(f"inference MLP {d}x3 b{b} fp32", lambda: pm(px), lambda: tm(tx), flops,
                     "TFLOP/s")

            def pbf16():
                with pygpu.autocast("cuda", dtype=pygpu.bfloat16):
                    return pm(px)

            def tbf16():
                with torch.autocast(self.tdev, dtype=torch.bfloat16):
                    return tm(tx)
            self.row(f"inference MLP {d}x3 b{b} bf16 autocast", pbf16, tbf16, flops, "TFLOP/s")
            Q = pygpu.quantization
            qd = Q.quantize_dynamic(pm, {nn.Linear: pygpu.qint8})
            self.row(f"inference MLP {d}x3 b{b} int8 dynamic vs torch bf16", lambda: qd(px),
                     tbf16, flops, "TFLOP/s")
            prepared = Q.prepare(pm)
            prepared(px[: min(b, 256)])
            qs = Q.convert(prepared)
            self.row(f"inference MLP {d}x3 b{b} int8 static vs torch bf16", lambda: qs(px),
                     tbf16, flops, "TFLOP/s")

    def graph(self):
        torch = self.torch
        # plain SGD: a replay repeats the captured step's scalars (docs/cuda.md, CUDA graphs)
        pstep, tstep = self._mlps([784, 512, 512, 10], 64, False, momentum=0.0)
        pstep()
        g = pygpu.cuda.CUDAGraph()
        with pygpu.cuda.graph(g):
            pstep()
        if self.tdev == "cuda":
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    tstep()
            torch.cuda.current_stream().wait_stream(s)
            tg = torch.cuda.CUDAGraph()
            with torch.cuda.graph(tg):
                tstep()
            treplay = tg.replay
        else:
            treplay = tstep
        self.row("small MLP SGD step b64, CUDA graph replay", g.replay, treplay, 1.0, "steps/s")

    def run(self):
        for part in (self.matmul, self.memory_bound, self.copies, self.overhead, self.training,
                     self.cnn, self.sequence, self.inference, self.graph):
            part()
        return self.rows


def markdown(rows, torch_device, device_name, torch_version):
    peer = f"torch {torch_version} on {torch_device}"
    out = [f"pygpu {pygpu.__version__} on {device_name} against {peer}; best of the blocks, "
           "TF32 off; pygpu/torch above 1: pygpu faster", "",
           "| row | pygpu | torch | unit | pygpu/torch |", "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['row']} | {r['pygpu']:.4g} | {r['torch']:.4g} | {r['unit']} | "
                   f"{r['ratio']:.2f} |")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--blocks", type=int, default=3, help="timed blocks per row (best taken)")
    p.add_argument("--block-seconds", type=float, default=0.2)
    p.add_argument("--rows", type=lambda s: [r for r in s.split(",") if r], default=None,
                   help="only rows whose name contains one of these (comma-separated)")
    p.add_argument("--quick", action="store_true", help="tiny sizes, one call per block")
    p.add_argument("--json", metavar="OUT", help="write the rows as JSON too")
    p.add_argument("--profile", metavar="DIR",
                   help="also profile each row's pygpu side (pygpu.profiler): a table and a "
                        "Chrome trace per row in DIR")
    args = p.parse_args(argv)
    if not pygpu.cuda.is_available():
        sys.exit(f"bench_cuda.py needs cuda: {pygpu.cuda.unavailable_reason()}")
    b = Bench(args)
    rows = b.run()
    name = pygpu.cuda.get_device_properties(pygpu.device(args.device).index or 0).name
    table = markdown(rows, b.tdev, name, b.torch.__version__)
    print(table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "torch_device": b.tdev, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
