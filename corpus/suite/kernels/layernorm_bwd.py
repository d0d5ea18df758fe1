"""LayerNorm backward: dx per row, and dweight/dbias as a sum over rows.

The tuned entry is a persistent kernel: NUM_PROGS programs stride over the rows, each keeps
the whole row in registers (BLOCK_N = N rounded up to a power of two), writes dx, and
accumulates its rows' share of dweight and dbias in float32 registers. At the end every
program writes its partial sums to its own row of a scratch buffer, so no atomics or locks
are needed. A second, fixed-config kernel (launched by :meth:`LayerNormBackward.launch`)
sums the NUM_PROGS partial rows into dweight and dbias. The row loop is load-pipelined
num_stages deep (the next rows of x and dy stream into shared memory).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch
import triton
import triton.language as tl

from corpus.suite.kernels._rowwise import WARPS, shared_memory_reason, stages_reason
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

NUM_PROGS_VALUES = (32, 64, 128, 256, 512)
EPS = 1e-5
REDUCE_BLOCK_G = 32
REDUCE_BLOCK_N = 128


@triton.jit
def layernorm_bwd_kernel(
    dy_ptr,
    x_ptr,
    w_ptr,
    mean_ptr,
    rstd_ptr,
    dx_ptr,
    dw_part_ptr,
    db_part_ptr,
    M,
    N,
    stride_m,
    NUM_PROGS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < N
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    dw_acc = tl.zeros([BLOCK_N], tl.float32)
    db_acc = tl.zeros([BLOCK_N], tl.float32)
    for row in tl.range(pid, M, NUM_PROGS, num_stages=NUM_STAGES):
        offset = tl.cast(row, tl.int64) * stride_m
        x = tl.load(x_ptr + offset + cols, mask=col_ok, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offset + cols, mask=col_ok, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        x_hat = tl.where(col_ok, (x - mean) * rstd, 0.0)
        w_dy = w * dy
        # dx = rstd * (w*dy - mean(w*dy) - x_hat * mean(x_hat * w*dy))
        proj = tl.sum(x_hat * w_dy, axis=0) / N
        shift = tl.sum(w_dy, axis=0) / N
        dx = (w_dy - (x_hat * proj + shift)) * rstd
        tl.store(dx_ptr + offset + cols, dx.to(dx_ptr.dtype.element_ty), mask=col_ok)
        dw_acc += dy * x_hat
        db_acc += dy
    tl.store(dw_part_ptr + pid * N + cols, dw_acc, mask=col_ok)
    tl.store(db_part_ptr + pid * N + cols, db_acc, mask=col_ok)


@triton.jit
def layernorm_bwd_reduce_kernel(
    dw_part_ptr,
    db_part_ptr,
    dw_ptr,
    db_ptr,
    G,
    N,
    BLOCK_G: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    dw = tl.zeros([BLOCK_G, BLOCK_N], tl.float32)
    db = tl.zeros([BLOCK_G, BLOCK_N], tl.float32)
    for start in range(0, G, BLOCK_G):
        g = start + tl.arange(0, BLOCK_G)
        offsets = g[:, None] * N + cols[None, :]
        mask = (g[:, None] < G) & col_ok[None, :]
        dw += tl.load(dw_part_ptr + offsets, mask=mask, other=0.0)
        db += tl.load(db_part_ptr + offsets, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0).to(dw_ptr.dtype.element_ty), mask=col_ok)
    tl.store(db_ptr + cols, tl.sum(db, axis=0).to(db_ptr.dtype.element_ty), mask=col_ok)


@register
class LayerNormBackward(KernelSpec):
    """Gradients of y = layer_norm(x, (N,), weight, bias, eps) for x of shape (M, N): dx from
    the tuned persistent kernel, dweight and dbias from its partial sums plus a reduction."""

    name = "layernorm_bwd"
    category = "normalization"
    dtypes = ("float16", "bfloat16", "float32")
    outputs = ("dx", "dw", "db")
    roles: ClassVar[Mapping[str, str]] = {"NUM_PROGS": Role.PROGRAMS}
    shapes: Mapping[str, list[Dims]] = {
        "tiny": [
            {"M": 64, "N": 256},
            {"M": 80, "N": 200},
            {"M": 64, "N": 512},
        ],
        "small": [
            {"M": 1024, "N": 768},
            {"M": 512, "N": 4096},
        ],
        "default": [
            {"M": 16384, "N": 768},
            {"M": 16384, "N": 1024},
            {"M": 8192, "N": 1280},
            {"M": 8192, "N": 1600},
            {"M": 8192, "N": 2560},
            {"M": 4096, "N": 4096},
            {"M": 4096, "N": 5120},
            {"M": 4096, "N": 8192},
        ],
        "large": [
            {"M": 65536, "N": 4096},
            {"M": 32768, "N": 8192},
        ],
    }

    @property
    def kernel(self) -> Any:
        return layernorm_bwd_kernel

    def config_space(self) -> list[Config]:
        return product_configs({"NUM_PROGS": NUM_PROGS_VALUES}, num_warps=WARPS, num_stages=(1, 2, 3))

    def default_config(self) -> Config:
        return Config({"NUM_PROGS": 64}, num_warps=8, num_stages=1)

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        progs = config.kwargs["NUM_PROGS"]
        if progs > dims["M"]:
            return f"NUM_PROGS={progs} > M={dims['M']}: programs without rows"
        # six row-length vectors are live in the loop (x, dy, w, x_hat, dw_acc, db_acc)
        block_n = next_pow2(dims["N"])
        return (
            per_thread_reason(block_n, config.num_warps, high=32)
            or stages_reason(config, cdiv(dims["M"], progs))
            # the row loop loads x and dy rows
            or shared_memory_reason(config, 2 * block_n * dtype_bytes(dtype))
        )

    def make_inputs(self, dims: Dims, dtype: str, device: str, seed: int) -> dict[str, Any]:
        m, n = dims["M"], dims["N"]
        x = seeded_randn((m, n), dtype, device, seed)
        var, mean = torch.var_mean(x.float(), dim=-1, correction=0)
        partial_rows = min(m, NUM_PROGS_VALUES[-1])
        return {
            "dy": seeded_randn((m, n), dtype, device, seed + 1),
            "x": x,
            "weight": seeded_randn((n,), dtype, device, seed + 2, scale=0.5).add_(1.0),
            "mean": mean,
            "rstd": torch.rsqrt(var + EPS),
            "dx": output_buffer((m, n), dtype, device),
            "dw_partial": output_buffer((partial_rows, n), "float32", device),
            "db_partial": output_buffer((partial_rows, n), "float32", device),
            "dw": output_buffer((n,), dtype, device),
            "db": output_buffer((n,), dtype, device),
        }

    def bind(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> tuple[tuple[int, ...], dict[str, Any]]:
        progs = config.kwargs["NUM_PROGS"]
        args = {
            "dy_ptr": inputs["dy"],
            "x_ptr": inputs["x"],
            "w_ptr": inputs["weight"],
            "mean_ptr": inputs["mean"],
            "rstd_ptr": inputs["rstd"],
            "dx_ptr": inputs["dx"],
            "dw_part_ptr": inputs["dw_partial"],
            "db_part_ptr": inputs["db_partial"],
            "M": dims["M"],
            "N": dims["N"],
            "stride_m": inputs["x"].stride(0),
            "NUM_PROGS": progs,
            "BLOCK_N": next_pow2(dims["N"]),
            "NUM_STAGES": config.num_stages,
        }
        return (progs,), args

    def launch(self, inputs: Mapping[str, Any], dims: Dims, config: Config) -> Any:
        """The tuned kernel, then the reduction of its NUM_PROGS partial rows."""
        result = super().launch(inputs, dims, config)
        layernorm_bwd_reduce_kernel[(cdiv(dims["N"], REDUCE_BLOCK_N),)](
            inputs["dw_partial"],
            inputs["db_partial"],
            inputs["dw"],
            inputs["db"],
            config.kwargs["NUM_PROGS"],
            dims["N"],
            BLOCK_G=REDUCE_BLOCK_G,
            BLOCK_N=REDUCE_BLOCK_N,
            num_warps=4,
        )
        return result

    def reference(self, inputs: Mapping[str, Any], dims: Dims) -> dict[str, Any]:
        dtype = inputs["x"].dtype
        x = inputs["x"].float().requires_grad_(True)
        w = inputs["weight"].float().requires_grad_(True)
        b = torch.zeros_like(w, requires_grad=True)
        with torch.enable_grad():
            y = torch.nn.functional.layer_norm(x, (dims["N"],), w, b, EPS)
            dx, dw, db = torch.autograd.grad(y, (x, w, b), inputs["dy"].float())
        return {"dx": dx.to(dtype), "dw": dw.to(dtype), "db": db.to(dtype)}

    def flops(self, dims: Dims) -> int:
        # x_hat, w*dy, two dot products, dx, two accumulations: about 12 operations per element
        return 12 * dims["M"] * dims["N"]

    def bytes_moved(self, dims: Dims, dtype: str) -> int:
        m, n, size = dims["M"], dims["N"], dtype_bytes(dtype)
        return 3 * m * n * size + 3 * n * size + 2 * m * 4

    def tolerance(self, dtype: str) -> tuple[float, float]:
        # dweight/dbias sum M rows: allow for summation order
        return {"float32": (5e-4, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (6e-2, 2e-2)}.get(dtype, (5e-4, 1e-4))
