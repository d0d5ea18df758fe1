"""RMSNorm with the residual add fused in, as in pre-norm transformer blocks:

    h = x + residual;  residual <- h (in place);  y = h / sqrt(mean(h^2) + eps) * weight

Tiles are BLOCK_M rows x BLOCK_N columns. A row that fits one chunk is read once. Longer
rows take two passes: the first accumulates h^2 lane-wise without writing anything, the
second recomputes h from the still-untouched inputs and writes both residual and y, so no
program ever reads a value it has written (prefetched chunks lie ahead of the chunk being
written). Both chunk loops are load-pipelined num_stages deep.
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

EPS = 1e-6


@triton.jit
def rmsnorm_residual_kernel(
    x_ptr,
    res_ptr,
    w_ptr,
    y_ptr,
    M,
    N,
    stride_m,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SINGLE_CHUNK: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    # Tail lanes read row M - 1 but never store, so they cannot disturb the in-place update.
    load_offsets = tl.minimum(rows, M - 1).to(tl.int64)[:, None] * stride_m
    store_offsets = rows.to(tl.int64)[:, None] * stride_m
    cols = tl.arange(0, BLOCK_N)
    if SINGLE_CHUNK:
        col_ok = cols[None, :] < N
        x = tl.load(x_ptr + load_offsets + cols[None, :], mask=col_ok, other=0.0).to(tl.float32)
        r = tl.load(res_ptr + load_offsets + cols[None, :], mask=col_ok, other=0.0).to(tl.float32)
        h = x + r
        store_mask = row_ok[:, None] & col_ok
        tl.store(res_ptr + store_offsets + cols[None, :], h.to(res_ptr.dtype.element_ty), mask=store_mask)
        inv_rms = tl.rsqrt(tl.sum(h * h, axis=1) / N + eps)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        y = h * inv_rms[:, None] * w[None, :]
        tl.store(y_ptr + store_offsets + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=store_mask)
    else:
        squares = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
            c = start + cols
            col_ok = c[None, :] < N
            x = tl.load(x_ptr + load_offsets + c[None, :], mask=col_ok, other=0.0).to(tl.float32)
            r = tl.load(res_ptr + load_offsets + c[None, :], mask=col_ok, other=0.0).to(tl.float32)
            h = x + r
            squares += h * h
        inv_rms = tl.rsqrt(tl.sum(squares, axis=1) / N + eps)
        for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
            c = start + cols
            col_ok = c[None, :] < N
            x = tl.load(x_ptr + load_offsets + c[None, :], mask=col_ok, other=0.0).to(tl.float32)
            r = tl.load(res_ptr + load_offsets + c[None, :], mask=col_ok, other=0.0).to(tl.float32)
            h = x + r
            store_mask = row_ok[:, None] & col_ok
            tl.store(res_ptr + store_offsets + c[None, :], h.to(res_ptr.dtype.element_ty), mask=store_mask)
            w = tl.load(w_ptr + c, mask=c < N, other=0.0).to(tl.float32)
            y = h * inv_rms[:, None] * w[None, :]
            tl.store(y_ptr + store_offsets + c[None, :], y.to(y_ptr.dtype.element_ty), mask=store_mask)


@register
class RMSNormResidual(RowTileSpec):
    """Fused residual add + RMSNorm over rows of x (M, N); updates ``residual`` in place."""

    name = "rmsnorm_residual"
    category = "normalization"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("y", "residual")
    mutated = ("residual",)
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [
            {"M": 4, "N": 1024},
            {"M": 7, "N": 576},
            {"M": 5, "N": 2048},
        ],
        "small": [
            {"M": 1024, "N": 2048},
            {"M": 128, "N": 4096},
        ],
        "default": [
            # (tokens, hidden) of Llama-style models; prefill and decode batches
            {"M": 16384, "N": 2048},
            {"M": 16384, "N": 3072},
            {"M": 8192, "N": 3584},
            {"M": 8192, "N": 4096},
            {"M": 4096, "N": 5120},
            {"M": 4096, "N": 8192},
            {"M": 256, "N": 4096},
            {"M": 64, "N": 8192},
        ],
        "large": [
            {"M": 65536, "N": 4096},
            {"M": 32768, "N": 8192},
        ],
    }

    @property
    def kernel(self) -> Any:
        return rmsnorm_residual_kernel

    def stage_bytes(self, block_m: int, block_n: int, dtype: str) -> int:
        # the writing pass loads x, residual and weight chunks
        return (2 * block_m + 1) * block_n * dtype_bytes(dtype)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n = dims["M"], dims["N"]
        return {
            "x": seeded_randn((m, n), dtype, device, seed),
            "residual": seeded_randn((m, n), dtype, device, seed + 1, scale=2.0),
            "weight": seeded_randn((n,), dtype, device, seed + 2, scale=0.2).add_(1.0),
            "y": output_buffer((m, n), dtype, device),
            "eps": EPS,
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        block_m, block_n = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        args = {
            "x_ptr": inputs["x"],
            "res_ptr": inputs["residual"],
            "w_ptr": inputs["weight"],
            "y_ptr": inputs["y"],
            "M": dims["M"],
            "N": dims["N"],
            "stride_m": inputs["x"].stride(0),
            "eps": inputs["eps"],
            "BLOCK_M": block_m,
            "BLOCK_N": block_n,
            "SINGLE_CHUNK": dims["N"] <= block_n,
            "NUM_STAGES": config.num_stages,
        }
        return (cdiv(dims["M"], block_m),), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        dtype = inputs["x"].dtype
        h = inputs["x"].float() + inputs["residual"].float()
        inv_rms = torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + inputs["eps"])
        y = h * inv_rms * inputs["weight"].float()
        return {"y": y.to(dtype), "residual": h.to(dtype)}

    def flops(self, dims: Dims) -> int:
        # add, square, sum, two scalings: about 5 operations per element
        return 5 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        m, n, size = dims["M"], dims["N"], dtype_bytes(dtype)
        return 4 * m * n * size + n * size
