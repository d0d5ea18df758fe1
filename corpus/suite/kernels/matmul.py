"""Tiled GEMM ``C = A @ B`` with a grouped (L2-friendly) launch order.

One program computes one ``BLOCK_M x BLOCK_N`` tile of C with an fp32 accumulator, walking K
in ``BLOCK_K`` steps. Programs are numbered down bands of ``GROUP_M`` tile rows, so the
programs resident at the same time share the A rows and B columns they read and hit in L2;
``GROUP_M=1`` is plain row-major order. ``B`` is either a row-major ``(K, N)`` matrix or, with
``TRANS_B=1``, the transposed view of an ``nn.Linear`` weight stored ``(N, K)``.
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


@triton.jit
def grouped_matmul_kernel(
    a, b, c,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    tile_rows = tl.cdiv(M, BLOCK_M)
    tile_cols = tl.cdiv(N, BLOCK_N)
    # Number programs down a band of GROUP_M tile rows before moving one tile column right.
    band_programs = GROUP_M * tile_cols
    band_first_row = (pid // band_programs) * GROUP_M
    band_rows = tl.minimum(tile_rows - band_first_row, GROUP_M)
    within_band = pid % band_programs
    tile_m = band_first_row + within_band % band_rows
    tile_n = within_band // band_rows

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows[:, None] < M
    col_ok = cols[None, :] < N
    a_tile = a + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b + ks[:, None] * stride_bk + cols[None, :] * stride_bn

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

    c_tile = c + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_tile, acc.to(c.dtype.element_ty), mask=row_ok & col_ok)


def gemm_operands(dims: Dims, dtype: str, device: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded ``a (M, K)`` and ``b (K, N)``; ``b`` is a transposed ``(N, K)`` weight when
    ``dims["TRANS_B"]`` is 1. ``b`` is scaled by 1/sqrt(K) so that C is ~N(0, 1) for any K."""
    m, n, k = dims["M"], dims["N"], dims["K"]
    gen = gc.cpu_generator(seed)
    a = gc.normal((m, k), dtype, device, gen)
    if dims.get("TRANS_B", 0):
        b = gc.normal((n, k), dtype, device, gen, std=1 / math.sqrt(k)).t()
    else:
        b = gc.normal((k, n), dtype, device, gen, std=1 / math.sqrt(k))
    return a, b


def gemm_tile_reason(
    config: Config, dims: Dims, dtype: str, operand_bytes: int | None = None, min_acc_per_thread: int = 16
) -> str | None:
    """Why a ``BLOCK_M x BLOCK_N x BLOCK_K`` GEMM tile config cannot run on ``dims``: tiles
    larger than the problem, pipelined A/B stages over the shared-memory limit (the estimate
    equals what Triton allocates on sm_90), or an fp32 accumulator that fits the warps badly.
    ``operand_bytes`` overrides the element size of A and B (e.g. 1 for int8 operands)."""
    bm, bn, bk = (config.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    nbytes = operand_bytes if operand_bytes is not None else dtype_bytes(dtype)
    return gc.first_reason(
        gc.block_too_large("BLOCK_M", bm, dims["M"]),
        gc.block_too_large("BLOCK_N", bn, dims["N"]),
        gc.block_too_large("BLOCK_K", bk, dims["K"]),
        gc.shared_memory_reason(config.num_stages * (bm * bk + bk * bn) * nbytes),
        gc.accumulator_reason(bm * bn, config.num_warps, low=min_acc_per_thread),
    )


# Shapes of LLM linear layers: (tokens, out features, in features), Llama-family hidden and
# FFN sizes, a BERT-base MLP and one ragged shape; TRANS_B=1 is the nn.Linear weight layout.
_LLM_GEMMS = (
    {"M": 512, "N": 4096, "K": 4096, "TRANS_B": 1},
    {"M": 2048, "N": 4096, "K": 11008, "TRANS_B": 1},
    {"M": 2048, "N": 14336, "K": 4096, "TRANS_B": 1},
    {"M": 4096, "N": 4096, "K": 4096, "TRANS_B": 0},
    {"M": 4096, "N": 1024, "K": 8192, "TRANS_B": 1},
    {"M": 8192, "N": 2048, "K": 2048, "TRANS_B": 0},
    {"M": 768, "N": 3072, "K": 768, "TRANS_B": 0},
    {"M": 3000, "N": 5000, "K": 1000, "TRANS_B": 0},
)


@register
class Matmul(KernelSpec):
    """Tiled GEMM with grouped launch order."""

    name = "matmul"
    category = "matmul"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("c",)
    roles: ClassVar[Mapping[str, str]] = {
        "BLOCK_M": Role.TILE_M,
        "BLOCK_N": Role.TILE_N,
        "BLOCK_K": Role.TILE_K,
        "GROUP_M": Role.GROUP,
    }
    flag_dims = ("TRANS_B",)
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [
            {"M": 128, "N": 128, "K": 64, "TRANS_B": 0},
            {"M": 96, "N": 80, "K": 72, "TRANS_B": 1},
        ],
        "small": [
            {"M": 256, "N": 256, "K": 256, "TRANS_B": 0},
            {"M": 512, "N": 384, "K": 320, "TRANS_B": 1},
        ],
        "default": list(_LLM_GEMMS),
        "large": [
            {"M": 8192, "N": 8192, "K": 8192, "TRANS_B": 0},
            {"M": 16384, "N": 4096, "K": 14336, "TRANS_B": 1},
            {"M": 8192, "N": 28672, "K": 8192, "TRANS_B": 1},
            {"M": 4096, "N": 128256, "K": 4096, "TRANS_B": 1},
        ],
    }

    @property
    def kernel(self) -> Any:
        return grouped_matmul_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {
                "BLOCK_M": (32, 64, 128, 256),
                "BLOCK_N": (32, 64, 128, 256),
                "BLOCK_K": (32, 64),
                "GROUP_M": (1, 8),
            },
            num_warps=(4, 8),
            num_stages=(2, 3, 4),
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=3)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        # Under 32 accumulator elements per thread, the warps split a tile too small to keep
        # their tensor-core pipelines fed on these (>= 768-wide) problems.
        return gemm_tile_reason(config, dims, dtype, min_acc_per_thread=32)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        a, b = gemm_operands(dims, dtype, device, seed)
        c = gc.empty((dims["M"], dims["N"]), dtype, device)
        return {"a": a, "b": b, "c": c}

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        a, b, c = inputs["a"], inputs["b"], inputs["c"]
        m, n, k = dims["M"], dims["N"], dims["K"]
        meta = dict(config.kwargs)
        grid = (cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"]),)
        args = {
            "a": a, "b": b, "c": c,
            "M": m, "N": n, "K": k,
            "stride_am": a.stride(0), "stride_ak": a.stride(1),
            "stride_bk": b.stride(0), "stride_bn": b.stride(1),
            "stride_cm": c.stride(0), "stride_cn": c.stride(1),
            **meta,
            "EVEN_K": k % meta["BLOCK_K"] == 0,
        }  # fmt: skip
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        a, b, c = inputs["a"], inputs["b"], inputs["c"]
        return {"c": (a.float() @ b.float()).to(c.dtype)}

    def flops(self, dims: Dims) -> int:
        return 2 * dims["M"] * dims["N"] * dims["K"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        m, n, k = dims["M"], dims["N"], dims["K"]
        return (m * k + k * n + m * n) * dtype_bytes(dtype)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return gc.matmul_tolerance(dtype)
