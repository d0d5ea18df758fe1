"""Pointwise add with a mask: the smallest kernel with loads, a store and a make_range."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask, eviction_policy="evict_last")
    tl.store(out_ptr + offsets, x + y, mask=mask)
