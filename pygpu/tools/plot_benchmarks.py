"""python -m pygpu.tools.plot_benchmarks RUN.json [RUN2.json ...] -o bench.png

Draws pytest-benchmark JSON output (--benchmark-json=RUN.json, or the files
--benchmark-autosave writes under .benchmarks/). Benchmarks that record an `n`
in extra_info (bench_seed_experiment.py, bench_matmul.py) become lines: median
(or --stat min/mean) time per call against n, log-log, one line per member (numpy, resident,
round_trip, ...). Others become one bar chart panel per group. matplotlib is
needed (pip install 'pygpu[examples]')."""
import argparse
import json
import re
import sys
from collections import defaultdict


def load(paths, stat="median"):
    """[(group, member, n or None, seconds)] from pytest-benchmark JSON files; `stat`: which
    of the run's statistics (median, min, mean)."""
    rows = []
    for path in paths:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise SystemExit(f"plot_benchmarks: cannot read {path}: {e}")
        if "benchmarks" not in data:
            raise SystemExit(f"plot_benchmarks: {path} is not pytest-benchmark JSON (no 'benchmarks')")
        for b in data["benchmarks"]:
            member = re.sub(r"^test_", "", re.sub(r"\[.*\]$", "", b["name"]))
            n = b.get("extra_info", {}).get("n")
            rows.append((b.get("group") or member, member, n, b["stats"][stat]))
    return rows


def plot(rows, out, title=None, stat="median"):
    from ._plots import _pyplot
    plt = _pyplot()
    lines = defaultdict(list)
    bars = defaultdict(list)
    for group, member, n, t in rows:
        if n is not None:
            lines[member].append((n, t))
        else:
            bars[group].append((member, t))
    panels = (1 if lines else 0) + len(bars)
    if not panels:
        raise SystemExit("plot_benchmarks: no benchmarks in the input")
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * min(panels, 3), 4.2), squeeze=False)
    axes = list(axes[0])
    if lines:
        ax = axes.pop(0)
        for member, pts in sorted(lines.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], "o-", label=member)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n")
        ax.set_ylabel(f"{stat} time per call (ms)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(title or "time per call vs n", fontsize=10)
    for ax, (group, members) in zip(axes, sorted(bars.items())):
        ax.barh([m for m, _ in members], [t * 1e6 for _, t in members])
        ax.set_xscale("log")
        ax.set_xlabel(f"{stat} time per call (us)")
        ax.set_title(group, fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pygpu.tools.plot_benchmarks", description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="pytest-benchmark JSON file(s)")
    p.add_argument("-o", "--output", default="bench.png", help="image to write (default bench.png)")
    p.add_argument("--title", default=None)
    p.add_argument("--stat", default="median", choices=("median", "min", "mean"),
                   help="which statistic of each benchmark to draw (default median)")
    args = p.parse_args(argv)
    try:
        plot(load(args.runs, args.stat), args.output, args.title, args.stat)
    except ImportError as e:
        p.error(str(e))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
