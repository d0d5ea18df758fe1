"""Rotary position embedding applied in place to the query and key heads (half-split layout:
the first and second halves of each head are the rotated pairs).

The grid is (token blocks, head blocks of q followed by head blocks of k): a program takes
BLOCK_T tokens x BLOCK_H heads x the half head dimension as one 3D tile, so q and k (which
has fewer heads under grouped-query attention) share one launch. The cos/sin tables are
float32 of shape (S, D / 2), indexed by the token's position in its sequence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch
import triton
import triton.language as tl

from corpus.suite.kernels._rowwise import block_reason
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
    seeded_randn,
)
from schemas.enums import Role

ROPE_BASE = 10000.0


@triton.jit
def rotary_embedding_kernel(
    q_ptr,
    k_ptr,
    cos_ptr,
    sin_ptr,
    T,
    S,
    H,
    HKV,
    stride_qt,
    stride_qh,
    stride_kt,
    stride_kh,
    HALF: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    tokens = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    token_ok = tokens < T
    dims = tl.arange(0, BLOCK_D)
    dim_ok = dims < HALF
    table = (tokens % S)[:, None] * HALF + dims[None, :]
    table_mask = token_ok[:, None] & dim_ok[None, :]
    cos = tl.load(cos_ptr + table, mask=table_mask, other=0.0)[:, None, :]
    sin = tl.load(sin_ptr + table, mask=table_mask, other=0.0)[:, None, :]

    head_block = tl.program_id(1)
    q_blocks = tl.cdiv(H, BLOCK_H)
    if head_block < q_blocks:
        base = q_ptr
        first_head = head_block * BLOCK_H
        num_heads = H
        stride_t = stride_qt
        stride_h = stride_qh
    else:
        base = k_ptr
        first_head = (head_block - q_blocks) * BLOCK_H
        num_heads = HKV
        stride_t = stride_kt
        stride_h = stride_kh
    heads = first_head + tl.arange(0, BLOCK_H)
    offsets = (
        tokens.to(tl.int64)[:, None, None] * stride_t
        + heads[None, :, None] * stride_h
        + dims[None, None, :]
    )
    mask = token_ok[:, None, None] & (heads < num_heads)[None, :, None] & dim_ok[None, None, :]
    first = tl.load(base + offsets, mask=mask, other=0.0).to(tl.float32)
    second = tl.load(base + offsets + HALF, mask=mask, other=0.0).to(tl.float32)
    tl.store(base + offsets, (first * cos - second * sin).to(base.dtype.element_ty), mask=mask)
    tl.store(base + offsets + HALF, (second * cos + first * sin).to(base.dtype.element_ty), mask=mask)


def _rope_tables(seq_len: int, head_dim: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    half = head_dim // 2
    inv_freq = ROPE_BASE ** (-torch.arange(half, device=device, dtype=torch.float32) / half)
    angles = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv_freq)
    return torch.cos(angles), torch.sin(angles)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Half-split rotation of x (B, S, heads, D) in float32; cos/sin are (S, D/2)."""
    first, second = x.float().chunk(2, dim=-1)
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1).to(x.dtype)


@register
class RotaryEmbedding(KernelSpec):
    """In-place rotary embedding of q (B, S, H, D) and k (B, S, HKV, D) with cos/sin tables of
    shape (S, D/2); positions are 0..S-1 within each sequence."""

    name = "rotary_embedding"
    category = "embedding"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("q", "k")
    mutated = ("q", "k")
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_T": Role.TILE_M, "BLOCK_H": Role.TILE_N}
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [
            {"B": 1, "S": 8, "H": 4, "HKV": 2, "D": 64},
            {"B": 2, "S": 3, "H": 4, "HKV": 4, "D": 96},
            {"B": 1, "S": 5, "H": 6, "HKV": 2, "D": 32},
        ],
        "small": [
            {"B": 1, "S": 512, "H": 32, "HKV": 8, "D": 128},
            {"B": 64, "S": 1, "H": 32, "HKV": 8, "D": 128},
        ],
        "default": [
            {"B": 4, "S": 2048, "H": 32, "HKV": 32, "D": 128},  # Llama-2 7B
            {"B": 2, "S": 4096, "H": 32, "HKV": 8, "D": 128},  # Llama-3 8B, Mistral 7B
            {"B": 1, "S": 4096, "H": 64, "HKV": 8, "D": 128},  # Llama-3 70B
            {"B": 2, "S": 4096, "H": 28, "HKV": 4, "D": 128},  # Qwen2 7B
            {"B": 2, "S": 4096, "H": 16, "HKV": 16, "D": 256},  # Gemma 7B
            {"B": 4, "S": 2048, "H": 32, "HKV": 32, "D": 96},  # Phi-3 mini
            {"B": 8, "S": 1024, "H": 12, "HKV": 12, "D": 64},  # GPT-NeoX-style small model
            {"B": 256, "S": 1, "H": 32, "HKV": 8, "D": 128},  # decode step
        ],
        "large": [
            {"B": 1, "S": 32768, "H": 32, "HKV": 8, "D": 128},
            {"B": 8, "S": 8192, "H": 64, "HKV": 8, "D": 128},
        ],
    }

    @property
    def kernel(self) -> Any:
        return rotary_embedding_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_T": (1, 2, 4, 8), "BLOCK_H": (1, 2, 4, 8, 16, 32)},
            num_warps=(1, 2, 4, 8),
            num_stages=(1,),
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_T": 4, "BLOCK_H": 4}, num_warps=4, num_stages=1)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block_t, block_h = config.kwargs["BLOCK_T"], config.kwargs["BLOCK_H"]
        half_block = next_pow2(dims["D"] // 2)
        return (
            block_reason("BLOCK_T", block_t, dims["B"] * dims["S"])
            or block_reason("BLOCK_H", block_h, dims["H"])
            # two halves, cos and sin tiles live per thread
            or per_thread_reason(block_t * block_h * half_block, config.num_warps, high=32)
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        b, s, d = dims["B"], dims["S"], dims["D"]
        cos, sin = _rope_tables(s, d, device)
        return {
            "q": seeded_randn((b, s, dims["H"], d), dtype, device, seed),
            "k": seeded_randn((b, s, dims["HKV"], d), dtype, device, seed + 1),
            "cos": cos,
            "sin": sin,
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        q, k = inputs["q"], inputs["k"]
        block_t, block_h = config.kwargs["BLOCK_T"], config.kwargs["BLOCK_H"]
        tokens = dims["B"] * dims["S"]
        args = {
            "q_ptr": q,
            "k_ptr": k,
            "cos_ptr": inputs["cos"],
            "sin_ptr": inputs["sin"],
            "T": tokens,
            "S": dims["S"],
            "H": dims["H"],
            "HKV": dims["HKV"],
            "stride_qt": q.stride(1),
            "stride_qh": q.stride(2),
            "stride_kt": k.stride(1),
            "stride_kh": k.stride(2),
            "HALF": dims["D"] // 2,
            "BLOCK_T": block_t,
            "BLOCK_H": block_h,
            "BLOCK_D": next_pow2(dims["D"] // 2),
        }
        grid = (cdiv(tokens, block_t), cdiv(dims["H"], block_h) + cdiv(dims["HKV"], block_h))
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        cos, sin = inputs["cos"], inputs["sin"]
        return {"q": _rotate(inputs["q"], cos, sin), "k": _rotate(inputs["k"], cos, sin)}

    def flops(self, dims: Dims) -> int:
        # 6 operations per rotated pair (4 multiplies, 2 adds), D/2 pairs per head
        return 3 * dims["B"] * dims["S"] * (dims["H"] + dims["HKV"]) * dims["D"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        elements = dims["B"] * dims["S"] * (dims["H"] + dims["HKV"]) * dims["D"]
        return 2 * elements * dtype_bytes(dtype) + 2 * dims["S"] * (dims["D"] // 2) * 4
