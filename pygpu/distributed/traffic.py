"""Bytes each rank sends and receives in one collective: what dist.stats() counts and what
the cluster cost model (pygpu.cost.cluster) charges a link for.

For the collectives whose algorithm MPI or NCCL chooses internally, the figure is the
bandwidth-optimal one their large-message algorithms reach (the ring's): all-reduce
2 (p-1)/p n, reduce-scatter and all-gather (p-1)/p of the full tensor. The rooted
collectives count the payload a rank hands over or gets: a broadcast's root sends n, each
other rank receives n. One function per collective, in one table.

n is always a byte count: the tensor's for all_reduce, broadcast and reduce; the full
(gathered, or pre-scatter) tensor's for all_gather, reduce_scatter, gather, scatter and
all_to_all."""
from ._group import ring_bytes


def _all_reduce(n, p, rank, root, itemsize):
    b = ring_bytes(itemsize, n // itemsize, p)[rank]
    return b, b


def _shard(n, p, rank, root, itemsize):  # reduce_scatter, all_gather: (p-1) shards
    b = (p - 1) * (n // p)
    return b, b


def _broadcast(n, p, rank, root, itemsize):
    return (n, 0) if rank == root else (0, n)


def _reduce(n, p, rank, root, itemsize):
    return (0, n * (p - 1)) if rank == root else (n, 0)


def _gather(n, p, rank, root, itemsize):
    shard = n // p
    return (0, shard * (p - 1)) if rank == root else (shard, 0)


def _scatter(n, p, rank, root, itemsize):
    shard = n // p
    return (shard * (p - 1), 0) if rank == root else (0, shard)


def _all_to_all(n, p, rank, root, itemsize):
    b = (p - 1) * (n // p)
    return b, b


def _barrier(n, p, rank, root, itemsize):
    return 0, 0


BYTES = {"all_reduce": _all_reduce, "reduce_scatter": _shard, "all_gather": _shard,
         "broadcast": _broadcast, "reduce": _reduce, "gather": _gather, "scatter": _scatter,
         "all_to_all": _all_to_all, "barrier": _barrier}


def per_rank(kind, nbytes, p, rank=0, root=0, itemsize=1):
    """(sent, received) bytes of `rank` in a collective `kind` over p ranks (see above)."""
    if p <= 1:
        return 0, 0
    return BYTES[kind](int(nbytes), p, rank, root, itemsize)
