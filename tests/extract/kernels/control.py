"""Data-dependent control flow: an if/else yielding values, and a while loop."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def if_else_kernel(x_ptr, out_ptr, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    if scale > 0:
        y = x * scale
        bias = scale
    else:
        y = -x
        bias = 1.0
    tl.store(out_ptr + offsets, y + bias)


@triton.jit
def while_kernel(out_ptr, limit):
    value = tl.program_id(0)
    steps = 0
    while value < limit:
        value = value * 2 + 1
        steps += 1
    tl.store(out_ptr + tl.program_id(0), steps)
