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


class KernelEntry:
    """A wrapper in the style of flag-gems' ``@libentry()``: it holds the kernel as ``.fn``."""

    def __init__(self, fn):  # type: ignore[no-untyped-def]
        self.fn = fn


def warps_for(args):  # type: ignore[no-untyped-def]
    return 8 if args["BLOCK_N"] >= 128 else 2


@KernelEntry
@triton.heuristics({"BLOCK_N": lambda args: block_for(args["n_cols"]), "num_warps": warps_for})
@triton.jit
def wrapped_row_kernel(x_ptr, out_ptr, n_cols, BLOCK_N: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + tl.program_id(0) * n_cols + cols, mask=cols < n_cols)
    tl.store(out_ptr + tl.program_id(0) * n_cols + cols, x * 2, mask=cols < n_cols)


@triton.jit
def desc_kernel(desc, out, BLOCK: tl.constexpr):
    x = desc.load([tl.program_id(0) * BLOCK, 0])
    rows = tl.arange(0, BLOCK)[:, None] * 32 + tl.arange(0, 32)[None, :]
    tl.store(out + rows, x)
