"""spawn()'s processes as one MPI job, for a program that sets up torch.distributed in them.

PyTorch's multi-GPU tutorial starts its ranks with mp.spawn(main, args=(world_size, ...),
nprocs=world_size) and calls init_process_group(rank=rank, world_size=world_size) in each.
pygpu's ranks meet through MPI, so processes started by Python's multiprocessing could not
find each other: spawn.py hands such a program here (needs_ranks), and its processes are
started by mpirun. Process i is rank i; `fn` and `args` reach it pickled (by value: a tensor
shared with share_memory_() is copied, not shared, on this path), the script re-imported as
__mp_main__ as Python's spawn start method does. A process that raises ends the others, and
join() raises ProcessRaisedException with its traceback."""
import inspect
import os
import pickle
import subprocess
import sys
import tempfile

from .errors import ProcessRaisedException


def needs_ranks(fn):
    """Whether fn's module sets up torch.distributed (calls init_process_group): then its
    processes must be ranks of one job."""
    mod = sys.modules.get(getattr(fn, "__module__", None) or "")
    try:
        source = inspect.getsource(mod) if mod is not None else ""
    except (OSError, TypeError):  # no source (an interactive session): Python's processes
        return False
    return "init_process_group" in source


class MpiJob:
    """What start_processes(join=False) returns on this path: join() waits for the job."""

    def __init__(self, proc, workdir):
        self._proc, self._workdir = proc, workdir

    def join(self, timeout=None, grace_period=None):
        try:
            out, err = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        sys.stdout.write(out or "")
        sys.stderr.write(err or "")
        if self._proc.returncode != 0:
            trace = "\n".join((err or "").strip().splitlines()[-20:])
            raise ProcessRaisedException(
                f"\n\n-- a spawned process failed (the job's exit status "
                f"{self._proc.returncode}):\n{trace}", -1, self._proc.pid)
        return True

    def pids(self):
        return [self._proc.pid]


def start(fn, args, nprocs, join):
    """fn(i, *args) in nprocs ranks of one mpirun job."""
    from ..distributed.run import mpirun_command
    workdir = tempfile.mkdtemp(prefix="pygpu-spawn-")
    payload = os.path.join(workdir, "payload.pkl")
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    with open(payload, "wb") as f:  # two pickles: where things are, then fn and args
        pickle.dump({"main": os.path.abspath(main) if main else None, "path": list(sys.path)}, f)
        pickle.dump((fn, tuple(args)), f)
    env = {"MASTER_ADDR": os.environ.get("MASTER_ADDR", "127.0.0.1"),
           "MASTER_PORT": os.environ.get("MASTER_PORT", "29500")}
    cmd = mpirun_command(nprocs, [payload], bootstrap_args=["--spawned"], env=env)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    job = MpiJob(proc, workdir)
    if not join:
        return job
    job.join()
    return None


def run_spawned(payload):
    """In each rank (pygpu.distributed.bootstrap --spawned): the script as __mp_main__
    (where fn may be defined, under `if __name__ == "__main__"` guards that then stay shut),
    then fn(rank, *args)."""
    import runpy
    import types
    with open(payload, "rb") as f:
        where = pickle.load(f)
        sys.path[:0] = [p for p in where["path"] if p not in sys.path]
        if where["main"]:
            mod = types.ModuleType("__mp_main__")
            mod.__dict__.update(runpy.run_path(where["main"], run_name="__mp_main__"))
            sys.modules["__mp_main__"] = sys.modules["__main__"] = mod
        fn, args = pickle.load(f)
    rank = int(os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    fn(rank, *args)
