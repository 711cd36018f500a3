"""pygpu.multiprocessing: torch.multiprocessing's names - Python's multiprocessing, plus spawn().

spawn(fn, args, nprocs) starts nprocs processes that each call fn(i, *args), as PyTorch's
does, so a script written for it (PyTorch's multi-GPU tutorial: mp.spawn(main,
args=(world_size, ...), nprocs=world_size), then init_process_group(rank=rank,
world_size=world_size) in each) runs unchanged. The processes are an MPI job started by
mpirun, so that init_process_group finds its ranks (pygpu's ranks meet through MPI):
process i is rank i, and `fn` and `args` reach it pickled, the script re-imported as
__mp_main__ as Python's spawn start method does. A process that raises ends the others,
and spawn raises ProcessRaisedException naming it (join=True)."""
import os
import pickle
import subprocess
import sys
import tempfile
from multiprocessing import *  # noqa: F401,F403 - torch.multiprocessing re-exports them
from multiprocessing import get_context  # noqa: F401


class ProcessException(Exception):
    def __init__(self, msg, error_index=-1, pid=None):
        super().__init__(msg)
        self.error_index, self.pid = error_index, pid


class ProcessRaisedException(ProcessException):
    """A spawned process raised (its traceback is in the message)."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero status."""

    def __init__(self, msg, error_index=-1, pid=None, exit_code=1, signal_name=None):
        super().__init__(msg, error_index, pid)
        self.exit_code, self.signal_name = exit_code, signal_name


class ProcessContext:
    """What spawn(join=False) returns: join() waits and raises what a process raised."""

    def __init__(self, proc, workdir):
        self._proc, self._workdir = proc, workdir

    def join(self, timeout=None):
        try:
            out, err = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        sys.stdout.write(out or "")
        sys.stderr.write(err or "")
        if self._proc.returncode != 0:
            trace = (err or "").strip().splitlines()
            raise ProcessRaisedException(
                "a spawned process failed (exit status %d):\n%s" % (self._proc.returncode,
                                                                     "\n".join(trace[-20:])))
        return True

    def pids(self):
        return [self._proc.pid]


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run fn(i, *args) in nprocs processes (ranks 0..nprocs-1 of one MPI job)."""
    from ..distributed.run import mpirun_command
    if nprocs < 1:
        raise ValueError(f"nprocs must be at least 1, got {nprocs}")
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
    ctx = ProcessContext(proc, workdir)
    if not join:
        return ctx
    ctx.join()
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """torch.multiprocessing.spawn: fn(i, *args) in nprocs processes."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)


def _run_spawned(payload):
    """In each spawned process (bootstrap --spawned): the script as __mp_main__ (where fn
    may be defined, under `if __name__ == "__main__"` guards that then stay shut), then
    fn(rank, *args)."""
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
