"""The tensor surface written in Python: one op family per module (views, indexing,
reductions, math, creation, products, ...), each a table of Tensor methods (METHODS) and
module functions that surface.py installs on pygpu.Tensor and exports from pygpu.

The modules sit on pygpu._C and the thin layer beside them (_dtype, _device, _defaults,
_storage), at the bottom of the Python layers: creation (create.py) is what nn, optim and
data build tensors with. Before issue 44 each was a file pygpu/_tensor_<family>.py; those
paths stay importable as aliases (pygpu/__init__.py's _MOVED) for pickles that name them."""
