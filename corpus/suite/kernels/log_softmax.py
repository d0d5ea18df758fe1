"""Row log-softmax; each program walks ROWS_PER_PROG consecutive rows one at a time.

A row that fits one BLOCK_N chunk is read once. Longer rows use a lane-wise online pass:
every lane keeps its own running max and rescaled sum across chunks, and the lanes are
combined once after the loop (one cross-lane reduction per row instead of two per chunk);
a second pass writes x - logsumexp. The innermost loop with loads (the row loop for
one-chunk rows, else the chunk loops) is load-pipelined num_stages deep.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch
import triton
import triton.language as tl

from corpus.suite.kernels._rowwise import (
    WARPS,
    block_reason,
    shared_memory_reason,
    stages_reason,
)
from corpus.suite.registry import register
from corpus.suite.spec import (
    Config,
    Dims,
    KernelSpec,
    cdiv,
    dtype_bytes,
    output_buffer,
    per_thread_reason,
    product_configs,
    seeded_randn,
)
from schemas.enums import Role

BLOCK_N_VALUES = (512, 1024, 2048, 4096, 8192)


@triton.jit
def log_softmax_kernel(
    x_ptr,
    y_ptr,
    M,
    N,
    stride_xm,
    stride_ym,
    ROWS_PER_PROG: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SINGLE_CHUNK: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    first_row = tl.program_id(0) * ROWS_PER_PROG
    cols = tl.arange(0, BLOCK_N)
    if SINGLE_CHUNK:
        # Whole rows: the row loop is the one to pipeline (the next row's load overlaps
        # this row's math).
        col_ok = cols < N
        for r in tl.range(0, ROWS_PER_PROG, num_stages=NUM_STAGES):
            # The last program's surplus iterations redo row M - 1 and store identical values.
            row = tl.minimum(first_row + r, M - 1).to(tl.int64)
            x = tl.load(x_ptr + row * stride_xm + cols, mask=col_ok, other=-float("inf")).to(tl.float32)
            row_max = tl.max(x, axis=0)
            lse = row_max + tl.log(tl.sum(tl.exp(x - row_max), axis=0))
            tl.store(y_ptr + row * stride_ym + cols, (x - lse).to(y_ptr.dtype.element_ty), mask=col_ok)
    else:
        for r in range(ROWS_PER_PROG):
            row = tl.minimum(first_row + r, M - 1).to(tl.int64)
            x_row = x_ptr + row * stride_xm
            y_row = y_ptr + row * stride_ym
            # N > BLOCK_N, so the first chunk is full and every lane max is finite after it.
            lane_max = tl.full([BLOCK_N], -float("inf"), tl.float32)
            lane_sum = tl.zeros([BLOCK_N], tl.float32)
            for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
                c = start + cols
                x = tl.load(x_row + c, mask=c < N, other=-float("inf")).to(tl.float32)
                new_max = tl.maximum(lane_max, x)
                lane_sum = lane_sum * tl.exp(lane_max - new_max) + tl.exp(x - new_max)
                lane_max = new_max
            row_max = tl.max(lane_max, axis=0)
            lse = row_max + tl.log(tl.sum(lane_sum * tl.exp(lane_max - row_max), axis=0))
            for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
                c = start + cols
                col_ok = c < N
                x = tl.load(x_row + c, mask=col_ok, other=0.0).to(tl.float32)
                tl.store(y_row + c, (x - lse).to(y_ptr.dtype.element_ty), mask=col_ok)


@register
class LogSoftmax(KernelSpec):
    """y = log_softmax(x, dim=-1) for x of shape (M, N)."""

    name = "log_softmax"
    category = "normalization"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("y",)
    roles: ClassVar[Mapping[str, str]] = {
        "ROWS_PER_PROG": Role.ROWS_PER_PROGRAM,
        "BLOCK_N": Role.REDUCTION_BLOCK,
    }
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [
            {"M": 6, "N": 1024},
            {"M": 9, "N": 700},
            {"M": 4, "N": 1800},
        ],
        "small": [
            {"M": 512, "N": 1024},
            {"M": 128, "N": 32000},
        ],
        "default": [
            # classification heads and short rows
            {"M": 32768, "N": 768},
            {"M": 16384, "N": 1000},
            {"M": 16384, "N": 2048},
            {"M": 8192, "N": 4096},
            # token log-probabilities over a vocabulary (RL fine-tuning, distillation)
            {"M": 4096, "N": 32000},
            {"M": 2048, "N": 50257},
            {"M": 4096, "N": 128256},
            {"M": 1024, "N": 151936},
        ],
        "large": [
            {"M": 16384, "N": 128256},
            {"M": 262144, "N": 1024},
        ],
    }

    @property
    def kernel(self) -> Any:
        return log_softmax_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"ROWS_PER_PROG": (1, 4, 16), "BLOCK_N": BLOCK_N_VALUES},
            num_warps=WARPS,
            num_stages=(1, 2),
        )

    def default_config(self) -> Config:
        return Config({"ROWS_PER_PROG": 1, "BLOCK_N": 1024}, num_warps=4, num_stages=1)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        rows, block_n = config.kwargs["ROWS_PER_PROG"], config.kwargs["BLOCK_N"]
        chunks = cdiv(dims["N"], block_n)
        if rows > 1 and dims["N"] > 8192:
            return f"ROWS_PER_PROG={rows} on rows of {dims['N']}: the row loop only pays off for short rows"
        # the innermost loop with loads is the chunk loop, or the row loop for one-chunk rows
        trips = chunks if chunks > 1 else (rows if rows > 1 else 0)
        return (
            block_reason("BLOCK_N", block_n, dims["N"], floor=BLOCK_N_VALUES[0])
            or block_reason("ROWS_PER_PROG", rows, dims["M"])
            or per_thread_reason(block_n, config.num_warps, high=64 if chunks == 1 else 32)
            or stages_reason(config, trips)
            or shared_memory_reason(config, block_n * dtype_bytes(dtype))
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        shape = (dims["M"], dims["N"])
        return {"x": seeded_randn(shape, dtype, device, seed, scale=4.0), "y": output_buffer(shape, dtype, device)}

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        x, y = inputs["x"], inputs["y"]
        rows, block_n = config.kwargs["ROWS_PER_PROG"], config.kwargs["BLOCK_N"]
        args = {
            "x_ptr": x,
            "y_ptr": y,
            "M": dims["M"],
            "N": dims["N"],
            "stride_xm": x.stride(0),
            "stride_ym": y.stride(0),
            "ROWS_PER_PROG": rows,
            "BLOCK_N": block_n,
            "SINGLE_CHUNK": dims["N"] <= block_n,
            "NUM_STAGES": config.num_stages,
        }
        return (cdiv(dims["M"], rows),), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        x = inputs["x"]
        return {"y": torch.log_softmax(x.float(), dim=-1).to(x.dtype)}

    def flops(self, dims: Dims) -> int:
        # max, subtract, exp, sum, subtract: about 5 operations per element
        return 5 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return 2 * dims["M"] * dims["N"] * dtype_bytes(dtype)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # outputs are around -log(N) (about -10): relative rounding of the output dominates
        return {"float32": (1e-4, 1e-5), "float16": (1e-2, 2e-3), "bfloat16": (5e-2, 1e-2)}.get(dtype, (1e-4, 1e-5))
