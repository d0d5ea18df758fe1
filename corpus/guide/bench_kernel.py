"""The kernel ``python -m corpus.guide.bench`` autotunes (our own code, not a suite family):
each row of an [M, N] tensor scaled to unit root-mean-square, BLOCK_M rows per program."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def rms_scale_kernel(x_ptr, y_ptr, M, N, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offsets = rows[:, None].to(tl.int64) * stride + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    scale = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + 1e-6)
    tl.store(y_ptr + offsets, x * scale[:, None], mask=mask)
