"""LayerNorm forward over a 2D tile of BLOCK_M rows x BLOCK_N columns; also writes the row
mean and reciprocal standard deviation (float32) that the backward pass needs.

A row that fits one chunk is centred in registers (exact two-pass variance). Longer rows
compute each chunk's mean and sum of squared deviations and merge them into the running
row statistics with the parallel-variance update (Chan et al.), which stays accurate when
the mean is large relative to the spread, unlike sum-of-squares minus squared sum. Both
chunk loops are load-pipelined num_stages deep.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from corpus.suite.kernels._rowwise import (
    RowTileSpec,
)
from corpus.suite.registry import register
from corpus.suite.spec import (
    Config,
    Dims,
    cdiv,
    dtype_bytes,
    output_buffer,
    seeded_randn,
)

EPS = 1e-5


@triton.jit
def layernorm_fwd_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    mean_ptr,
    rstd_ptr,
    M,
    N,
    stride_xm,
    stride_ym,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SINGLE_CHUNK: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    safe_rows = tl.minimum(rows, M - 1).to(tl.int64)
    x_rows = x_ptr + safe_rows[:, None] * stride_xm
    y_rows = y_ptr + rows.to(tl.int64)[:, None] * stride_ym
    cols = tl.arange(0, BLOCK_N)
    if SINGLE_CHUNK:
        col_ok = cols < N
        x = tl.load(x_rows + cols[None, :], mask=col_ok[None, :], other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=1) / N
        centred = tl.where(col_ok[None, :], x - mean[:, None], 0.0)
        rstd = tl.rsqrt(tl.sum(centred * centred, axis=1) / N + eps)
        w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        y = centred * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(y_rows + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])
    else:
        mean = tl.zeros([BLOCK_M], tl.float32)
        m2 = tl.zeros([BLOCK_M], tl.float32)
        seen = 0.0
        for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
            c = start + cols
            col_ok = c < N
            x = tl.load(x_rows + c[None, :], mask=col_ok[None, :], other=0.0).to(tl.float32)
            chunk_count = tl.minimum(N - start, BLOCK_N).to(tl.float32)
            chunk_mean = tl.sum(x, axis=1) / chunk_count
            dev = tl.where(col_ok[None, :], x - chunk_mean[:, None], 0.0)
            total = seen + chunk_count
            delta = chunk_mean - mean
            mean += delta * (chunk_count / total)
            m2 += tl.sum(dev * dev, axis=1) + delta * delta * (seen * chunk_count / total)
            seen = total
        rstd = tl.rsqrt(m2 / N + eps)
        for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
            c = start + cols
            col_ok = c < N
            x = tl.load(x_rows + c[None, :], mask=col_ok[None, :], other=0.0).to(tl.float32)
            w = tl.load(w_ptr + c, mask=col_ok, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + c, mask=col_ok, other=0.0).to(tl.float32)
            y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
            tl.store(y_rows + c[None, :], y.to(y_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])
    tl.store(mean_ptr + rows, mean, mask=row_ok)
    tl.store(rstd_ptr + rows, rstd, mask=row_ok)


@register
class LayerNormForward(RowTileSpec):
    """y = layer_norm(x, (N,), weight, bias, eps) for x of shape (M, N); also the row mean and
    rstd = 1 / sqrt(var + eps) in float32."""

    name = "layernorm_fwd"
    category = "normalization"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("y", "mean", "rstd")
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [
            {"M": 4, "N": 1024},
            {"M": 7, "N": 768},
            {"M": 5, "N": 1600},
        ],
        "small": [
            {"M": 1024, "N": 768},
            {"M": 512, "N": 4096},
        ],
        "default": [
            # (batch * tokens, hidden): BERT/ViT-B, ViT-L, ViT-H, GPT-2 XL, 2-3B, 7B, 13B, 65-70B
            {"M": 16384, "N": 768},
            {"M": 16384, "N": 1024},
            {"M": 8192, "N": 1280},
            {"M": 8192, "N": 1600},
            {"M": 8192, "N": 2560},
            {"M": 4096, "N": 4096},
            {"M": 4096, "N": 5120},
            {"M": 2048, "N": 8192},
        ],
        "large": [
            {"M": 65536, "N": 4096},
            {"M": 32768, "N": 8192},
        ],
    }

    @property
    def kernel(self) -> Any:
        return layernorm_fwd_kernel

    def stage_bytes(self, block_m: int, block_n: int, dtype: str) -> int:
        # the normalizing pass loads x, weight and bias chunks
        return (block_m + 2) * block_n * dtype_bytes(dtype)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n = dims["M"], dims["N"]
        # a per-row offset, as real activations have, exercises the variance merge
        x = seeded_randn((m, n), dtype, device, seed) + seeded_randn((m, 1), dtype, device, seed + 1, scale=2.0)
        return {
            "x": x,
            "weight": seeded_randn((n,), dtype, device, seed + 2, scale=0.5).add_(1.0),
            "bias": seeded_randn((n,), dtype, device, seed + 3, scale=0.1),
            "y": output_buffer((m, n), dtype, device),
            "mean": output_buffer((m,), "float32", device),
            "rstd": output_buffer((m,), "float32", device),
            "eps": EPS,
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        x, y = inputs["x"], inputs["y"]
        block_m, block_n = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        args = {
            "x_ptr": x,
            "w_ptr": inputs["weight"],
            "b_ptr": inputs["bias"],
            "y_ptr": y,
            "mean_ptr": inputs["mean"],
            "rstd_ptr": inputs["rstd"],
            "M": dims["M"],
            "N": dims["N"],
            "stride_xm": x.stride(0),
            "stride_ym": y.stride(0),
            "eps": inputs["eps"],
            "BLOCK_M": block_m,
            "BLOCK_N": block_n,
            "SINGLE_CHUNK": dims["N"] <= block_n,
            "NUM_STAGES": config.num_stages,
        }
        return (cdiv(dims["M"], block_m),), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        x, eps = inputs["x"].float(), inputs["eps"]
        y = torch.nn.functional.layer_norm(x, (dims["N"],), inputs["weight"].float(), inputs["bias"].float(), eps)
        var, mean = torch.var_mean(x, dim=-1, correction=0)
        return {"y": y.to(inputs["x"].dtype), "mean": mean, "rstd": torch.rsqrt(var + eps)}

    def flops(self, dims: Dims) -> int:
        # mean, centre, square-sum, scale, weight, bias: about 7 operations per element
        return 7 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        m, n, size = dims["M"], dims["N"], dtype_bytes(dtype)
        return 2 * m * n * size + 2 * n * size + 2 * m * 4

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return {"float32": (1e-4, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (6e-2, 2e-2)}.get(dtype, (1e-4, 1e-4))
