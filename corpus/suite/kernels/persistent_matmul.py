"""Persistent GEMM ``C = A @ B``: a fixed set of programs loops over the output tiles.

Instead of one program per tile, the grid has one program per streaming multiprocessor (or
fewer when there are fewer tiles); program ``p`` computes tiles ``p, p + P, p + 2P, ...`` in
grouped order. That removes the tail of partially filled waves and keeps each SM's
pipeline warm across tiles. The program count ``P`` is a runtime argument, not a tuning
knob: the SM count of the device the inputs live on (a small fixed count in the CPU
interpreter; for compile-only meta inputs the SM count of the GPU being harvested,
:func:`corpus.suite.targets.device_sm_count`, else H100's 132).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch
import triton
import triton.language as tl

from corpus.suite.kernels import _gemm_common as gc
from corpus.suite.kernels.matmul import gemm_operands, gemm_tile_reason
from corpus.suite.registry import register
from corpus.suite.spec import Config, Dims, KernelSpec, cdiv, dtype_bytes, product_configs
from corpus.suite.targets import device_sm_count
from schemas.enums import Role

INTERPRETER_PROGRAMS = 4
"""Program count on CPU (interpreter) inputs: small, so every program loops over tiles."""

NOMINAL_SM_COUNT = 132
"""SM count assumed for meta (compile-only) inputs when the GPU is unknown: H100 SXM."""


def program_count(device: str) -> int:
    """Programs the persistent grid launches on ``device``: its SM count on a GPU."""
    kind = torch.device(device).type
    if kind == "cuda":
        return torch.cuda.get_device_properties(torch.device(device)).multi_processor_count
    if kind == "meta":  # the harvested GPU's: Triton specializes the count (divisible by 16 or not)
        return device_sm_count() or NOMINAL_SM_COUNT
    return INTERPRETER_PROGRAMS


@triton.jit
def persistent_matmul_kernel(
    a, b, c,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    NUM_PROGRAMS,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr,
):  # fmt: skip
    tile_rows = tl.cdiv(M, BLOCK_M)
    tile_cols = tl.cdiv(N, BLOCK_N)
    band_tiles = GROUP_M * tile_cols
    ks = tl.arange(0, BLOCK_K)
    for tile in range(tl.program_id(0), tile_rows * tile_cols, NUM_PROGRAMS):
        band_first_row = (tile // band_tiles) * GROUP_M
        band_rows = tl.minimum(tile_rows - band_first_row, GROUP_M)
        tile_m = band_first_row + (tile % band_tiles) % band_rows
        tile_n = (tile % band_tiles) // band_rows

        rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
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
                k_ok = ks < K - k_start
                a_blk = tl.load(a_tile, mask=row_ok & k_ok[None, :], other=0.0)
                b_blk = tl.load(b_tile, mask=k_ok[:, None] & col_ok, other=0.0)
            acc = tl.dot(a_blk, b_blk, acc)
            a_tile += BLOCK_K * stride_ak
            b_tile += BLOCK_K * stride_bk
        c_tile = c + rows[:, None] * stride_cm + cols[None, :] * stride_cn
        tl.store(c_tile, acc.to(c.dtype.element_ty), mask=row_ok & col_ok)


def _gemm(m: int, n: int, k: int, trans_b: int = 1) -> dict[str, int]:
    return {"M": m, "N": n, "K": k, "TRANS_B": trans_b}


@register
class PersistentMatmul(KernelSpec):
    """Persistent (one program per SM) GEMM with grouped tile order."""

    name = "persistent_matmul"
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
        "tiny": [_gemm(128, 192, 64, 0), _gemm(96, 80, 72)],
        "small": [_gemm(512, 512, 512, 0), _gemm(640, 384, 320)],
        # Shapes whose tile count is a few waves plus a remainder, where persistence pays.
        "default": [
            _gemm(1024, 4096, 4096),
            _gemm(2048, 2048, 8192, 0),
            _gemm(2048, 6144, 4096),
            _gemm(4096, 4096, 4096, 0),
            _gemm(4096, 14336, 4096),
            _gemm(8192, 4096, 1024),
            _gemm(8192, 8192, 2048, 0),
            _gemm(1536, 12288, 1536),
        ],
        "large": [_gemm(8192, 8192, 8192, 0), _gemm(16384, 14336, 4096), _gemm(16384, 4096, 14336)],
    }

    @property
    def kernel(self) -> Any:
        return persistent_matmul_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_M": (64, 128, 256), "BLOCK_N": (64, 128, 256), "BLOCK_K": (32, 64, 128), "GROUP_M": (8,)},
            num_warps=(4, 8),
            num_stages=(2, 3, 4),
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        return gemm_tile_reason(config, dims, dtype)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        a, b = gemm_operands(dims, dtype, device, seed)
        c = gc.empty((dims["M"], dims["N"]), dtype, device)
        return {"a": a, "b": b, "c": c, "num_programs": program_count(device)}

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        a, b, c = inputs["a"], inputs["b"], inputs["c"]
        m, n, k = dims["M"], dims["N"], dims["K"]
        meta = dict(config.kwargs)
        tiles = cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"])
        programs = min(tiles, inputs["num_programs"])
        args = {
            "a": a, "b": b, "c": c,
            "M": m, "N": n, "K": k,
            "stride_am": a.stride(0), "stride_ak": a.stride(1),
            "stride_bk": b.stride(0), "stride_bn": b.stride(1),
            "stride_cm": c.stride(0), "stride_cn": c.stride(1),
            "NUM_PROGRAMS": programs,
            **meta,
            "EVEN_K": k % meta["BLOCK_K"] == 0,
        }  # fmt: skip
        return (programs,), args

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
