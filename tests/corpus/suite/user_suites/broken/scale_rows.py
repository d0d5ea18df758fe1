"""A row-scaling family written like a third-party suite, with two contract bugs: its
default config is too narrow for the tiny shape, and ``bind`` forgets the ``eps`` scalar."""

from __future__ import annotations

from typing import ClassVar

import triton
import triton.language as tl

from corpus.suite.registry import register
from corpus.suite.spec import (
    Config,
    KernelSpec,
    dtype_bytes,
    output_buffer,
    product_configs,
    seeded_randn,
)


@triton.jit
def scale_rows_kernel(x_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, x / (tl.max(tl.abs(x), axis=0) + eps), mask=mask)


@register
class ScaleRows(KernelSpec):
    name = "test_broken_scale_rows"
    category = "normalization"
    dtypes = ("float32",)
    outputs = ("out",)
    roles: ClassVar[dict[str, str]] = {"BLOCK": "reduction_block"}
    shapes: ClassVar[dict[str, list[dict[str, int]]]] = {
        "tiny": [{"M": 4, "N": 200}],
        "small": [{"M": 64, "N": 1000}],
        "default": [{"M": 1024, "N": 100}],
        "large": [{"M": 4096, "N": 100}],
    }

    @property
    def kernel(self):  # type: ignore[no-untyped-def]
        return scale_rows_kernel

    def config_space(self):  # type: ignore[no-untyped-def]
        return product_configs({"BLOCK": (128, 256, 1024)}, num_warps=(1, 2, 4))

    def default_config(self):  # type: ignore[no-untyped-def]
        return Config({"BLOCK": 128}, num_warps=1)

    def invalid_reason(self, config, dims, dtype):  # type: ignore[no-untyped-def]
        if config.kwargs["BLOCK"] < dims["N"]:
            return f"BLOCK {config.kwargs['BLOCK']} < row length {dims['N']}"
        return None

    def make_inputs(self, dims, dtype, device, seed):  # type: ignore[no-untyped-def]
        shape = (dims["M"], dims["N"])
        return {
            "x": seeded_randn(shape, dtype, device, seed),
            "out": output_buffer(shape, dtype, device),
        }

    def bind(self, inputs, dims, config):  # type: ignore[no-untyped-def]
        args = {
            "x_ptr": inputs["x"],
            "out_ptr": inputs["out"],
            "n_cols": dims["N"],
            **config.kwargs,
        }
        return (dims["M"],), args  # the bug: no 'eps'

    def reference(self, inputs, dims):  # type: ignore[no-untyped-def]
        x = inputs["x"]
        return {"out": x / (x.abs().amax(dim=1, keepdim=True) + 1e-6)}

    def flops(self, dims):  # type: ignore[no-untyped-def]
        return 3 * dims["M"] * dims["N"]

    def bytes_moved(self, dims, dtype):  # type: ignore[no-untyped-def]
        return 2 * dims["M"] * dims["N"] * dtype_bytes(dtype)
