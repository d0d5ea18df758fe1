"""Installed versions and the known defects of some combinations, read from package metadata
without importing Triton (so a caller can still select the interpreter afterwards)."""

from __future__ import annotations

import re
from importlib import metadata


def _release(package: str) -> tuple[int, ...] | None:
    """(major, minor, ...) of an installed package, or None when it is not installed."""
    try:
        text = metadata.version(package)
    except metadata.PackageNotFoundError:
        return None
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def interpreter_defect(
    triton: tuple[int, ...] | None = None, numpy: tuple[int, ...] | None = None
) -> str | None:
    """Why Triton's interpreter cannot run the suite with the installed versions, or None.

    Triton 3.6's interpreter converts runtime loop bounds with ``int(array)`` on 1-element
    arrays, which NumPy 2.4 turned into an error: every kernel with a loop over a runtime
    bound then fails with "only 0-dimensional arrays can be converted to Python scalars"
    (Triton 3.9 is fine). ``triton``/``numpy``: versions to judge (default: the installed ones)."""
    triton = triton or _release("triton")
    numpy = numpy or _release("numpy")
    if triton is None or numpy is None:
        return None
    if triton[:2] <= (3, 6) and numpy[:2] >= (2, 4):
        found = f"triton {'.'.join(map(str, triton))} with numpy {'.'.join(map(str, numpy))}"
        return (
            f"{found}: Triton's interpreter fails on loops with runtime bounds under "
            "NumPy >= 2.4; install 'numpy<2.4' or a newer Triton"
        )
    return None
