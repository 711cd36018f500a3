"""nn.functional.grouped_mm: the grouped matrix product of Mixture-of-Experts layers, with
PyTorch's four operand forms and checks (its CPU kernel's semantics: a GEMM per group).

offs (G,) int32 are the cumulative ends of the groups along the jagged dimension of a 2-d
operand: 2-d A (M, K) x 3-d B (G, K, N): rows offs[g-1]:offs[g] of A times B[g] -> (M, N);
3-d A (G, M, K) x 2-d B (K, N_total): A[g] times columns offs[g-1]:offs[g] of B -> (M,
N_total); 2-d x 2-d with K jagged: A[:, s:e] @ B[s:e] per group -> (G, M, N); 3-d x 3-d
(no offs): a batched matmul -> (G, M, N). Rows or columns beyond offs[-1] are zero. Each
group is one matmul of the GEMM contract (a loop over the G groups, not over elements);
autograd differentiates it."""
from .. import _C
from .._dtype import bfloat16, float16, float32, float64, int32

Tensor = _C.Tensor


def _bounds(offs):
    ends = [int(v) for v in offs.tolist()]
    if any(b < a for a, b in zip([0] + ends, ends)):
        raise RuntimeError("grouped_mm: offs must be non-decreasing")
    return list(zip([0] + ends[:-1], ends))


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """The per-group products of mat_a and mat_b (see the module's forms)."""
    for name, t in (("mat_a", mat_a), ("mat_b", mat_b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"grouped_mm(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
        if t.ndim not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
        if t.dtype not in (bfloat16, float16, float32, float64):
            raise RuntimeError(f"Expected {name} to be a floating point matrix, got {t.dtype}")
    if mat_a.dtype is not mat_b.dtype:
        raise RuntimeError(f"Expected mat_a and mat_b to have the same dtype, got "
                           f"{mat_a.dtype} and {mat_b.dtype}")
    if out_dtype is not None and out_dtype is not mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    a_3d, b_3d = mat_a.ndim == 3, mat_b.ndim == 3
    if (offs is not None) == (a_3d and b_3d):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if "
                           "both matrices are 3d")
    if offs is not None and (offs.ndim != 1 or offs.dtype is not int32):
        raise RuntimeError("Offsets have to be 1D int32 tensor")
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError(f"contraction dimension of mat_a and mat_b must match, got "
                           f"{mat_a.shape[-1]} and {mat_b.shape[-2]}")
    if a_3d and b_3d:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise RuntimeError(f"batch sizes of mat_a and mat_b must match, got "
                               f"{mat_a.shape[0]} and {mat_b.shape[0]}")
        return mat_a @ mat_b
    from .._tensor.create import zeros
    from .._tensor.join import cat, stack
    groups = _bounds(offs)
    if b_3d:  # (M, K) x (G, K, N): rows
        if len(groups) != mat_b.shape[0]:
            raise RuntimeError(f"offs has {len(groups)} groups, mat_b {mat_b.shape[0]}")
        M, N = mat_a.shape[0], mat_b.shape[2]
        parts = [mat_a[s:e] @ mat_b[g] for g, (s, e) in enumerate(groups) if e > s]
        tail = M - (groups[-1][1] if groups else 0)
        if tail:
            parts.append(zeros((tail, N), dtype=mat_a.dtype, device=mat_a.device))
        return cat(parts, 0) if parts else zeros((M, N), dtype=mat_a.dtype, device=mat_a.device)
    if a_3d:  # (G, M, K) x (K, N_total): columns
        if len(groups) != mat_a.shape[0]:
            raise RuntimeError(f"offs has {len(groups)} groups, mat_a {mat_a.shape[0]}")
        M, N = mat_a.shape[1], mat_b.shape[1]
        parts = [mat_a[g] @ mat_b[:, s:e] for g, (s, e) in enumerate(groups) if e > s]
        tail = N - (groups[-1][1] if groups else 0)
        if tail:
            parts.append(zeros((M, tail), dtype=mat_a.dtype, device=mat_a.device))
        return cat(parts, 1) if parts else zeros((M, N), dtype=mat_a.dtype, device=mat_a.device)
    # (M, K_total) x (K_total, N): the contraction is jagged, one (M, N) per group
    M, N = mat_a.shape[0], mat_b.shape[1]
    outs = [mat_a[:, s:e] @ mat_b[s:e] if e > s else
            zeros((M, N), dtype=mat_a.dtype, device=mat_a.device) for s, e in groups]
    return stack(outs, 0)
