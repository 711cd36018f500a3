"""Collectives of picklable Python objects: broadcast_object_list, all_gather_object,
gather_object, scatter_object_list, as PyTorch has them.

Each object is pickled into bytes; the byte counts go first (one MPI collective of
int64s), then the bytes (MPI_Ibcast, MPI_Iallgatherv, MPI_Igatherv, MPI_Iscatterv of
MPI_BYTE), all on the group's communicator and counted in dist.stats(). As in PyTorch,
unpickling runs arbitrary code: only exchange objects between ranks you trust.
Objects always travel through MPI, whatever the group's backend (PyTorch's NCCL path
stages them through the GPU only because NCCL needs device memory)."""
import pickle

import numpy as np

from ._group import STATS
from ._work import Work, launch
from .collectives import mpi
from .groups import group_rank_of, resolve, warn_not_in_group


class _Pickler(pickle.Pickler):
    """pickle, with pygpu tensors as (their values, dtype, device, requires_grad): they cross
    as data and are rebuilt on the receiving rank (PyTorch's object collectives pickle tensors
    too)."""

    def reducer_override(self, obj):
        from .._C import Tensor
        if isinstance(obj, Tensor):
            host = obj.detach().cpu().numpy()
            return _rebuild_tensor, (host.copy(), obj.dtype.name, str(obj.device), obj.requires_grad)
        return NotImplemented


def _rebuild_tensor(values, dtype, device, requires_grad):
    from .. import _dtype
    from .._C import from_numpy
    t = from_numpy(np.ascontiguousarray(values)).to(getattr(_dtype, dtype) if hasattr(_dtype, dtype)
                                                    else dtype)
    if device != "cpu":
        t = t.to(device)
    return t.requires_grad_(True) if requires_grad else t


def _dumps(obj):
    import io
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


def _loads(buf):
    return pickle.loads(buf.tobytes())


def _displs(counts):
    return [int(x) for x in np.concatenate([[0], np.cumsum(counts)[:-1]])]


def _run(name, pg, steps):
    launch(Work(name, steps, pg), False)


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace object_list's items, on every rank, with those of rank src (default 0)."""
    pg = resolve(group)
    if pg is None:
        warn_not_in_group("broadcast_object_list")
        return
    root = group_rank_of(pg, src, group_src, default_zero=True)
    MPI = mpi()
    is_root = pg.rank() == root
    sizes = np.zeros(len(object_list), dtype=np.int64)
    payload = [None]

    def steps():
        if is_root:
            parts = [_dumps(o) for o in object_list]
            sizes[:] = [p.size for p in parts]
            payload[0] = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
        yield [pg.comm.Ibcast([sizes, MPI.INT64_T], root=root)]
        if not is_root:
            payload[0] = np.empty(int(sizes.sum()), dtype=np.uint8)
        yield [pg.comm.Ibcast([payload[0], MPI.BYTE], root=root)]
        if not is_root:
            for i, (d, n) in enumerate(zip(_displs(sizes), sizes)):
                object_list[i] = _loads(payload[0][d:d + n])
        n = int(sizes.sum())
        STATS.add("broadcast_object_list", sent=n if is_root else 0, recv=0 if is_root else n)
    _run("broadcast_object_list", pg, steps())


def all_gather_object(object_list, obj, group=None):
    """object_list[i] = rank i's obj (object_list has one slot per rank of the group)."""
    pg = resolve(group)
    if pg is None:
        warn_not_in_group("all_gather_object")
        return
    p = pg.size()
    if len(object_list) != p:
        raise ValueError(f"all_gather_object: object_list must have one slot per rank of the group "
                         f"({p}), got {len(object_list)}")
    MPI = mpi()
    mine = _dumps(obj)

    def steps():
        sizes = np.zeros(p, dtype=np.int64)
        yield [pg.comm.Iallgather([np.array([mine.size], np.int64), MPI.INT64_T], [sizes, MPI.INT64_T])]
        out = np.empty(int(sizes.sum()), dtype=np.uint8)
        displs = _displs(sizes)
        yield [pg.comm.Iallgatherv([mine, MPI.BYTE], [out, [int(s) for s in sizes], displs, MPI.BYTE])]
        for i, (d, n) in enumerate(zip(displs, sizes)):
            object_list[i] = obj if i == pg.rank() else _loads(out[d:d + n])
        STATS.add("all_gather_object", sent=mine.size * (p - 1), recv=int(sizes.sum()) - mine.size)
    _run("all_gather_object", pg, steps())


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """object_gather_list[i] (on rank dst only, default 0) = rank i's obj."""
    pg = resolve(group)
    if pg is None:
        warn_not_in_group("gather_object")
        return
    root = group_rank_of(pg, dst, group_dst, default_zero=True)
    p, is_root = pg.size(), pg.rank() == root
    if is_root and (object_gather_list is None or len(object_gather_list) != p):
        raise ValueError(f"gather_object: the destination rank needs object_gather_list with one "
                         f"slot per rank of the group ({p})")
    MPI = mpi()
    mine = _dumps(obj)

    def steps():
        sizes = np.zeros(p, dtype=np.int64)
        yield [pg.comm.Igather([np.array([mine.size], np.int64), MPI.INT64_T],
                               [sizes, MPI.INT64_T] if is_root else None, root=root)]
        out = np.empty(int(sizes.sum()), dtype=np.uint8) if is_root else None
        displs = _displs(sizes)
        yield [pg.comm.Igatherv([mine, MPI.BYTE],
                                [out, [int(s) for s in sizes], displs, MPI.BYTE] if is_root else None,
                                root=root)]
        if is_root:
            for i, (d, n) in enumerate(zip(displs, sizes)):
                object_gather_list[i] = obj if i == root else _loads(out[d:d + n])
        STATS.add("gather_object", sent=0 if is_root else mine.size,
                  recv=int(sizes.sum()) - mine.size if is_root else 0)
    _run("gather_object", pg, steps())


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """scatter_object_output_list[0] = rank src's scatter_object_input_list[this rank]."""
    pg = resolve(group)
    if pg is None:
        warn_not_in_group("scatter_object_list")
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    root = group_rank_of(pg, src, group_src, default_zero=True)
    p, is_root = pg.size(), pg.rank() == root
    if is_root and (scatter_object_input_list is None or len(scatter_object_input_list) != p):
        raise ValueError(f"scatter_object_list: the source rank needs scatter_object_input_list "
                         f"with one object per rank of the group ({p})")
    MPI = mpi()

    def steps():
        sizes = np.zeros(p, dtype=np.int64)
        parts = [_dumps(o) for o in scatter_object_input_list] if is_root else []
        if is_root:
            sizes[:] = [x.size for x in parts]
        mine = np.zeros(1, dtype=np.int64)
        yield [pg.comm.Iscatter([sizes, MPI.INT64_T] if is_root else None, [mine, MPI.INT64_T],
                                root=root)]
        buf = np.empty(int(mine[0]), dtype=np.uint8)
        send = np.concatenate(parts) if is_root else None
        yield [pg.comm.Iscatterv([send, [int(s) for s in sizes], _displs(sizes), MPI.BYTE]
                                 if is_root else None, [buf, MPI.BYTE], root=root)]
        scatter_object_output_list[0] = _loads(buf)
        STATS.add("scatter_object_list", sent=int(sizes.sum()) - buf.size if is_root else 0,
                  recv=0 if is_root else buf.size)
    _run("scatter_object_list", pg, steps())
