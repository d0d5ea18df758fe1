"""Test-only suite: kernels that fail to compile, compute the wrong answer, or never finish.

Loaded by the harvest tests with ``--suite tests.corpus.harvest.faulty_kernels``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from corpus.suite.registry import register
from corpus.suite.spec import Config, KernelSpec

TINY = {"tiny": [{"N": 64}], "small": [], "default": [], "large": []}


@triton.jit
def _copy_with_bad_range(x_ptr, out_ptr, n, BLOCK: tl.constexpr, WIDTH: tl.constexpr):
    # tl.arange needs a power-of-two extent: WIDTH=48 makes every config a compile error.
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, WIDTH)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def _off_by_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)


@triton.jit
def _never_ends(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    value = tl.abs(tl.load(x_ptr)) + 1.0
    # Adding 1.0 to a float32 >= 2**24 leaves it unchanged: the loop never ends.
    while value > 0.0:
        value = value + 1.0
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


class _CopySpec(KernelSpec):
    category = "test"
    dtypes = ("float32",)
    shapes = TINY
    outputs = ("out_ptr",)

    def config_space(self) -> list[Config]:
        return [Config({"BLOCK": 32}, num_warps=1), Config({"BLOCK": 64}, num_warps=2)]

    def default_config(self) -> Config:
        return self.config_space()[0]

    def make_inputs(self, dims, dtype, device, seed):
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(dims["N"], generator=generator).to(device)
        return {"x_ptr": x, "out_ptr": torch.empty_like(x), "n": dims["N"]}

    def bind(self, inputs, dims, config):
        grid = (triton.cdiv(dims["N"], config.kwargs["BLOCK"]),)
        return grid, {**inputs, **config.kwargs}

    def reference(self, inputs, dims):
        return {"out_ptr": inputs["x_ptr"].clone()}

    def flops(self, dims):
        return 0

    def bytes_moved(self, dims, dtype):
        return 8 * dims["N"]


@register
class BrokenCompile(_CopySpec):
    name = "test_broken_compile"

    @property
    def kernel(self):
        return _copy_with_bad_range

    def bind(self, inputs, dims, config):
        grid, args = super().bind(inputs, dims, config)
        return grid, {**args, "WIDTH": 48}


@register
class WrongOutput(_CopySpec):
    name = "test_wrong_output"

    @property
    def kernel(self):
        return _off_by_one


@register
class NeverEnds(_CopySpec):
    name = "test_never_ends"

    @property
    def kernel(self):
        return _never_ends
