"""Matrix-vector product y = A @ x for a row-major A of shape (M, K): the decode-time shape of
every linear layer and of the language-model head.

Each program owns BLOCK_M rows and walks K in BLOCK_K chunks, accumulating the products in
a BLOCK_M x BLOCK_K float32 tile; the tile is reduced across K once after the loop. When
BLOCK_K divides K the loads carry no column mask (EVEN_K). The K loop is load-pipelined
num_stages deep.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch
import triton
import triton.language as tl

from corpus.suite.kernels._rowwise import block_reason, shared_memory_reason, stages_reason
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


@triton.jit
def gemv_kernel(
    a_ptr,
    x_ptr,
    y_ptr,
    M,
    K,
    stride_am,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
    EVEN_K: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    # Tail rows re-read row M - 1 so the loads need no row mask.
    a_rows = a_ptr + tl.minimum(rows, M - 1).to(tl.int64)[:, None] * stride_am
    cols = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_K], tl.float32)
    for start in tl.range(0, K, BLOCK_K, num_stages=NUM_STAGES):
        k = start + cols
        if EVEN_K:
            a = tl.load(a_rows + k[None, :])
            x = tl.load(x_ptr + k)
        else:
            a = tl.load(a_rows + k[None, :], mask=k[None, :] < K, other=0.0)
            x = tl.load(x_ptr + k, mask=k < K, other=0.0)
        acc += a.to(tl.float32) * x.to(tl.float32)[None, :]
    y = tl.sum(acc, axis=1)
    tl.store(y_ptr + rows, y.to(y_ptr.dtype.element_ty), mask=rows < M)


@register
class Gemv(KernelSpec):
    """y = A @ x with A (M, K), x (K,), y (M,), accumulated in float32."""

    name = "gemv"
    category = "gemv"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("y",)
    roles: ClassVar[Mapping[str, str]] = {"BLOCK_M": Role.TILE_M, "BLOCK_K": Role.TILE_K}
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [
            {"M": 64, "K": 256},
            {"M": 40, "K": 320},
            {"M": 96, "K": 512},
        ],
        "small": [
            {"M": 2048, "K": 2048},
            {"M": 1000, "K": 1536},
        ],
        "default": [
            # (out features, in features) of decoder linear layers at batch size 1
            {"M": 4096, "K": 4096},  # Llama 7B attention projections
            {"M": 6144, "K": 4096},  # Llama-3 8B fused q/k/v
            {"M": 11008, "K": 4096},  # Llama-2 7B MLP up
            {"M": 4096, "K": 11008},  # Llama-2 7B MLP down
            {"M": 14336, "K": 4096},  # Llama-3 8B MLP up
            {"M": 4096, "K": 14336},  # Llama-3 8B MLP down
            {"M": 28672, "K": 8192},  # Llama-3 70B MLP up
            {"M": 8192, "K": 28672},  # Llama-3 70B MLP down
            {"M": 128256, "K": 4096},  # Llama-3 LM head
        ],
        "large": [
            {"M": 152064, "K": 8192},
            {"M": 53248, "K": 16384},
        ],
    }

    @property
    def kernel(self) -> Any:
        return gemv_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_M": (4, 8, 16, 32, 64), "BLOCK_K": (128, 256, 512, 1024)},
            num_warps=(2, 4, 8),
            num_stages=(1, 2, 3),
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 32, "BLOCK_K": 128}, num_warps=4, num_stages=2)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block_m, block_k = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_K"]
        return (
            block_reason("BLOCK_M", block_m, dims["M"])
            or block_reason("BLOCK_K", block_k, dims["K"])
            # the accumulator and the A chunk are live; fewer than 8 per thread underfeeds
            # the 16-byte vector loads
            or per_thread_reason(block_m * block_k, config.num_warps, low=8, high=32)
            or stages_reason(config, cdiv(dims["K"], block_k))
            or shared_memory_reason(config, (block_m + 1) * block_k * dtype_bytes(dtype))
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, k = dims["M"], dims["K"]
        return {
            "a": seeded_randn((m, k), dtype, device, seed, scale=k**-0.5),
            "x": seeded_randn((k,), dtype, device, seed + 1),
            "y": output_buffer((m,), dtype, device),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        block_m, block_k = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_K"]
        args = {
            "a_ptr": inputs["a"],
            "x_ptr": inputs["x"],
            "y_ptr": inputs["y"],
            "M": dims["M"],
            "K": dims["K"],
            "stride_am": inputs["a"].stride(0),
            "BLOCK_M": block_m,
            "BLOCK_K": block_k,
            "EVEN_K": dims["K"] % block_k == 0,
            "NUM_STAGES": config.num_stages,
        }
        return (cdiv(dims["M"], block_m),), args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        a = inputs["a"]
        return {"y": torch.mv(a.float(), inputs["x"].float()).to(a.dtype)}

    def flops(self, dims: Dims) -> int:
        return 2 * dims["M"] * dims["K"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        m, k = dims["M"], dims["K"]
        return (m * k + k + m) * dtype_bytes(dtype)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # outputs are O(1) dot products of K terms; float32 summation order differs from torch
        return {"float32": (2e-4, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2)}.get(dtype, (2e-4, 1e-4))
