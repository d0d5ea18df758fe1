"""Row mean and variance with Welford's algorithm: ``mean[m]``, ``var[m]`` (population)
of ``x[m, :]`` in float32, the statistics pass of layer/batch normalization.

Each program owns a row and loops over ``BLOCK_N`` chunks, updating per-lane running
(mean, M2, count) triples; a ``tl.reduce`` with Welford's merge rule combines the lanes.
The chunk loop is load-pipelined num_stages deep (``NUM_STAGES``, see ``_rowwise``).
Numerically stable where the naive ``E[x^2] - E[x]^2`` cancels (inputs have a large mean).
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

INPUT_OFFSET = 20.0
"""Inputs are N(INPUT_OFFSET, 1): a naive one-pass variance would lose most of its digits."""


@triton.jit
def welford_merge(mean_a, m2_a, count_a, mean_b, m2_b, count_b):
    count = count_a + count_b
    delta = mean_b - mean_a
    fraction_b = tl.where(count == 0.0, 0.0, count_b / tl.where(count == 0.0, 1.0, count))
    mean = mean_a + delta * fraction_b
    m2 = m2_a + m2_b + delta * delta * count_a * fraction_b
    return mean, m2, count


@triton.jit
def welford_kernel(x_ptr, mean_ptr, var_ptr, N, stride_xm, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    cols = tl.arange(0, BLOCK_N)
    mean = tl.zeros((BLOCK_N,), dtype=tl.float32)
    m2 = tl.zeros((BLOCK_N,), dtype=tl.float32)
    count = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        new_count = count + mask.to(tl.float32)
        delta = x - mean
        new_mean = mean + tl.where(mask, delta / tl.maximum(new_count, 1.0), 0.0)
        m2 = m2 + tl.where(mask, delta * (x - new_mean), 0.0)
        mean, count = new_mean, new_count
    row_mean, row_m2, row_count = tl.reduce((mean, m2, count), 0, welford_merge)
    tl.store(mean_ptr + row, row_mean)
    tl.store(var_ptr + row, row_m2 / row_count)


def _shape(m: int, n: int) -> dict[str, int]:
    return {"M": m, "N": n}


@register
class Welford(KernelSpec):
    name = "welford"
    category = "reduction"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("mean", "var")
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_N": Role.REDUCTION_BLOCK}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        # The interpreter runs tl.reduce's combiner lane by lane in Python: keep tiny rows few.
        "tiny": [_shape(2, 200), _shape(1, 300)],
        "small": [_shape(4096, 1024), _shape(1024, 8192)],
        "default": [
            _shape(4096, 4096),
            _shape(16384, 1024),
            _shape(2048, 12288),  # GPT-3 175B hidden
            _shape(65536, 768),  # BERT-base tokens
            _shape(8192, 8192),
            _shape(512, 65536),
            _shape(256, 200704),  # batch-norm statistics: channels x (N*H*W)
            _shape(1024, 5120),
        ],
        "large": [_shape(131072, 4096), _shape(64, 3211264), _shape(32768, 16384)],
    }

    @property
    def kernel(self) -> Any:
        return welford_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_N": (256, 512, 1024, 2048, 4096, 8192)}, num_warps=(1, 2, 4, 8, 16), num_stages=(1, 2, 3)
        )

    def default_config(self) -> Config:
        # num_stages=1: a tiny row is one chunk, with nothing to pipeline.
        return Config({"BLOCK_N": 512}, num_warps=4, num_stages=1)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block = config.kwargs["BLOCK_N"]
        if block > 2 * next_pow2(dims["N"]):
            return f"BLOCK_N={block} is over twice the row length {dims['N']}"
        # Three float32 accumulators per lane stay live across the loop.
        return (
            per_thread_reason(block, config.num_warps, high=16)
            or stages_reason(config, cdiv(dims["N"], block))
            or shared_memory_reason(config, block * dtype_bytes(dtype))
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n = dims["M"], dims["N"]
        x = seeded_randn((m, n), dtype, device, seed)
        if str(device) != "meta":
            x += INPUT_OFFSET
        return {
            "x": x,
            "mean": output_buffer((m,), "float32", device),
            "var": output_buffer((m,), "float32", device),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        x = inputs["x"]
        args = {
            "x_ptr": x,
            "mean_ptr": inputs["mean"],
            "var_ptr": inputs["var"],
            "N": dims["N"],
            "stride_xm": x.stride(0),
            **config.kwargs,
            "NUM_STAGES": config.num_stages,
        }
        return (dims["M"],), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        x = inputs["x"].double()
        return {"mean": x.mean(dim=1).float(), "var": x.var(dim=1, unbiased=False).float()}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return (1e-3, 1e-3)

    def flops(self, dims: Dims) -> int:
        # Per element: count, delta, divide, mean update, two products and the M2 update.
        return 7 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return dtype_bytes(dtype) * dims["M"] * dims["N"] + 8 * dims["M"]
