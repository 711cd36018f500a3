"""ReduceOp: torch.distributed's reduction operations, one table row each.

Each row names the operation as MPI and NCCL know it, and the NumPy function that does
the same on the host (the ring all-reduce combines with it; AVG is a SUM divided by the
group's size afterwards, which is what NCCL's ncclAvg does on the device). A row without
an NCCL id is refused for cuda tensors with the error PyTorch's NCCL backend gives.
bool tensors reduce as MPI's logical operations (SUM and MAX are a logical or, PRODUCT
and MIN a logical and), as NCCL does on its uint8 bytes."""
import enum

import numpy as np


class RedOpType(enum.IntEnum):
    """torch.distributed.ReduceOp.RedOpType: the values PyTorch gives them."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __str__(self):
        return f"RedOpType.{self.name}"

    def __repr__(self):
        return f"<RedOpType.{self.name}: {int(self)}>"


#         op                 MPI op      NCCL ncclRedOp_t  host combine      bool's MPI op
_ROWS = {RedOpType.SUM:     ("SUM",      0,                np.add,           "LOR"),
         RedOpType.AVG:     ("SUM",      4,                np.add,           None),
         RedOpType.PRODUCT: ("PROD",     1,                np.multiply,      "LAND"),
         RedOpType.MIN:     ("MIN",      3,                np.minimum,       "LAND"),
         RedOpType.MAX:     ("MAX",      2,                np.maximum,       "LOR"),
         RedOpType.BAND:    ("BAND",     None,             np.bitwise_and,   "LAND"),
         RedOpType.BOR:     ("BOR",      None,             np.bitwise_or,    "LOR"),
         RedOpType.BXOR:    ("BXOR",     None,             np.bitwise_xor,   "LXOR")}


class ReduceOp:
    """torch.distributed.ReduceOp: ReduceOp.SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR.
    ReduceOp(ReduceOp.MAX) is the same operation; comparing with == works either way."""
    RedOpType = RedOpType
    SUM, AVG, PRODUCT = RedOpType.SUM, RedOpType.AVG, RedOpType.PRODUCT
    MIN, MAX = RedOpType.MIN, RedOpType.MAX
    BAND, BOR, BXOR = RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR

    def __init__(self, op=RedOpType.SUM):
        self.op = as_op(op)

    def __eq__(self, other):
        return self.op == (other.op if isinstance(other, ReduceOp) else other)

    def __hash__(self):
        return hash(self.op)

    def __repr__(self):
        return f"<RedOpType.{self.op.name}: {int(self.op)}>"


def as_op(op):
    """A RedOpType from ReduceOp.X or ReduceOp(X); TypeError for anything else (a string:
    PyTorch's functions take only ReduceOp values)."""
    if isinstance(op, ReduceOp):
        return op.op
    if isinstance(op, RedOpType):
        return op
    raise TypeError(f"op must be a torch.distributed.ReduceOp (ReduceOp.SUM, AVG, PRODUCT, MIN, "
                    f"MAX, BAND, BOR, BXOR), got {type(op).__name__} {op!r}")


def mpi_op(MPI, op, is_bool):
    """The MPI.Op for `op` on a buffer of bools (is_bool) or numbers."""
    name, _, _, bool_name = _ROWS[op]
    if is_bool:
        if bool_name is None:
            raise RuntimeError(f"ReduceOp.{op.name} is not defined for bool tensors")
        name = bool_name
    return getattr(MPI, name)


def nccl_op(op):
    """NCCL's ncclRedOp_t for `op`, or the error PyTorch's NCCL backend raises."""
    nid = _ROWS[op][1]
    if nid is None:
        raise ValueError(f"Cannot use ReduceOp.{op.name} with NCCL")
    return nid


def host_combine(op):
    """out = f(out, incoming) on NumPy arrays: np.add, np.maximum, ... (AVG: np.add)."""
    return _ROWS[op][2]


def is_bitwise(op):
    return op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR)
