"""Linear layer with a fused epilogue: ``out = act(x @ W^T + bias) [+ residual]``.

The GEMM main loop is the grouped tiled one; the epilogue runs on the fp32 accumulator
before the single store, so the bias add, the activation and the optional residual add
cost no extra pass over memory. ``W`` is an ``nn.Linear`` weight stored ``(N, K)``.
The activation is part of the problem (shape dimension ``ACT``): 1 = ReLU, 2 = GELU (erf
form), 3 = SiLU; ``RESIDUAL=1`` adds a ``(M, N)`` residual stream.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import torch
import triton
import triton.language as tl

from corpus.suite.kernels import _gemm_common as gc
from corpus.suite.kernels.matmul import gemm_tile_reason
from corpus.suite.registry import register
from corpus.suite.spec import Config, Dims, KernelSpec, cdiv, dtype_bytes, product_configs
from schemas.enums import Role

RELU, GELU, SILU = 1, 2, 3
ACTIVATION_NAMES = {RELU: "relu", GELU: "gelu", SILU: "silu"}


@triton.jit
def linear_epilogue_kernel(
    x, w, bias, residual, out,
    M, N, K,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_rm, stride_om,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    ACTIVATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr, EVEN_K: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    tile_rows = tl.cdiv(M, BLOCK_M)
    tile_cols = tl.cdiv(N, BLOCK_N)
    band_programs = GROUP_M * tile_cols
    band_first_row = (pid // band_programs) * GROUP_M
    band_rows = tl.minimum(tile_rows - band_first_row, GROUP_M)
    tile_m = band_first_row + (pid % band_programs) % band_rows
    tile_n = (pid % band_programs) // band_rows

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N
    x_tile = x + rows[:, None] * stride_xm + ks[None, :] * stride_xk
    # W is (N, K); read it as the (K, N) operand through its strides.
    w_tile = w + ks[:, None] * stride_wk + cols[None, :] * stride_wn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        if EVEN_K:
            x_blk = tl.load(x_tile, mask=row_ok[:, None], other=0.0)
            w_blk = tl.load(w_tile, mask=col_ok[None, :], other=0.0)
        else:
            k_ok = ks < K - k_start
            x_blk = tl.load(x_tile, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            w_blk = tl.load(w_tile, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        acc = tl.dot(x_blk, w_blk, acc)
        x_tile += BLOCK_K * stride_xk
        w_tile += BLOCK_K * stride_wk

    acc += tl.load(bias + cols, mask=col_ok, other=0.0).to(tl.float32)[None, :]
    if ACTIVATION == 1:
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == 2:
        acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    elif ACTIVATION == 3:
        acc = acc * tl.sigmoid(acc)
    tile_ok = row_ok[:, None] & col_ok[None, :]
    if HAS_RESIDUAL:
        res = tl.load(residual + rows[:, None] * stride_rm + cols[None, :], mask=tile_ok, other=0.0)
        acc += res.to(tl.float32)
    tl.store(out + rows[:, None] * stride_om + cols[None, :], acc.to(out.dtype.element_ty), mask=tile_ok)


def _linear(m: int, n: int, k: int, act: int, residual: int) -> dict[str, int]:
    return {"M": m, "N": n, "K": k, "ACT": act, "RESIDUAL": residual}


def activation_reference(y: torch.Tensor, act: int) -> torch.Tensor:
    """The activation ``act`` applied in torch (fp32 in, fp32 out)."""
    if act == RELU:
        return torch.relu(y)
    if act == GELU:
        return torch.nn.functional.gelu(y)
    if act == SILU:
        return torch.nn.functional.silu(y)
    raise ValueError(f"unknown activation code {act}; expected one of {sorted(ACTIVATION_NAMES)}")


@register
class MatmulEpilogue(KernelSpec):
    """Linear layer + bias + activation (+ residual) in one kernel."""

    name = "matmul_epilogue"
    category = "matmul"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("out",)
    roles: ClassVar[Mapping[str, str]] = {
        "BLOCK_M": Role.TILE_M,
        "BLOCK_N": Role.TILE_N,
        "BLOCK_K": Role.TILE_K,
        "GROUP_M": Role.GROUP,
    }
    flag_dims = ("ACT", "RESIDUAL",)
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [_linear(128, 128, 64, GELU, 1), _linear(72, 96, 80, SILU, 0), _linear(64, 136, 32, RELU, 1)],
        "small": [_linear(512, 1024, 256, GELU, 0), _linear(384, 768, 512, RELU, 1)],
        "default": [
            _linear(2048, 3072, 768, GELU, 0),  # BERT/ViT-B MLP up-projection
            _linear(2048, 768, 3072, RELU, 1),  # ... down-projection into the residual stream
            _linear(4096, 4096, 1024, GELU, 0),  # BERT-large MLP up
            _linear(4096, 1024, 4096, RELU, 1),
            _linear(4096, 11008, 4096, SILU, 0),  # Llama-7B gate projection
            _linear(4096, 4096, 11008, SILU, 1),
            _linear(3136, 1536, 384, GELU, 0),  # Swin-S stage-1 MLP, 56x56 tokens
            _linear(8192, 5120, 1280, GELU, 1),
        ],
        "large": [_linear(16384, 14336, 4096, SILU, 0), _linear(16384, 4096, 14336, GELU, 1)],
    }

    @property
    def kernel(self) -> Any:
        return linear_epilogue_kernel

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_M": (32, 64, 128, 256), "BLOCK_N": (32, 64, 128, 256), "BLOCK_K": (32, 64), "GROUP_M": (8,)},
            num_warps=(4, 8),
            num_stages=(2, 3, 4, 5),
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        return gemm_tile_reason(config, dims, dtype)

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n, k = dims["M"], dims["N"], dims["K"]
        gen = gc.cpu_generator(seed)
        inputs = {
            "x": gc.normal((m, k), dtype, device, gen),
            "w": gc.normal((n, k), dtype, device, gen, std=1 / math.sqrt(k)),
            "bias": gc.normal((n,), dtype, device, gen, std=0.5),
            "out": gc.empty((m, n), dtype, device),
        }
        if dims["RESIDUAL"]:
            inputs["residual"] = gc.normal((m, n), dtype, device, gen)
        return inputs

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        x, w, out = inputs["x"], inputs["w"], inputs["out"]
        m, n, k = dims["M"], dims["N"], dims["K"]
        meta = dict(config.kwargs)
        has_residual = bool(dims["RESIDUAL"])
        grid = (cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"]),)
        args = {
            "x": x, "w": w, "bias": inputs["bias"],
            # Without a residual the kernel never reads it; pass the output as a valid pointer.
            "residual": inputs["residual"] if has_residual else out,
            "out": out,
            "M": m, "N": n, "K": k,
            "stride_xm": x.stride(0), "stride_xk": x.stride(1),
            "stride_wn": w.stride(0), "stride_wk": w.stride(1),
            "stride_rm": inputs["residual"].stride(0) if has_residual else 0,
            "stride_om": out.stride(0),
            **meta,
            "ACTIVATION": dims["ACT"], "HAS_RESIDUAL": has_residual,
            "EVEN_K": k % meta["BLOCK_K"] == 0,
        }  # fmt: skip
        return grid, args

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        x, w, out = inputs["x"], inputs["w"], inputs["out"]
        y = x.float() @ w.float().t() + inputs["bias"].float()
        y = activation_reference(y, dims["ACT"])
        if dims["RESIDUAL"]:
            y = y + inputs["residual"].float()
        return {"out": y.to(out.dtype)}

    def flops(self, dims: Dims) -> int:
        m, n, k = dims["M"], dims["N"], dims["K"]
        # GEMM, bias add, activation (counted as one op per element) and residual add.
        return 2 * m * n * k + m * n * (2 + dims["RESIDUAL"])

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        m, n, k = dims["M"], dims["N"], dims["K"]
        elements = m * k + n * k + n + m * n * (1 + dims["RESIDUAL"])
        return elements * dtype_bytes(dtype)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return gc.matmul_tolerance(dtype)
