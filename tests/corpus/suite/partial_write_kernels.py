"""Test-only suite: a kernel that leaves part of its output unwritten.

Its ``make_inputs`` zero-fills the output and its reference is zero where the kernel writes
nothing, so only the NaN poisoning of outputs before the checked launch can catch the bug.
Loaded (in Triton's interpreter) by ``tests/corpus/suite/test_verify.py``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from corpus.suite.registry import register
from corpus.suite.spec import Config, KernelSpec

TINY = {"tiny": [{"N": 64}], "small": [], "default": [], "large": []}


@triton.jit
def _copy_first_half(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # the bug: the second half of out is never stored, it keeps whatever the buffer held
    mask = offsets < n // 2
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@register
class PartialWrite(KernelSpec):
    name = "test_partial_write"
    category = "test"
    dtypes = ("float32",)
    shapes = TINY
    outputs = ("out_ptr",)

    @property
    def kernel(self):
        return _copy_first_half

    def config_space(self) -> list[Config]:
        return [Config({"BLOCK": 32}, num_warps=1)]

    def default_config(self) -> Config:
        return self.config_space()[0]

    def make_inputs(self, dims, dtype, device, seed):
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(dims["N"], generator=generator).to(device)
        return {"x_ptr": x, "out_ptr": torch.zeros_like(x), "n": dims["N"]}

    def bind(self, inputs, dims, config):
        grid = (triton.cdiv(dims["N"], config.kwargs["BLOCK"]),)
        return grid, {**inputs, **config.kwargs}

    def reference(self, inputs, dims):
        expected = inputs["x_ptr"].clone()
        expected[dims["N"] // 2 :] = 0.0
        return {"out_ptr": expected}

    def flops(self, dims):
        return 0

    def bytes_moved(self, dims, dtype):
        return 8 * dims["N"]
