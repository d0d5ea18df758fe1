"""Test-only suite: a family whose run cannot be set up on the benchmark device (its
reference fails, as one that needs more memory than the device has would).

Loaded by the harvest tests with ``--suite tests.corpus.harvest.setup_kernels``.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from corpus.suite.registry import register
from corpus.suite.spec import Config, KernelSpec

REFERENCE_FAILURE = "reference needs 80 GiB of scratch"
TINY = {"tiny": [{"N": 64}], "small": [], "default": [], "large": []}


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@register
class SetupFails(KernelSpec):
    name = "test_setup_fails"
    category = "test"
    dtypes = ("float32",)
    shapes = TINY
    outputs = ("out_ptr",)

    @property
    def kernel(self):
        return _copy

    def config_space(self) -> list[Config]:
        return [Config({"BLOCK": 32}, num_warps=1), Config({"BLOCK": 64}, num_warps=2)]

    def default_config(self) -> Config:
        return self.config_space()[0]

    def make_inputs(self, dims, dtype, device, seed):
        x = torch.randn(dims["N"], generator=torch.Generator().manual_seed(seed)).to(device)
        return {"x_ptr": x, "out_ptr": torch.empty_like(x), "n": dims["N"]}

    def bind(self, inputs, dims, config):
        return (triton.cdiv(dims["N"], config.kwargs["BLOCK"]),), {**inputs, **config.kwargs}

    def reference(self, inputs, dims):
        raise MemoryError(REFERENCE_FAILURE)

    def flops(self, dims):
        return 0

    def bytes_moved(self, dims, dtype):
        return 8 * dims["N"]


SETUP_FAILS_WHILE = "KERNEL_CORPUS_TEST_SETUP_FAILS"
"""While this variable is set (the benchmark worker inherits the harvest's environment), the
reference of ``test_setup_fails_once`` fails: a run whose setup fails for a passing reason."""


@register
class SetupFailsOnce(SetupFails):
    name = "test_setup_fails_once"

    def reference(self, inputs, dims):
        if os.environ.get(SETUP_FAILS_WHILE):
            raise MemoryError(REFERENCE_FAILURE)
        return {"out_ptr": inputs["x_ptr"].clone()}
