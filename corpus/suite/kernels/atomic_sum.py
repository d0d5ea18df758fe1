"""Full reduction with atomics: ``out[0] = x.sum()`` (float32) over a flat tensor.

Each program sums ``ITERS`` consecutive blocks of ``BLOCK`` elements into a float32 vector,
reduces it, and adds the partial to the single output with ``tl.atomic_add``. More ITERS
means fewer programs and fewer contended atomics. The output is zeroed in ``prepare``
(part of every launch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import triton
import triton.language as tl

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
    seeded_uniform,
)
from schemas.enums import Role


@triton.jit
def atomic_sum_kernel(x_ptr, out_ptr, numel, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    first = tl.program_id(0).to(tl.int64) * (BLOCK * ITERS)
    offsets = tl.arange(0, BLOCK)
    partial = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(ITERS):
        index = first + i * BLOCK + offsets
        partial += tl.load(x_ptr + index, mask=index < numel, other=0.0).to(tl.float32)
    tl.atomic_add(out_ptr, tl.sum(partial, axis=0))


@register
class AtomicSum(KernelSpec):
    name = "atomic_sum"
    category = "reduction"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK": Role.REDUCTION_BLOCK, "ITERS": Role.OTHER}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [{"N": 3000}, {"N": 777}],
        "small": [{"N": 1 << 18}, {"N": 3_000_000}],
        "default": [
            {"N": 1 << 20},
            {"N": 1 << 22},
            {"N": 1 << 24},
            {"N": 1 << 26},
            {"N": 1 << 28},
            {"N": 1_000_000},
            {"N": 12_582_912},  # 3 x 4M, not a power of two
            {"N": 50_331_648},
        ],
        "large": [{"N": 1 << 29}, {"N": 1 << 30}, {"N": 805_306_368}],
    }

    @property
    def kernel(self) -> Any:
        return atomic_sum_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK": (512, 1024, 2048, 4096, 8192), "ITERS": (1, 4, 16)}, num_warps=(2, 4, 8, 16)
        )

    def default_config(self) -> Config:
        return Config({"BLOCK": 1024, "ITERS": 1}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        span = config.kwargs["BLOCK"] * config.kwargs["ITERS"]
        if span > 4 * next_pow2(dims["N"]):
            return f"one program spans {span} elements, over 4x the {dims['N']} in the tensor"
        return per_thread_reason(config.kwargs["BLOCK"], config.num_warps, high=32)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        # Positive values keep the sum well conditioned for any reduction order.
        return {"x": seeded_uniform((dims["N"],), dtype, device, seed), "out": output_buffer((1,), "float32", device)}

    def prepare(self, inputs: Mapping[str, Any]) -> None:
        inputs["out"].zero_()

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        span = config.kwargs["BLOCK"] * config.kwargs["ITERS"]
        args = {"x_ptr": inputs["x"], "out_ptr": inputs["out"], "numel": dims["N"], **config.kwargs}
        return (cdiv(dims["N"], span),), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        return {"out": inputs["x"].double().sum().reshape(1).float()}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # Thousands of float32 atomics into one large total, in arbitrary order.
        return (1e-2, 1e-4)

    def flops(self, dims: Dims) -> int:
        return dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return dtype_bytes(dtype) * dims["N"] + 4
