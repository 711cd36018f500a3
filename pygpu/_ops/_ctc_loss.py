"""ctc_loss: the connectionist temporal classification loss (Graves et al., 2006), with
PyTorch's signature, target formats, reductions and zero_infinity.

The forward (alpha) recursion runs over time, one step of tensor ops over every sample and
every position of the blank-extended targets at once (N, 2*L + 1): each position takes the
log-sum-exp of itself, its left neighbour and, where the label differs from the one two back,
that one, plus its emission. Samples whose input is shorter keep their alpha once their time
is up. Autograd differentiates the recursion, which is the backward (beta) pass in effect.
Impossible paths hold a large negative number rather than -inf, so that no inf - inf
appears in the log-sum-exps or their gradients; a loss that large is infinite."""
import numpy as np

from .. import _C

from .._tensor import create as _tensor_create
from .._dtype import int64
from .._tensor.join import cat

Tensor = _C.Tensor
_NEG = -1e30  # log 0, kept finite
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _lse3(a, b, c):
    m = _C.maximum(_C.maximum(a, b), c).detach()
    return m + ((a - m).exp() + (b - m).exp() + (c - m).exp()).log()


def _lengths(x, n, what):
    vals = x.tolist() if isinstance(x, Tensor) else list(x)
    vals = [int(v) for v in (vals if isinstance(vals, list) else [vals])]
    if len(vals) != n:
        raise RuntimeError(f"Expected tensor to have size at least {n} at dimension 1, but got "
                           f"size {len(vals)} for argument #2 '{what}'")
    return vals


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """log_probs (T, N, C) [or (T, C)] log-softmaxed; targets (N, S) padded or the
    concatenated 1-d labels; input_lengths, target_lengths (N,) tensors or sequences."""
    if not isinstance(log_probs, Tensor):
        raise TypeError(f"ctc_loss(): log_probs must be a pygpu.Tensor, got "
                        f"{type(log_probs).__name__}")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.reshape(log_probs.shape[0], 1, log_probs.shape[1])
        targets = targets.reshape(1, -1) if isinstance(targets, Tensor) and targets.ndim == 1 \
            else targets
        input_lengths = [int(input_lengths.item() if isinstance(input_lengths, Tensor)
                             else input_lengths)]
        target_lengths = [int(target_lengths.item() if isinstance(target_lengths, Tensor)
                              else target_lengths)]
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D or 3-D, got "
                           f"{list(log_probs.shape)}")
    T, N, C = log_probs.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    in_len = _lengths(input_lengths, N, "input_lengths")
    tg_len = _lengths(target_lengths, N, "target_lengths")
    for v in in_len:
        if not 0 <= v <= T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                               f"{v} (while checking arguments for ctc_loss_cpu)")
    tg = np.asarray(targets.tolist() if isinstance(targets, Tensor) else targets, dtype=np.int64)
    L = max(tg_len) if tg_len else 0
    padded = np.full((N, max(L, 1)), blank, dtype=np.int64)
    if tg.ndim == 1:  # concatenated
        if tg.size < sum(tg_len):
            raise RuntimeError(f"Expected tensor to have size at least {sum(tg_len)} at "
                               f"dimension 0, but got size {tg.size} for argument #2 'targets'")
        at = 0
        for n, ln in enumerate(tg_len):
            padded[n, :ln] = tg[at:at + ln]
            at += ln
    else:
        for n, ln in enumerate(tg_len):
            if ln > tg.shape[1]:
                raise RuntimeError(f"Expected tensor to have size at least {ln} at dimension 1, "
                                   f"but got size {tg.shape[1]} for argument #2 'targets' (while "
                                   f"checking arguments for ctc_loss_cpu)")
            padded[n, :ln] = tg[n, :ln]
    S = 2 * max(L, 1) + 1
    ext = np.full((N, S), blank, dtype=np.int64)
    ext[:, 1::2] = padded
    # where position s may also come from s - 2: a label unlike the one two back
    skip = np.zeros((N, S), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    valid = np.arange(S)[None, :] < (2 * np.asarray(tg_len)[:, None] + 1)
    dev, dt = log_probs.device, log_probs.dtype

    def const(a, dtype=dt):
        return _tensor_create.tensor(a, dtype=dtype, device=dev)

    emit = log_probs.gather(2, const(ext, int64).reshape(1, N, S).expand(T, N, S))  # (T, N, S)
    neg = const(np.where(valid, 0.0, _NEG))  # positions beyond a sample's targets
    no_skip = const(np.where(skip, 0.0, _NEG))
    start = np.full((N, S), _NEG)
    start[:, 0] = 0.0
    start[:, 1] = np.where(np.asarray(tg_len) > 0, 0.0, _NEG)
    alpha = emit[0] + const(start) + neg
    pad1 = const(np.full((N, 1), _NEG))
    pad2 = const(np.full((N, 2), _NEG))
    lens = np.asarray(in_len)
    for t in range(1, T):
        prev1 = cat([pad1, alpha[:, :S - 1]], 1)
        prev2 = cat([pad2, alpha[:, :S - 2]], 1) + no_skip
        new = _lse3(alpha, prev1, prev2) + emit[t] + neg
        running = lens > t
        if running.all():
            alpha = new
        elif running.any():
            keep = const(running.astype(np.float64).reshape(N, 1))
            alpha = new * keep + alpha * (1.0 - keep)
        else:
            break
    last = np.stack([2 * np.asarray(tg_len), np.maximum(2 * np.asarray(tg_len) - 1, 0)], 1)
    ends = alpha.gather(1, const(last, int64))  # (N, 2)
    one_end = const(np.where(np.asarray(tg_len)[:, None] > 0, 0.0, np.array([[0.0, _NEG]])))
    ends = ends + one_end  # an empty target ends at position 0 only
    m = ends.max(1, keepdim=True).values.detach()
    nll = -(m.reshape(N) + ((ends - m).exp().sum(1)).log())
    if np.any(lens == 0):  # no input: only an empty target is possible, with probability 1
        zero_in = const((lens == 0).astype(np.float64))
        empty = const((np.asarray(tg_len) == 0).astype(np.float64))
        nll = nll * (1.0 - zero_in) + zero_in * (1.0 - empty) * (-_NEG)
    impossible = nll > (-_NEG / 2)
    if zero_infinity:
        nll = _C.where(impossible, 0.0, nll).to(dt)
    else:
        nll = _C.where(impossible, float("inf"), nll).to(dt)
    if reduction == "none":
        return nll.reshape(()) if unbatched else nll
    if reduction == "sum":
        return nll.sum()
    return (nll / const(np.maximum(np.asarray(tg_len), 1).astype(np.float64))).mean()


def torch_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
                   zero_infinity=False):
    """torch.ctc_loss: reduction as ATen's number (0 none, 1 mean, 2 sum)."""
    return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                    _REDUCTIONS[int(reduction)], zero_infinity)


# c10's words for the dtypes miopen_ctc_loss's checks name
_SCALAR_WORDS = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _check_arg(t, pos, name, ndim, dtype):
    """ATen's checkDim / checkScalarType, in their words."""
    where = "(while checking arguments for miopen_ctc_loss)"
    if t.ndim != ndim:
        raise RuntimeError(f"Expected {ndim}-dimensional tensor, but got {t.ndim}-dimensional "
                           f"tensor for argument #{pos} '{name}' {where}")
    if t.dtype.name != dtype:
        raise RuntimeError(f"Expected tensor for argument #{pos} '{name}' to have scalar type "
                           f"{_SCALAR_WORDS[dtype]}; but got "
                           f"{_SCALAR_WORDS.get(t.dtype.name, t.dtype.name)} instead {where}")


def miopen_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, deterministic,
                    zero_infinity):
    """torch.miopen_ctc_loss: (costs (N,), grad (T, N, C)), what MIOpen's miopenCTCLoss returns
    to ATen (aten/src/ATen/native/miopen/LossCTC_miopen.cpp): each sample's negative log
    likelihood, and the gradient of their sum with respect to the input of the softmax MIOpen
    applies (apply_softmax=true on log-probabilities, so exp(log_probs) - the label
    occupancy; zero past a sample's input length). That is PyTorch's native ctc_loss
    gradient, which pygpu's loss, differentiated exactly through log_probs, gives as
    exp(log_probs) + d(loss)/d(log_probs). MIOpen's restrictions are kept as its checks word
    them: float32 (T, N, C) log_probs, 1-d int32 concatenated targets, blank 0. PyTorch
    builds this only with ROCm (elsewhere it raises); pygpu runs it on any device.
    `deterministic` and `zero_infinity` are taken and unused, as MIOpen's are."""
    if not isinstance(log_probs, Tensor) or not isinstance(targets, Tensor):
        raise TypeError("miopen_ctc_loss(): log_probs and targets must be Tensors")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    _check_arg(log_probs, 1, "log_probs", 3, "float32")
    _check_arg(targets, 2, "targets", 1, "int32")
    T, N, _ = log_probs.shape
    il = [int(v) for v in (input_lengths.tolist() if isinstance(input_lengths, Tensor)
                           else input_lengths)]
    tl = [int(v) for v in (target_lengths.tolist() if isinstance(target_lengths, Tensor)
                           else target_lengths)]
    if len(il) != N:
        raise RuntimeError("input_lengths needs to have size to match batch_size")
    if len(tl) != N:
        raise RuntimeError("target_lengths needs to have size to match batch_size")
    if blank != 0:
        raise RuntimeError("blank must be label 0 for miopen_ctc_loss")
    from ..autograd import grad as _grad
    from ..autograd.grad_mode import enable_grad
    x = log_probs.detach().requires_grad_(True)
    with enable_grad():
        costs = ctc_loss(x, targets.to(int64), il, tl, 0, "none", False)
        (d_log_probs,) = _grad(costs.sum(), x)
    live = _tensor_create.tensor(
        (np.arange(T)[:, None] < np.asarray(il)[None, :]).astype(np.float32)[:, :, None],
        device=log_probs.device)
    return costs.detach(), log_probs.detach().exp() * live + d_log_probs
