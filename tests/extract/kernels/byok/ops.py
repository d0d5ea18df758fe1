"""Autotuned and heuristics-wrapped kernels with package-relative imports."""

from __future__ import annotations

import triton
import triton.language as tl

from .utils import block_for


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 64}, num_warps=2, num_stages=1),
        triton.Config({"BLOCK_SIZE": 128}, num_warps=4, num_stages=2),
    ],
    key=["n_elements"],
)
@triton.jit
def scale_kernel(x_ptr, out_ptr, scale, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * scale, mask=mask)


@triton.heuristics({"BLOCK_N": lambda args: block_for(args["n_cols"])})
@triton.jit
def row_cast_kernel(
    x_ptr,
    out_ptr,
    n_cols,
    BLOCK_N: tl.constexpr,
    OUT_DTYPE: tl.constexpr = tl.float16,
    HAS_BIAS: tl.constexpr = False,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    if HAS_BIAS:
        x = x + 1.0
    tl.store(out_ptr + row * n_cols + cols, x.to(OUT_DTYPE), mask=mask)


@triton.jit
def typed_kernel(p, s, out):
    """Stores its program id; ``p`` and ``s`` exist to carry a type into the TTIR signature."""
    pid = tl.program_id(0)
    tl.store(out + pid, pid)


@triton.jit
def broken_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(x_ptr + offsets, x.no_such_method(), mask=offsets < n)
