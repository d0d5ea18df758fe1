"""Row sum and row max of a ``[M, N]`` matrix in one pass: ``sum[m] = x[m, :].sum()`` and
``max[m] = x[m, :].max()`` (float32 results).

Each program holds ``BLOCK_M`` whole rows in registers: the row block is the next power of
two of ``N`` (set by ``bind``, as row kernels do), and the tuner picks rows per program and
warps. Two reductions share one load.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import triton
import triton.language as tl

from corpus.suite.registry import register
from corpus.suite.spec import (
    Config,
    Dims,
    KernelSpec,
    cdiv,
    dtype_bytes,
    next_pow2,
    output_buffer,
    per_thread_reason,
    product_configs,
    seeded_randn,
)
from schemas.enums import Role

MAX_ROW_BLOCK = 32768
"""Longest row held in registers; longer rows need a looped reduction (long_row_reduce)."""


@triton.jit
def row_reduce_kernel(
    x_ptr,
    sum_ptr,
    max_ptr,
    M,
    N,
    stride_xm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_mask = rows < M
    mask = row_mask[:, None] & (cols[None, :] < N)
    x = tl.load(x_ptr + rows.to(tl.int64)[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
    x = x.to(tl.float32)
    total = tl.sum(x, axis=1)
    peak = tl.max(tl.where(mask, x, float("-inf")), axis=1)
    tl.store(sum_ptr + rows, total, mask=row_mask)
    tl.store(max_ptr + rows, peak, mask=row_mask)


def _shape(m: int, n: int) -> dict[str, int]:
    return {"M": m, "N": n}


@register
class RowReduce(KernelSpec):
    name = "row_reduce"
    category = "reduction"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("sum", "max")
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_M": Role.TILE_M}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(24, 100), _shape(6, 700)],
        "small": [_shape(4096, 1024), _shape(1024, 4096)],
        "default": [
            _shape(4096, 4096),
            _shape(8192, 1024),
            _shape(16384, 512),
            _shape(2048, 8192),
            _shape(32768, 256),
            _shape(1024, 16384),
            _shape(12544, 768),
            _shape(65536, 128),
        ],
        "large": [_shape(131072, 1024), _shape(16384, 8192), _shape(8192, 32768)],
    }

    @property
    def kernel(self) -> Any:
        return row_reduce_kernel

    def config_space(self) -> list[Config]:
        return product_configs({"BLOCK_M": (1, 2, 4, 8, 16, 32)}, num_warps=(1, 2, 4, 8, 16, 32))

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 1}, num_warps=4, num_stages=2)

    def _row_block(self, dims: Dims) -> int:
        return next_pow2(dims["N"])

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        row_block = self._row_block(dims)
        if row_block > MAX_ROW_BLOCK:
            return f"rows of {dims['N']} do not fit one register block (max {MAX_ROW_BLOCK})"
        block_m = config.kwargs["BLOCK_M"]
        if block_m > 2 * next_pow2(dims["M"]):
            return f"BLOCK_M={block_m} is over twice the row count {dims['M']}"
        return per_thread_reason(block_m * row_block, config.num_warps, high=128)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n = dims["M"], dims["N"]
        return {
            "x": seeded_randn((m, n), dtype, device, seed),
            "sum": output_buffer((m,), "float32", device),
            "max": output_buffer((m,), "float32", device),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        x = inputs["x"]
        args = {
            "x_ptr": x,
            "sum_ptr": inputs["sum"],
            "max_ptr": inputs["max"],
            "M": dims["M"],
            "N": dims["N"],
            "stride_xm": x.stride(0),
            "BLOCK_N": self._row_block(dims),
            **config.kwargs,
        }
        return (cdiv(dims["M"], config.kwargs["BLOCK_M"]),), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        x = inputs["x"].double()
        return {"sum": x.sum(dim=1).float(), "max": x.amax(dim=1).float()}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # float32 accumulation in a different order than the float64 reference.
        return (1e-3, 1e-4)

    def flops(self, dims: Dims) -> int:
        return 2 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return dtype_bytes(dtype) * dims["M"] * dims["N"] + 8 * dims["M"]
