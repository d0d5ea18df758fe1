"""The copy kernel the harvest's self-test times (imported only after the self-test chose
between Triton's compiler and its interpreter: ``@triton.jit`` decides when it decorates)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import triton
import triton.language as tl

COPY_BLOCK = 1024
"""Elements per program: 4 KiB of float32 per program, enough for full-width vector loads."""


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def copy_launch(src: Any, dst: Any, block: int = COPY_BLOCK) -> Callable[[], Any]:
    """A no-argument launch copying ``src`` into ``dst`` (same numel), for the timers."""
    n = src.numel()
    grid = (triton.cdiv(n, block),)
    return lambda: copy_kernel[grid](src, dst, n, BLOCK=block)
