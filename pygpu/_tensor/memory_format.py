"""Memory formats as PyTorch has them: torch.memory_format and its four values
(contiguous_format, channels_last, channels_last_3d, preserve_format; legacy_contiguous_format
is contiguous_format), as real strides on pygpu's strided tensors.

A memory format names an order of the dimensions in memory, outermost first:
contiguous_format (0, 1, ..., n-1), channels_last (0, 2, 3, 1) for 4-d NCHW tensors,
channels_last_3d (0, 2, 3, 4, 1) for 5-d NCDHW ones. A tensor in a format is made as the
contiguous tensor of the permuted shape, permuted back (`x.permute(order).contiguous()
.permute(inverse)`): a view and a copy pygpu already has, differentiable, so no kernel knows
about formats. preserve_format keeps the input's dimension order where the input is dense,
and infers one from its strides where it is not (ATen's infer_dense_strides: stride-0 and
equal-stride dimensions keep their places), as torch's empty_like/clone/to do.

The Tensor methods here wrap the C ones (contiguous, is_contiguous, clone) and take
memory_format=; the contiguous tensor's path is one more C call (is_contiguous). Tensor.to
stays C's (no Python frame on its common path): C hands it here only for memory_format= and
for a new tensor made from a non-contiguous one (the HOOKS). What reads
formats: Tensor.contiguous/is_contiguous/clone/to/dim_order, nn.Module.to, and the factories
empty, empty_like, zeros_like, ones_like, full_like, rand_like, randn_like, randint_like
(pygpu/_tensor/create.py). Ops (elementwise, conv, pooling, norms) still return contiguous
tensors where torch keeps channels_last: docs/tensors.md says so."""
from .. import _C

Tensor = _C.Tensor


class memory_format:
    """torch.memory_format: the type of contiguous_format, channels_last, channels_last_3d
    and preserve_format (torch makes no new instances, nor does pygpu)."""
    __slots__ = ("_name",)

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'torch.memory_format' instances")

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):  # pickles as the module global of the same name (pygpu.channels_last)
        return self._name


def _make(name):
    fmt = object.__new__(memory_format)
    fmt._name = name
    return fmt


contiguous_format = _make("contiguous_format")
channels_last = _make("channels_last")
channels_last_3d = _make("channels_last_3d")
preserve_format = _make("preserve_format")
legacy_contiguous_format = contiguous_format  # torch's alias: the same object

# the channels-last formats: their rank and the inner-to-outer dims ATen's checks walk
_CHANNELS_LAST = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def _check_format(fmt, where="memory_format"):
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{where}: argument 'memory_format' must be torch.memory_format, not "
                        f"{type(fmt).__name__}")


def _format_order(fmt, ndim):
    """The dims outermost first of a rank-ndim tensor in fmt (not preserve_format)."""
    if fmt is contiguous_format:
        return tuple(range(ndim))
    rank, inner_first = _CHANNELS_LAST[fmt]
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    return tuple(reversed(inner_first))


def _inferred_order(sizes, strides):
    """ATen's infer_dense_strides' permutation, outermost first: an insertion sort by
    stride (equal strides: the larger size outer), stride-0 dims left where they are."""
    n = len(sizes)
    perm = list(range(n - 1, -1, -1))  # innermost first

    def should_swap(d0, d1):
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if sizes[d0] > sizes[d1] else 0

    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return tuple(reversed(perm))


def _target_order(t, fmt):
    """The dim order (outermost first) a new tensor like t in fmt has, or None for plain
    contiguous."""
    if fmt is None or fmt is preserve_format:
        if _c_is_contiguous(t):
            return None
        order = _inferred_order(t.shape, t.stride())
        return None if order == tuple(range(t.ndim)) else order
    _check_format(fmt)
    order = _format_order(fmt, t.ndim)
    return None if fmt is contiguous_format else order


def _inverse(order):
    inv = [0] * len(order)
    for i, d in enumerate(order):
        inv[d] = i
    return tuple(inv)


def make_in_order(shape, order, make):
    """make(permuted shape), a contiguous new tensor, viewed back in shape's dim order: a
    tensor of `shape` whose memory runs in `order` (None: make(shape) itself)."""
    if order is None:
        return make(tuple(shape))
    return make(tuple(shape[d] for d in order)).permute(_inverse(order))


def like(t, memory_format, make):
    """A new tensor of t's shape made by make(shape) (zeros, empty, rand, ...) laid out as
    torch's *_like factories lay it out for memory_format (preserve_format by default)."""
    return make_in_order(tuple(t.shape), _target_order(t, memory_format), make)


def empty_format(shape, memory_format, make):
    """A factory's output in memory_format (torch.empty(..., memory_format=)): preserve_format
    has no tensor to preserve, so it is refused as torch refuses it."""
    if memory_format is None or memory_format is contiguous_format:
        return make(tuple(shape))
    _check_format(memory_format)
    if memory_format is preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    return make_in_order(tuple(shape), _format_order(memory_format, len(shape)), make)


# ---- the Tensor methods ---------------------------------------------------------------------

_c_contiguous = Tensor.contiguous
_c_is_contiguous = Tensor.is_contiguous
_c_clone = Tensor.clone
_c_to = Tensor.to


def _relaid_copy(t, order):
    """A copy always (clone, not contiguous: t in memory order may be contiguous already,
    and a clone must not share t's memory)."""
    return _c_clone(t.permute(order)).permute(_inverse(order))


def _relaid(t, order):
    """t's values in a new dense tensor whose memory runs in order: the permuted view's
    clone, viewed back (differentiable as the clone and the permutes are)."""
    return _relaid_copy(t, order)


def _channels_last_contiguous(t, fmt):
    rank, inner_first = _CHANNELS_LAST[fmt]
    if t.ndim != rank:
        return False
    sizes, strides = t.shape, t.stride()
    expected = 1
    for d in inner_first:
        if sizes[d] != 1:
            if strides[d] != expected:
                return False
            expected *= sizes[d]
    return True


def is_contiguous(self, memory_format=contiguous_format):
    """Tensor.is_contiguous(memory_format=torch.contiguous_format): whether the memory runs
    in the format's order with no gaps (size-1 dims' strides do not count, as torch's)."""
    if memory_format is contiguous_format:
        return _c_is_contiguous(self)
    if memory_format in _CHANNELS_LAST:
        return _channels_last_contiguous(self, memory_format)
    _check_format(memory_format, "is_contiguous()")
    return _c_is_contiguous(self)  # preserve_format, as torch reads it


def contiguous(self, memory_format=contiguous_format):
    """Tensor.contiguous(memory_format=torch.contiguous_format): self when it is already
    contiguous in that format, else a copy that is."""
    if memory_format is contiguous_format:
        return _c_contiguous(self)
    _check_format(memory_format, "contiguous()")
    if memory_format is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    order = _format_order(memory_format, self.ndim)
    if _channels_last_contiguous(self, memory_format):
        return self
    return _relaid(self, order)


def clone(self, *, memory_format=preserve_format):
    """Tensor.clone(*, memory_format=torch.preserve_format): a copy; preserve_format keeps a
    dense input's dim order (a channels_last or transposed tensor's clone is laid out as
    it), and gives a strided one's inferred order, as torch's clone does."""
    if memory_format is preserve_format and _c_is_contiguous(self):
        return _c_clone(self)
    order = _target_order(self, memory_format)
    return _c_clone(self) if order is None else _relaid(self, order)


def _strides_like_channels_last(t, fmt):
    """ATen's is_channels_last_strides_2d/3d: the strides read as channels_last's order
    (ambiguous size-1 cases fall back to contiguous, as ATen's do)."""
    rank, inner_first = _CHANNELS_LAST[fmt]
    if t.ndim != rank:
        return False
    sizes, strides = t.shape, t.stride()
    if strides[1] == 0:
        return False
    low = 0
    for d in inner_first:
        if sizes[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False
        low = strides[d] * (sizes[d] if sizes[d] > 1 else 1)
    return True


def suggest_memory_format(t):
    """ATen's suggest_memory_format: the channels-last format t's strides read as, else
    contiguous_format."""
    for fmt in _CHANNELS_LAST:
        if _strides_like_channels_last(t, fmt):
            return fmt
    return contiguous_format


def relayout(out, src):
    """The C to()'s hook for a new tensor `out` made from a non-contiguous `src`
    (csrc/bindings/tensor_methods.c): out laid out in src's order, as torch's
    preserve_format lays it out (dense: src's own order; strided: the inferred one)."""
    order = _target_order(src, preserve_format)
    return out if order is None else _relaid(out, order)


def to_memory_format(self, *args, memory_format=preserve_format, **kwargs):
    """Tensor.to(..., memory_format=) (C's to() hands it here): C's to (device and dtype),
    laid out in the format; nothing changes (self) when the device, the dtype and the
    format (the one self's strides suggest) already match."""
    out = _c_to(self, *args, **kwargs)  # preserve_format is C's own (the relayout hook)
    if memory_format is preserve_format:
        return out
    _check_format(memory_format, "to()")
    if out is self and suggest_memory_format(self) is memory_format:
        return self
    order = _format_order(memory_format, self.ndim)
    if out is self:
        return _c_clone(self) if memory_format is contiguous_format else _relaid(self, order)
    if memory_format is contiguous_format:
        return _c_contiguous(out)
    return out if _channels_last_contiguous(out, memory_format) else _relaid(out, order)


_AMBIGUOUS = ("The tensor does not have unique dim order, or cannot map to exact one of the "
              "given memory formats.")


def dim_order(self, *, ambiguity_check=False):
    """Tensor.dim_order(*, ambiguity_check=False): the dims from the outermost in memory to
    the innermost (torch's elementwise-output permutation). ambiguity_check=True raises
    when size-1 dims or equal strides leave the order open; a list of formats raises
    unless self is contiguous in exactly one of them."""
    if not isinstance(ambiguity_check, bool):
        if not isinstance(ambiguity_check, list) or not all(
                isinstance(f, memory_format) for f in ambiguity_check):
            raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                            "formats.")
    check = ambiguity_check if isinstance(ambiguity_check, bool) else True
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    sizes, strides = tuple(self.shape), self.stride()
    if check and (any(a == b for a, b in zip(strides, strides[1:])) or 1 in sizes):
        if sum(bool(is_contiguous(self, f)) for f in formats) != 1:
            raise RuntimeError(_AMBIGUOUS)
    n = self.ndim
    if n <= 1:
        return tuple(range(n))
    plain = _c_is_contiguous(self)
    last = _channels_last_contiguous(self, channels_last)
    if plain and not last:
        return tuple(range(n))
    if last and not plain:
        return (0, *range(2, n), 1)
    return _elementwise_order(sizes, strides)


def _elementwise_order(sizes, strides):
    """torch._prims_common's logical-to-physical permutation of one tensor, outermost first."""
    def ge(a, b):
        if b == 0:
            return True
        if a == 0:
            return False
        return a >= b or a % b == 0

    def should_swap(a, b):
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if ge(sizes[b], sizes[a]) else 1
        if ge(sb, sa):
            return -1
        return 1 if ge(sa, sb) else 0

    n = len(sizes)
    perm = list(range(n - 1, -1, -1))
    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return tuple(reversed(perm))


METHODS = {"is_contiguous": is_contiguous, "contiguous": contiguous, "clone": clone,
           "dim_order": dim_order}
HOOKS = {"to_memory_format": to_memory_format, "relayout": relayout}  # C's to() calls these

FUNCTIONS = {"memory_format": memory_format, "contiguous_format": contiguous_format,
             "channels_last": channels_last, "channels_last_3d": channels_last_3d,
             "preserve_format": preserve_format,
             "legacy_contiguous_format": legacy_contiguous_format}
