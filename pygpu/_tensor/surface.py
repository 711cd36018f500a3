"""The Tensor methods written in Python, put into the C type at import, and the
module-level functions of the same families.

pygpu._C.Tensor is a static C type; as PyTorch's torch/_tensor.py adds its composite
methods to the C tensor class, install() writes the methods of these family modules into
the type once (_C._add_tensor_methods):
  _tensor/views.py   view, permute, transpose(dim0, dim1), unsqueeze, squeeze, flatten,
                     unflatten, expand, narrow, split, chunk, unbind, t, mT, ...
  _tensor/info.py    dim, stride, element_size, storage_offset, float/double/half/long/...
  _tensor/reduce.py  sum/mean/max/min/argmax with dim/keepdim, prod, std, var, norm, ...
  _tensor/index.py   gather, scatter_, index_select, masked_fill, cumsum, sort, topk, and
                     indexing with tensors, lists and masks (the getitem/setitem hooks)
  _tensor/create.py  new_zeros/new_ones/..., and eye, linspace, randint, full_like, ...
  _tensor/join.py    cat and stack (module functions)
  _tensor/products.py outer, dot, mm, mv, bmm, addmm, baddbmm, addbmm (and _ forms), matmul,
                     einsum and tensordot (_tensor/einsum.py)
  _tensor/autograd.py register_hook, detach_
  _tensor/fill.py    zero_, fill_
  _tensor/random.py  uniform_, normal_, bernoulli_, random_, exponential_, cauchy_, ...,
                     bernoulli, normal (with generator=: pygpu/_random.py)
  _tensor/math.py    the math rows' other spellings (arcsin, ...), logit(eps), lerp,
                     addcmul, addcdiv, nan_to_num, clamp_min/max, polygamma, div(rounding_mode)
  _tensor/shape.py   diagonal, diag, diag_embed, tril, triu, trace, roll, rot90, kron, cross,
                     repeat_interleave, tensor_split, broadcast_to, cov, corrcoef, bincount, histc
  _tensor/stats.py   median, mode, kthvalue, quantile, nansum, nanmean, cummax, ... (order
                     statistics and NaN-aware reductions)
  _tensor/compare.py equal, isclose, allclose, isin, isreal
  _tensor/stack.py   atleast_*, hstack/vstack/dstack/column_stack, hsplit/vsplit/dsplit,
                     fliplr/flipud, broadcast_tensors/shapes, unfold, the *_copy views, ...
  _tensor/gather.py  take, take_along_dim, put_, index_fill, fill_diagonal_, unravel_index,
                     unique_consecutive
  _tensor/spellings.py torch.exp_-style function forms, nn.functional's ops at torch's level,
                     windows, is_mps/is_xla/... flags, layout, H, mH, adjoint, ...
  _tensor/numeric.py gcd, lcm, shifts, diff, trapezoid, inner, vdot, dist, addmv, addr, renorm
  _tensor/scatter.py diagonal/select/slice/as_strided_scatter, scatter_reduce, index_reduce,
                     histogram
  linalg/_legacy.py  torch.lu, lu_solve, lu_unpack, cholesky_solve/inverse, triangular_solve,
                     frobenius/nuclear norms, vander, the removed eig/symeig/solve/lstsq
  _tensor/spectral.py stft, istft (frames by unfold, torch.fft, overlap-add by fold)
  linalg/_householder.py geqrf, orgqr, ormqr (LAPACK's compact QR; householder_product)
  linalg/_lobpcg.py  torch.lobpcg (symmetric eigenpairs by LOBPCG; module function)
  _storage.py        storage(), untyped_storage(), storage_type(), set_, is_set_to,
                     as_strided_, resize_as_, sum_to_size, nonzero_static (and the classes)
  _tensor/objects.py __reduce_ex__ (pickle), __copy__, __deepcopy__, share_memory_, is_shared
  _tensor/compat.py  PyTorch's second names (greater, multiply, ravel, eq_, new, ...)
  _ops/_clamp.py     clamp, clip, clamp_, clip_ (the composite ops' home, pygpu/_ops/)
  _tensor/complex.py real, imag, is_conj, is_complex, cfloat, cdouble (and the complex rules)
  _tensor/backend_kernels.py cudnn_*/miopen_*/mkldnn_* (other backends' kernels' names, on
                     pygpu's nodes) and native_batch_norm (module functions only)
  _tensor/segments.py segment_reduce, histogramdd (module functions)
  _tensor/aten_natives.py native_layer_norm, native_dropout, native_norm, and SyncBatchNorm's
                     batch_norm_stats/elemt/gather_stats/backward_reduce/... (functions)
  _tensor/memory_format.py torch.memory_format and its values; contiguous, is_contiguous,
                     clone, to (memory_format=) and dim_order
  _tensor/backend_queries.py is_vulkan_available, to_dlpack, Tensor.xpu/ipu/mtia (torch's
                     CPU build's answers)
  _tensor/autograd_fields.py output_nr, module_load, and the removed volatile/reinforce
  _tensor/hashing.py hash_tensor (xor of the elements' 64-bit forms; also torch.hash_tensor)
  _ops/_rnn_aten.py  torch.lstm, gru, rnn_tanh, rnn_relu, miopen_rnn (ATen's flat-params stacks)
Each composite calls C ops (views, copies, kernels), never a Python loop over elements.
Methods the C type already had with a pygpu signature (transpose, sum, max, ...) are
replaced by wrappers that accept both spellings and call the C method."""
from .. import _C
from . import complex as _complex
from .._ops import _clamp as _ops_clamp
from ..linalg import _legacy as _linalg_legacy
from ..linalg import _householder as _linalg_householder, _lobpcg as _linalg_lobpcg
from .. import _storage
from . import numeric as _tensor_numeric, scatter as _tensor_scatter
from . import backend_kernels as _backend_kernels, spectral as _tensor_spectral
from . import aten_natives as _aten_natives
from . import memory_format as _memory_format
from . import backend_queries as _backend_queries
from . import autograd_fields as _autograd_fields, hashing as _hashing
from . import (autograd as _tensor_autograd, compare as _tensor_compare, compat as _tensor_compat,
               create as _tensor_create, fill as _tensor_fill, gather as _tensor_gather,
               index as _tensor_index, spellings as _tensor_spellings, stack as _tensor_stack,
               info as _tensor_info, join as _tensor_join, math as _tensor_math,
               objects as _tensor_objects, products as _tensor_products, random as _tensor_random,
               reduce as _tensor_reduce, shape as _tensor_shape, stats as _tensor_stats,
               views as _tensor_views)

_FAMILIES = (_tensor_views, _tensor_info, _tensor_reduce, _tensor_index, _tensor_create,
             _tensor_products, _tensor_autograd, _tensor_fill, _tensor_random, _tensor_objects,
             _tensor_stats, _tensor_compare, _tensor_stack, _tensor_gather, _tensor_spellings,
             _storage, _tensor_numeric, _tensor_scatter, _linalg_legacy, _tensor_shape,
             _ops_clamp, _complex, _linalg_householder, _tensor_spectral, _memory_format,
             _backend_queries, _autograd_fields, _hashing)


def install():
    methods = {}
    from .. import linalg, sparse
    from ..sparse import _compressed as sparse_compressed
    for fam in _FAMILIES + (_tensor_math, linalg, sparse, sparse_compressed):
        for name, fn in (fam.methods() if fam is _tensor_math else fam.METHODS).items():
            if name in methods:
                raise ImportError(f"pygpu: Tensor.{name} is defined by two surface modules")
            methods[name] = fn
    for name, fn in _tensor_compat.METHODS.items():  # second names: only where nothing else is
        if name not in methods and not hasattr(_C.Tensor, name):
            methods[name] = fn
    _C._add_tensor_methods(methods)
    _C._set_index_hooks(_tensor_index.getitem, _tensor_index.setitem)


def _method_function(name):
    meth = getattr(_C.Tensor, name)

    def fn(input, *args, **kwargs):
        return meth(input, *args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = meth.__doc__
    return fn


# module-level spellings of the methods above (torch.flatten(x, 1), torch.gather(...));
# pygpu.max(x, 1) is torch.max's (values, indices), pygpu.max(x, axis=1) pygpu's values
_AS_FUNCTIONS = (
    "view_as", "unsqueeze", "squeeze", "flatten", "unflatten", "permute", "transpose",
    "swapaxes", "t", "movedim", "narrow", "split", "chunk", "select", "unbind", "flip",
    "max", "min", "argmin", "amax", "amin", "prod", "var", "std", "norm", "logsumexp", "all", "any",
    "gather", "scatter", "scatter_add", "index_select", "index_add", "index_copy",
    "masked_fill", "masked_select", "nonzero", "cumsum", "cumprod", "sort", "argsort", "topk",
    "index_put", "index_put_", "masked_scatter",
    "unique", "tile",
) + _tensor_math.AS_FUNCTIONS + _tensor_shape.AS_FUNCTIONS


def functions():
    out = {name: _method_function(name) for name in _AS_FUNCTIONS}
    out.update(_tensor_create.FUNCTIONS)
    out.update(_tensor_random.FUNCTIONS)
    out.update(_tensor_stats.FUNCTIONS)
    out.update(_tensor_compare.FUNCTIONS)
    out.update(_tensor_stack.FUNCTIONS)
    out.update(_tensor_gather.FUNCTIONS)
    out.update(_storage.FUNCTIONS)
    out.update(_tensor_numeric.FUNCTIONS)
    out.update(_tensor_scatter.FUNCTIONS)
    out.update(_linalg_legacy.FUNCTIONS)
    out.update(_linalg_householder.FUNCTIONS)
    out.update(_linalg_lobpcg.FUNCTIONS)
    out.update(_tensor_spectral.FUNCTIONS)
    out.update(_backend_kernels.FUNCTIONS)
    out.update(_aten_natives.FUNCTIONS)
    out.update(_memory_format.FUNCTIONS)
    out.update(_backend_queries.FUNCTIONS)
    out.update(_hashing.FUNCTIONS)
    out.update(_autograd_fields.FUNCTIONS)
    from .._ops import _rnn_aten
    from . import segments as _segments
    out.update(_segments.FUNCTIONS)
    out.update(_rnn_aten.FUNCTIONS)
    for name, fn in _tensor_spellings.FUNCTIONS.items():  # second spellings: only new names
        out.setdefault(name, fn)
    out.update(_tensor_spellings.constants())
    out.update(_tensor_join.FUNCTIONS)
    out.update(_tensor_products.FUNCTIONS)
    out.update(_tensor_math.FUNCTIONS)
    out.update(_tensor_shape.FUNCTIONS)
    from .. import linalg, sparse
    out.update(linalg.FUNCTIONS)  # torch.det, torch.inverse, torch.svd (V, not Vh), ...
    out.update(sparse.FUNCTIONS)  # sparse_coo_tensor, spmm
    from ..sparse import _compressed as sparse_compressed
    out.update(sparse_compressed.FUNCTIONS)  # sparse_csr ... sparse_bsc and their constructors
    out["div"] = out["true_divide"] = out["divide"]  # one function (named as the table's row)
    out["as_strided"] = _method_function("as_strided")
    from .._ops import _embedding
    out["embedding"] = _embedding.torch_embedding  # ATen's argument order: (weight, indices)
    out["embedding_renorm_"] = _embedding.embedding_renorm_
    from .._ops import _embedding_bag
    out["embedding_bag"] = _embedding_bag.torch_embedding_bag  # ATen's four results
    from .._ops import _ctc_loss
    out["miopen_ctc_loss"] = _ctc_loss.miopen_ctc_loss
    return out
