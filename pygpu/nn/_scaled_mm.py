"""float8 products with scales: torch._scaled_mm, nn.functional.scaled_mm and
scaled_grouped_mm, with the ScalingType/SwizzleType recipes, as PyTorch 2.13's CPU runs them.

PyTorch's CPU build takes two recipes (its _scaled_mm_out_cpu; the others are CUDA's):
  TensorWise  a and b float8, each scale one float number (a tensor of one element);
  RowWise     a and b float8, scale_a (M, 1) and scale_b (1, N) float32, contiguous.
Any other combination is its ValueError "Invalid scaling configuration." (ROW_RECIPES below
prints it as torch does). The product is out = (a * scale_a) @ (b * scale_b) (+ bias),
computed in float32 from the float8 values (exact: every float8 is a float32) by the float32
GEMM and rounded once to the output dtype (the operands' dtype unless out_dtype says;
bfloat16 for nn.functional.scaled_mm). So no backend needs a float8 kernel: the casts are the
core's (csrc/core/pg_fp8.h) and the product pygpu's float32 matmul, on every device.
scaled_grouped_mm has no CPU kernel in PyTorch, and raises its NotImplementedError.

Which checks run depends on the CPU, in PyTorch as here: its _scaled_mm_out_cpu calls oneDNN
where mkldnn is enabled and the CPU has AMX (AMX-INT8 for operands of one float8 format,
AMX-FP16 for mixed ones), and its emulated kernel elsewhere. oneDNN refuses the dtypes it
cannot read or write (float8_e4m3fnuz, an int32 output) and words the shape mismatch "mat1
and mat2"; the emulated kernel computes those dtypes and says "mat_a and mat_b". pygpu gives
the answer this CPU's PyTorch gives (_takes_onednn)."""
import enum
import functools

from .. import _C, _dtype

Tensor = _C.Tensor

_FP8_IN = ("float8_e4m3fn", "float8_e5m2")  # the formats its CPU kernel reads (oneDNN's)
_OUT = ("float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")


class ScalingType(enum.IntEnum):
    """How a float8 operand was scaled (torch.nn.functional.ScalingType)."""
    TensorWise = 0
    RowWise = 1
    BlockWise1x16 = 2
    BlockWise1x32 = 3
    BlockWise1x128 = 4
    BlockWise128x128 = 5


class SwizzleType(enum.IntEnum):
    """The layout of a blockwise scale (torch.nn.functional.SwizzleType)."""
    NO_SWIZZLE = 0
    SWIZZLE_32_4_4 = 1


def _c10(d):
    return d._legacy


def _sizes(t):
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _strides(t):
    return "[" + ", ".join(str(s) for s in t.stride()) + "]"


def _invalid(a, b, scale_a, scale_b):
    m, n = a.shape[0], b.shape[1]
    return ValueError(
        "Invalid scaling configuration.\n"
        "- For TensorWise scaling, a and b should be float8, scales should be float and "
        "singletons.\n"
        f"- For RowWise scaling, a and b should be float8, scales should be float, scale_a "
        f"should be ({m}, 1) and scale_b should be (1, {n}), and both should be contiguous.\n"
        f"Got mat_a.dtype()={_c10(a.dtype)}, scale_a.dtype()={_c10(scale_a.dtype)}, "
        f"scale_a.size()={_sizes(scale_a)}, scale_a.stride()={_strides(scale_a)}, "
        f"mat_b.dtype()={_c10(b.dtype)}, scale_b.dtype()={_c10(scale_b.dtype)}, "
        f"scale_b.size()={_sizes(scale_b)} and scale_b.stride()={_strides(scale_b)}")


def _recipe(a, b, scale_a, scale_b):
    """ScalingType.TensorWise or RowWise, as PyTorch's CPU reads the operands; its ValueError
    for any other configuration."""
    fp8 = a.dtype._kind == "fp8" and b.dtype._kind == "fp8"
    if fp8 and scale_a.numel() == 1 and scale_b.numel() == 1:
        return ScalingType.TensorWise
    m, n = a.shape[0], b.shape[1]
    if (fp8 and scale_a.dtype is _dtype.float32 and scale_b.dtype is _dtype.float32
            and tuple(scale_a.shape) == (m, 1) and tuple(scale_b.shape) == (1, n)
            and scale_a.is_contiguous() and scale_b.is_contiguous()):
        return ScalingType.RowWise
    raise _invalid(a, b, scale_a, scale_b)


@functools.lru_cache(maxsize=None)
def _cpu_flags():
    """The CPU's feature flags as Linux lists them (empty elsewhere: no AMX assumed)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def _takes_onednn(a, b):
    """Whether PyTorch's CPU runs this product through oneDNN (the module's docstring)."""
    from ..backends import mkldnn
    mixed = a.dtype is not b.dtype
    return mkldnn.enabled and ("amx_fp16" if mixed else "amx_int8") in _cpu_flags()


def _check_matrices(a, b):
    for name, t in (("mat_a", a), ("mat_b", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"_scaled_mm(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if a.ndim != 2:
        raise RuntimeError("mat1 must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        names = "mat1 and mat2" if _takes_onednn(a, b) else "mat_a and mat_b"
        raise RuntimeError(f"{names} shapes cannot be multiplied ({a.shape[0]}x"
                           f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")


def _dense_dtype_check(d):
    """oneDNN's refusal of a dtype it cannot read or write, in its words."""
    if d._kind not in ("float", "half") and d.name not in _FP8_IN:
        raise RuntimeError(f"itensor_view_from_dense expects float/bfloat16/half/int8/fp8 "
                           f"tensor input{_c10(d)}")


def _product(a, b, scale_a, scale_b, bias, out_dtype):
    """(a * scale_a) @ (b * scale_b) + bias in float32, rounded once to out_dtype."""
    f32 = _dtype.float32
    fa = a.to(f32) * scale_a.to(f32)
    fb = b.to(f32) * scale_b.to(f32)
    out = fa @ fb
    if bias is not None:
        out = out + bias.to(f32)
    return out.to(out_dtype)


def _scaled_mm(mat_a, mat_b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
               use_fast_accum=False):
    """torch._scaled_mm: the product of two float8 matrices with their scales (the module's
    recipes), plus bias, in out_dtype (mat_a's dtype when None)."""
    _check_matrices(mat_a, mat_b)
    _recipe(mat_a, mat_b, scale_a, scale_b)
    out_dtype = mat_a.dtype if out_dtype is None else _dtype.to_dtype(out_dtype)
    if _takes_onednn(mat_a, mat_b):
        for d in (mat_a.dtype, mat_b.dtype, out_dtype):
            _dense_dtype_check(d)
    return _product(mat_a, mat_b, scale_a, scale_b, bias, out_dtype)


def _listed(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def scaled_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b, swizzle_a=None,
              swizzle_b=None, bias=None, output_dtype=_dtype.bfloat16, contraction_dim=(),
              use_fast_accum=False):
    """nn.functional.scaled_mm: mm(mat_a, mat_b) with each operand's scales and recipe
    (ScalingType; SwizzleType for blockwise scales), as PyTorch's CPU runs it (TensorWise or
    RowWise, the module's docstring); output_dtype None is mat_a's dtype."""
    scales_a, scales_b = _listed(scale_a), _listed(scale_b)
    recipes_a, recipes_b = _listed(scale_recipe_a), _listed(scale_recipe_b)
    _check_matrices(mat_a, mat_b)
    sa, sb = scales_a[0], scales_b[0]
    ra, rb = ScalingType(int(recipes_a[0])), ScalingType(int(recipes_b[0]))
    if ra is ScalingType.TensorWise and sa.numel() != 1:
        raise ValueError("scale_a must have 1 Float element")
    if rb is ScalingType.TensorWise and sb.numel() != 1:
        raise ValueError("scale_b must have 1 Float element")
    if ra is ScalingType.RowWise and sa.ndim < 2 or rb is ScalingType.RowWise and sb.ndim < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but "
                         "got 1)")
    if _recipe(mat_a, mat_b, sa, sb) is not ra or ra is not rb:
        raise _invalid(mat_a, mat_b, sa, sb)
    out_dtype = mat_a.dtype if output_dtype is None else _dtype.to_dtype(output_dtype)
    if _takes_onednn(mat_a, mat_b):
        for d in (mat_a.dtype, mat_b.dtype, out_dtype):
            _dense_dtype_check(d)
    return _product(mat_a, mat_b, sa, sb, bias, out_dtype)


def _no_cpu_kernel(op):
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the 'CPU' backend. This could be "
        f"because the operator doesn't exist for this backend, or was omitted during the "
        f"selective/custom build process (if using custom build).")


def scaled_grouped_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b,
                      swizzle_a=None, swizzle_b=None, bias=None, offs=None,
                      output_dtype=_dtype.bfloat16, contraction_dim=(), use_fast_accum=False):
    """nn.functional.scaled_grouped_mm: PyTorch has no CPU kernel for it (CUDA's only); its
    NotImplementedError, as its CPU build gives."""
    raise _no_cpu_kernel("_scaled_grouped_mm_v2")


def _scaled_grouped_mm(mat_a, mat_b, scale_a, scale_b, offs=None, bias=None, scale_result=None,
                       out_dtype=None, use_fast_accum=False):
    """torch._scaled_grouped_mm: CUDA's only in PyTorch; its CPU build's NotImplementedError."""
    raise _no_cpu_kernel("_scaled_grouped_mm")
