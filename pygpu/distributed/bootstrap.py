"""python -m pygpu.distributed.bootstrap [--local-rank-arg] script.py [args]: how
pygpu.distributed.run (and .launch) start a rank.

Sets torchrun's RANK, LOCAL_RANK, WORLD_SIZE from Open MPI's variables, then runs the
script as __main__; with --local-rank-arg (pygpu.distributed.launch) the script also
gets --local_rank=LOCAL_RANK as its first argument, as torch.distributed.launch gave it. An exception that escapes the script aborts the whole MPI job
with a message naming this rank, so the other ranks never hang in a collective
waiting for it (pygpu.distributed.init_process_group installs the same hook)."""
import os
import runpy
import sys

from . import _export_rank_env


def main():
    args = sys.argv[1:]
    local_rank_arg = bool(args) and args[0] == "--local-rank-arg"
    if local_rank_arg:
        args = args[1:]
    if not args:
        raise SystemExit("usage: python -m pygpu.distributed.bootstrap [--local-rank-arg] script.py [args...]")
    _export_rank_env()
    script = args[0]
    extra = [f"--local_rank={os.environ.get('LOCAL_RANK', '0')}"] if local_rank_arg else []
    sys.argv = [script] + extra + args[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
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
