"""Row argmax over a vocabulary: ``out[m] = argmax(logits[m, :])`` (int64, first index of
the maximum, as ``torch.argmax``), the greedy-decoding step of a language model.

Each program owns a row and loops over it in ``BLOCK_N`` chunks, keeping a per-lane best
value and index (strict ``>`` so a lane keeps its earliest maximum); the final reduction
takes the maximum and, among lanes that hold it, the smallest index. The chunk loop is
load-pipelined num_stages deep (``NUM_STAGES``, see ``_rowwise``).
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
def argmax_kernel(x_ptr, out_ptr, N, stride_xm, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_xm
    cols = tl.arange(0, BLOCK_N)
    best = tl.full((BLOCK_N,), float("-inf"), dtype=tl.float32)
    best_index = tl.zeros((BLOCK_N,), dtype=tl.int32)
    for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
        x = tl.load(x_row + start + cols, mask=start + cols < N, other=float("-inf")).to(tl.float32)
        better = x > best
        best = tl.where(better, x, best)
        best_index = tl.where(better, start + cols, best_index)
    peak = tl.max(best, axis=0)
    first = tl.min(tl.where(best == peak, best_index, N), axis=0)
    tl.store(out_ptr + row, first.to(tl.int64))


def _shape(m: int, v: int) -> dict[str, int]:
    return {"M": m, "V": v}


@register
class Argmax(KernelSpec):
    name = "argmax"
    category = "reduction"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_N": Role.REDUCTION_BLOCK}
    shapes: ClassVar[Mapping[str, list[Dims]]] = {
        "tiny": [_shape(5, 1000), _shape(12, 300)],
        "small": [_shape(32, 32000), _shape(16, 50257)],
        "default": [
            _shape(1, 32000),  # single-sequence decode (LLaMA-2)
            _shape(64, 32000),
            _shape(256, 128256),  # batched decode (LLaMA-3)
            _shape(1024, 50257),  # GPT-2
            _shape(32, 151936),  # Qwen2
            _shape(128, 256000),  # Gemma
            _shape(2048, 32000),  # prefill logits
            _shape(8, 128256),
        ],
        "large": [_shape(8192, 128256), _shape(4096, 256000), _shape(16384, 50257)],
    }

    @property
    def kernel(self) -> Any:
        return argmax_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_N": (256, 512, 1024, 2048, 4096, 8192)}, num_warps=(1, 2, 4, 8, 16), num_stages=(1, 2, 3)
        )

    def default_config(self) -> Config:
        # num_stages=1: a tiny row is one chunk, with nothing to pipeline.
        return Config({"BLOCK_N": 1024}, num_warps=4, num_stages=1)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block = config.kwargs["BLOCK_N"]
        if block > 2 * next_pow2(dims["V"]):
            return f"BLOCK_N={block} is over twice the row length {dims['V']}"
        # Value and index vectors are both live across the loop.
        return (
            per_thread_reason(block, config.num_warps, high=32)
            or stages_reason(config, cdiv(dims["V"], block))
            or shared_memory_reason(config, block * dtype_bytes(dtype))
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, v = dims["M"], dims["V"]
        return {"logits": seeded_randn((m, v), dtype, device, seed, scale=4.0), "out": output_buffer((m,), "int64", device)}

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        logits = inputs["logits"]
        args = {
            "x_ptr": logits,
            "out_ptr": inputs["out"],
            "N": dims["V"],
            "stride_xm": logits.stride(0),
            **config.kwargs,
            "NUM_STAGES": config.num_stages,
        }
        return (dims["M"],), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        # float32 comparison equals comparison in the input dtype; argmax takes the first maximum.
        return {"out": inputs["logits"].float().argmax(dim=1)}

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return (0.0, 0.0)

    def flops(self, dims: Dims) -> int:
        return dims["M"] * dims["V"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return dtype_bytes(dtype) * dims["M"] * dims["V"] + 8 * dims["M"]
