# bench_embedding.py - an embedding layer's training step (lookup, then the weight's
# gradient) at a 32k-row vocabulary, pygpu against PyTorch in the same run, by CPU time.
#
# Table (V, D) = (32768, 256), float32; a batch of B x T = 32 x 128 token indices; one step
# is the lookup (F.embedding), a sum of the rows and backward (the scatter-add into the
# table's gradient), then the gradient dropped. pygpu's embedding is a gather (an
# INDEX_SELECT node) and its backward a scatter-add (INDEX_ADD); before issue 43 it was a
# one-hot (tokens, V) matrix times the table, kept here as the third configuration so the
# ratio to the old path is measured in the same run. Both libraries run on one thread (the
# machine is shared: CPU time, not wall time), the configurations interleaved, R rounds of S
# steps (the one-hot path, a (4096, 32768) float32 matrix and a 34-GFLOP product each way,
# S1 steps; ONEHOT=0 leaves it out), each ratio taken within a round from CPU time per step.
#   R=7 S=20 S1=1 PYTHONPATH=. python benchmarks/bench_embedding.py
import os
import statistics
import time

import numpy as np
import torch

import pygpu

V, D, B, T = 32768, 256, 32, 128
R, S, S1 = (int(os.environ.get(k, d)) for k, d in (("R", 5), ("S", 20), ("S1", 1)))
ONEHOT = os.environ.get("ONEHOT", "1") != "0"


def pygpu_step(w, idx):
    def run():
        for _ in range(S):
            pygpu.nn.functional.embedding(idx, w).sum().backward()
            w.grad = None
    return run


def one_hot_step(w, idx):
    """The pre-issue-43 path: (tokens, V) one-hot matrix @ the table."""
    cols = pygpu.arange(V)
    flat = idx.reshape(-1)

    def run():
        for _ in range(S1):
            hot = (flat.reshape(-1, 1) == cols).astype(w.dtype)
            (hot @ w).sum().backward()
            w.grad = None
    return run


def torch_step(w, idx):
    def run():
        for _ in range(S):
            torch.nn.functional.embedding(idx, w).sum().backward()
            w.grad = None
    return run


if __name__ == "__main__":
    torch.set_num_threads(1)
    pygpu.set_num_threads(1)
    rng = np.random.default_rng(0)
    table = rng.standard_normal((V, D)).astype(np.float32)
    tokens = rng.integers(0, V, (B, T))
    runs = {
        "pygpu": (pygpu_step(pygpu.tensor(table).requires_grad_(), pygpu.tensor(tokens)), S),
        "torch": (torch_step(torch.tensor(table, requires_grad=True), torch.tensor(tokens)), S),
    }
    if ONEHOT:
        runs["pygpu one-hot (before)"] = (one_hot_step(pygpu.tensor(table).requires_grad_(),
                                                       pygpu.tensor(tokens)), S1)
    for run, _ in runs.values():
        run()  # warm-up
    cpu = {k: [] for k in runs}
    for _ in range(R):
        for k, (run, steps) in runs.items():
            time.sleep(0.05)
            c0 = time.process_time()
            run()
            cpu[k].append((time.process_time() - c0) / steps)

    def ratio(a, b):
        r = [x / y for x, y in zip(cpu[a], cpu[b])]
        return f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})"
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, 1 thread, V={V} D={D}, "
          f"{B}x{T} tokens, {R} rounds of {S} steps; CPU ms per step (median):")
    for k in runs:
        print(f"  {k:24s} {statistics.median(cpu[k]) * 1e3:9.3f}")
    print(f"  pygpu / torch            {ratio('pygpu', 'torch')}  (CPU time; < 1 is faster)")
    if ONEHOT:
        print(f"  one-hot / pygpu          {ratio('pygpu one-hot (before)', 'pygpu')}")
