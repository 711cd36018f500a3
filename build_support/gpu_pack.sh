#!/usr/bin/env bash
# gpu_pack.sh - the half of a GPU session that runs here, on a machine without a GPU:
# build pygpu for the device machine's Python and pack it into one archive that the device
# tool carries there (the device machine has the GPU, PyTorch and pytest, not nvcc).
#
#   bash build_support/gpu_pack.sh [PY]
#     PY    the interpreter to build for (default: python3.12, the device's Python). It
#           needs the build requirements: numpy, setuptools, wheel, scipy-openblas32 and
#           nvidia-cublas (a venv made with `python3.12 -m venv` and pip, see docs/cuda.md).
#
# What it does: exports the committed tree (HEAD) into a scratch folder, builds the core
# and the CUDA plugin in place there (PYGPU_CUDA=1, PYGPU_CUDA_ARCHS=90 unless set: the
# H100 and H200 are sm_90), copies scipy_openblas32 beside pygpu/ (where _C's runpath
# looks for OpenBLAS) and writes gpu_carry/pygpu.tar.gz (git-ignored). On the device:
#
#   rm -rf /tmp/p && mkdir /tmp/p && tar xzf gpu_carry/pygpu.tar.gz -C /tmp/p &&
#   cd /tmp/p && OUT=$OUT bash build_support/gpu_run.sh selftest sanitize pytest bench
#
# (the carried folder is replaced on every call, so extract it in every command).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3.12}
root=$PWD
dest=$root/gpu_carry
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

git archive HEAD | tar -x -C "$work"
(cd "$work" && PYGPU_CUDA=1 PYGPU_CUDA_ARCHS=${PYGPU_CUDA_ARCHS:-90} PYGPU_WERROR=1 \
    "$PY" setup.py -q build_ext --inplace)
"$PY" "$work/build_support/check_cuda_plugin.py" "$work/pygpu/_cuda_backend.so"
blas=$("$PY" -c 'import os, scipy_openblas32; print(os.path.dirname(scipy_openblas32.__file__))')
cp -r "$blas" "$work/scipy_openblas32"
rm -rf "$work/build"
mkdir -p "$dest"
tar -czf "$dest/pygpu.tar.gz" -C "$work" .
echo "gpu_pack.sh: $dest/pygpu.tar.gz ($(du -h "$dest/pygpu.tar.gz" | cut -f1)), built for" \
    "$("$PY" -c 'import sys; print(sys.version.split()[0])') from $(git rev-parse --short HEAD)"
