"""python -m pygpu.distributed.launch --nproc_per_node N train.py [args...]: the older launcher.

As torch.distributed.launch did, it passes --local_rank=N to each rank's script
(after the script's name, before its own arguments), so a script that parses

    parser.add_argument("--local_rank", type=int, default=0)

learns its local rank from its arguments. The environment is set as well (RANK,
LOCAL_RANK, WORLD_SIZE, as pygpu.distributed.run sets it). --use-env turns the
argument off, leaving only the environment: the script then reads LOCAL_RANK, as
under `python -m pygpu.distributed.run` (the torchrun-style launcher, which new
scripts should use). Everything else (mpirun, --hostfile, --nnodes) is run's."""
import sys

from .run import execute, parse, parser


def main(argv=None):
    p = parser("python -m pygpu.distributed.launch", __doc__.split("\n\n")[0])
    p.add_argument("--use-env", action="store_true",
                   help="do not pass --local_rank=N; the script reads LOCAL_RANK from the environment")
    a = parse(p, argv)
    return execute(a, () if a.use_env else ("--local-rank-arg",))


if __name__ == "__main__":
    sys.exit(main())
