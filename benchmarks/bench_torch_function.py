"""What the __torch_function__ dispatchers cost a plain tensor's call (issue 43).

Every public function and Tensor method of pygpu is wrapped in a C dispatcher
(csrc/bindings/torch_function.c) that passes plain tensors through after one type
comparison per argument. This measures the process CPU time per call of small ops on
4-element cpu tensors (where the wrapper's cost is the largest share) and of one training
step of a small MLP, in one process, alternately with the dispatchers installed and with
every one of them swapped back for the function it wraps (what pygpu was before):

    python benchmarks/bench_torch_function.py

Process CPU time, the best of several alternating rounds, so that other processes on a
loaded machine count less than they would in wall-clock time."""
import sys
import time

import pygpu
from pygpu import _C, nn

ROUNDS, N = 7, 20000


def per_call(fn, n=N):
    best = float("inf")
    for _ in range(ROUNDS):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, time.process_time() - t0)
    return best / n * 1e9


def _swap_table():
    """[(owner, name, dispatcher, original)] for every dispatcher pygpu installed."""
    out = []
    for owner in [pygpu.Tensor] + [m for k, m in list(sys.modules.items())
                                   if k.startswith("pygpu") and m is not None]:
        for name, v in list(vars(owner).items()):
            if isinstance(v, (_C._TorchFunctionDispatch, _C._TorchFunctionMethod)):
                out.append((owner, name, v, v.__wrapped__))
    return out


def _install(table, wrapped):
    methods = {}
    for owner, name, d, orig in table:
        if owner is pygpu.Tensor:
            methods[name] = d if wrapped else orig
        else:
            setattr(owner, name, d if wrapped else orig)
    _C._add_tensor_methods(methods)


def main():
    x, y = pygpu.ones(4), pygpu.ones(4)
    F = pygpu.nn.functional
    cases = {
        "x.add(y)": lambda: x.add(y),
        "pygpu.add(x, y)": lambda: pygpu.add(x, y),
        "x + y": lambda: x + y,
        "x.view(2, 2)": lambda: x.view(2, 2),
        "x.sum()": lambda: x.sum(),
        "F.relu(x)": lambda: F.relu(x),
        "pygpu.cat([x, y])": lambda: pygpu.cat([x, y]),
    }
    pygpu.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = pygpu.optim.SGD(model.parameters(), lr=0.01)
    data, target = pygpu.randn(32, 64), pygpu.randint(0, 10, (32,))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(data), target).backward()
        opt.step()
    cases["MLP training step"] = step
    table = _swap_table()
    best = {(k, w): float("inf") for k in cases for w in (False, True)}
    for _ in range(3):   # alternate, so that a change of load hits both
        for wrapped in (False, True):
            _install(table, wrapped)
            for name, fn in cases.items():
                n = 300 if name == "MLP training step" else N
                best[name, wrapped] = min(best[name, wrapped], per_call(fn, n))
    print(f"{len(table)} dispatchers; CPU time per call, best of {3 * ROUNDS} rounds")
    print(f"{'':20s} {'without':>10s} {'with':>10s}  ratio")
    for name in cases:
        a, b = best[name, False], best[name, True]
        print(f"{name:20s} {a:8.0f}ns {b:8.0f}ns  {b / a:5.3f}")


if __name__ == "__main__":
    main()
