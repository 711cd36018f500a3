"""kernel_table.py - the README's kernel table from a bench_kernels.py JSON run.

    python -m pytest benchmarks/bench_kernels.py --benchmark-only --benchmark-json=k.json
    python benchmarks/kernel_table.py k.json            # markdown table on stdout

One row per op/size/dtype group: the fastest round of each member (the least
disturbed by other processes on a shared machine), pygpu / NumPy and
pygpu / PyTorch, and whether the issue's targets hold: <= NumPy everywhere,
<= PyTorch at 64x512 and above.
"""
import json
import sys


def fmt(us):
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.2f} µs"


def main(path):
    with open(path) as f:
        data = json.load(f)
    groups = {}
    for b in data["benchmarks"]:
        lib = b["params"]["lib"]
        groups.setdefault(b["group"], {})[lib] = b["stats"]["min"] * 1e6
    print("| op | size | dtype | NumPy | pygpu | PyTorch | pygpu/NumPy | pygpu/PyTorch | target |")
    print("|---|---|---|---|---|---|---|---|---|")
    met = total = 0
    for group, m in groups.items():
        _, op, size, dt = group.split()
        n, p, t = m.get("numpy"), m.get("pygpu"), m.get("torch")
        rn = p / n
        rt = p / t if t else None
        ok = rn <= 1.0 and (size == "100" or rt is None or rt <= 1.0)
        met += ok
        total += 1
        print(f"| {op} | {size} | {dt} | {fmt(n)} | {fmt(p)} | {fmt(t) if t else '-'} | "
              f"{rn:.2f}x | {f'{rt:.2f}x' if rt else '-'} | {'met' if ok else 'short'} |")
    print(f"\n{met} of {total} rows meet the target.")


if __name__ == "__main__":
    main(sys.argv[1])
