"""Atomics: a float add into a histogram and a compare-and-swap lock."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def atomic_kernel(x_ptr, sum_ptr, lock_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.atomic_add(sum_ptr, tl.sum(x, axis=0), sem="relaxed")
    tl.atomic_cas(lock_ptr, 0, 1)
