"""Test-only suite for the GPU tests: a plain copy and a copy that reads far out of bounds
(an illegal memory access, which poisons the CUDA context of the process that launched it).

Loaded with ``suite=("tests.corpus.harvest.gpu_kernels",)``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from corpus.suite.registry import register
from corpus.suite.spec import Config, KernelSpec

SHAPES = {"tiny": [{"N": 4096}], "small": [], "default": [], "large": []}
FAR = 1 << 40
"""Elements past the input: no allocation of the test reaches that address."""


@triton.jit
def _copy(x_ptr, out_ptr, n, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets + SHIFT, mask=mask), mask=mask)


class _Copy(KernelSpec):
    category = "test"
    dtypes = ("float32",)
    shapes = SHAPES
    outputs = ("out_ptr",)
    shift = 0

    @property
    def kernel(self):
        return _copy

    def config_space(self) -> list[Config]:
        return [Config({"BLOCK": 256}, num_warps=4)]

    def default_config(self) -> Config:
        return self.config_space()[0]

    def make_inputs(self, dims, dtype, device, seed):
        x = torch.randn(dims["N"], generator=torch.Generator().manual_seed(seed)).to(device)
        return {"x_ptr": x, "out_ptr": torch.empty_like(x), "n": dims["N"]}

    def bind(self, inputs, dims, config):
        grid = (triton.cdiv(dims["N"], config.kwargs["BLOCK"]),)
        return grid, {**inputs, **config.kwargs, "SHIFT": self.shift}

    def reference(self, inputs, dims):
        return {"out_ptr": inputs["x_ptr"].clone()}

    def flops(self, dims):
        return 0

    def bytes_moved(self, dims, dtype):
        return 8 * dims["N"]


@register
class GoodCopy(_Copy):
    name = "test_gpu_copy"


@register
class OutOfBounds(_Copy):
    name = "test_gpu_out_of_bounds"
    shift = FAR
