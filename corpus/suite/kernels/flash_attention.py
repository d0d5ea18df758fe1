"""Flash-attention forward: ``O = softmax(Q K^T * scale [+ causal mask]) V`` in one pass.

One program owns ``BLOCK_M`` query rows of one (batch, head). It streams the keys and values
in ``BLOCK_N`` blocks, keeping a running row maximum and row sum (online softmax) so the
``SEQ x SEQ`` score matrix never reaches memory, and rescales its fp32 output accumulator
whenever the maximum grows. Exponentials are base 2 with ``log2(e)`` folded into the scale.
It also writes the row log-sum-exp (natural log), which a backward pass needs.

With ``CAUSAL=1`` the key blocks that end at or before the query block's first row need no
mask and run in an unmasked loop; only the blocks on the diagonal pay for the mask, and
blocks after it are skipped. ``EVEN_SEQ`` (a shape-derived constant) drops the sequence-end masks
when both block sizes divide the sequence length.
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
from corpus.suite.spec import Config, Dims, KernelSpec, cdiv, dtype_bytes, product_configs
from schemas.enums import Role

REFERENCE_BLOCK_BYTES = 1 << 30
"""Most bytes of float32 scores the reference holds at once (one block of query rows)."""


@triton.jit
def _attend_key_blocks(
    acc, row_max, row_sum, q, k_base, v_base, stride_kn, stride_vn,
    rows, key_start, key_end, seq_len, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL_MASK: tl.constexpr, SEQ_MASK: tl.constexpr,
):  # fmt: skip
    dims = tl.arange(0, HEAD_DIM)
    for start in range(key_start, key_end, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        # K^T block (HEAD_DIM x BLOCK_N) and V block (BLOCK_N x HEAD_DIM).
        kt_ptrs = k_base + keys[None, :] * stride_kn + dims[:, None]
        v_ptrs = v_base + keys[:, None] * stride_vn + dims[None, :]
        if SEQ_MASK:
            kt = tl.load(kt_ptrs, mask=keys[None, :] < seq_len, other=0.0)
        else:
            kt = tl.load(kt_ptrs)
        scores = tl.dot(q, kt) * qk_scale
        if CAUSAL_MASK:
            scores = tl.where(rows[:, None] >= keys[None, :], scores, float("-inf"))
        if SEQ_MASK:
            scores = tl.where(keys[None, :] < seq_len, scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        probs = tl.math.exp2(scores - new_max[:, None])
        rescale = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(probs, 1)
        if SEQ_MASK:
            v = tl.load(v_ptrs, mask=keys[:, None] < seq_len, other=0.0)
        else:
            v = tl.load(v_ptrs)
        acc = tl.dot(probs.to(v.dtype), v, acc * rescale[:, None])
        row_max = new_max
    return acc, row_max, row_sum


@triton.jit
def flash_attention_fwd_kernel(
    q, k, v, out, lse,
    sm_scale, seq_len, heads,
    stride_qz, stride_qh, stride_qm,
    stride_kz, stride_kh, stride_kn,
    stride_vz, stride_vh, stride_vn,
    stride_oz, stride_oh, stride_om,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, EVEN_SEQ: tl.constexpr,
):  # fmt: skip
    query_block = tl.program_id(0)
    batch_head = tl.program_id(1)
    batch = (batch_head // heads).to(tl.int64)
    head = (batch_head % heads).to(tl.int64)
    rows = query_block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q_ptrs = q + batch * stride_qz + head * stride_qh + rows[:, None] * stride_qm + dims[None, :]
    k_base = k + batch * stride_kz + head * stride_kh
    v_base = v + batch * stride_vz + head * stride_vh
    if EVEN_SEQ:
        q_blk = tl.load(q_ptrs)
    else:
        q_blk = tl.load(q_ptrs, mask=rows[:, None] < seq_len, other=0.0)

    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    row_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    if CAUSAL:
        first_row = query_block * BLOCK_M
        # Key blocks that end at or before the first query row are fully visible.
        unmasked_end = (first_row // BLOCK_N) * BLOCK_N
        acc, row_max, row_sum = _attend_key_blocks(
            acc, row_max, row_sum, q_blk, k_base, v_base, stride_kn, stride_vn,
            rows, 0, unmasked_end, seq_len, qk_scale,
            HEAD_DIM, BLOCK_N, False, False,
        )  # fmt: skip
        diagonal_end = tl.minimum(first_row + BLOCK_M, seq_len)
        acc, row_max, row_sum = _attend_key_blocks(
            acc, row_max, row_sum, q_blk, k_base, v_base, stride_kn, stride_vn,
            rows, unmasked_end, diagonal_end, seq_len, qk_scale,
            HEAD_DIM, BLOCK_N, True, not EVEN_SEQ,
        )  # fmt: skip
    else:
        acc, row_max, row_sum = _attend_key_blocks(
            acc, row_max, row_sum, q_blk, k_base, v_base, stride_kn, stride_vn,
            rows, 0, seq_len, seq_len, qk_scale,
            HEAD_DIM, BLOCK_N, False, not EVEN_SEQ,
        )  # fmt: skip

    acc = acc / row_sum[:, None]
    o_ptrs = out + batch * stride_oz + head * stride_oh + rows[:, None] * stride_om + dims[None, :]
    lse_ptrs = lse + batch_head.to(tl.int64) * seq_len + rows
    # Natural-log LSE: row_max is in log2 units.
    row_lse = (row_max + tl.math.log2(row_sum)) / 1.4426950408889634
    if EVEN_SEQ:
        tl.store(o_ptrs, acc.to(out.dtype.element_ty))
        tl.store(lse_ptrs, row_lse)
    else:
        tl.store(o_ptrs, acc.to(out.dtype.element_ty), mask=rows[:, None] < seq_len)
        tl.store(lse_ptrs, row_lse, mask=rows < seq_len)


def _attn(batch: int, heads: int, seq: int, head_dim: int, causal: int) -> dict[str, int]:
    return {"BATCH": batch, "HEADS": heads, "SEQ": seq, "HEAD_DIM": head_dim, "CAUSAL": causal}


@register
class FlashAttentionForward(KernelSpec):
    """Flash-attention forward (online softmax), causal and non-causal."""

    name = "flash_attention_fwd"
    category = "attention"
    dtypes = ("float16", "bfloat16")
    outputs = ("out", "lse")
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_M": Role.TILE_M, "BLOCK_N": Role.TILE_K}
    flag_dims = ("CAUSAL",)
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [_attn(1, 1, 128, 32, 1), _attn(1, 1, 80, 16, 0), _attn(1, 1, 72, 64, 1)],
        "small": [_attn(2, 8, 512, 64, 1), _attn(4, 4, 300, 128, 0)],
        "default": [
            _attn(8, 32, 512, 128, 1),  # Llama-7B prefill, short prompts
            _attn(4, 32, 1024, 128, 1),
            _attn(2, 32, 2048, 128, 1),
            _attn(1, 32, 4096, 128, 1),
            _attn(1, 16, 8192, 64, 1),
            _attn(16, 12, 512, 64, 0),  # BERT-base
            _attn(4, 16, 1024, 64, 0),
            _attn(2, 8, 4096, 128, 0),
            _attn(32, 12, 197, 64, 0),  # ViT-B/16 at 224px: 197 tokens
            _attn(8, 16, 2048, 64, 0),
        ],
        "large": [_attn(1, 32, 16384, 128, 1), _attn(4, 32, 8192, 128, 1), _attn(16, 16, 4096, 64, 0)],
    }

    @property
    def kernel(self) -> Any:
        return flash_attention_fwd_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_M": (32, 64, 128, 256), "BLOCK_N": (16, 32, 64, 128)},
            num_warps=(2, 4, 8),
            num_stages=(1, 2, 3, 4),
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        bm, bn = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        head_dim, seq = dims["HEAD_DIM"], dims["SEQ"]
        # Q stays resident; K and V blocks are multi-buffered.
        smem = (bm * head_dim + max(1, config.num_stages) * 2 * bn * head_dim) * dtype_bytes(dtype)
        return gc.first_reason(
            gc.block_too_large("BLOCK_M", bm, seq),
            gc.block_too_large("BLOCK_N", bn, seq),
            gc.shared_memory_reason(smem),
            # Output accumulator and the score tile are both fp32 register tiles.
            gc.accumulator_reason(bm * head_dim + bm * bn, config.num_warps, low=8, high=192),
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        shape = (dims["BATCH"], dims["HEADS"], dims["SEQ"], dims["HEAD_DIM"])
        gen = gc.cpu_generator(seed)
        return {
            "q": gc.normal(shape, dtype, device, gen),
            "k": gc.normal(shape, dtype, device, gen),
            "v": gc.normal(shape, dtype, device, gen),
            "out": gc.empty(shape, dtype, device),
            "lse": gc.empty(shape[:3], "float32", device),
            "sm_scale": 1.0 / math.sqrt(dims["HEAD_DIM"]),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        q, k, v, out = inputs["q"], inputs["k"], inputs["v"], inputs["out"]
        bm, bn = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        seq = dims["SEQ"]
        grid = (cdiv(seq, bm), dims["BATCH"] * dims["HEADS"])
        args = {
            "q": q, "k": k, "v": v, "out": out, "lse": inputs["lse"],
            "sm_scale": inputs["sm_scale"], "seq_len": seq, "heads": dims["HEADS"],
            "stride_qz": q.stride(0), "stride_qh": q.stride(1), "stride_qm": q.stride(2),
            "stride_kz": k.stride(0), "stride_kh": k.stride(1), "stride_kn": k.stride(2),
            "stride_vz": v.stride(0), "stride_vh": v.stride(1), "stride_vn": v.stride(2),
            "stride_oz": out.stride(0), "stride_oh": out.stride(1), "stride_om": out.stride(2),
            "HEAD_DIM": dims["HEAD_DIM"], "BLOCK_M": bm, "BLOCK_N": bn,
            "CAUSAL": bool(dims["CAUSAL"]), "EVEN_SEQ": seq % bm == 0 and seq % bn == 0,
        }  # fmt: skip
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        """Exact attention in float32, a block of query rows at a time: the full score matrix
        of the large shapes (32 heads x 16384^2) would take tens of GB; a block's scores take
        at most ``REFERENCE_BLOCK_BYTES``. Rows are independent, so blocking changes no value."""
        q, k, v = (inputs[n].float() for n in ("q", "k", "v"))
        batch, heads, seq, _ = q.shape
        rows = max(1, REFERENCE_BLOCK_BYTES // (4 * batch * heads * seq))
        keys = torch.arange(seq, device=q.device)
        outs, lses = [], []
        for start in range(0, seq, rows):
            stop = min(seq, start + rows)
            scores = (q[:, :, start:stop] @ k.transpose(-1, -2)) * inputs["sm_scale"]
            if dims["CAUSAL"]:
                visible = keys[None, :] <= keys[start:stop, None]  # (rows, seq)
                scores = scores.masked_fill(~visible, float("-inf"))
            lses.append(torch.logsumexp(scores, dim=-1))
            outs.append(torch.softmax(scores, dim=-1) @ v)
            del scores
        out = torch.cat(outs, dim=2)
        return {"out": out.to(inputs["out"].dtype), "lse": torch.cat(lses, dim=2)}

    def flops(self, dims: Dims) -> int:
        b, h, s, d = dims["BATCH"], dims["HEADS"], dims["SEQ"], dims["HEAD_DIM"]
        # Two GEMMs of 2*S*S*D each; a causal mask halves the useful work.
        full = 4 * b * h * s * s * d
        return full // 2 if dims["CAUSAL"] else full

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        b, h, s, d = dims["BATCH"], dims["HEADS"], dims["SEQ"], dims["HEAD_DIM"]
        return 4 * b * h * s * d * dtype_bytes(dtype) + b * h * s * 4

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # P is rounded to the input dtype before P @ V, as in every flash-attention kernel.
        return {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2)}.get(dtype, (1e-2, 1e-2))
