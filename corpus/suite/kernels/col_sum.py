"""Column sum: ``out[n] = x[:, n].sum()`` (float32) of a ``[M, N]`` matrix, the bias
gradient of a linear layer and the per-channel sum of batch norm in channels-last layout.

Programs own ``BLOCK_N`` columns and walk down the rows in ``BLOCK_M`` chunks, accumulating a
float32 tile that is reduced across rows once at the end: the reduction runs along the
strided axis, unlike the row reductions. The row loop is load-pipelined num_stages deep
(``NUM_STAGES``, see ``_rowwise``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import triton
import triton.language as tl

from corpus.suite.kernels._rowwise import shared_memory_reason, stages_reason
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
def col_sum_kernel(
    x_ptr, out_ptr, M, N, stride_xm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr
):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    rows = tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in tl.range(0, M, BLOCK_M, num_stages=NUM_STAGES):
        mask = ((start + rows)[:, None] < M) & col_mask[None, :]
        offsets = (start + rows).to(tl.int64)[:, None] * stride_xm + cols[None, :]
        acc += tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + cols, tl.sum(acc, axis=0), mask=col_mask)


def _shape(m: int, n: int) -> dict[str, int]:
    return {"M": m, "N": n}


@register
class ColSum(KernelSpec):
    name = "col_sum"
    category = "reduction"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_M": Role.REDUCTION_BLOCK, "BLOCK_N": Role.TILE_N}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(100, 40), _shape(33, 200)],
        "small": [_shape(4096, 1024), _shape(65536, 64)],
        "default": [
            _shape(4096, 4096),  # bias gradient, 7B hidden
            _shape(16384, 1024),
            _shape(8192, 11008),  # bias gradient of an MLP projection
            _shape(32768, 768),  # BERT-base tokens
            _shape(2048, 14336),
            _shape(802816, 64),  # batch norm, NHWC: 16 x 224 x 224 pixels x 64 channels
            _shape(200704, 256),  # batch norm, NHWC: 64 x 56 x 56 x 256
            _shape(512, 50257),  # short and very wide
        ],
        "large": [_shape(65536, 8192), _shape(3211264, 64), _shape(16384, 28672)],
    }

    @property
    def kernel(self) -> Any:
        return col_sum_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_M": (8, 32, 128), "BLOCK_N": (32, 64, 128, 256)}, num_warps=(1, 2, 4, 8), num_stages=(1, 3)
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 32, "BLOCK_N": 64}, num_warps=4, num_stages=1)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block_m, block_n = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        if block_n > 2 * next_pow2(dims["N"]):
            return f"BLOCK_N={block_n} is over twice the column count {dims['N']}"
        if block_m > next_pow2(dims["M"]):
            return f"BLOCK_M={block_m} exceeds the {dims['M']} rows: no loop left to tune"
        return (
            per_thread_reason(block_m * block_n, config.num_warps, high=64)
            or stages_reason(config, cdiv(dims["M"], block_m))
            or shared_memory_reason(config, block_m * block_n * dtype_bytes(dtype))
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n = dims["M"], dims["N"]
        return {"x": seeded_randn((m, n), dtype, device, seed), "out": output_buffer((n,), "float32", device)}

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        x = inputs["x"]
        args = {
            "x_ptr": x,
            "out_ptr": inputs["out"],
            "M": dims["M"],
            "N": dims["N"],
            "stride_xm": x.stride(0),
            **config.kwargs,
            "NUM_STAGES": config.num_stages,
        }
        return (cdiv(dims["N"], config.kwargs["BLOCK_N"]),), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        return {"out": inputs["x"].double().sum(dim=0).float()}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # float32 accumulation of up to millions of rows in a different order than float64.
        return (1e-2, 1e-4)

    def flops(self, dims: Dims) -> int:
        return dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return dtype_bytes(dtype) * dims["M"] * dims["N"] + 4 * dims["N"]
