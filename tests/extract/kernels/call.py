"""A non-inlined device function: tt.call from the kernel into a second tt.func.

Triton only keeps functions out of line (``noinline=True``) when their arguments are scalars.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit(noinline=True)
def clamp_scale(value, factor):
    return tl.minimum(value * factor, 100.0)


@triton.jit
def call_kernel(x_ptr, out_ptr, factor, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    scale = clamp_scale(tl.load(x_ptr + pid), factor)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) * scale)
