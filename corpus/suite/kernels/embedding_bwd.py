"""Embedding backward (scatter-add): ``grad_weight[ids[t], :] += grad_out[t, :]``, into a
float32 gradient table that already holds accumulated gradients (so it is a mutated input:
the harvest restores it before every launch, outside the timed region, and only the
scatter is timed).

Programs cover ``BLOCK_T`` tokens x ``BLOCK_D`` features and add with ``tl.atomic_add`` at
data-dependent rows: repeated token ids collide, as they do in real batches.
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
    per_thread_reason,
    product_configs,
    seeded_randint,
    seeded_randn,
)
from schemas.enums import Role


@triton.jit
def embedding_bwd_kernel(
    ids_ptr,
    grad_out_ptr,
    grad_weight_ptr,
    T,
    D,
    stride_gt,
    stride_wv,
    BLOCK_T: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    tokens = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    token_mask = tokens < T
    ids = tl.load(ids_ptr + tokens, mask=token_mask, other=0)
    mask = token_mask[:, None] & (cols[None, :] < D)
    grad = tl.load(grad_out_ptr + tokens.to(tl.int64)[:, None] * stride_gt + cols[None, :], mask=mask, other=0.0)
    tl.atomic_add(grad_weight_ptr + ids[:, None] * stride_wv + cols[None, :], grad.to(tl.float32), mask=mask)


def _shape(t: int, v: int, d: int) -> dict[str, int]:
    return {"T": t, "V": v, "D": d}


@register
class EmbeddingBackward(KernelSpec):
    name = "embedding_bwd"
    category = "embedding"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("grad_weight",)
    mutated = ("grad_weight",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_T": Role.TILE_M, "BLOCK_D": Role.TILE_N}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(40, 16, 100), _shape(9, 50, 64)],
        "small": [_shape(2048, 32000, 512), _shape(4096, 1000, 1024)],
        "default": [
            _shape(4096, 32000, 1024),
            _shape(8192, 50257, 768),  # GPT-2
            _shape(16384, 8192, 2048),
            _shape(2048, 30522, 768),  # BERT-base
            _shape(32768, 32000, 512),
            _shape(4096, 16384, 4096),
            _shape(1024, 65536, 1024),
            _shape(8192, 1000, 4096),  # few classes: many colliding rows
        ],
        "large": [_shape(65536, 32000, 2048), _shape(16384, 128256, 1024), _shape(131072, 8192, 1024)],
    }

    @property
    def kernel(self) -> Any:
        return embedding_bwd_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_T": (1, 4, 16), "BLOCK_D": (128, 256, 512, 1024)}, num_warps=(1, 2, 4, 8)
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_T": 4, "BLOCK_D": 128}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block_t, block_d = config.kwargs["BLOCK_T"], config.kwargs["BLOCK_D"]
        if block_d > 2 * next_pow2(dims["D"]):
            return f"BLOCK_D={block_d} is over twice the embedding width {dims['D']}"
        if block_t > 2 * next_pow2(dims["T"]):
            return f"BLOCK_T={block_t} is over twice the token count {dims['T']}"
        return per_thread_reason(block_t * block_d, config.num_warps, high=32)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        t, v, d = dims["T"], dims["V"], dims["D"]
        return {
            "ids": seeded_randint((t,), v, device, seed),
            "grad_out": seeded_randn((t, d), dtype, device, seed + 1),
            "grad_weight": seeded_randn((v, d), "float32", device, seed + 2, scale=0.1),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        grad_out, grad_weight = inputs["grad_out"], inputs["grad_weight"]
        grid = (cdiv(dims["T"], config.kwargs["BLOCK_T"]), cdiv(dims["D"], config.kwargs["BLOCK_D"]))
        args = {
            "ids_ptr": inputs["ids"],
            "grad_out_ptr": grad_out,
            "grad_weight_ptr": grad_weight,
            "T": dims["T"],
            "D": dims["D"],
            "stride_gt": grad_out.stride(0),
            "stride_wv": grad_weight.stride(0),
            **config.kwargs,
        }
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        grad_weight = inputs["grad_weight"].double()
        grad_weight.index_add_(0, inputs["ids"], inputs["grad_out"].double())
        return {"grad_weight": grad_weight.float()}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # float32 atomics of a few colliding rows, in arbitrary order.
        return (1e-4, 1e-4)

    def flops(self, dims: Dims) -> int:
        return dims["T"] * dims["D"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        t, d = dims["T"], dims["D"]
        # Read the gradient rows and ids; read-modify-write the touched float32 rows.
        return dtype_bytes(dtype) * t * d + 8 * t + 2 * 4 * t * d
