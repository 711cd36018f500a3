"""python -m pygpu.distributed.bootstrap [--local-rank-arg] [--module | --no-python] script [args]:
how pygpu.distributed.run (and .launch) start a rank.

Sets torchrun's RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE,
ROLE_RANK and ROLE_WORLD_SIZE from Open MPI's variables (the launcher passes the rest:
MASTER_ADDR, MASTER_PORT, TORCHELASTIC_*), then runs the script as __main__ (--module: as
python -m would; --no-python: the program itself, replacing this process). With
--local-rank-arg (pygpu.distributed.launch) the script also gets --local_rank=LOCAL_RANK as
its first argument, as torch.distributed.launch gave it. An exception that escapes the
script aborts the whole MPI job with a message naming this rank, so the other ranks never
hang in a collective waiting for it (pygpu.distributed.init_process_group installs the same
hook)."""
import os
import runpy
import sys

from . import _export_rank_env


def export_group_env():
    """GROUP_RANK (this machine's index: ranks are placed machine by machine, LOCAL_WORLD_SIZE
    each), GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, as torchrun sets them."""
    env = os.environ
    if "RANK" not in env:
        return
    rank, world = int(env["RANK"]), int(env.get("WORLD_SIZE", "1"))
    local = max(1, int(env.get("LOCAL_WORLD_SIZE", "1")))
    env.setdefault("GROUP_RANK", str(rank // local))
    env.setdefault("GROUP_WORLD_SIZE", env.get("PYGPU_NNODES", str(max(1, world // local))))
    env.setdefault("ROLE_RANK", str(rank))
    env.setdefault("ROLE_WORLD_SIZE", str(world))


def main():
    args = sys.argv[1:]
    flags = set()
    while args and args[0] in ("--local-rank-arg", "--module", "--no-python", "--spawned"):
        flags.add(args.pop(0))
    if not args:
        raise SystemExit("usage: python -m pygpu.distributed.bootstrap [--local-rank-arg] "
                         "[--module | --no-python] script.py [args...]")
    _export_rank_env()
    export_group_env()
    script = args[0]
    extra = [f"--local_rank={os.environ.get('LOCAL_RANK', '0')}"] if "--local-rank-arg" in flags else []
    if "--spawned" in flags:  # pygpu.multiprocessing.spawn's process: fn(rank, *args)
        from ..multiprocessing.mpi_job import run_spawned
        runner = lambda: run_spawned(script)  # noqa: E731
    elif "--no-python" in flags:
        sys.stdout.flush()
        os.execvp(script, [script] + extra + args[1:])
    if "--spawned" not in flags:
        sys.argv = [script] + extra + args[1:]
        if "--module" in flags:
            sys.path.insert(0, os.getcwd())
            runner = lambda: runpy.run_module(script, run_name="__main__", alter_sys=True)  # noqa: E731
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
            runner = lambda: runpy.run_path(script, run_name="__main__")  # noqa: E731
    try:
        runner()
    except SystemExit:
        raise
    except BaseException as exc:
        rank = os.environ.get("RANK", "?")
        size = os.environ.get("WORLD_SIZE", "?")
        import traceback
        sys.stderr.write(f"\npygpu.distributed: rank {rank} of {size} (pid {os.getpid()}) raised "
                         f"{type(exc).__name__}: {exc}; aborting the job\n")
        traceback.print_exc()
        sys.stderr.flush()
        try:
            from mpi4py import MPI
            MPI.COMM_WORLD.Abort(1)
        finally:
            os._exit(1)


if __name__ == "__main__":
    main()
