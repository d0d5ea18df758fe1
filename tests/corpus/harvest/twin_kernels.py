"""Test-only suite: a loop-free copy kernel whose ``num_stages`` variants compile to one binary.

Software pipelining only changes loops, so ``num_stages`` 1, 2 and 3 of this kernel give
byte-identical cubins with the same launch: the harvest must time one of them and point the
others at it (``same_binary_as``). ``BLOCK=128`` is a different binary and launch.
Loaded by the harvest tests with ``suite=("tests.corpus.harvest.twin_kernels",)``.
"""

from __future__ import annotations

from typing import ClassVar

import torch
import triton
import triton.language as tl

from corpus.suite.registry import register
from corpus.suite.spec import Config, KernelSpec


@triton.jit
def _scale_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


TWINS = [Config({"BLOCK": 64}, num_warps=2, num_stages=stages) for stages in (1, 2, 3)]
OTHER = Config({"BLOCK": 128}, num_warps=2, num_stages=1)


@register
class ScaleCopy(KernelSpec):
    name = "test_scale_copy"
    category = "test"
    dtypes = ("float32",)
    shapes: ClassVar = {"tiny": [{"N": 1000}, {"N": 1500}], "small": [], "default": [], "large": []}
    outputs = ("out_ptr",)
    roles: ClassVar = {"BLOCK": "tile_n"}

    @property
    def kernel(self):
        return _scale_copy

    def config_space(self) -> list[Config]:
        return [*TWINS, OTHER]

    def default_config(self) -> Config:
        return OTHER

    def make_inputs(self, dims, dtype, device, seed):
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(dims["N"], generator=generator).to(device)
        return {"x_ptr": x, "out_ptr": torch.empty_like(x), "n": dims["N"]}

    def bind(self, inputs, dims, config):
        grid = (triton.cdiv(dims["N"], config.kwargs["BLOCK"]),)
        return grid, {**inputs, **config.kwargs}

    def reference(self, inputs, dims):
        return {"out_ptr": inputs["x_ptr"] * 2.0}

    def flops(self, dims):
        return dims["N"]

    def bytes_moved(self, dims, dtype):
        return 8 * dims["N"]
