"""pygpu_build_backend.py - pygpu's PEP 517 build backend: setuptools' own,
plus the one build requirement that cannot be written statically in
pyproject.toml.

Where nvcc is found (and PYGPU_CUDA is not 0) but the toolkit has no cuBLAS
(the CUDA 13 toolkits installed as nvcc + cudart only, as on CI), the CUDA
plugin still needs cuBLAS's headers and library to build. This backend then
asks pip for the nvidia-cublas wheel of the toolkit's major version as a
build requirement (get_requires_for_build_wheel / _editable), so the
README's `pip install .` and `pip install -e .` build the CUDA backend with
no pre-step. setup.py makes the same wheel a run-time dependency in that
case (the plugin loads libcublas from it: see pygpu/cuda/__init__.py), so an install
never ends with a plugin whose library is missing.

pyproject.toml names it with `backend-path = ["build_support"]`; everything
else is setuptools.build_meta unchanged. Standard library only (it runs in
pip's isolated build environment before anything is installed there).
"""
import os
import sys

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403 - every other hook as setuptools has it

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_build  # noqa: E402


def _cuda_requires():
    try:
        return cuda_build.extra_build_requires(os.environ)
    except cuda_build.CudaBuildError:
        return []  # a bad PYGPU_CUDA is reported by setup.py, with its message


def get_requires_for_build_wheel(config_settings=None):
    return _setuptools.get_requires_for_build_wheel(config_settings) + _cuda_requires()


def get_requires_for_build_editable(config_settings=None):
    return _setuptools.get_requires_for_build_editable(config_settings) + _cuda_requires()
