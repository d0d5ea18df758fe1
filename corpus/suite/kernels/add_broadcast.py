"""Scaled residual add with broadcasting: ``out = x + alpha * y``.

``x`` is ``[M, N]``; ``y`` is either ``[M, N]`` (residual add) or one row ``[1, N]`` that is
broadcast over every row (bias add) — the kernel reads it with a row stride of 0, as
PyTorch's broadcasting does. 2D tiles of ``BLOCK_M x BLOCK_N``.
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
    seeded_randn,
)
from schemas.enums import Role


@triton.jit
def add_broadcast_kernel(
    x_ptr,
    y_ptr,
    out_ptr,
    M,
    N,
    stride_xm,
    stride_ym,
    stride_om,
    alpha,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    # 64-bit row offsets: M * N can exceed 2**31 elements at large scale.
    rows64 = rows.to(tl.int64)[:, None]
    x = tl.load(x_ptr + rows64 * stride_xm + cols[None, :], mask=mask)
    y = tl.load(y_ptr + rows64 * stride_ym + cols[None, :], mask=mask)
    out = x.to(tl.float32) + alpha * y.to(tl.float32)
    tl.store(out_ptr + rows64 * stride_om + cols[None, :], out.to(out_ptr.dtype.element_ty), mask=mask)


def _shape(m: int, n: int, broadcast: bool) -> dict[str, int]:
    return {"M": m, "N": n, "YROWS": 1 if broadcast else m}


@register
class AddBroadcast(KernelSpec):
    name = "add_broadcast"
    category = "pointwise"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_M": Role.TILE_M, "BLOCK_N": Role.TILE_N}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(16, 200, True), _shape(8, 130, False)],
        "small": [_shape(1024, 1024, True), _shape(2048, 768, False)],
        "default": [
            _shape(4096, 4096, False),
            _shape(8192, 4096, False),
            _shape(4096, 14336, False),
            _shape(16384, 1024, False),
            _shape(4096, 4096, True),
            _shape(3136, 768, True),
            _shape(8192, 11008, True),
            _shape(32768, 512, True),
        ],
        "large": [_shape(16384, 8192, False), _shape(32768, 4096, True), _shape(8192, 28672, False)],
    }

    @property
    def kernel(self) -> Any:
        return add_broadcast_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_M": (1, 4, 16, 64), "BLOCK_N": (64, 128, 256, 512, 1024)}, num_warps=(1, 2, 4, 8)
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 16, "BLOCK_N": 128}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block_m, block_n = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        if block_n > 2 * next_pow2(dims["N"]):
            return f"BLOCK_N={block_n} is over twice the row length {dims['N']}"
        if block_m > 2 * next_pow2(dims["M"]):
            return f"BLOCK_M={block_m} is over twice the row count {dims['M']}"
        return per_thread_reason(block_m * block_n, config.num_warps, high=64)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n = dims["M"], dims["N"]
        return {
            "x": seeded_randn((m, n), dtype, device, seed),
            "y": seeded_randn((dims["YROWS"], n), dtype, device, seed + 1),
            "out": output_buffer((m, n), dtype, device),
            "alpha": 0.5,
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        m, n = dims["M"], dims["N"]
        x, y, out = inputs["x"], inputs["y"], inputs["out"]
        grid = (cdiv(m, config.kwargs["BLOCK_M"]), cdiv(n, config.kwargs["BLOCK_N"]))
        args = {
            "x_ptr": x,
            "y_ptr": y,
            "out_ptr": out,
            "M": m,
            "N": n,
            "stride_xm": x.stride(0),
            "stride_ym": 0 if dims["YROWS"] == 1 else y.stride(0),
            "stride_om": out.stride(0),
            "alpha": inputs["alpha"],
            **config.kwargs,
        }
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        x, y = inputs["x"], inputs["y"]
        return {"out": (x.float() + inputs["alpha"] * y.float()).to(x.dtype)}

    def flops(self, dims: Dims) -> int:
        return 2 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        m, n = dims["M"], dims["N"]
        return dtype_bytes(dtype) * (2 * m * n + dims["YROWS"] * n)
