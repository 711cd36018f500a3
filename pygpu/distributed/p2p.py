"""Point-to-point: send, recv, isend, irecv, P2POp and batch_isend_irecv, as PyTorch has them.

Over MPI (cpu and sim tensors) these are MPI_Isend and MPI_Irecv on the group's
communicator, with the user's tag; a recv with no source is MPI_ANY_SOURCE, and the
sender's rank comes from the receive's MPI status. Over NCCL (cuda tensors) they are
ncclSend and ncclRecv, which take no tag (PyTorch's NCCL backend ignores it too) and need a
source. send and recv wait for completion; isend and irecv return a Work."""
from . import _nccl_ops
from ._group import STATS
from ._host import Staged
from ._work import Work, launch
from .collectives import check_tensor, mpi
from .groups import group_rank_of, resolve, warn_not_in_group


def _peer(pg, rank, group_rank, what):
    peer = group_rank_of(pg, rank, group_rank)
    if peer == pg.rank():
        raise ValueError(f"Invalid {what} rank: {what} rank should not be the same as the rank "
                         "of the current process.")
    return peer


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send `tensor` to rank dst without waiting; returns a Work."""
    check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        warn_not_in_group("isend")
        return None
    peer = _peer(pg, dst, group_dst, "destination")
    if tensor.device.type == "cuda" and "nccl" in pg.backend:
        return _nccl_ops.collective(pg, "send", True, tensor, peer=peer)
    MPI = mpi()

    def steps():
        st = Staged(MPI, tensor, role="p2p")
        yield [pg.comm.Isend(st.spec, dest=peer, tag=int(tag))]
        STATS.add("send", sent=tensor.nbytes, d2h=st.d2h)
    return launch(Work("send", steps(), pg, [tensor]), True, tensor.device.type != "cpu")


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into `tensor` from rank src (None: any rank) without waiting; returns a Work
    whose source_rank() is the sender's global rank."""
    check_tensor(tensor, "tensor")
    pg = resolve(group)
    if pg is None:
        warn_not_in_group("irecv")
        return None
    any_source = src is None and group_src is None
    peer = None if any_source else _peer(pg, src, group_src, "source")
    if tensor.device.type == "cuda" and "nccl" in pg.backend:
        if any_source:
            raise ValueError("recv from any source (src=None) is not supported with NCCL: name "
                             "the source rank")
        return _nccl_ops.collective(pg, "recv", True, tensor, peer=peer)
    MPI = mpi()
    work = Work("recv", None, pg, [tensor])

    def steps():
        st = Staged(MPI, tensor, role="p2p", read=False, write=True)
        status = MPI.Status()
        req = pg.comm.Irecv(st.spec, source=MPI.ANY_SOURCE if any_source else peer, tag=int(tag))
        yield lambda: req.Test(status)
        work._source = pg.global_rank(status.Get_source())
        st.finish()
        STATS.add("recv", recv=tensor.nbytes, h2d=st.h2d)
    work._steps = steps()
    return launch(work, True, tensor.device.type != "cpu")


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send `tensor` to rank dst and wait until it has gone."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into `tensor` from rank src (None: any rank); returns the sender's global rank
    (-1 on a rank outside `group`)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work._source


class P2POp:
    """One operation of batch_isend_irecv: P2POp(dist.isend or dist.irecv, tensor, peer)."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` "
                             "or ``torch.distributed.irecv``.")
        check_tensor(tensor, "tensor")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer

    def __repr__(self):
        return f"P2POp(op={self.op.__name__}, peer={self.peer}, tensor shape {tuple(self.tensor.shape)})"


def batch_isend_irecv(p2p_op_list):
    """Post every operation of the list at once (none waits for another, so any order of
    sends and receives between ranks completes); returns their Works. The cuda tensors of an
    NCCL group go as one ncclGroupStart/End group, with one Work, as in PyTorch."""
    if not isinstance(p2p_op_list, (list, tuple)) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    works, rest, nccl = [], [], {}
    for p in p2p_op_list:
        pg = resolve(p.group)
        if pg is not None and p.tensor.device.type == "cuda" and "nccl" in pg.backend:
            if p.peer is None and p.group_peer is None:
                raise ValueError("batch_isend_irecv with NCCL: every operation needs its peer")
            peer = _peer(pg, p.peer, p.group_peer, "destination" if p.op is isend else "source")
            nccl.setdefault(id(pg), (pg, []))[1].append((p.op is isend, p.tensor, peer))
        else:
            rest.append(p)
    for pg, ops in nccl.values():
        works.append(_nccl_ops.batch(pg, ops))
    for p in rest:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return [w for w in works if w is not None]
