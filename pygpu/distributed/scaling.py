"""python -m pygpu.distributed.scaling: predicted throughput and scaling efficiency of a training
step on 1 to 1,024 devices, per link profile and strategy (pygpu.cost.cluster's model).

    python -m pygpu.distributed.scaling                         # GPT-2 small on H100s, every link
    python -m pygpu.distributed.scaling --params 1.3e9 --strategies ddp,fsdp --accumulate 4
    python -m pygpu.distributed.scaling --compute-ms 180 --plot scaling.png
    python -m pygpu.distributed.scaling --validate              # against 2- and 4-process runs here

The compute time of one step on one device comes from --compute-ms, or from a device
profile's matmul rate (--device-profile, a DeviceProfile as the main job's --profile takes:
6 x parameters x tokens FLOPs per sample at its best GFLOP/s). Each table says where the
communication starts to dominate, and what sharding (memory per device) or gradient
accumulation (fewer reductions) buys back. --validate runs DDP, ZeRO and FSDP on this machine
with 2 and 4 processes on sim devices with a link model, fits this machine's MPI link to
measured collectives of each kind (priced by the algorithms Open MPI runs), measures each
strategy's own CPU on one rank, and prints the predicted step time beside the measured one
(_scaling_validate.py)."""
import argparse
import json
import sys

from ..cost import cluster as cl


def _compute_s(a):
    if a.compute_ms is not None:
        return a.compute_ms / 1e3
    from ..cost import load_profile
    prof = load_profile(a.device_profile)
    gflops = max(g for _, g in prof.matmul_gflops)
    return 6.0 * a.params * a.tokens * a.samples_per_device / (gflops * 1e9)


def model_from_args(a):
    compute = _compute_s(a)
    return cl.StepModel(compute_s=compute, param_bytes=a.params * a.bytes_per_param,
                        optimizer_s=a.optimizer_ms / 1e3, batch_per_device=a.samples_per_device,
                        units=a.units, bucket_bytes=a.bucket_mb * 2**20, tensors=a.tensors)


def table(model, link_name, strategy, accumulate, devices):
    c = cl.CLUSTERS[link_name]
    rows = model.scaling(c, strategy, devices, accumulate)
    lines = [f"{strategy.upper()} over {c.name}" + (f", accumulating {accumulate} micro-batches"
                                                    if accumulate > 1 else ""),
             f"{'devices':>8} {'step ms':>9} {'samples/s':>12} {'efficiency':>10} "
             f"{'comm exposed':>12} {'memory/device':>14}"]
    for r in rows:
        mem = model.memory_bytes(r["devices"], strategy)
        lines.append(f"{r['devices']:>8} {r['step_s'] * 1e3:9.1f} {r['throughput']:12,.0f} "
                     f"{r['efficiency']:10.1%} {r['comm_share']:12.1%} {mem / 2**30:11.2f} GiB")
    dom = cl.communication_dominates(rows)
    lines.append("communication exceeds compute from " + (f"{dom} devices" if dom else
                                                           "no device count up to 1,024"))
    return lines, rows


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for (link, strategy), rows in results.items():
        xs = [r["devices"] for r in rows]
        label = f"{strategy} / {link}"
        ax1.plot(xs, [r["throughput"] for r in rows], marker="o", label=label)
        ax2.plot(xs, [r["efficiency"] for r in rows], marker="o", label=label)
    for ax, what in ((ax1, "samples/s"), (ax2, "scaling efficiency")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("devices")
        ax.set_ylabel(what)
        ax.grid(True, alpha=0.3)
    ax1.set_yscale("log")
    ax2.legend(fontsize=7)
    fig.suptitle("pygpu.distributed.scaling: predicted (alpha-beta links, datasheet figures)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pygpu.distributed.scaling", description=__doc__.split("\n\n")[0])
    p.add_argument("--params", type=float, default=124e6, help="model parameters (GPT-2 small: 124e6)")
    p.add_argument("--bytes-per-param", type=float, default=4, help="bytes per gradient element (4: fp32)")
    p.add_argument("--tokens", type=float, default=1024, help="tokens per sample (for the FLOPs)")
    p.add_argument("--samples-per-device", type=int, default=8)
    p.add_argument("--device-profile", default="h100_sxm", help="DeviceProfile for the compute time")
    p.add_argument("--compute-ms", type=float, default=None, help="measured forward+backward per step")
    p.add_argument("--optimizer-ms", type=float, default=0.0)
    p.add_argument("--units", type=int, default=12, help="FSDP units (GPT-2 small: 12 blocks)")
    p.add_argument("--tensors", type=int, default=148,
                   help="parameter tensors (ZeRO broadcasts each; GPT-2 small: 148)")
    p.add_argument("--bucket-mb", type=float, default=25)
    p.add_argument("--strategies", default="ddp,zero,fsdp")
    p.add_argument("--links", default=",".join(cl.CLUSTERS))
    p.add_argument("--accumulate", type=int, default=1)
    p.add_argument("--max-devices", type=int, default=1024)
    p.add_argument("--plot", default=None, metavar="FILE.png")
    p.add_argument("--json", default=None, metavar="FILE")
    p.add_argument("--validate", action="store_true",
                   help="compare predictions with 2- and 4-process runs on this machine")
    p.add_argument("--reprice", default=None, metavar="FILE",
                   help="with --validate: price again what a --validate --json FILE measured")
    a = p.parse_args(argv)
    if a.validate:
        from . import _scaling_validate
        return _scaling_validate.main(json_path=a.json, reprice=a.reprice)
    model = model_from_args(a)
    devices = [2 ** k for k in range(a.max_devices.bit_length()) if 2 ** k <= a.max_devices]
    print(f"model: {a.params:,.0f} parameters ({a.params * a.bytes_per_param / 2**20:,.0f} MiB of "
          f"gradients), {a.samples_per_device} samples per device, {model.compute_s * 1e3:.1f} ms of "
          f"compute per step on one device"
          + ("" if a.compute_ms is not None else f" ({a.device_profile}'s matmul rate)"))
    results = {}
    for link in a.links.split(","):
        for strategy in a.strategies.split(","):
            lines, rows = table(model, link, strategy, a.accumulate, devices)
            results[(link, strategy)] = rows
            print("\n" + "\n".join(lines))
            if a.accumulate == 1:
                acc = model.scaling(cl.CLUSTERS[link], strategy, [devices[-1]], 4)[0]
                print(f"  with 4 micro-batches accumulated per reduction: {acc['efficiency']:.1%} at "
                      f"{devices[-1]} devices (was {rows[-1]['efficiency']:.1%})")
    if a.plot:
        print("\nplot:", plot(results, a.plot))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({f"{k[0]}/{k[1]}": v for k, v in results.items()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
