"""Cross-entropy over a vocabulary with an online softmax: one row of logits per program.

The row is streamed once in BLOCK_V chunks while a running max and a rescaled running sum
give logsumexp; the target's logit is read directly, so the loss is lse - logit[target].
Rows whose target is ``ignore_index`` get a loss of zero (their lse is still written). The
chunk loop is load-pipelined num_stages deep.
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
    seeded_randint,
    seeded_randn,
)
from schemas.enums import Role

BLOCK_V_VALUES = (512, 1024, 2048, 4096, 8192, 16384)
IGNORE_INDEX = -100
IGNORED_ROW_STRIDE = 7
"""Every 7th row's target is ``IGNORE_INDEX`` (padding tokens)."""


@triton.jit
def cross_entropy_kernel(
    logits_ptr,
    target_ptr,
    loss_ptr,
    lse_ptr,
    V,
    stride_m,
    ignore_index,
    BLOCK_V: tl.constexpr,
    SINGLE_CHUNK: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    row = tl.program_id(0)
    row_logits = logits_ptr + row.to(tl.int64) * stride_m
    cols = tl.arange(0, BLOCK_V)
    if SINGLE_CHUNK:
        x = tl.load(row_logits + cols, mask=cols < V, other=-float("inf")).to(tl.float32)
        row_max = tl.max(x, axis=0)
        lse = row_max + tl.log(tl.sum(tl.exp(x - row_max), axis=0))
    else:
        run_max = -float("inf")
        run_sum = 0.0
        for start in tl.range(0, V, BLOCK_V, num_stages=NUM_STAGES):
            c = start + cols
            x = tl.load(row_logits + c, mask=c < V, other=-float("inf")).to(tl.float32)
            new_max = tl.maximum(run_max, tl.max(x, axis=0))
            run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
            run_max = new_max
        lse = run_max + tl.log(run_sum)
    target = tl.load(target_ptr + row)
    counted = target != ignore_index
    target_logit = tl.load(row_logits + tl.where(counted, target, 0)).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(counted, lse - target_logit, 0.0))
    tl.store(lse_ptr + row, lse)


@register
class CrossEntropy(KernelSpec):
    """loss[m] = logsumexp(logits[m]) - logits[m, target[m]] (0 where target is ignored), and
    lse[m], both float32, for logits of shape (M, V)."""

    name = "cross_entropy"
    category = "loss"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("loss", "lse")
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_V": Role.REDUCTION_BLOCK}
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [
            {"M": 4, "V": 3000},
            {"M": 6, "V": 2048},
            {"M": 3, "V": 5000},
        ],
        "small": [
            {"M": 256, "V": 32000},
            {"M": 64, "V": 128256},
        ],
        "default": [
            # (tokens, vocabulary) of language-model heads
            {"M": 4096, "V": 32000},
            {"M": 8192, "V": 32768},
            {"M": 2048, "V": 50257},
            {"M": 8192, "V": 50304},
            {"M": 4096, "V": 128256},
            {"M": 2048, "V": 151936},
            {"M": 1024, "V": 256000},
            {"M": 16384, "V": 8192},
        ],
        "large": [
            {"M": 16384, "V": 128256},
            {"M": 8192, "V": 256000},
        ],
    }

    @property
    def kernel(self) -> Any:
        return cross_entropy_kernel

    def config_space(self) -> list[Config]:
        return product_configs({"BLOCK_V": BLOCK_V_VALUES}, num_warps=WARPS, num_stages=(1, 2, 3))

    def default_config(self) -> Config:
        return Config({"BLOCK_V": 2048}, num_warps=4, num_stages=1)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block_v = config.kwargs["BLOCK_V"]
        chunks = cdiv(dims["V"], block_v)
        return (
            block_reason("BLOCK_V", block_v, dims["V"], floor=BLOCK_V_VALUES[0])
            or per_thread_reason(block_v, config.num_warps, high=64 if chunks == 1 else 32)
            or stages_reason(config, 0 if chunks == 1 else chunks)
            or shared_memory_reason(config, block_v * dtype_bytes(dtype))
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, v = dims["M"], dims["V"]
        target = seeded_randint((m,), v, device, seed + 1)
        target[::IGNORED_ROW_STRIDE] = IGNORE_INDEX
        return {
            "logits": seeded_randn((m, v), dtype, device, seed, scale=2.0),
            "target": target,
            "loss": output_buffer((m,), "float32", device),
            "lse": output_buffer((m,), "float32", device),
            "ignore_index": IGNORE_INDEX,
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        block_v = config.kwargs["BLOCK_V"]
        args = {
            "logits_ptr": inputs["logits"],
            "target_ptr": inputs["target"],
            "loss_ptr": inputs["loss"],
            "lse_ptr": inputs["lse"],
            "V": dims["V"],
            "stride_m": inputs["logits"].stride(0),
            "ignore_index": inputs["ignore_index"],
            "BLOCK_V": block_v,
            "SINGLE_CHUNK": dims["V"] <= block_v,
            "NUM_STAGES": config.num_stages,
        }
        return (dims["M"],), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        logits = inputs["logits"].float()
        loss = torch.nn.functional.cross_entropy(
            logits, inputs["target"], reduction="none", ignore_index=inputs["ignore_index"]
        )
        return {"loss": loss, "lse": torch.logsumexp(logits, dim=-1)}

    def flops(self, dims: Dims) -> int:
        # max, subtract, exp, sum per logit
        return 4 * dims["M"] * dims["V"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        m = dims["M"]
        return m * dims["V"] * dtype_bytes(dtype) + m * 8 + 2 * m * 4

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # float32 outputs from the same (rounded) logits: only summation order differs
        return (2e-4, 2e-4)
