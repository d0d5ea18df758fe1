"""Regenerate the committed IR fixtures for the running Triton version.

    python -m tests.extract.make_fixtures        # writes tests/extract/fixtures/triton-X.Y/

Each case of ``tests/extract/kernels/cases.py`` is compiled for sm_80 and sm_90; its TTIR and
TTGIR are written with source paths made relative to the repository root, so the files do
not depend on where the checkout lives.
"""

from __future__ import annotations

import sys
from pathlib import Path

import triton

from extract.compile import compile_call
from tests.extract.kernels.cases import cases

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TARGETS = ("sm_80", "sm_90")
LEVELS = ("ttir", "ttgir")


def version_dir(version: str = triton.__version__) -> Path:
    """``fixtures/triton-3.9`` for Triton 3.9.x."""
    major, minor = version.split(".")[:2]
    return FIXTURES / f"triton-{major}.{minor}"


def relative_paths(text: str) -> str:
    """Source paths in locations made relative to the repository root."""
    return text.replace(f'"{REPO_ROOT}/', '"')


def main() -> int:
    out = version_dir()
    out.mkdir(parents=True, exist_ok=True)
    for item in cases():
        if not item.fixture:
            continue
        for target in TARGETS:
            result = compile_call(item.fn, item.args, target=target, num_warps=item.num_warps, num_stages=item.num_stages)
            for level in LEVELS:
                path = out / f"{item.name}.{target}.{level}"
                path.write_text(relative_paths(str(result.asm[level])))
                print(f"wrote {path.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
