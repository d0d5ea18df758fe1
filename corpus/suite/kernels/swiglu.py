"""SwiGLU activation of a fused gate/up projection: ``out = silu(x[:, :F]) * x[:, F:]``.

The input is the ``[M, 2F]`` output of one matmul with the gate and up weights
concatenated (as LLaMA-style MLPs run it); the kernel reads both halves of a row tile and
writes the ``[M, F]`` product. SiLU is computed in float32.
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
def swiglu_kernel(
    x_ptr,
    out_ptr,
    M,
    F,
    stride_xm,
    stride_om,
    BLOCK_M: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_F + tl.arange(0, BLOCK_F)
    mask = (rows[:, None] < M) & (cols[None, :] < F)
    row_start = x_ptr + rows.to(tl.int64)[:, None] * stride_xm
    gate = tl.load(row_start + cols[None, :], mask=mask).to(tl.float32)
    up = tl.load(row_start + F + cols[None, :], mask=mask).to(tl.float32)
    out = gate * tl.sigmoid(gate) * up
    out_offsets = rows.to(tl.int64)[:, None] * stride_om + cols[None, :]
    tl.store(out_ptr + out_offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


def _shape(m: int, f: int) -> dict[str, int]:
    return {"M": m, "F": f}


@register
class SwiGLU(KernelSpec):
    name = "swiglu"
    category = "pointwise"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_M": Role.TILE_M, "BLOCK_F": Role.TILE_N}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(8, 96), _shape(5, 200)],
        "small": [_shape(512, 2048), _shape(1024, 2816)],
        "default": [
            _shape(4096, 11008),  # LLaMA-7B
            _shape(4096, 14336),  # LLaMA-3-8B, Mistral-7B
            _shape(2048, 13824),  # LLaMA-13B
            _shape(1024, 28672),  # LLaMA-70B
            _shape(8192, 8192),
            _shape(16384, 2816),
            _shape(512, 18944),  # Qwen2-7B
            _shape(32768, 1408),  # MoE expert
        ],
        "large": [_shape(16384, 14336), _shape(8192, 28672), _shape(65536, 4096)],
    }

    @property
    def kernel(self) -> Any:
        return swiglu_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_M": (1, 4, 16), "BLOCK_F": (128, 256, 512, 1024, 2048)}, num_warps=(1, 2, 4, 8)
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 4, "BLOCK_F": 256}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block_m, block_f = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_F"]
        if block_f > 2 * next_pow2(dims["F"]):
            return f"BLOCK_F={block_f} is over twice the row length {dims['F']}"
        if block_m > 2 * next_pow2(dims["M"]):
            return f"BLOCK_M={block_m} is over twice the row count {dims['M']}"
        # Two float32 tiles (gate and up) live in registers at once.
        return per_thread_reason(block_m * block_f, config.num_warps, high=32)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, f = dims["M"], dims["F"]
        return {
            "x": seeded_randn((m, 2 * f), dtype, device, seed, scale=2.0),
            "out": output_buffer((m, f), dtype, device),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        x, out = inputs["x"], inputs["out"]
        grid = (cdiv(dims["M"], config.kwargs["BLOCK_M"]), cdiv(dims["F"], config.kwargs["BLOCK_F"]))
        args = {
            "x_ptr": x,
            "out_ptr": out,
            "M": dims["M"],
            "F": dims["F"],
            "stride_xm": x.stride(0),
            "stride_om": out.stride(0),
            **config.kwargs,
        }
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        import torch

        x = inputs["x"]
        gate, up = x.float().chunk(2, dim=1)
        return {"out": (torch.nn.functional.silu(gate) * up).to(x.dtype)}

    def flops(self, dims: Dims) -> int:
        # sigmoid (exp, add, div) + two multiplies per output element.
        return 5 * dims["M"] * dims["F"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return dtype_bytes(dtype) * 3 * dims["M"] * dims["F"]
