"""Row-wise KL divergence KL(P || Q) from log-probabilities of both distributions, as used in
distillation losses: loss[m] = sum_n exp(log_p) * (log_p - log_q).

Tiles are BLOCK_M rows x BLOCK_N columns; every lane accumulates its own partial sum over
the column chunks, and the lanes of a row are reduced once after the loop, which is
load-pipelined num_stages deep.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import triton
import triton.language as tl

from corpus.suite.kernels._rowwise import (
    RowTileSpec,
)
from corpus.suite.registry import register
from corpus.suite.spec import (
    Config,
    Dims,
    cdiv,
    dtype_bytes,
    output_buffer,
    seeded_randn,
)


@triton.jit
def kl_div_kernel(
    log_q_ptr,
    log_p_ptr,
    loss_ptr,
    M,
    N,
    stride_m,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    row_offsets = tl.minimum(rows, M - 1).to(tl.int64)[:, None] * stride_m
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in tl.range(0, N, BLOCK_N, num_stages=NUM_STAGES):
        c = start + cols
        col_ok = c[None, :] < N
        log_q = tl.load(log_q_ptr + row_offsets + c[None, :], mask=col_ok, other=0.0).to(tl.float32)
        log_p = tl.load(log_p_ptr + row_offsets + c[None, :], mask=col_ok, other=0.0).to(tl.float32)
        acc += tl.where(col_ok, tl.exp(log_p) * (log_p - log_q), 0.0)
    tl.store(loss_ptr + rows, tl.sum(acc, axis=1), mask=row_ok)


def _log_probs(dims: Dims, dtype: str, device: str, seed: int) -> torch.Tensor:
    logits = seeded_randn((dims["M"], dims["N"]), "float32", device, seed, scale=2.0)
    return torch.log_softmax(logits, dim=-1).to(getattr(torch, dtype))


@register
class KLDivergence(RowTileSpec):
    """loss[m] = KL(P_m || Q_m) in float32, with P and Q given as log-probabilities of shape
    (M, N) (``kl_div(log_q, log_p, reduction='none', log_target=True).sum(-1)``)."""

    name = "kl_div"
    category = "loss"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("loss",)
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [
            {"M": 4, "N": 1024},
            {"M": 7, "N": 900},
            {"M": 5, "N": 2500},
        ],
        "small": [
            {"M": 512, "N": 1024},
            {"M": 64, "N": 32000},
        ],
        "default": [
            # distillation over a vocabulary: (tokens, vocab)
            {"M": 4096, "N": 32000},
            {"M": 2048, "N": 50257},
            {"M": 2048, "N": 128256},
            {"M": 1024, "N": 151936},
            {"M": 512, "N": 256000},
            # attention-map and class-distribution matching
            {"M": 65536, "N": 1024},
            {"M": 16384, "N": 4096},
            {"M": 32768, "N": 1000},
        ],
        "large": [
            {"M": 8192, "N": 128256},
            {"M": 262144, "N": 1024},
        ],
    }

    @property
    def kernel(self) -> Any:
        return kl_div_kernel

    def stage_bytes(self, block_m: int, block_n: int, dtype: str) -> int:
        return 2 * block_m * block_n * dtype_bytes(dtype)

    def live_limit(self, chunks: int) -> int:
        # two input chunks plus the accumulator are live in the loop
        return 32

    def loop_trips(self, chunks: int) -> int:
        return chunks

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        return {
            "log_q": _log_probs(dims, dtype, device, seed),
            "log_p": _log_probs(dims, dtype, device, seed + 1),
            "loss": output_buffer((dims["M"],), "float32", device),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        block_m = config.kwargs["BLOCK_M"]
        args = {
            "log_q_ptr": inputs["log_q"],
            "log_p_ptr": inputs["log_p"],
            "loss_ptr": inputs["loss"],
            "M": dims["M"],
            "N": dims["N"],
            "stride_m": inputs["log_q"].stride(0),
            "BLOCK_M": block_m,
            "BLOCK_N": config.kwargs["BLOCK_N"],
            "NUM_STAGES": config.num_stages,
        }
        return (cdiv(dims["M"], block_m),), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        pointwise = torch.nn.functional.kl_div(
            inputs["log_q"].float(), inputs["log_p"].float(), reduction="none", log_target=True
        )
        return {"loss": pointwise.sum(dim=-1)}

    def flops(self, dims: Dims) -> int:
        # exp, subtract, multiply, add per element
        return 4 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        return 2 * dims["M"] * dims["N"] * dtype_bytes(dtype) + dims["M"] * 4

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # float32 sums of the same (rounded) inputs: only summation order differs
        return (1e-4, 1e-4)
