"""Test-only suite: a loop-free kernel whose configs differ in ``num_stages``, so pairs of them
compile to one IR graph (software pipelining has no loop to act on).

Loaded by the budgeted-harvest tests with ``suite=("tests.corpus.guide.stage_kernels",)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import triton
import triton.language as tl

from corpus.suite.registry import register
from corpus.suite.spec import Config, KernelSpec


@triton.jit
def _scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, 2.0 * tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)


@register
class StagedScale(KernelSpec):
    name = "test_staged_scale"
    category = "test"
    dtypes = ("float32",)
    shapes: ClassVar[dict[str, list[dict[str, int]]]] = {"tiny": [{"N": 256}], "small": [], "default": [], "large": []}
    outputs = ("out_ptr",)

    @property
    def kernel(self) -> Any:
        return _scale

    def config_space(self) -> list[Config]:
        return [Config({"BLOCK": b}, num_warps=1, num_stages=s) for b in (32, 64) for s in (1, 2)]

    def default_config(self) -> Config:
        return self.config_space()[0]

    def make_inputs(self, dims: dict[str, int], dtype: str, device: str, seed: int) -> dict[str, Any]:
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(dims["N"], generator=generator).to(device)
        return {"x_ptr": x, "out_ptr": torch.empty_like(x), "n": dims["N"]}

    def bind(self, inputs: dict[str, Any], dims: dict[str, int], config: Config) -> tuple[Any, dict[str, Any]]:
        grid = (triton.cdiv(dims["N"], config.kwargs["BLOCK"]),)
        return grid, {**inputs, **config.kwargs}

    def reference(self, inputs: dict[str, Any], dims: dict[str, int]) -> dict[str, Any]:
        return {"out_ptr": 2.0 * inputs["x_ptr"] + 1.0}

    def flops(self, dims: dict[str, int]) -> int:
        return 2 * dims["N"]

    def bytes_moved(self, dims: dict[str, int], dtype: str) -> int:
        return 8 * dims["N"]
