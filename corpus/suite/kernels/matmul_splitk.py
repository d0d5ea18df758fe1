"""Split-K GEMM ``C = A @ B`` accumulated with atomics into a zeroed fp32 output.

For skinny problems (few tokens, long reductions) the ``M x N`` tiles alone give too few
programs to fill the GPU. Split-K adds a second grid axis: each of ``SPLIT_K`` programs per
tile reduces one contiguous slice of K and adds its partial tile to ``C`` with a relaxed
atomic add. ``C`` must be zero before the launch; that zeroing is part of the timed work
(:meth:`MatmulSplitK.prepare`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import triton
import triton.language as tl

from corpus.suite.kernels import _gemm_common as gc
from corpus.suite.kernels.matmul import gemm_operands, gemm_tile_reason
from corpus.suite.registry import register
from corpus.suite.spec import (
    Config,
    Dims,
    KernelSpec,
    cdiv,
    dtype_bytes,
    next_pow2,
    product_configs,
)
from schemas.enums import Role


@triton.jit
def splitk_matmul_kernel(
    a, b, c,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    split = tl.program_id(1)
    tile_cols = tl.cdiv(N, BLOCK_N)
    tile_m = pid // tile_cols
    tile_n = pid % tile_cols
    # The spec only admits configs where SPLIT_K * BLOCK_K divides K: no K masks needed.
    k_slice = K // SPLIT_K
    k_first = split * k_slice

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = k_first + tl.arange(0, BLOCK_K)
    row_ok = rows[:, None] < M
    col_ok = cols[None, :] < N
    a_tile = a + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, k_slice, BLOCK_K):
        a_blk = tl.load(a_tile, mask=row_ok, other=0.0)
        b_blk = tl.load(b_tile, mask=col_ok, other=0.0)
        acc = tl.dot(a_blk, b_blk, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    c_tile = c + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.atomic_add(c_tile, acc, mask=row_ok & col_ok, sem="relaxed")


def block_m_for(m: int) -> int:
    """Tile height: the token count rounded up to a power of two, 16 to 64. Split-K serves
    few-token problems, where one tile row covers M; it is derived, not tuned."""
    return min(64, max(16, next_pow2(m)))


def _skinny(m: int, n: int, k: int) -> dict[str, int]:
    return {"M": m, "N": n, "K": k, "TRANS_B": 1}


@register
class MatmulSplitK(KernelSpec):
    """Split-K GEMM with atomic fp32 accumulation, for few-token (decode-like) projections."""

    name = "matmul_splitk"
    category = "matmul"
    dtypes = ("float16", "bfloat16")
    outputs = ("c",)
    roles: ClassVar[Mapping[str, str]] = {
        "BLOCK_N": Role.TILE_N,
        "BLOCK_K": Role.TILE_K,
        "SPLIT_K": Role.SPLIT,
    }
    flag_dims = ("TRANS_B",)
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [
            {"M": 16, "N": 64, "K": 256, "TRANS_B": 0},
            {"M": 24, "N": 40, "K": 512, "TRANS_B": 1},
        ],
        "small": [_skinny(16, 512, 4096), _skinny(40, 256, 2048)],
        # Few tokens x Llama-family projections (hidden 4096/8192, FFN 11008/14336/28672).
        "default": [
            _skinny(16, 4096, 4096),
            _skinny(16, 8192, 28672),
            _skinny(32, 4096, 14336),
            _skinny(32, 1024, 8192),
            _skinny(64, 4096, 11008),
            _skinny(64, 2048, 16384),
            _skinny(48, 14336, 4096),
            _skinny(64, 1024, 14336),
        ],
        "large": [_skinny(16, 28672, 8192), _skinny(64, 8192, 28672), _skinny(32, 16384, 53248)],
    }

    @property
    def kernel(self) -> Any:
        return splitk_matmul_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {
                "BLOCK_N": (32, 64, 128, 256),
                "BLOCK_K": (64, 128),
                "SPLIT_K": (2, 4, 8, 16),
            },
            num_warps=(2, 4),
            num_stages=(2, 3, 4),
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_N": 64, "BLOCK_K": 64, "SPLIT_K": 4}, num_warps=4, num_stages=3)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        k_step = config.kwargs["SPLIT_K"] * config.kwargs["BLOCK_K"]
        if dims["K"] % k_step:
            return f"SPLIT_K*BLOCK_K={k_step} does not divide K={dims['K']} (the kernel has no K masks)"
        tile = Config({**config.kwargs, "BLOCK_M": block_m_for(dims["M"])}, config.num_warps, config.num_stages)
        return gemm_tile_reason(tile, dims, dtype, min_acc_per_thread=4)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        a, b = gemm_operands(dims, dtype, device, seed)
        c = gc.empty((dims["M"], dims["N"]), "float32", device)
        return {"a": a, "b": b, "c": c}

    def prepare(self, inputs: Mapping[str, Any]) -> None:
        inputs["c"].zero_()

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        a, b, c = inputs["a"], inputs["b"], inputs["c"]
        m, n, k = dims["M"], dims["N"], dims["K"]
        meta = {**config.kwargs, "BLOCK_M": block_m_for(m)}
        grid = (cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"]), meta["SPLIT_K"])
        args = {
            "a": a, "b": b, "c": c,
            "M": m, "N": n, "K": k,
            "stride_am": a.stride(0), "stride_ak": a.stride(1),
            "stride_bk": b.stride(0), "stride_bn": b.stride(1),
            "stride_cm": c.stride(0), "stride_cn": c.stride(1),
            **meta,
        }  # fmt: skip
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        return {"c": inputs["a"].float() @ inputs["b"].float()}

    def flops(self, dims: Dims) -> int:
        return 2 * dims["M"] * dims["N"] * dims["K"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        m, n, k = dims["M"], dims["N"], dims["K"]
        # Operands once; the fp32 output written twice (zeroing, then accumulation).
        return (m * k + k * n) * dtype_bytes(dtype) + 2 * m * n * 4

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return gc.matmul_tolerance(dtype)
