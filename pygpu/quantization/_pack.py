"""Packing an int8 weight for the int8 GEMM, once, when a layer is quantized.

The layout is csrc/core/pg_gemm.h's (the int8 extension), fbgemm's PackBMatrix idea: K
padded with zeros to groups of 4, N to a multiple of 16, columns cut into panels of 64
(the last one 16, 32, 48 or 64 wide); panel p holds, for each group of 4 k, its columns'
4 bytes (the word vpdpbusd multiplies by 4 u8 activations). After the panels: the int32
column sums sum_k W[n, k] that the activation zero point's correction needs. Every ISA's
kernel reads this one layout, so a packed model is portable.

On cuda the weight is cuBLASLt's operand instead (pack_weight_rows): W as Np rows of K4*4
bytes, zero-padded, then the same column sums: the same byte count. cuBLASLt's int8 GEMM
(IMMA) reads a plain column-major matrix, not the CPU's panels; QTensor converts between the
two when a layer moves to or from cuda (once, never per call)."""
import numpy as np

PANEL = 64


def padded(n, k):
    """(Np, K4): the padded output count and the number of 4-byte k groups."""
    return (n + 15) // 16 * 16, (k + 3) // 4


def packed_bytes(n, k):
    np_, k4 = padded(n, k)
    return np_ * k4 * 4 + np_ * 4


def pack_weight(wq):
    """wq (N, K) int8 -> the packed bytes (uint8, 1-D, packed_bytes(N, K) long)."""
    wq = np.ascontiguousarray(wq, dtype=np.int8)
    n, k = wq.shape
    np_, k4 = padded(n, k)
    w = np.zeros((np_, k4 * 4), np.int8)
    w[:n, :k] = wq
    parts = []
    for p0 in range(0, np_, PANEL):
        width = min(PANEL, np_ - p0)
        parts.append(w[p0:p0 + width].reshape(width, k4, 4).transpose(1, 0, 2).reshape(-1))
    colsum = w.astype(np.int32).sum(axis=1).astype("<i4")
    return np.concatenate(parts + [colsum.view(np.int8)]).view(np.uint8)


def unpack_weight(packed, n, k):
    """The (N, K) int8 weight held in `packed` (the inverse of pack_weight)."""
    packed = np.asarray(packed).reshape(-1).view(np.int8)
    np_, k4 = padded(n, k)
    if packed.size != packed_bytes(n, k):
        raise ValueError(f"a packed weight of {n}x{k} is {packed_bytes(n, k)} bytes, got {packed.size}")
    w = np.empty((np_, k4 * 4), np.int8)
    at = 0
    for p0 in range(0, np_, PANEL):
        width = min(PANEL, np_ - p0)
        block = packed[at:at + width * k4 * 4].reshape(k4, width, 4).transpose(1, 0, 2)
        w[p0:p0 + width] = block.reshape(width, k4 * 4)
        at += width * k4 * 4
    return np.ascontiguousarray(w[:n, :k])


def pack_weight_rows(wq):
    """wq (N, K) int8 -> cuda's packed bytes: Np rows of K4*4 bytes (W's rows, zero-padded;
    the column-major K4*4 x Np operand cuBLASLt transposes), then the int32 column sums;
    packed_bytes(N, K) long, as pack_weight's."""
    wq = np.ascontiguousarray(wq, dtype=np.int8)
    n, k = wq.shape
    np_, k4 = padded(n, k)
    w = np.zeros((np_, k4 * 4), np.int8)
    w[:n, :k] = wq
    colsum = w.astype(np.int32).sum(axis=1).astype("<i4")
    return np.concatenate([w.reshape(-1), colsum.view(np.int8)]).view(np.uint8)


def unpack_weight_rows(packed, n, k):
    """The (N, K) int8 weight held in cuda's `packed` (the inverse of pack_weight_rows)."""
    packed = np.asarray(packed).reshape(-1).view(np.int8)
    np_, k4 = padded(n, k)
    if packed.size != packed_bytes(n, k):
        raise ValueError(f"a packed weight of {n}x{k} is {packed_bytes(n, k)} bytes, got {packed.size}")
    return np.ascontiguousarray(packed[:np_ * k4 * 4].reshape(np_, k4 * 4)[:n, :k])


def layout_of(device):
    """Which packing a device's int8 kernels read: "rows" on cuda, "panels" elsewhere."""
    return "rows" if str(device).startswith("cuda") else "panels"


def pack_for(wq, device):
    return pack_weight_rows(wq) if layout_of(device) == "rows" else pack_weight(wq)


def unpack_from(packed, n, k, device):
    return (unpack_weight_rows if layout_of(device) == "rows" else unpack_weight)(packed, n, k)
