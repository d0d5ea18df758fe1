"""Batched GEMM ``C[i] = A[i] @ B[i]`` on a 3D launch grid.

Grid axis 0 walks the N tiles (fastest, so neighbouring programs share the A tile), axis 1
the M tiles and axis 2 the batch. ``B`` is either row-major ``(BATCH, K, N)`` or, with
``TRANS_B=1``, the transposed view of a ``(BATCH, N, K)`` tensor — the ``Q @ K^T`` of
attention scores. Shapes are those of unfused attention (scores and ``P @ V``), grouped
mixture-of-experts FFNs, and ViT attention with an odd 197-token sequence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import triton
import triton.language as tl

from corpus.suite.kernels import _gemm_common as gc
from corpus.suite.kernels.matmul import gemm_tile_reason
from corpus.suite.registry import register
from corpus.suite.spec import Config, Dims, KernelSpec, cdiv, dtype_bytes, product_configs
from schemas.enums import Role


@triton.jit
def batched_matmul_kernel(
    a, b, c,
    M, N, K,
    stride_az, stride_am, stride_ak,
    stride_bz, stride_bk, stride_bn,
    stride_cz, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr,
):  # fmt: skip
    tile_n = tl.program_id(0)
    tile_m = tl.program_id(1)
    # 64-bit batch offsets: BATCH * M * K can pass 2**31 elements.
    batch = tl.program_id(2).to(tl.int64)
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows[:, None] < M
    col_ok = cols[None, :] < N
    a_tile = a + batch * stride_az + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b + batch * stride_bz + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        if EVEN_K:
            a_blk = tl.load(a_tile, mask=row_ok, other=0.0)
            b_blk = tl.load(b_tile, mask=col_ok, other=0.0)
        else:
            k_left = K - k_start
            a_blk = tl.load(a_tile, mask=row_ok & (ks[None, :] < k_left), other=0.0)
            b_blk = tl.load(b_tile, mask=(ks[:, None] < k_left) & col_ok, other=0.0)
        acc = tl.dot(a_blk, b_blk, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    c_tile = c + batch * stride_cz + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_tile, acc.to(c.dtype.element_ty), mask=row_ok & col_ok)


def _bmm(batch: int, m: int, n: int, k: int, trans_b: int) -> dict[str, int]:
    return {"BATCH": batch, "M": m, "N": n, "K": k, "TRANS_B": trans_b}


@register
class BatchedMatmul(KernelSpec):
    """Batched GEMM (attention scores / P@V, MoE expert FFNs)."""

    name = "batched_matmul"
    category = "matmul"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("c",)
    roles: ClassVar[Mapping[str, str]] = {
        "BLOCK_M": Role.TILE_M,
        "BLOCK_N": Role.TILE_N,
        "BLOCK_K": Role.TILE_K,
    }
    flag_dims = ("TRANS_B",)
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [_bmm(2, 64, 64, 64, 1), _bmm(3, 40, 64, 48, 0)],
        "small": [_bmm(16, 256, 256, 64, 1), _bmm(8, 197, 64, 197, 0)],
        "default": [
            _bmm(64, 512, 512, 64, 1),  # BERT-base scores: batch 4 x 16 heads
            _bmm(64, 512, 64, 512, 0),  # ... times V
            _bmm(32, 2048, 2048, 128, 1),  # Llama scores: 32 heads, 2k context
            _bmm(32, 2048, 128, 2048, 0),
            _bmm(96, 197, 197, 64, 1),  # ViT-B/16: batch 8 x 12 heads, 197 tokens
            _bmm(96, 197, 64, 197, 0),
            _bmm(8, 512, 14336, 4096, 1),  # 8 experts x 512 tokens, up-projection
            _bmm(8, 1024, 4096, 14336, 1),  # ... down-projection
        ],
        "large": [
            _bmm(64, 4096, 4096, 128, 1),
            _bmm(64, 4096, 128, 4096, 0),
            _bmm(16, 2048, 14336, 4096, 1),
        ],
    }

    @property
    def kernel(self) -> Any:
        return batched_matmul_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_M": (32, 64, 128, 256), "BLOCK_N": (32, 64, 128, 256), "BLOCK_K": (16, 32, 64)},
            num_warps=(4, 8),
            num_stages=(2, 3, 4),
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=3)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        return gemm_tile_reason(config, dims, dtype)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        z, m, n, k = dims["BATCH"], dims["M"], dims["N"], dims["K"]
        gen = gc.cpu_generator(seed)
        a = gc.normal((z, m, k), dtype, device, gen)
        if dims["TRANS_B"]:
            b = gc.normal((z, n, k), dtype, device, gen, std=1 / math.sqrt(k)).transpose(1, 2)
        else:
            b = gc.normal((z, k, n), dtype, device, gen, std=1 / math.sqrt(k))
        return {"a": a, "b": b, "c": gc.empty((z, m, n), dtype, device)}

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        a, b, c = inputs["a"], inputs["b"], inputs["c"]
        m, n, k = dims["M"], dims["N"], dims["K"]
        meta = dict(config.kwargs)
        grid = (cdiv(n, meta["BLOCK_N"]), cdiv(m, meta["BLOCK_M"]), dims["BATCH"])
        args = {
            "a": a, "b": b, "c": c,
            "M": m, "N": n, "K": k,
            "stride_az": a.stride(0), "stride_am": a.stride(1), "stride_ak": a.stride(2),
            "stride_bz": b.stride(0), "stride_bk": b.stride(1), "stride_bn": b.stride(2),
            "stride_cz": c.stride(0), "stride_cm": c.stride(1), "stride_cn": c.stride(2),
            **meta,
            "EVEN_K": k % meta["BLOCK_K"] == 0,
        }  # fmt: skip
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        a, b, c = inputs["a"], inputs["b"], inputs["c"]
        return {"c": (a.float() @ b.float()).to(c.dtype)}

    def flops(self, dims: Dims) -> int:
        return 2 * dims["BATCH"] * dims["M"] * dims["N"] * dims["K"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        z, m, n, k = dims["BATCH"], dims["M"], dims["N"], dims["K"]
        return z * (m * k + k * n + m * n) * dtype_bytes(dtype)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return gc.matmul_tolerance(dtype)

