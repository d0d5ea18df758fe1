"""A deliberately long straight-line kernel (~1,000 TTGIR ops) for the extraction benchmark:
a statically unrolled polynomial chain over several loaded tiles."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def long_chain_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr, TERMS: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.static_range(TERMS):
        shifted = tl.load(x_ptr + offsets + i, mask=(offsets + i) < n_elements, other=0.0)
        acc = acc * 0.5 + tl.where(shifted > y, shifted * x, y - shifted * (i + 1))
        acc = tl.maximum(acc, -1.0e4)
    tl.store(out_ptr + offsets, acc, mask=mask)
