"""torch.multiprocessing.spawn / start_processes: run fn(i, *args) in nprocs new processes
and join them; the first to fail stops the others, and its exception (with the child's
traceback) or its exit code or signal is raised in the parent, as PyTorch's do."""
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import warnings

from . import mpi_job
from .errors import ProcessException, ProcessExitedException, ProcessRaisedException

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "SpawnContext", "start_processes"]


def _wrap(fn, i, args, error_file):
    """The child: run fn; an exception's traceback goes to error_file for the parent."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent stopped it
    except Exception:
        import traceback
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_files):
        self.processes, self.error_files = processes, error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def join(self, timeout=None, grace_period=None):
        """Wait (up to timeout) for processes to end. True once all have ended well; False
        while some still run. When one failed, the others are terminated (after
        grace_period) and its failure is raised."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        self._stop_the_others(grace_period)
        self._raise(failed)

    def _stop_the_others(self, grace_period):
        if grace_period is not None:
            for p in self.processes:
                p.join(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join(30 if grace_period is None else grace_period)
            if p.is_alive():
                p.kill()
                p.join()

    def _raise(self, index):
        proc = self.processes[index]
        if not os.access(self.error_files[index], os.R_OK):
            code = proc.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {index:d} terminated with signal {name}",
                                             index, proc.pid, code, name)
            raise ProcessExitedException(f"process {index:d} terminated with exit code "
                                         f"{code:d}", index, proc.pid, code)
        with open(self.error_files[index], "rb") as fh:
            trace = pickle.load(fh)
        raise ProcessRaisedException(f"\n\n-- Process {index:d} terminated with the following "
                                     f"error:\n{trace}", index, proc.pid)


class SpawnContext(ProcessContext):
    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.",
                      stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start nprocs processes of fn(i, *args) with the given start method; join them (and
    return None) or return their ProcessContext. A program whose fn's module sets up
    torch.distributed (init_process_group) gets its processes as ranks of one MPI job
    instead, so that they meet (mpi_job.py)."""
    if nprocs < 1:
        raise ValueError(f"nprocs must be at least 1, got {nprocs}")
    if mpi_job.needs_ranks(fn):
        return mpi_job.start(fn, args, nprocs, join)
    mp = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        fd, path = tempfile.mkstemp(prefix="pygpu-errorfile-", suffix=".pickle")
        os.close(fd)
        os.unlink(path)  # the child creates it only if it fails
        p = mp.Process(target=_wrap, args=(fn, i, args, path), daemon=daemon)
        p.start()
        processes.append(p)
        error_files.append(path)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """fn(i, *args) in nprocs processes started with 'spawn' (fn must be importable: defined
    at the top level of a module). See start_processes."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t"
                      " torch.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
