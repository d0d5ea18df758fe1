"""Concatenation along the last dimension: ``out = cat([a, b], dim=1)`` with ``a`` of
``[M, NA]`` and ``b`` of ``[M, NB]`` (appending to a KV cache row, merging heads or
feature maps).

Programs tile the output; each tile column reads from ``a`` or ``b`` under complementary
masks, so a tile that straddles the seam issues both loads.
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


@triton.jit
def concat_kernel(
    a_ptr,
    b_ptr,
    out_ptr,
    M,
    NA,
    NB,
    stride_am,
    stride_bm,
    stride_om,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows64 = rows.to(tl.int64)[:, None]
    row_mask = rows[:, None] < M
    from_a = row_mask & (cols[None, :] < NA)
    from_b = row_mask & (cols[None, :] >= NA) & (cols[None, :] < NA + NB)
    a = tl.load(a_ptr + rows64 * stride_am + cols[None, :], mask=from_a)
    b = tl.load(b_ptr + rows64 * stride_bm + (cols[None, :] - NA), mask=from_b)
    tl.store(out_ptr + rows64 * stride_om + cols[None, :], tl.where(from_a, a, b), mask=from_a | from_b)


def _shape(m: int, na: int, nb: int) -> dict[str, int]:
    return {"M": m, "NA": na, "NB": nb}


@register
class Concat(KernelSpec):
    name = "concat"
    category = "data_movement"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_M": Role.TILE_M, "BLOCK_N": Role.TILE_N}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(16, 100, 60), _shape(6, 256, 8)],
        "small": [_shape(1024, 1024, 1024), _shape(2048, 512, 64)],
        "default": [
            _shape(4096, 4096, 4096),
            _shape(8192, 4096, 1024),  # q with grouped k/v
            _shape(4096, 11008, 11008),  # gate and up halves
            _shape(16384, 1024, 1024),
            _shape(12544, 768, 768),  # ViT feature fusion, batch 64
            _shape(2048, 8192, 128),
            _shape(32768, 512, 256),
            _shape(1024, 12288, 4096),
        ],
        "large": [_shape(16384, 8192, 8192), _shape(65536, 2048, 2048), _shape(8192, 28672, 4096)],
    }

    @property
    def kernel(self) -> Any:
        return concat_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_M": (1, 4, 16, 64), "BLOCK_N": (64, 128, 256, 512, 1024)}, num_warps=(1, 2, 4, 8)
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 4, "BLOCK_N": 256}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block_m, block_n = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        width = dims["NA"] + dims["NB"]
        if block_n > 2 * next_pow2(width):
            return f"BLOCK_N={block_n} is over twice the output row length {width}"
        if block_m > 2 * next_pow2(dims["M"]):
            return f"BLOCK_M={block_m} is over twice the row count {dims['M']}"
        return per_thread_reason(block_m * block_n, config.num_warps, high=64)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, na, nb = dims["M"], dims["NA"], dims["NB"]
        return {
            "a": seeded_randn((m, na), dtype, device, seed),
            "b": seeded_randn((m, nb), dtype, device, seed + 1),
            "out": output_buffer((m, na + nb), dtype, device),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        a, b, out = inputs["a"], inputs["b"], inputs["out"]
        width = dims["NA"] + dims["NB"]
        grid = (cdiv(dims["M"], config.kwargs["BLOCK_M"]), cdiv(width, config.kwargs["BLOCK_N"]))
        args = {
            "a_ptr": a,
            "b_ptr": b,
            "out_ptr": out,
            "M": dims["M"],
            "NA": dims["NA"],
            "NB": dims["NB"],
            "stride_am": a.stride(0),
            "stride_bm": b.stride(0),
            "stride_om": out.stride(0),
            **config.kwargs,
        }
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        import torch

        return {"out": torch.cat([inputs["a"], inputs["b"]], dim=1)}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return (0.0, 0.0)

    def flops(self, dims: Dims) -> int:
        return 0

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return 2 * dtype_bytes(dtype) * dims["M"] * (dims["NA"] + dims["NB"])
