"""Dynamic per-row int8 quantization: ``scale = max|x| / 127``, ``q = round(x / scale)``.

The activation quantizer of int8 inference (one scale per token row). Each program owns a
row and sweeps it twice in ``BLOCK_N`` chunks — first for the absolute maximum, then to
quantize — so rows of any length work; both sweeps are load-pipelined num_stages deep
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
def quantize_int8_kernel(
    x_ptr, q_ptr, scale_ptr, N, stride_xm, stride_qm, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    q_row = q_ptr + row * stride_qm
    cols = tl.arange(0, BLOCK_N)
    peak = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
        x = tl.load(x_row + start + cols, mask=start + cols < N, other=0.0)
        peak = tl.maximum(peak, tl.abs(x.to(tl.float32)))
    absmax = tl.max(peak, axis=0)
    # An all-zero row quantizes to zeros with scale 0 (inverse 0 avoids inf * 0).
    inverse = tl.where(absmax > 0.0, 127.0 / absmax, 0.0)
    tl.store(scale_ptr + row, absmax / 127.0)
    for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        q = tl.floor(x * inverse + 0.5)
        q = tl.minimum(tl.maximum(q, -127.0), 127.0)
        tl.store(q_row + start + cols, q.to(tl.int8), mask=mask)


def _shape(m: int, n: int) -> dict[str, int]:
    return {"M": m, "N": n}


@register
class QuantizeInt8(KernelSpec):
    name = "quantize_int8"
    category = "pointwise"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("q", "scale")
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_N": Role.REDUCTION_BLOCK}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(8, 300), _shape(3, 1000)],
        "small": [_shape(1024, 4096), _shape(512, 11008)],
        "default": [
            _shape(4096, 4096),
            _shape(8192, 4096),
            _shape(2048, 11008),
            _shape(4096, 14336),
            _shape(1024, 8192),
            _shape(16384, 5120),
            _shape(512, 28672),
            _shape(32768, 1024),
        ],
        "large": [_shape(32768, 8192), _shape(8192, 28672), _shape(131072, 4096)],
    }

    @property
    def kernel(self) -> Any:
        return quantize_int8_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_N": (256, 512, 1024, 2048, 4096)}, num_warps=(1, 2, 4, 8, 16), num_stages=(1, 2, 3)
        )

    def default_config(self) -> Config:
        # num_stages=1: a tiny row is one chunk, with nothing to pipeline.
        return Config({"BLOCK_N": 1024}, num_warps=4, num_stages=1)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block = config.kwargs["BLOCK_N"]
        if block > 2 * next_pow2(dims["N"]):
            return f"BLOCK_N={block} is over twice the row length {dims['N']}"
        return (
            per_thread_reason(block, config.num_warps, high=32)
            or stages_reason(config, cdiv(dims["N"], block))
            or shared_memory_reason(config, block * dtype_bytes(dtype))
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n = dims["M"], dims["N"]
        return {
            "x": seeded_randn((m, n), dtype, device, seed, scale=3.0),
            "q": output_buffer((m, n), "int8", device),
            "scale": output_buffer((m,), "float32", device),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        x, q = inputs["x"], inputs["q"]
        args = {
            "x_ptr": x,
            "q_ptr": q,
            "scale_ptr": inputs["scale"],
            "N": dims["N"],
            "stride_xm": x.stride(0),
            "stride_qm": q.stride(0),
            **config.kwargs,
            "NUM_STAGES": config.num_stages,
        }
        return (dims["M"],), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        import torch

        x = inputs["x"].float()
        absmax = x.abs().amax(dim=1)
        inverse = torch.where(absmax > 0, 127.0 / absmax, torch.zeros_like(absmax))
        q = torch.floor(x * inverse[:, None] + 0.5).clamp(-127, 127).to(torch.int8)
        return {"q": q, "scale": absmax / 127.0}

    def output_tolerance(self, output: str, dtype: str) -> tuple[float, float]:
        # A value on a rounding boundary may land one step away when the GPU fuses
        # x * inverse + 0.5 into an FMA; the scale itself is exact.
        return (1.0, 0.0) if output == "q" else (1e-6, 1e-6)

    def flops(self, dims: Dims) -> int:
        # abs + max in the first sweep; multiply, add, floor, two clamps in the second.
        return 7 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        m, n = dims["M"], dims["N"]
        return 2 * dtype_bytes(dtype) * m * n + m * n + 4 * m
