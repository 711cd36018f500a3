"""How pygpu tensors cross a process boundary through multiprocessing (its ForkingPickler:
Queue, Pipe, Pool, a spawned Process's arguments), as PyTorch's reductions do.

A cpu tensor's storage moves into shared memory (csrc/core/pg_shared_memory.c) if it is not
there yet, and the tensor is sent as its view (offset, shape, strides, requires_grad, a
Parameter or not) of that storage plus the storage's file descriptor (a DupFd: sent over
a Unix socket by multiprocessing's resource sharer, or inherited by a spawned child). The
receiver maps the same pages: both processes then read and write one tensor. A non-leaf
that requires grad is refused, in PyTorch's words (autograd does not cross processes).
sim and cuda tensors are pickled by value (Tensor.__reduce_ex__)."""
import multiprocessing
from multiprocessing.reduction import ForkingPickler

from .. import _C, _dtype


def rebuild_shared_tensor(df, nbytes, dtype_name, offset, shape, strides, requires_grad,
                          is_param):
    fd = df.detach()
    try:
        base = _C._from_shared_fd(fd, nbytes, _dtype.to_dtype(dtype_name))
    except BaseException:
        import os
        os.close(fd)
        raise
    t = _C._as_strided(base, tuple(shape), tuple(strides), offset)
    if is_param:
        t._is_param = True
    return t.requires_grad_(True) if requires_grad else t


def reduce_tensor(tensor):
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If "
                           "you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    if tensor.device.type != "cpu":
        return tensor.__reduce_ex__(4)
    fd = _C._shared_fd(tensor)  # moves the storage into shared memory, in place, once
    nbytes = _C._storage_info(tensor)[1]
    df = multiprocessing.reduction.DupFd(fd)
    return (rebuild_shared_tensor, (df, nbytes, tensor.dtype.name, _C._storage_offset(tensor),
                                    tuple(tensor.shape), tuple(tensor.stride()),
                                    bool(tensor.requires_grad), bool(tensor._is_param)))


def init_reductions():
    ForkingPickler.register(_C.Tensor, reduce_tensor)
