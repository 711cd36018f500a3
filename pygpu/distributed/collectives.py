"""torch.distributed's collectives, each one MPI call (cpu and sim tensors) or NCCL call
(cuda tensors):

    all_reduce             MPI_Iallreduce (or the ring, where it measured faster)   ncclAllReduce
    reduce                 MPI_Ireduce                                               ncclReduce
    broadcast              MPI_Ibcast                                                ncclBroadcast
    all_gather             MPI_Iallgather(v)                                         ncclAllGather
    all_gather_into_tensor MPI_Iallgather                                            ncclAllGather
    reduce_scatter         MPI_Ireduce_scatter(_block)                               ncclReduceScatter
    reduce_scatter_tensor  MPI_Ireduce_scatter_block                                 ncclReduceScatter
    all_to_all(_single)    MPI_Ialltoall(v)                                          ncclSend/ncclRecv, grouped
    gather                 MPI_Igather                                               ncclSend/ncclRecv, grouped
    scatter                MPI_Iscatter                                              ncclSend/ncclRecv, grouped
    barrier                MPI_Ibarrier                                              (MPI)

Signatures, defaults and argument errors are PyTorch's. src/dst are global ranks, group_src/
group_dst ranks within `group`. async_op=True returns a Work (_work.py); otherwise the call
returns None once the result is in place. ReduceOp.AVG is a sum divided by the group's size
(ncclAvg on NCCL). A rank outside `group` does nothing (with PyTorch's warning). Every call is
counted in dist.stats() (traffic.py says what bytes)."""
import os

import numpy as np

from .. import _stats
from . import _nccl_ops, traffic
from ._group import STATS, DistributedError
from ._host import Staged, divide, write_back
from ._work import Work, launch
from .groups import group_rank_of, resolve, warn_not_in_group
from .reduce_op import ReduceOp, RedOpType, as_op, host_combine, mpi_op

_MPI = None


def mpi():
    global _MPI
    if _MPI is None:
        from mpi4py import MPI
        _MPI = MPI
    return _MPI


def check_tensor(t, name):
    from .._C import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor but got {type(t)} instead.")


def check_tensor_list(ts, name):
    from .._C import Tensor
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor] but got {type(ts)} instead.")


def _same_dtype(tensors, what):
    dtypes = {t.dtype.name for t in tensors}
    if len(dtypes) > 1:
        raise RuntimeError(f"{what}: every tensor must have the same dtype, got {sorted(dtypes)}")


def _count(name, pg, nbytes, root=0, itemsize=1, staged=()):
    sent, recv = traffic.per_rank(traffic_kind(name), nbytes, pg.size(), pg.rank(), root, itemsize)
    STATS.add(name, sent=sent, recv=recv, h2d=sum(s.h2d for s in staged),
              d2h=sum(s.d2h for s in staged))


_TRAFFIC_KIND = {"all_gather_into_tensor": "all_gather", "reduce_scatter_tensor": "reduce_scatter",
                 "all_to_all_single": "all_to_all"}


def traffic_kind(name):
    return _TRAFFIC_KIND.get(name, name)


# -- which all-reduce: MPI's, or the ring ------------------------------------------------------
# [bytes from, bytes to): sizes at which the ring over MPI's point-to-point calls measured
# faster than MPI_Iallreduce (benchmarks/bench_collectives.py; docs/parallel.md, "The
# collectives' speed": from 256 KiB up the ring won by the wall clock and by CPU time, up to
# 3.3x at 256 MiB; below it MPI_Iallreduce, by 10-30%). PYGPU_ALLREDUCE=ring or =mpi forces one.
RING_SIZES = ((256 << 10, float("inf")),)


def use_ring(nbytes, arr):
    forced = os.environ.get("PYGPU_ALLREDUCE", "")
    if arr.dtype.kind not in "fc":
        return False  # bool and integer reductions: MPI's, whose ops know them
    if forced in ("ring", "mpi"):
        return forced == "ring"
    return any(lo <= nbytes < hi for lo, hi in RING_SIZES)


def caller_role(default):
    """The transfer role the calling thread is in (pygpu.role), else `default`: a DDP
    bucket's staging counts as grad_reduce, a user's collective as collective."""
    from .._C import _role_set
    prev = _role_set(0)
    _role_set(prev)
    return _stats.ROLES[prev - 1] if prev else default


def _on_device(*tensors):
    """Whether any of them lives off the host (its collective stages through host memory)."""
    return any(t.device.type != "cpu" for t in tensors)


def _uses_nccl(pg, tensor):
    return tensor.device.type == "cuda" and "nccl" in pg.backend


def _not_member(op_name):
    warn_not_in_group(op_name)
    return None


# -- the collectives ---------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` across the group, in place on every rank."""
    check_tensor(tensor, "tensor")
    op = as_op(op)
    pg = resolve(group)
    if pg is None:
        return _not_member("all_reduce")
    if _uses_nccl(pg, tensor):
        return _nccl_ops.collective(pg, "all_reduce", async_op, tensor, op=op)
    MPI = mpi()
    role = caller_role("collective")
    p = pg.size()

    def steps():
        st = Staged(MPI, tensor, role=role, read=True, write=True, reduce=True)
        if p > 1:
            if use_ring(tensor.nbytes, st.arr):
                scale = (lambda piece: divide(piece, p)) if op == RedOpType.AVG else None  # owned chunk
                yield from pg.ring_steps([st.arr], host_combine(op), pg.next_tag(), scale)
            else:
                yield [pg.comm.Iallreduce(MPI.IN_PLACE, st.spec, mpi_op(MPI, op, st.arr.dtype == bool))]
                if op == RedOpType.AVG:
                    divide(st.arr, p)
        st.finish()
        _count("all_reduce", pg, tensor.nbytes, itemsize=tensor.itemsize, staged=(st,))
    return launch(Work("all_reduce", steps(), pg, [tensor]), async_op, _on_device(tensor))


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce `tensor` across the group into the tensor of rank dst (others keep theirs)."""
    check_tensor(tensor, "tensor")
    op = as_op(op)
    pg = resolve(group)
    if pg is None:
        return _not_member("reduce")
    root = group_rank_of(pg, dst, group_dst)
    if _uses_nccl(pg, tensor):
        return _nccl_ops.collective(pg, "reduce", async_op, tensor, op=op, root=root)
    MPI = mpi()
    role = caller_role("collective")
    is_root = pg.rank() == root

    def steps():
        st = Staged(MPI, tensor, role=role, read=True, write=is_root, reduce=True)
        mop = mpi_op(MPI, op, st.arr.dtype == bool)
        if pg.size() > 1:
            if is_root:
                yield [pg.comm.Ireduce(MPI.IN_PLACE, st.spec, mop, root=root)]
            else:
                yield [pg.comm.Ireduce(st.spec, None, mop, root=root)]
        if is_root and op == RedOpType.AVG:
            divide(st.arr, pg.size())
        st.finish()
        _count("reduce", pg, tensor.nbytes, root, staged=(st,))
    return launch(Work("reduce", steps(), pg, [tensor]), async_op, _on_device(tensor))


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank src's `tensor` into `tensor` on every rank of the group."""
    check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("broadcast")
    root = group_rank_of(pg, src, group_src)
    if _uses_nccl(pg, tensor):
        return _nccl_ops.collective(pg, "broadcast", async_op, tensor, root=root)
    MPI = mpi()
    role = caller_role("collective")
    is_root = pg.rank() == root

    def steps():
        st = Staged(MPI, tensor, role=role if role != "collective" else "broadcast", read=is_root,
                    write=not is_root)
        if pg.size() > 1:
            yield [pg.comm.Ibcast(st.spec, root=root)]
        st.finish()
        _count("broadcast", pg, tensor.nbytes, root, staged=(st,))
    return launch(Work("broadcast", steps(), pg, [tensor]), async_op, _on_device(tensor))


def _displacements(counts):
    return [int(x) for x in np.concatenate([[0], np.cumsum(counts)[:-1]])] if counts else []


def _host_out(st_like, total):
    """An uninitialised host array for `total` elements like Staged st_like's, and its spec."""
    arr = np.empty(total, dtype=st_like.arr.dtype)
    spec_type = st_like.spec[1]
    return arr, (arr.view(np.uint16) if st_like.spec[0].dtype == np.uint16 else arr), spec_type


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] = rank i's `tensor` (tensors of different sizes allowed, as PyTorch's)."""
    check_tensor_list(tensor_list, "tensor_list")
    check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("all_gather")
    p = pg.size()
    if len(tensor_list) != p:
        raise ValueError(f"all_gather: tensor_list must have one tensor per rank of the group "
                         f"({p}), got {len(tensor_list)}")
    _same_dtype(list(tensor_list) + [tensor], "all_gather")
    if tensor_list[pg.rank()].numel() != tensor.numel():
        raise RuntimeError(f"all_gather: tensor_list[{pg.rank()}] has {tensor_list[pg.rank()].numel()} "
                           f"elements but this rank's tensor has {tensor.numel()}")
    if _uses_nccl(pg, tensor):
        return _nccl_ops.collective(pg, "all_gather", async_op, tensor, outputs=list(tensor_list))
    MPI = mpi()
    role = caller_role("collective")
    counts = [t.numel() for t in tensor_list]
    displs = _displacements(counts)

    def steps():
        st = Staged(MPI, tensor, role=role)
        out, out_view, dtype = _host_out(st, sum(counts))
        if len(set(counts)) == 1:
            yield [pg.comm.Iallgather(st.spec, [out_view, dtype])]
        else:
            yield [pg.comm.Iallgatherv(st.spec, [out_view, counts, displs, dtype])]
        h2d = 0
        for t, c, d in zip(tensor_list, counts, displs):
            h2d += write_back(t, out[d:d + c], role)
        STATS.add("all_gather", *traffic.per_rank("all_gather", tensor.nbytes * p, p, pg.rank()),
                  h2d=h2d, d2h=st.d2h)
    return launch(Work("all_gather", steps(), pg, list(tensor_list)), async_op,
                  _on_device(tensor, *tensor_list))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor = every rank's input_tensor, concatenated (or stacked) in rank order."""
    check_tensor(output_tensor, "output_tensor")
    check_tensor(input_tensor, "input_tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("all_gather_into_tensor")
    p = pg.size()
    _same_dtype([output_tensor, input_tensor], "all_gather_into_tensor")
    if output_tensor.numel() != p * input_tensor.numel():
        raise RuntimeError("output tensor size must be equal to world_size times input tensor size "
                           f"({p} x {input_tensor.numel()}), got {output_tensor.numel()}")
    if _uses_nccl(pg, input_tensor):
        return _nccl_ops.collective(pg, "all_gather_into_tensor", async_op, input_tensor,
                                output=output_tensor)
    MPI = mpi()
    role = caller_role("collective")

    def steps():
        src = Staged(MPI, input_tensor, role=role)
        out = Staged(MPI, output_tensor, role=role, read=False, write=True)
        yield [pg.comm.Iallgather(src.spec, out.spec)]
        out.finish()
        _count("all_gather_into_tensor", pg, output_tensor.nbytes, staged=(src, out))
    return launch(Work("all_gather_into_tensor", steps(), pg, [output_tensor]), async_op,
                  _on_device(input_tensor, output_tensor))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """output = the reduction over ranks of input_list[this rank]."""
    check_tensor(output, "output")
    check_tensor_list(input_list, "input_list")
    op = as_op(op)
    pg = resolve(group)
    if pg is None:
        return _not_member("reduce_scatter")
    p, me = pg.size(), pg.rank()
    if len(input_list) != p:
        raise ValueError(f"reduce_scatter: input_list must have one tensor per rank of the group "
                         f"({p}), got {len(input_list)}")
    _same_dtype(list(input_list) + [output], "reduce_scatter")
    if input_list[me].numel() != output.numel():
        raise RuntimeError(f"reduce_scatter: input_list[{me}] has {input_list[me].numel()} elements "
                           f"but output has {output.numel()}")
    if _uses_nccl(pg, output):
        return _nccl_ops.collective(pg, "reduce_scatter", async_op, output, inputs=list(input_list), op=op)
    MPI = mpi()
    role = caller_role("collective")
    counts = [t.numel() for t in input_list]

    def steps():
        parts = [Staged(MPI, t, role=role, reduce=True) for t in input_list]
        send = np.concatenate([s.arr for s in parts])
        out = Staged(MPI, output, role=role, read=False, write=True, reduce=True)
        mop = mpi_op(MPI, op, send.dtype == bool)
        send_spec = [send.view(np.uint16) if out.spec[0].dtype == np.uint16 else send, out.spec[1]]
        if len(set(counts)) == 1:
            yield [pg.comm.Ireduce_scatter_block(send_spec, out.spec, mop)]
        else:
            yield [pg.comm.Ireduce_scatter(send_spec, out.spec, counts, mop)]
        if op == RedOpType.AVG:
            divide(out.arr, p)
        out.finish()
        _count("reduce_scatter", pg, sum(t.nbytes for t in input_list), staged=parts + [out])
    return launch(Work("reduce_scatter", steps(), pg, [output]), async_op,
                  _on_device(output, *input_list))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """output = this rank's 1/p of the reduction over ranks of `input` (p x output's size)."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    op = as_op(op)
    pg = resolve(group)
    if pg is None:
        return _not_member("reduce_scatter_tensor")
    p = pg.size()
    _same_dtype([output, input], "reduce_scatter_tensor")
    if input.numel() != p * output.numel():
        raise RuntimeError("input tensor must be the same size as output size times world size "
                           f"({p} x {output.numel()}), got {input.numel()}")
    if _uses_nccl(pg, output):
        return _nccl_ops.collective(pg, "reduce_scatter_tensor", async_op, output, input=input, op=op)
    MPI = mpi()
    role = caller_role("collective")

    def steps():
        src = Staged(MPI, input, role=role, reduce=True)
        out = Staged(MPI, output, role=role, read=False, write=True, reduce=True)
        yield [pg.comm.Ireduce_scatter_block(src.spec, out.spec, mpi_op(MPI, op, src.arr.dtype == bool))]
        if op == RedOpType.AVG:
            divide(out.arr, p)
        out.finish()
        _count("reduce_scatter_tensor", pg, input.nbytes, staged=(src, out))
    return launch(Work("reduce_scatter_tensor", steps(), pg, [output]), async_op,
                  _on_device(input, output))


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """output_tensor_list[i] = rank i's input_tensor_list[this rank]."""
    check_tensor_list(output_tensor_list, "output_tensor_list")
    check_tensor_list(input_tensor_list, "input_tensor_list")
    pg = resolve(group)
    if pg is None:
        return _not_member("all_to_all")
    p = pg.size()
    if len(output_tensor_list) != p or len(input_tensor_list) != p:
        raise ValueError(f"all_to_all: both lists must have one tensor per rank of the group ({p}), "
                         f"got {len(output_tensor_list)} and {len(input_tensor_list)}")
    _same_dtype(list(output_tensor_list) + list(input_tensor_list), "all_to_all")
    if _uses_nccl(pg, input_tensor_list[0]):
        return _nccl_ops.collective(pg, "all_to_all", async_op, input_tensor_list[0],
                                outputs=list(output_tensor_list), inputs=list(input_tensor_list))
    MPI = mpi()
    role = caller_role("collective")
    scounts = [t.numel() for t in input_tensor_list]
    rcounts = [t.numel() for t in output_tensor_list]
    sdispl, rdispl = _displacements(scounts), _displacements(rcounts)

    def steps():
        parts = [Staged(MPI, t, role=role) for t in input_tensor_list]
        send = np.concatenate([s.arr for s in parts])
        recv = np.empty(sum(rcounts), dtype=send.dtype)
        dtype = parts[0].spec[1]
        half = parts[0].spec[0].dtype == np.uint16
        yield [pg.comm.Ialltoallv([send.view(np.uint16) if half else send, scounts, sdispl, dtype],
                                  [recv.view(np.uint16) if half else recv, rcounts, rdispl, dtype])]
        h2d = sum(write_back(t, recv[d:d + c], role) for t, c, d in zip(output_tensor_list, rcounts, rdispl))
        me = pg.rank()
        sent = sum(t.nbytes for i, t in enumerate(input_tensor_list) if i != me)
        got = sum(t.nbytes for i, t in enumerate(output_tensor_list) if i != me)
        STATS.add("all_to_all", sent=sent, recv=got, h2d=h2d, d2h=sum(s.d2h for s in parts))
    return launch(Work("all_to_all", steps(), pg, list(output_tensor_list)), async_op,
                  _on_device(*input_tensor_list, *output_tensor_list))


def _split_counts(sizes, t, p, what):
    """Element counts per rank for a dim-0 split of t (sizes None: equal parts)."""
    rows = t.shape[0] if t.ndim else 1
    per_row = t.numel() // rows if rows else 0
    if sizes is None or len(sizes) == 0:
        if rows % p:
            raise RuntimeError(f"all_to_all_single: {what} tensor's dim 0 ({rows}) must be "
                               f"divisible by the group's size ({p}) without split sizes")
        return [rows // p * per_row] * p
    sizes = [int(s) for s in sizes]
    if len(sizes) != p:
        raise RuntimeError(f"all_to_all_single: {what}_split_sizes needs one size per rank ({p}), "
                           f"got {len(sizes)}")
    if sum(sizes) != rows:
        raise RuntimeError(f"Split sizes doesn't match total dim 0 size: {what}_split_sizes sums "
                           f"to {sum(sizes)}, dim 0 is {rows}")
    return [s * per_row for s in sizes]


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """Split `input` along dim 0 (input_split_sizes rows to each rank, or equal parts), send
    part i to rank i, and concatenate what arrives into `output` (output_split_sizes)."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    pg = resolve(group)
    if pg is None:
        return _not_member("all_to_all_single")
    p = pg.size()
    _same_dtype([output, input], "all_to_all_single")
    scounts = _split_counts(input_split_sizes, input, p, "input")
    rcounts = _split_counts(output_split_sizes, output, p, "output")
    if _uses_nccl(pg, input):
        return _nccl_ops.collective(pg, "all_to_all_single", async_op, input, output=output,
                                scounts=scounts, rcounts=rcounts)
    MPI = mpi()
    role = caller_role("collective")
    sdispl, rdispl = _displacements(scounts), _displacements(rcounts)

    def steps():
        src = Staged(MPI, input, role=role)
        out = Staged(MPI, output, role=role, read=False, write=True)
        if len(set(scounts)) == 1 and scounts == rcounts:
            yield [pg.comm.Ialltoall(src.spec, out.spec)]
        else:
            yield [pg.comm.Ialltoallv(src.spec[:1] + [scounts, sdispl, src.spec[1]],
                                      out.spec[:1] + [rcounts, rdispl, out.spec[1]])]
        out.finish()
        me = pg.rank()
        item = input.itemsize
        STATS.add("all_to_all_single", sent=item * (sum(scounts) - scounts[me]),
                  recv=item * (sum(rcounts) - rcounts[me]), h2d=out.h2d, d2h=src.d2h)
    return launch(Work("all_to_all_single", steps(), pg, [output]), async_op, _on_device(input, output))


def _check_root_list(name, tensors, tensor, p, is_root, side, root_kind):
    """gather's gather_list / scatter's scatter_list: on the root, one tensor per rank, of
    `tensor`'s dtype and size; elsewhere none (PyTorch's errors)."""
    arg = f"{name}_list"
    if not is_root:
        if tensors:
            raise ValueError(f"Argument ``{arg}`` must NOT be specified on non-{root_kind} ranks.")
        return
    check_tensor_list(tensors, arg)
    if len(tensors) != p:
        raise ValueError(f"{name}: {arg} must have one tensor per rank of the group ({p}), "
                         f"got {len(tensors)}")
    _same_dtype(list(tensors) + [tensor], name)
    if any(t.numel() != tensor.numel() for t in tensors):
        raise RuntimeError(f"{name}: every tensor of {arg} must have the {side}'s size")


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """gather_list[i] (on rank dst only, default global rank 0) = rank i's `tensor`."""
    check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("gather")
    root = group_rank_of(pg, dst, group_dst, default_zero=True)
    p, is_root = pg.size(), pg.rank() == root
    _check_root_list("gather", gather_list, tensor, p, is_root, "input", "destination")
    if _uses_nccl(pg, tensor):
        return _nccl_ops.collective(pg, "gather", async_op, tensor, outputs=list(gather_list or []),
                                root=root)
    MPI = mpi()
    role = caller_role("collective")

    def steps():
        st = Staged(MPI, tensor, role=role)
        out = out_view = None
        if is_root:
            out, out_view, dtype = _host_out(st, tensor.numel() * p)
        yield [pg.comm.Igather(st.spec, [out_view, st.spec[1]] if is_root else None, root=root)]
        h2d = 0
        if is_root:
            n = tensor.numel()
            for i, t in enumerate(gather_list):
                h2d += write_back(t, out[i * n:(i + 1) * n], role)
        STATS.add("gather", *traffic.per_rank("gather", tensor.nbytes * p, p, pg.rank(), root),
                  h2d=h2d, d2h=st.d2h)
    return launch(Work("gather", steps(), pg, list(gather_list or [])), async_op,
                  _on_device(tensor, *(gather_list or [])))


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """tensor (on every rank) = scatter_list[this rank] of rank src (default global rank 0)."""
    check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        return _not_member("scatter")
    root = group_rank_of(pg, src, group_src, default_zero=True)
    p, is_root = pg.size(), pg.rank() == root
    _check_root_list("scatter", scatter_list, tensor, p, is_root, "output", "source")
    if _uses_nccl(pg, tensor):
        return _nccl_ops.collective(pg, "scatter", async_op, tensor, inputs=list(scatter_list or []),
                                root=root)
    MPI = mpi()
    role = caller_role("collective")

    def steps():
        out = Staged(MPI, tensor, role=role, read=False, write=True)
        parts = [Staged(MPI, t, role=role) for t in scatter_list] if is_root else []
        send = np.concatenate([s.arr for s in parts]) if is_root else None
        half = out.spec[0].dtype == np.uint16
        spec = [send.view(np.uint16) if half else send, out.spec[1]] if is_root else None
        yield [pg.comm.Iscatter(spec, out.spec, root=root)]
        out.finish()
        STATS.add("scatter", *traffic.per_rank("scatter", tensor.nbytes * p, p, pg.rank(), root),
                  h2d=out.h2d, d2h=sum(s.d2h for s in parts))
    return launch(Work("scatter", steps(), pg, [tensor]), async_op,
                  _on_device(tensor, *(scatter_list or [])))


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of the group has called barrier (asleep, not spinning)."""
    pg = resolve(group)
    if pg is None:
        return _not_member("barrier")

    def steps():
        yield [pg.comm.Ibarrier()]
        STATS.add("barrier")
    work = Work("barrier", steps(), pg)
    if timeout is not None:
        from ._group import as_seconds
        import time
        work._deadline = time.monotonic() + as_seconds(timeout)
    return launch(work, async_op)


__all__ = ["all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "gather",
           "scatter", "barrier", "DistributedError"]
