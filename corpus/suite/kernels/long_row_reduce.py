"""Row L2 norm over long rows: ``out[m] = sqrt(sum(x[m, :] ** 2))`` (float32), for rows far
longer than a register block (gradient-norm and vocabulary-wide statistics).

Each program owns a row and loops over it in ``BLOCK_N`` chunks, accumulating squares in a
float32 vector that is reduced once at the end; the chunk loop is load-pipelined num_stages
deep (``NUM_STAGES``, see ``_rowwise``).
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


@triton.jit
def long_row_reduce_kernel(x_ptr, out_ptr, N, stride_xm, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    cols = tl.arange(0, BLOCK_N)
    squares = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
        x = tl.load(x_row + start + cols, mask=start + cols < N, other=0.0).to(tl.float32)
        squares += x * x
    tl.store(out_ptr + row, tl.sqrt(tl.sum(squares, axis=0)))


def _shape(m: int, n: int) -> dict[str, int]:
    return {"M": m, "N": n}


@register
class LongRowReduce(KernelSpec):
    name = "long_row_reduce"
    category = "reduction"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_N": Role.REDUCTION_BLOCK}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(4, 3000), _shape(2, 1200)],
        "small": [_shape(64, 65536), _shape(256, 32000)],
        "default": [
            _shape(32, 1048576),
            _shape(128, 262144),
            _shape(1024, 65536),
            _shape(4096, 32000),  # vocabulary rows (LLaMA-2)
            _shape(512, 128256),  # vocabulary rows (LLaMA-3)
            _shape(8, 4194304),
            _shape(2048, 50257),  # vocabulary rows (GPT-2)
            _shape(256, 151936),  # vocabulary rows (Qwen2)
        ],
        "large": [_shape(16, 16777216), _shape(8192, 128256), _shape(1024, 1048576)],
    }

    @property
    def kernel(self) -> Any:
        return long_row_reduce_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_N": (512, 1024, 2048, 4096, 8192)}, num_warps=(1, 2, 4, 8, 16), num_stages=(1, 2, 3, 4)
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_N": 1024}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block = config.kwargs["BLOCK_N"]
        if block > next_pow2(dims["N"]):
            return f"BLOCK_N={block} is longer than the row ({dims['N']}): no loop left to tune"
        return (
            per_thread_reason(block, config.num_warps, high=32)
            or stages_reason(config, cdiv(dims["N"], block))
            or shared_memory_reason(config, block * dtype_bytes(dtype))
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n = dims["M"], dims["N"]
        return {"x": seeded_randn((m, n), dtype, device, seed), "out": output_buffer((m,), "float32", device)}

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        x = inputs["x"]
        args = {
            "x_ptr": x,
            "out_ptr": inputs["out"],
            "N": dims["N"],
            "stride_xm": x.stride(0),
            **config.kwargs,
            "NUM_STAGES": config.num_stages,
        }
        return (dims["M"],), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        x = inputs["x"].double()
        return {"out": x.square().sum(dim=1).sqrt().float()}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # float32 accumulation in a different order than the float64 reference.
        return (1e-3, 1e-4)

    def flops(self, dims: Dims) -> int:
        return 2 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return dtype_bytes(dtype) * dims["M"] * dims["N"] + 4 * dims["M"]
