"""torch.hash_tensor / Tensor.hash_tensor(input, dim=None, *, keepdim=False, mode=0): a
uint64 hash of the elements, reduced over dim (all of them by default).

Mode 0, the only one PyTorch has, is ATen's xor_sum: each element is widened to its 64-bit
form (a float to float64, an integer or bool to int64, sign-extended) and its bits read as
uint64, then the bits are xor-ed together. xor is associative and commutative, so the
reduction folds the reduced elements in halves: log2(n) xor ops of tensors on the tensor's
device, no read back. Bit-exact against PyTorch for the dtypes its CPU kernel takes (bool,
the signed integers, uint8, float16/bfloat16/float32/float64); for the others (uint16/32/64,
complex, float8, the shell dtypes) PyTorch raises NotImplementedError, and so does this."""
from .. import _C, _dtype
from .join import cat
from .views import norm_dim

Tensor = _C.Tensor

# the dtypes ATen's xor_sum kernel takes, by the 64-bit type each widens to
_WIDEN = {**{n: "float64" for n in ("float16", "bfloat16", "float32", "float64")},
          **{n: "int64" for n in ("bool", "int8", "int16", "int32", "int64", "uint8")}}
# c10's ScalarType word for the dtypes it refuses (its error names them so)
_SCALAR_WORD = {"uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
                "complex32": "ComplexHalf", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble"}


def _refuse(dt):
    word = _SCALAR_WORD.get(dt.name, dt.name[:1].upper() + dt.name[1:])
    return NotImplementedError(f'"xor_sum_cpu" not implemented for \'{word}\'')


def _xor_fold(bits):
    """(..., k) int64 -> (...): the xor of the last dim's elements (k >= 1)."""
    while bits.shape[-1] > 1:
        k = bits.shape[-1]
        if k % 2:  # xor's identity pads the odd one out
            bits = cat([bits, bits.new_zeros(tuple(bits.shape[:-1]) + (1,))], -1)
            k += 1
        bits = bits[..., :k // 2] ^ bits[..., k // 2:]
    return bits[..., 0]


def _reduced_dims(self, dim):
    if dim is None:
        return list(range(self.ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:  # an empty list reduces every dim, as sum's does
        return list(range(self.ndim))
    out = sorted({norm_dim("hash_tensor", d, self.ndim) for d in dims})
    if len(out) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return out


def hash_tensor(input, dim=None, *, keepdim=False, mode=0, out=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"hash_tensor(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    wide = _WIDEN.get(input.dtype.name)
    if wide is None:
        raise _refuse(input.dtype)
    if dim is None and input.numel() == 0:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")
    dims = _reduced_dims(input, dim)
    for d in dims:
        if input.ndim and input.shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    x = input.detach().to(getattr(_dtype, wide))
    bits = x.view(_dtype.int64) if wide == "float64" else x
    kept = [d for d in range(input.ndim) if d not in dims]
    kept_shape = [input.shape[d] for d in kept]
    flat = bits.permute(*kept, *dims).reshape(*kept_shape, -1) if input.ndim else \
        bits.reshape(1)
    result = _xor_fold(flat)
    if keepdim:
        result = result.reshape(*[1 if d in dims else input.shape[d]
                                  for d in range(input.ndim)])
    result = result.contiguous().view(_dtype.uint64)
    if out is not None:
        if tuple(out.shape) != tuple(result.shape):
            out.resize_(tuple(result.shape))
        return out.copy_(result)
    return result


METHODS = {"hash_tensor": hash_tensor}
FUNCTIONS = {"hash_tensor": hash_tensor}
