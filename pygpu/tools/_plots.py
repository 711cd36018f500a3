"""Figures: the main job's time-per-call plot and the benchmark plot.

matplotlib is imported here, only when a figure is asked for (it is an optional
dependency: pip install 'pygpu[examples]'), with the Agg backend so that no
display is needed."""


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install matplotlib "
                          "(or pip install 'pygpu[examples]')") from None
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    return plt


def plot_main_job(result, path):
    """Time per call vs n, log-log: measured solid, predicted dashed, crossover marked."""
    plt = _pyplot()
    rows = [r for r in result["rows"] if not r.get("unstable")]  # not figures: left out
    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(ns, [r["numpy_s"] * 1e3 for r in rows], "o-", color="k", label="NumPy (host)")
    for key, color, label in (("resident", "tab:blue", "device, data resident"),
                              ("round_trip", "tab:red", "device, round trip per call")):
        ax.plot(ns, [r[f"{key}_s"] * 1e3 for r in rows], "o-", color=color, label=label)
        ax.plot(ns, [r[f"predicted_{key}_s"] * 1e3 for r in rows], "--", color=color,
                label=f"{label}: predicted ({result['profile']['name']})")
    c = result["crossover"]
    for n, style, what in ((c["measured_n"], "-", "measured"), (c["predicted_n"], ":", "predicted")):
        if n:
            ax.axvline(n, color="tab:green", linestyle=style, label=f"crossover, {what}: n = {n}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (n x n float32 matmul)")
    ax.set_ylabel("time per call (ms)")
    ax.set_title(f"pygpu {result['pygpu']} on {result['device']}", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
