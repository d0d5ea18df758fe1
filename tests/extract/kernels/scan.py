"""Inclusive prefix sum of one block with tl.cumsum (a tt.scan with a combiner region)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, tl.cumsum(x, axis=0))
