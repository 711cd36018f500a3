# bench_collectives.py - the all-reduce's three ways over MPI, 1 KiB to 256 MiB per rank:
#   ring      pygpu's ring over MPI's point-to-point calls (PYGPU_ALLREDUCE=ring)
#   iallred   MPI_Iallreduce, waited for asleep (wait_all): pygpu.distributed.all_reduce's default
#   allred    MPI_Allreduce, Open MPI's blocking call (for reference: it spins while it waits)
# each timed on float32 buffers in each rank's memory (cpu tensors), best and median of several
# runs by the wall clock, and the CPU time of every rank's process (all threads) per call. The
# table says which is faster at each size; collectives.py's RING_SIZES keeps the ring where it won.
#
#   python -m pygpu.distributed.run --nproc_per_node 2 benchmarks/bench_collectives.py [--max-mib 256] [--json out.json]
#
# Not a test: a measurement (docs/parallel.md, "The collectives' speed", has the figures and
# the load they were taken under).
import argparse
import json
import os
import time

import numpy as np

import pygpu
import pygpu.distributed as dist


def timed(fn, budget_s=0.4, min_reps=3, max_reps=50):
    fn()  # warm-up: buffers, MPI's connections
    walls, c0 = [], time.process_time()
    t_end = time.perf_counter() + budget_s
    while len(walls) < min_reps or (time.perf_counter() < t_end and len(walls) < max_reps):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
    cpu = (time.process_time() - c0) / len(walls)
    return min(walls), float(np.median(walls)), cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-mib", type=float, default=256)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    dist.init_process_group()
    r, p = dist.get_rank(), dist.get_world_size()
    comm = dist.group.WORLD.comm
    from mpi4py import MPI
    sizes, s = [], 1024
    while s <= a.max_mib * 2**20:
        sizes.append(s)
        s *= 4
    rows = []
    for nbytes in sizes:
        t = pygpu.ones(nbytes // 4)
        arr = t.numpy()

        def ring():
            os.environ["PYGPU_ALLREDUCE"] = "ring"
            dist.all_reduce(t)

        def iallred():
            os.environ["PYGPU_ALLREDUCE"] = "mpi"
            dist.all_reduce(t)

        def allred():
            comm.Allreduce(MPI.IN_PLACE, arr, op=MPI.SUM)

        row = {"bytes": nbytes}
        if os.environ.get("PYGPU_BENCH_VERBOSE"):
            print("size", nbytes, flush=True)
        for name, fn in (("ring", ring), ("iallred", iallred), ("allred", allred)):
            best, med, cpu = timed(fn)
            every = [None] * p
            dist.all_gather_object(every, (best, med, cpu))
            row[name] = {"best_s": max(x[0] for x in every), "median_s": max(x[1] for x in every),
                         "cpu_s": sum(x[2] for x in every)}
        os.environ.pop("PYGPU_ALLREDUCE", None)
        rows.append(row)
        del t, arr
    if r == 0:
        load = os.getloadavg()
        print(f"all_reduce, float32, {p} ranks, {os.cpu_count()} cores; load average "
              f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
        print(f"{'size':>9} | {'ring ms':>9} {'Iallreduce':>10} {'Allreduce':>10} | "
              f"{'ring cpu':>9} {'Iallred cpu':>11} {'Allred cpu':>10} | faster (median)")
        for row in rows:
            n = row["bytes"]
            label = f"{n // 2**20} MiB" if n >= 2**20 else f"{n // 1024} KiB"
            med = {k: row[k]["median_s"] * 1e3 for k in ("ring", "iallred", "allred")}
            cpu = {k: row[k]["cpu_s"] * 1e3 for k in ("ring", "iallred", "allred")}
            best = "ring" if med["ring"] < med["iallred"] else "MPI_Iallreduce"
            print(f"{label:>9} | {med['ring']:9.3f} {med['iallred']:10.3f} {med['allred']:10.3f} | "
                  f"{cpu['ring']:9.3f} {cpu['iallred']:11.3f} {cpu['allred']:10.3f} | {best}")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"ranks": p, "load": load, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
