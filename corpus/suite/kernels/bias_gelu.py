"""Fused bias add + GELU (tanh approximation): ``out = gelu(x + bias)`` with ``x`` of
``[M, N]`` and ``bias`` of ``[N]``, the epilogue of a transformer MLP's first projection.

The kernel walks the flattened tensor in 1D blocks and finds each element's bias by column
(``offset % N``): the common way to fuse a broadcast into a contiguous pointwise kernel.
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
def bias_gelu_kernel(x_ptr, bias_ptr, out_ptr, numel, N, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < numel
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    bias = tl.load(bias_ptr + offsets % N, mask=mask).to(tl.float32)
    z = x + bias
    # tanh(u) = 2 * sigmoid(2u) - 1; sqrt(2 / pi) = 0.7978845608...
    inner = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    out = 0.5 * z * (1.0 + (2.0 * tl.sigmoid(2.0 * inner) - 1.0))
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=mask)


def _shape(m: int, n: int) -> dict[str, int]:
    return {"M": m, "N": n}


@register
class BiasGelu(KernelSpec):
    name = "bias_gelu"
    category = "pointwise"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK": Role.TILE_N}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(6, 300), _shape(16, 64)],
        "small": [_shape(1024, 3072), _shape(2048, 4096)],
        "default": [
            _shape(4096, 3072),  # BERT-base / ViT-B MLP
            _shape(8192, 4096),  # BERT-large / ViT-L
            _shape(4096, 16384),  # GPT-3 6.7B-class
            _shape(12544, 3072),  # ViT-B, batch 64 x 196 tokens
            _shape(2048, 20480),  # GPT-3 13B
            _shape(16384, 5120),
            _shape(50176, 1536),  # Swin-T stage, batch 16
            _shape(1024, 10240),
        ],
        "large": [_shape(16384, 16384), _shape(32768, 12288), _shape(200704, 768)],
    }

    @property
    def kernel(self) -> Any:
        return bias_gelu_kernel

    def config_space(self) -> list[Config]:
        return product_configs({"BLOCK": (256, 512, 1024, 2048, 4096, 8192)}, num_warps=(1, 2, 4, 8, 16))

    def default_config(self) -> Config:
        return Config({"BLOCK": 1024}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block = config.kwargs["BLOCK"]
        numel = dims["M"] * dims["N"]
        if numel >= 2**31:
            return f"{numel} elements overflow the kernel's 32-bit offsets"
        if block > 2 * next_pow2(numel):
            return f"BLOCK={block} is over twice the tensor's {numel} elements"
        return per_thread_reason(block, config.num_warps, high=32)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n = dims["M"], dims["N"]
        return {
            "x": seeded_randn((m, n), dtype, device, seed, scale=2.0),
            "bias": seeded_randn((n,), dtype, device, seed + 1),
            "out": output_buffer((m, n), dtype, device),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        numel = dims["M"] * dims["N"]
        args = {
            "x_ptr": inputs["x"],
            "bias_ptr": inputs["bias"],
            "out_ptr": inputs["out"],
            "numel": numel,
            "N": dims["N"],
            **config.kwargs,
        }
        return (cdiv(numel, config.kwargs["BLOCK"]),), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        import torch

        x = inputs["x"]
        z = x.float() + inputs["bias"].float()
        return {"out": torch.nn.functional.gelu(z, approximate="tanh").to(x.dtype)}

    def flops(self, dims: Dims) -> int:
        # bias add, cubic polynomial, tanh (as exp + div), final products: ~14 per element.
        return 14 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return dtype_bytes(dtype) * (2 * dims["M"] * dims["N"] + dims["N"])
