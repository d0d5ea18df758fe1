"""Row softmax over a 2D tile of BLOCK_M rows x BLOCK_N columns.

When a row fits one BLOCK_N chunk the tile stays in registers (one read, one write). Longer
rows take two passes over BLOCK_N chunks: an online pass that carries a running max and a
rescaled running sum per row, then a pass that writes exp(x - max) / sum. Exponentials use
exp2 with the log2(e) factor folded in, as hand-tuned softmax kernels do. Both chunk
loops are load-pipelined num_stages deep (``NUM_STAGES``, see ``_rowwise``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from corpus.suite.kernels._rowwise import (
    RowTileSpec,
)
from corpus.suite.registry import register
from corpus.suite.spec import (
    Config,
    Dims,
    cdiv,
    dtype_bytes,
    output_buffer,
    seeded_randn,
)

LOG2E = tl.constexpr(1.4426950408889634)
"""log2(e): exp(x) == exp2(x * LOG2E)."""


@triton.jit
def softmax_kernel(
    x_ptr,
    y_ptr,
    M,
    N,
    stride_xm,
    stride_ym,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SINGLE_CHUNK: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    # Tail rows re-read the last row so no lane sees an all -inf row (NaN in the rescaling).
    safe_rows = tl.minimum(rows, M - 1).to(tl.int64)
    x_rows = x_ptr + safe_rows[:, None] * stride_xm
    y_rows = y_ptr + rows.to(tl.int64)[:, None] * stride_ym
    cols = tl.arange(0, BLOCK_N)
    if SINGLE_CHUNK:
        col_ok = cols[None, :] < N
        x = tl.load(x_rows + cols[None, :], mask=col_ok, other=-float("inf")).to(tl.float32)
        x = x * LOG2E
        row_max = tl.max(x, axis=1)
        p = tl.exp2(x - row_max[:, None])
        y = p / tl.sum(p, axis=1)[:, None]
        tl.store(y_rows + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok)
    else:
        run_max = tl.full([BLOCK_M], -float("inf"), tl.float32)
        run_sum = tl.zeros([BLOCK_M], tl.float32)
        for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
            c = start + cols
            x = tl.load(x_rows + c[None, :], mask=c[None, :] < N, other=-float("inf")).to(tl.float32)
            x = x * LOG2E
            new_max = tl.maximum(run_max, tl.max(x, axis=1))
            chunk_sum = tl.sum(tl.exp2(x - new_max[:, None]), axis=1)
            run_sum = run_sum * tl.exp2(run_max - new_max) + chunk_sum
            run_max = new_max
        inv_sum = 1.0 / run_sum
        for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
            c = start + cols
            col_ok = c[None, :] < N
            x = tl.load(x_rows + c[None, :], mask=col_ok, other=-float("inf")).to(tl.float32)
            y = tl.exp2(x * LOG2E - run_max[:, None]) * inv_sum[:, None]
            tl.store(y_rows + c[None, :], y.to(y_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok)


@register
class Softmax(RowTileSpec):
    """y = softmax(x, dim=-1) for x of shape (M, N)."""

    name = "softmax"
    category = "normalization"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("y",)
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [
            {"M": 4, "N": 1024},
            {"M": 7, "N": 1000},
            {"M": 5, "N": 1536},
        ],
        "small": [
            {"M": 256, "N": 1024},
            {"M": 512, "N": 2048},
            {"M": 64, "N": 32000},
        ],
        "default": [
            # attention scores: (batch * heads * queries, keys)
            {"M": 16384, "N": 1024},
            {"M": 8192, "N": 2048},
            {"M": 4096, "N": 4096},
            {"M": 2048, "N": 8192},
            # ViT-B/16 at 384px: 577 tokens
            {"M": 12 * 577 * 8, "N": 577},
            # sampling over a vocabulary: (tokens, vocab)
            {"M": 1024, "N": 32000},
            {"M": 512, "N": 50257},
            {"M": 256, "N": 128256},
        ],
        "large": [
            {"M": 65536, "N": 4096},
            {"M": 32768, "N": 8192},
            {"M": 4096, "N": 128256},
        ],
    }

    @property
    def kernel(self) -> Any:
        return softmax_kernel

    # the smallest block is useful even on rows shorter than it
    block_n_floor = 1

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        shape = (dims["M"], dims["N"])
        return {"x": seeded_randn(shape, dtype, device, seed, scale=3.0), "y": output_buffer(shape, dtype, device)}

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        x, y = inputs["x"], inputs["y"]
        block_m, block_n = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        args = {
            "x_ptr": x,
            "y_ptr": y,
            "M": dims["M"],
            "N": dims["N"],
            "stride_xm": x.stride(0),
            "stride_ym": y.stride(0),
            "BLOCK_M": block_m,
            "BLOCK_N": block_n,
            "SINGLE_CHUNK": dims["N"] <= block_n,
            "NUM_STAGES": config.num_stages,
        }
        return (cdiv(dims["M"], block_m),), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        x = inputs["x"]
        return {"y": torch.softmax(x.float(), dim=-1).to(x.dtype)}

    def flops(self, dims: Dims) -> int:
        # max, subtract, exp, sum, scale: about 5 operations per element
        return 5 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return 2 * dims["M"] * dims["N"] * dtype_bytes(dtype)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # probabilities are in [0, 1]: absolute error dominates
        return {"float32": (1e-5, 1e-4), "float16": (2e-3, 1e-2), "bfloat16": (1e-2, 5e-2)}.get(dtype, (1e-5, 1e-5))
