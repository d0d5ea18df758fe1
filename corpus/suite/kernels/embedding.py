"""Embedding lookup (row gather): ``out[t, :] = weight[ids[t], :]``.

Programs cover ``BLOCK_T`` tokens x ``BLOCK_D`` features; each token's row address comes
from a loaded index, so the loads are data-dependent gathers (the input layer of every
language model).
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
    seeded_randint,
    seeded_randn,
)
from schemas.enums import Role


@triton.jit
def embedding_kernel(
    ids_ptr,
    weight_ptr,
    out_ptr,
    T,
    D,
    stride_wv,
    stride_ot,
    BLOCK_T: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    tokens = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    token_mask = tokens < T
    ids = tl.load(ids_ptr + tokens, mask=token_mask, other=0)
    mask = token_mask[:, None] & (cols[None, :] < D)
    rows = tl.load(weight_ptr + ids[:, None] * stride_wv + cols[None, :], mask=mask)
    tl.store(out_ptr + tokens.to(tl.int64)[:, None] * stride_ot + cols[None, :], rows, mask=mask)


def _shape(t: int, v: int, d: int) -> dict[str, int]:
    return {"T": t, "V": v, "D": d}


@register
class Embedding(KernelSpec):
    name = "embedding"
    category = "data_movement"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_T": Role.TILE_M, "BLOCK_D": Role.TILE_N}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(24, 50, 100), _shape(7, 100, 160)],
        "small": [_shape(1024, 32000, 1024), _shape(1024, 50257, 768)],
        "default": [
            _shape(4096, 32000, 4096),  # LLaMA-2-7B
            _shape(8192, 128256, 4096),  # LLaMA-3-8B
            _shape(2048, 50257, 768),  # GPT-2
            _shape(16384, 50257, 1024),  # GPT-2 medium, long batch
            _shape(4096, 151936, 3584),  # Qwen2-7B
            _shape(512, 32000, 5120),  # LLaMA-13B decode batch
            _shape(8192, 30522, 768),  # BERT-base
            _shape(32768, 32000, 2048),
        ],
        "large": [_shape(65536, 128256, 4096), _shape(16384, 256000, 3072), _shape(8192, 32000, 8192)],
    }

    @property
    def kernel(self) -> Any:
        return embedding_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_T": (1, 4, 16), "BLOCK_D": (128, 256, 512, 1024, 2048)}, num_warps=(1, 2, 4, 8)
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_T": 4, "BLOCK_D": 256}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block_t, block_d = config.kwargs["BLOCK_T"], config.kwargs["BLOCK_D"]
        if block_d > 2 * next_pow2(dims["D"]):
            return f"BLOCK_D={block_d} is over twice the embedding width {dims['D']}"
        if block_t > 2 * next_pow2(dims["T"]):
            return f"BLOCK_T={block_t} is over twice the token count {dims['T']}"
        return per_thread_reason(block_t * block_d, config.num_warps, high=64)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        t, v, d = dims["T"], dims["V"], dims["D"]
        return {
            "ids": seeded_randint((t,), v, device, seed),
            "weight": seeded_randn((v, d), dtype, device, seed + 1),
            "out": output_buffer((t, d), dtype, device),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        weight, out = inputs["weight"], inputs["out"]
        grid = (cdiv(dims["T"], config.kwargs["BLOCK_T"]), cdiv(dims["D"], config.kwargs["BLOCK_D"]))
        args = {
            "ids_ptr": inputs["ids"],
            "weight_ptr": weight,
            "out_ptr": out,
            "T": dims["T"],
            "D": dims["D"],
            "stride_wv": weight.stride(0),
            "stride_ot": out.stride(0),
            **config.kwargs,
        }
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        return {"out": inputs["weight"][inputs["ids"]]}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return (0.0, 0.0)

    def flops(self, dims: Dims) -> int:
        return 0

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        t, d = dims["T"], dims["D"]
        return 2 * dtype_bytes(dtype) * t * d + 8 * t
