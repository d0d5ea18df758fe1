"""Decode attention with grouped-query heads over a KV cache of ragged lengths.

One new query token per sequence attends to that sequence's cached keys and values. With
grouped-query attention ``HEADS`` query heads share ``KV_HEADS`` key/value heads, so one
program takes one (sequence, kv head) and all ``HEADS / KV_HEADS`` query heads of its group
as the rows of a ``BLOCK_H x HEAD_DIM`` tile (padded to the 16 rows ``tl.dot`` needs; MHA
decode, a group of one, pays that padding as real kernels do). Each sequence's length is
read from ``seq_lens`` on the device, so the loop trip count is data dependent: full key
blocks run unmasked, then one masked block covers the ragged end. Online softmax as in
``flash_attention_fwd``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import torch
import triton
import triton.language as tl

from corpus.suite.kernels import _gemm_common as gc
from corpus.suite.registry import register
from corpus.suite.spec import Config, Dims, KernelSpec, dtype_bytes, next_pow2, product_configs
from schemas.enums import Role

REFERENCE_BLOCK_BYTES = 1 << 30
"""Most bytes of expanded float32 keys and values the reference holds at once."""


@triton.jit
def _decode_key_block(
    acc, row_max, row_sum, q, k_base, v_base, stride_kn, stride_vn, start, seq_len, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, MASKED: tl.constexpr,
):  # fmt: skip
    keys = start + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    kt_ptrs = k_base + keys[None, :] * stride_kn + dims[:, None]
    v_ptrs = v_base + keys[:, None] * stride_vn + dims[None, :]
    if MASKED:
        kt = tl.load(kt_ptrs, mask=keys[None, :] < seq_len, other=0.0)
        v = tl.load(v_ptrs, mask=keys[:, None] < seq_len, other=0.0)
    else:
        kt = tl.load(kt_ptrs)
        v = tl.load(v_ptrs)
    scores = tl.dot(q, kt) * qk_scale
    if MASKED:
        scores = tl.where(keys[None, :] < seq_len, scores, float("-inf"))
    new_max = tl.maximum(row_max, tl.max(scores, 1))
    probs = tl.math.exp2(scores - new_max[:, None])
    rescale = tl.math.exp2(row_max - new_max)
    row_sum = row_sum * rescale + tl.sum(probs, 1)
    acc = tl.dot(probs.to(v.dtype), v, acc * rescale[:, None])
    return acc, new_max, row_sum


@triton.jit
def gqa_decode_kernel(
    q, k_cache, v_cache, seq_lens, out,
    sm_scale,
    stride_qb, stride_qh,
    stride_kb, stride_kh, stride_kn,
    stride_vb, stride_vh, stride_vn,
    stride_ob, stride_oh,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    kv_head = tl.program_id(0)
    seq = tl.program_id(1).to(tl.int64)
    seq_len = tl.load(seq_lens + seq)
    heads = kv_head * GROUP + tl.arange(0, BLOCK_H)
    head_ok = tl.arange(0, BLOCK_H) < GROUP
    dims = tl.arange(0, HEAD_DIM)
    q_ptrs = q + seq * stride_qb + heads[:, None] * stride_qh + dims[None, :]
    q_blk = tl.load(q_ptrs, mask=head_ok[:, None], other=0.0)
    k_base = k_cache + seq * stride_kb + kv_head * stride_kh
    v_base = v_cache + seq * stride_vb + kv_head * stride_vh

    acc = tl.zeros((BLOCK_H, HEAD_DIM), dtype=tl.float32)
    row_max = tl.full((BLOCK_H,), float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_H,), dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    full_end = (seq_len // BLOCK_N) * BLOCK_N
    for start in range(0, full_end, BLOCK_N):
        acc, row_max, row_sum = _decode_key_block(
            acc, row_max, row_sum, q_blk, k_base, v_base, stride_kn, stride_vn, start, seq_len, qk_scale,
            HEAD_DIM, BLOCK_N, False,
        )  # fmt: skip
    if full_end < seq_len:
        acc, row_max, row_sum = _decode_key_block(
            acc, row_max, row_sum, q_blk, k_base, v_base, stride_kn, stride_vn, full_end, seq_len, qk_scale,
            HEAD_DIM, BLOCK_N, True,
        )  # fmt: skip
    acc = acc / row_sum[:, None]
    o_ptrs = out + seq * stride_ob + heads[:, None] * stride_oh + dims[None, :]
    tl.store(o_ptrs, acc.to(out.dtype.element_ty), mask=head_ok[:, None])


def _decode(batch: int, heads: int, kv_heads: int, max_seq: int, head_dim: int) -> dict[str, int]:
    return {"BATCH": batch, "HEADS": heads, "KV_HEADS": kv_heads, "MAX_SEQ": max_seq, "HEAD_DIM": head_dim}


def context_lengths(dims: Dims) -> list[int]:
    """Cached tokens per sequence: ragged, evenly spread from just over half the cache to the
    full cache. A function of the shape alone, so flops and bytes are exact."""
    b, s = dims["BATCH"], dims["MAX_SEQ"]
    half = s // 2
    return [half + (i + 1) * (s - half) // b for i in range(b)]


def block_h_for(dims: Dims) -> int:
    """Rows of the query tile: the group size padded to a power of two, at least 16."""
    return max(16, next_pow2(dims["HEADS"] // dims["KV_HEADS"]))


@register
class AttentionDecode(KernelSpec):
    """Single-token GQA decode attention over a ragged KV cache."""

    name = "attention_decode"
    category = "attention"
    dtypes = ("float16", "bfloat16")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_N": Role.TILE_K}
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [_decode(2, 4, 2, 64, 32), _decode(3, 8, 1, 50, 16)],
        "small": [_decode(8, 16, 4, 512, 64), _decode(4, 8, 8, 700, 128)],
        "default": [
            _decode(16, 32, 8, 2048, 128),  # Llama-3-8B GQA, group 4
            _decode(64, 32, 8, 1024, 128),
            _decode(32, 64, 8, 2048, 128),  # Llama-70B-like, group 8
            _decode(8, 32, 32, 4096, 128),  # MHA (Llama-2-7B)
            _decode(16, 8, 1, 4096, 128),  # MQA
            _decode(8, 28, 4, 8192, 128),  # group of 7
            _decode(128, 32, 8, 512, 128),
            _decode(32, 16, 16, 2048, 64),
        ],
        "large": [_decode(64, 64, 8, 8192, 128), _decode(256, 32, 8, 4096, 128)],
    }

    @property
    def kernel(self) -> Any:
        return gqa_decode_kernel

    def config_space(self) -> list[Config]:
        return product_configs({"BLOCK_N": (16, 32, 64, 128, 256)}, num_warps=(2, 4, 8), num_stages=(1, 2, 3, 4))

    def default_config(self) -> Config:
        return Config({"BLOCK_N": 64}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        bn, bh, head_dim = config.kwargs["BLOCK_N"], block_h_for(dims), dims["HEAD_DIM"]
        smem = (bh * head_dim + max(1, config.num_stages) * 2 * bn * head_dim) * dtype_bytes(dtype)
        return gc.first_reason(
            gc.block_too_large("BLOCK_N", bn, dims["MAX_SEQ"]),
            gc.shared_memory_reason(smem),
            gc.accumulator_reason(bh * head_dim + bh * bn, config.num_warps, low=4, high=192),
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        b, h, hkv, s, d = (dims[n] for n in ("BATCH", "HEADS", "KV_HEADS", "MAX_SEQ", "HEAD_DIM"))
        gen = gc.cpu_generator(seed)
        if device == "meta":
            seq_lens = torch.empty((b,), dtype=torch.int32, device="meta")
        else:
            seq_lens = torch.tensor(context_lengths(dims), dtype=torch.int32).to(device)
        return {
            "q": gc.normal((b, h, d), dtype, device, gen),
            "k_cache": gc.normal((b, hkv, s, d), dtype, device, gen),
            "v_cache": gc.normal((b, hkv, s, d), dtype, device, gen),
            "seq_lens": seq_lens,
            "out": gc.empty((b, h, d), dtype, device),
            "sm_scale": 1.0 / math.sqrt(d),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        q, k, v, out = inputs["q"], inputs["k_cache"], inputs["v_cache"], inputs["out"]
        grid = (dims["KV_HEADS"], dims["BATCH"])
        args = {
            "q": q, "k_cache": k, "v_cache": v, "seq_lens": inputs["seq_lens"], "out": out,
            "sm_scale": inputs["sm_scale"],
            "stride_qb": q.stride(0), "stride_qh": q.stride(1),
            "stride_kb": k.stride(0), "stride_kh": k.stride(1), "stride_kn": k.stride(2),
            "stride_vb": v.stride(0), "stride_vh": v.stride(1), "stride_vn": v.stride(2),
            "stride_ob": out.stride(0), "stride_oh": out.stride(1),
            "GROUP": dims["HEADS"] // dims["KV_HEADS"], "HEAD_DIM": dims["HEAD_DIM"],
            "BLOCK_H": block_h_for(dims), "BLOCK_N": config.kwargs["BLOCK_N"],
        }  # fmt: skip
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        """Exact attention in float32, a few sequences at a time: the cache expanded to every
        query head in float32 is 2 x 17 GB at the large scale; a block holds at most
        ``REFERENCE_BLOCK_BYTES`` of it. Sequences are independent, so blocking changes no value."""
        group = dims["HEADS"] // dims["KV_HEADS"]
        batch, heads, max_seq, head_dim = dims["BATCH"], dims["HEADS"], dims["MAX_SEQ"], dims["HEAD_DIM"]
        per_sequence = 2 * 4 * heads * max_seq * head_dim  # k and v of one sequence, float32
        step = max(1, REFERENCE_BLOCK_BYTES // per_sequence)
        lengths = inputs["seq_lens"].to(inputs["q"].device).long()
        positions = torch.arange(max_seq, device=inputs["q"].device)
        outs = []
        for start in range(0, batch, step):
            rows = slice(start, min(batch, start + step))
            q = inputs["q"][rows].float()  # (b, H, D)
            k = inputs["k_cache"][rows].float().repeat_interleave(group, dim=1)  # (b, H, S, D)
            v = inputs["v_cache"][rows].float().repeat_interleave(group, dim=1)
            scores = torch.einsum("bhd,bhsd->bhs", q, k) * inputs["sm_scale"]
            visible = positions[None, :] < lengths[rows, None]  # (b, S)
            scores = scores.masked_fill(~visible[:, None, :], float("-inf"))
            outs.append(torch.einsum("bhs,bhsd->bhd", torch.softmax(scores, dim=-1), v))
            del q, k, v, scores
        return {"out": torch.cat(outs).to(inputs["out"].dtype)}

    def flops(self, dims: Dims) -> int:
        return 4 * dims["HEADS"] * dims["HEAD_DIM"] * sum(context_lengths(dims))

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        """The cached keys and values in use, the queries, the output and the lengths."""
        b, h, hkv, d = (dims[n] for n in ("BATCH", "HEADS", "KV_HEADS", "HEAD_DIM"))
        cached = 2 * hkv * d * sum(context_lengths(dims))
        return (cached + 2 * b * h * d) * dtype_bytes(dtype) + 4 * b

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2)}.get(dtype, (1e-2, 1e-2))
