"""A kernel named as ``kernels.scale_kernel`` in another module (our own code): the plug-in must
tell the two apart (its one-time warnings were keyed by the name)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, 2.0 * tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)
