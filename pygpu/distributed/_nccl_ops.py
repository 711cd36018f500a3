"""torch.distributed's collectives on cuda tensors, each as NCCL calls (the way PyTorch's
ProcessGroupNCCL makes them):

    all_reduce, reduce, broadcast        ncclAllReduce, ncclReduce, ncclBroadcast
    all_gather_into_tensor               ncclAllGather
    all_gather                           ncclAllGather into one buffer, copied out (uneven sizes:
                                         ncclSend/ncclRecv to and from every rank, grouped)
    reduce_scatter(_tensor)              ncclReduceScatter (the list concatenated first)
    all_to_all(_single), gather, scatter ncclSend/ncclRecv in one ncclGroupStart/End group
    send, recv                           ncclSend, ncclRecv

A group's NCCL calls run on one thread of their own (the group's queue), in call order on
every rank, whether the caller waits (async_op=False) or takes the Work. The CUDA plugin
queues them on the device's communication stream after the work that writes their
buffers, and waits for them with NCCL's timeout (pygpu.distributed._nccl)."""
import socket

from .._tensor import create as _tensor_create
from .. import cuda
from ._group import STATS, DistributedError
from ._nccl import NcclGroup
from ._work import SerialQueue, ThreadWork
from .reduce_op import nccl_op
from . import traffic


def check_distinct_devices(rows):
    """rows[r] = (host, cuda index) of rank r. Two ranks of one machine on one GPU is the
    mistake of a rank that never called set_device(local_rank): an error naming them."""
    seen = {}
    for r, key in enumerate(rows):
        if key in seen:
            host, index = key
            raise DistributedError(
                f"NCCL: ranks {seen[key]} and {r} both use cuda:{index} on {host}: each rank must "
                "call pygpu.cuda.set_device(local_rank) before init_process_group (LOCAL_RANK is "
                "in the environment; pygpu.distributed.launch also passes --local_rank)")
        seen[key] = r


def group_nccl(pg):
    """pg's NCCL communicator, made on first use (every rank of pg gets here in the same
    collective call), on the current cuda device, after checking that no two ranks of one
    machine share it."""
    if pg.nccl is None:
        dev = cuda.current_device()
        check_distinct_devices(pg.comm.allgather((socket.gethostname(), dev)))
        pg.nccl = NcclGroup(pg.comm, dev)
        pg.nccl_queue = SerialQueue(f"pygpu-nccl-{id(pg):x}")
    return pg.nccl


def _flat(t, n):
    return _tensor_create.empty(n, dtype=t.dtype, device=t.device)


def _p2p_all(nc, me, sends, recvs):
    """Grouped ncclSend/ncclRecv: sends[i], recvs[i] are the tensors (or None) for rank i."""
    calls = []
    for i, (s, r) in enumerate(zip(sends, recvs)):
        if i == me:
            continue
        if s is not None and s.numel():
            ptr, n, dt = nc.check(s)
            calls.append(("send", ptr, 0, n, dt, 0, i))
        if r is not None and r.numel():
            ptr, n, dt = nc.check(r)
            calls.append(("recv", 0, ptr, n, dt, 0, i))
    if calls:
        nc.run(calls)


# Each builder returns (the function the group's queue runs, the counted traffic (name,
# full bytes, root), the result tensors).
def _all_reduce(nc, pg, tensor, op):
    ptr, n, dt = nc.check(tensor)
    return (lambda: nc.run([("all_reduce", ptr, ptr, n, dt, nccl_op(op), 0)]),
            ("all_reduce", tensor.nbytes, 0, tensor.itemsize), [tensor])


def _reduce(nc, pg, tensor, op, root):
    ptr, n, dt = nc.check(tensor)
    return (lambda: nc.run([("reduce", ptr, ptr, n, dt, nccl_op(op), root)]),
            ("reduce", tensor.nbytes, root, 1), [tensor])


def _broadcast(nc, pg, tensor, root):
    ptr, n, dt = nc.check(tensor)
    return (lambda: nc.run([("broadcast", ptr, ptr, n, dt, root, 0)]),
            ("broadcast", tensor.nbytes, root, 1), [tensor])


def _all_gather_into_tensor(nc, pg, tensor, output):
    src, n, dt = nc.check(tensor)
    dst, _, _ = nc.check(output)
    return (lambda: nc.run([("all_gather", src, dst, n, dt, 0, 0)]),
            ("all_gather", output.nbytes, 0, 1), [output])


def _all_gather(nc, pg, tensor, outputs):
    p, me = pg.size(), pg.rank()
    if len({t.numel() for t in outputs}) == 1:
        def run():
            n = tensor.numel()
            flat = _flat(tensor, n * p)
            src, _, dt = nc.check(tensor.contiguous())
            dst, _, _ = nc.check(flat)
            nc.run([("all_gather", src, dst, n, dt, 0, 0)])
            for i, t in enumerate(outputs):
                t.copy_(flat[i * n:(i + 1) * n].reshape(t.shape))
    else:
        def run():
            outputs[me].copy_(tensor.reshape(outputs[me].shape))
            _p2p_all(nc, me, [tensor.contiguous()] * p, outputs)
    return run, ("all_gather", tensor.nbytes * p, 0, 1), list(outputs)


def _reduce_scatter(nc, pg, output, inputs, op):
    if len({t.numel() for t in inputs}) != 1:
        raise ValueError("reduce_scatter with NCCL needs input tensors of one size")

    def run():
        from .._tensor.join import cat
        flat = cat([t.reshape(-1) for t in inputs])
        src, _, dt = nc.check(flat)
        dst, n, _ = nc.check(output)
        nc.run([("reduce_scatter", src, dst, n, dt, nccl_op(op), 0)])
    return run, ("reduce_scatter", sum(t.nbytes for t in inputs), 0, 1), [output]


def _reduce_scatter_tensor(nc, pg, output, input, op):
    src, _, dt = nc.check(input)
    dst, n, _ = nc.check(output)
    return (lambda: nc.run([("reduce_scatter", src, dst, n, dt, nccl_op(op), 0)]),
            ("reduce_scatter", input.nbytes, 0, 1), [output])


def _all_to_all(nc, pg, tensor, outputs, inputs):
    me = pg.rank()

    def run():
        outputs[me].copy_(inputs[me].reshape(outputs[me].shape))
        _p2p_all(nc, me, inputs, outputs)
    return run, ("all_to_all", sum(t.nbytes for t in inputs), 0, 1), list(outputs)


def _all_to_all_single(nc, pg, tensor, output, scounts, rcounts):
    me = pg.rank()
    flat_in, flat_out = tensor.reshape(-1), output.reshape(-1)

    def slices(flat, counts):
        out, start = [], 0
        for c in counts:
            out.append(flat[start:start + c])
            start += c
        return out

    def run():
        ins, outs = slices(flat_in, scounts), slices(flat_out, rcounts)
        outs[me].copy_(ins[me])
        _p2p_all(nc, me, ins, outs)
    return run, ("all_to_all", tensor.nbytes, 0, 1), [output]


def _gather(nc, pg, tensor, outputs, root):
    p, me = pg.size(), pg.rank()

    def run():
        if me == root:
            outputs[me].copy_(tensor.reshape(outputs[me].shape))
            _p2p_all(nc, me, [None] * p, outputs)
        else:
            _p2p_all(nc, me, [tensor.contiguous() if i == root else None for i in range(p)], [None] * p)
    return run, ("gather", tensor.nbytes * p, root, 1), list(outputs)


def _scatter(nc, pg, tensor, inputs, root):
    p, me = pg.size(), pg.rank()

    def run():
        if me == root:
            tensor.copy_(inputs[me].reshape(tensor.shape))
            _p2p_all(nc, me, inputs, [None] * p)
        else:
            _p2p_all(nc, me, [None] * p, [tensor if i == root else None for i in range(p)])
    return run, ("scatter", tensor.nbytes * p, root, 1), [tensor]


def _send(nc, pg, tensor, peer):
    ptr, n, dt = nc.check(tensor)
    return (lambda: nc.run([("send", ptr, 0, n, dt, 0, peer)]), ("send", tensor.nbytes, 0, 1),
            [tensor])


def _recv(nc, pg, tensor, peer):
    ptr, n, dt = nc.check(tensor)
    return (lambda: nc.run([("recv", 0, ptr, n, dt, 0, peer)]), ("recv", tensor.nbytes, 0, 1),
            [tensor])


BUILDERS = {"all_reduce": _all_reduce, "reduce": _reduce, "broadcast": _broadcast,
            "all_gather_into_tensor": _all_gather_into_tensor, "all_gather": _all_gather,
            "reduce_scatter": _reduce_scatter, "reduce_scatter_tensor": _reduce_scatter_tensor,
            "all_to_all": _all_to_all, "all_to_all_single": _all_to_all_single,
            "gather": _gather, "scatter": _scatter, "send": _send, "recv": _recv}


def _count(name, pg, traffic_args):
    kind, nbytes, root, itemsize = traffic_args
    if kind == "send":
        STATS.add(name, sent=nbytes)
    elif kind == "recv":
        STATS.add(name, recv=nbytes)
    else:
        sent, recv = traffic.per_rank(kind, nbytes, pg.size(), pg.rank(), root, itemsize)
        STATS.add(name, sent=sent, recv=recv)


def batch(pg, ops):
    """batch_isend_irecv's cuda operations on pg: [(is_send, tensor, peer group rank)] as one
    ncclGroupStart/End group (ungrouped, two ranks sending to each other first would wait for
    each other forever); returns its one Work."""
    nc = group_nccl(pg)
    calls = []
    for is_send, t, peer in ops:
        ptr, n, dt = nc.check(t)
        calls.append(("send", ptr, 0, n, dt, 0, peer) if is_send else ("recv", 0, ptr, n, dt, 0, peer))

    def job():  # `ops` holds the tensors until NCCL is done with them
        nc.run(calls)
        for is_send, t, _ in ops:
            STATS.add("send" if is_send else "recv", sent=t.nbytes if is_send else 0,
                      recv=0 if is_send else t.nbytes)
    return ThreadWork("batch_isend_irecv", pg.nccl_queue.submit(job), [t for _, t, _ in ops])


def collective(pg, name, async_op, tensor, **kw):
    """Run collective `name` on cuda tensors through pg's NCCL communicator (on its queue);
    returns a Work for async_op=True, else None once done."""
    nc = group_nccl(pg)
    run, traffic_args, result = BUILDERS[name](nc, pg, tensor, **kw)
    keep = (tensor, kw)  # the buffers NCCL reads and writes live until the job has run

    def job():
        run()
        _count(name, pg, traffic_args)
        return keep is not None
    if async_op:
        return ThreadWork(name, pg.nccl_queue.submit(job), result)
    pg.nccl_queue.run(job)
    return None
