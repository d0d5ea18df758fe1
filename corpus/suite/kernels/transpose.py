"""2D transpose: ``out = x.T`` of a contiguous ``[M, N]`` matrix into a contiguous
``[N, M]`` one, in ``BLOCK_M x BLOCK_N`` tiles (reads coalesced along N, writes along M; the
compiler reshuffles each tile through shared memory)."""

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
def transpose_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_on, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tile = tl.load(x_ptr + rows.to(tl.int64)[:, None] * stride_xm + cols[None, :], mask=mask)
    out_offsets = cols.to(tl.int64)[None, :] * stride_on + rows[:, None]
    tl.store(out_ptr + out_offsets, tile, mask=mask)


def _shape(m: int, n: int) -> dict[str, int]:
    return {"M": m, "N": n}


@register
class Transpose(KernelSpec):
    name = "transpose"
    category = "data_movement"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_M": Role.TILE_M, "BLOCK_N": Role.TILE_N}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(48, 40), _shape(20, 70)],
        "small": [_shape(1024, 1024), _shape(2048, 512)],
        "default": [
            _shape(4096, 4096),
            _shape(8192, 1024),
            _shape(1024, 8192),
            _shape(4096, 11008),  # weight transpose of a 7B MLP projection
            _shape(12544, 768),  # ViT-B tokens x channels, batch 64
            _shape(2048, 2048),
            _shape(16384, 128),  # attention head dim
            _shape(3136, 4096),
        ],
        "large": [_shape(16384, 16384), _shape(8192, 28672), _shape(65536, 1024)],
    }

    @property
    def kernel(self) -> Any:
        return transpose_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_M": (16, 32, 64, 128), "BLOCK_N": (16, 32, 64, 128)}, num_warps=(1, 2, 4, 8)
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block_m, block_n = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        if block_m > 2 * next_pow2(dims["M"]):
            return f"BLOCK_M={block_m} is over twice the row count {dims['M']}"
        if block_n > 2 * next_pow2(dims["N"]):
            return f"BLOCK_N={block_n} is over twice the row length {dims['N']}"
        return per_thread_reason(block_m * block_n, config.num_warps, high=64)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n = dims["M"], dims["N"]
        return {"x": seeded_randn((m, n), dtype, device, seed), "out": output_buffer((n, m), dtype, device)}

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        x, out = inputs["x"], inputs["out"]
        grid = (cdiv(dims["M"], config.kwargs["BLOCK_M"]), cdiv(dims["N"], config.kwargs["BLOCK_N"]))
        args = {
            "x_ptr": x,
            "out_ptr": out,
            "M": dims["M"],
            "N": dims["N"],
            "stride_xm": x.stride(0),
            "stride_on": out.stride(0),
            **config.kwargs,
        }
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        return {"out": inputs["x"].t().contiguous()}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return (0.0, 0.0)

    def flops(self, dims: Dims) -> int:
        return 0

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return 2 * dtype_bytes(dtype) * dims["M"] * dims["N"]
