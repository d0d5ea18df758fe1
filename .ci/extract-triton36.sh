#!/usr/bin/env bash
# The extract, record and ingest tests under the oldest supported Triton (3.6), in a virtualenv of their own,
# created from scratch: Triton's private MLIR bindings differ between releases, and
# extract/triton_compat.py must keep working on all of them.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV=.venv-triton36

rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
# CPU torch first (a local wheel), so nothing pulls the CUDA builds.
"$VENV/bin/pip" install -q torch==2.13.0
# numpy<2.4: Triton 3.6's interpreter fails on runtime loop bounds under NumPy 2.4 (extract/versions.py)
"$VENV/bin/pip" install -q triton==3.6.0 "numpy<2.4" pyarrow networkx fsspec polars rich pytest pytest-timeout \
    scipy threadpoolctl safetensors
"$VENV/bin/python" -c 'import triton; assert triton.__version__.startswith("3.6"), triton.__version__; print("triton", triton.__version__)'

# The checkout root is on sys.path (tests/ is a package), so the project needs no install here.
# extract, the recorder/importers whose Triton hooks differ between 3.6 and 3.9, and end-to-end harvests
"$VENV/bin/python" -m pytest tests/extract tests/corpus/record tests/corpus/ingest \
    tests/corpus/harvest/test_harvest.py tests/corpus/harvest/test_labels.py -p no:cacheprovider
