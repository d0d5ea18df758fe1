"""A small workload with two autotuned kernels, written in the styles of Liger-Kernel (a row
kernel tuned on the row length) and FlagGems (a pointwise kernel with config pruning). Our
own code. Run as a script (``python workload.py [--calls N]``) or call :func:`main`."""

from __future__ import annotations

import argparse
import sys

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 32}, num_warps=1),
        triton.Config({"BLOCK_SIZE": 64}, num_warps=2),
    ],
    key=["n_cols"],
)
@triton.jit
def row_scale_kernel(x_ptr, w_ptr, out_ptr, row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    tl.store(out_ptr + row * row_stride + cols, x * w / tl.sqrt(mean_sq + eps), mask=mask)


def drop_wide_blocks(configs, named_args, **kwargs):
    """Prune configs whose block is wider than four times the problem (FlagGems style)."""
    return [c for c in configs if c.kwargs["BLOCK"] <= 4 * named_args["n_elements"]]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 16}, num_warps=1),
        triton.Config({"BLOCK": 64}, num_warps=2),
        triton.Config({"BLOCK": 1024}, num_warps=4),
    ],
    key=["n_elements"],
    prune_configs_by={"early_config_prune": drop_wide_blocks},
)
@triton.jit
def gelu_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476)), mask=mask)


def row_scale(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    row_scale_kernel[(x.shape[0],)](x, w, out, x.stride(0), x.shape[1], 1e-6)
    return out


def gelu(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    gelu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out


def main(calls: int = 2) -> None:
    """``calls`` row_scale launches on one shape (the first tunes, the rest hit the cache), then
    one gelu launch; checks both against torch."""
    torch.manual_seed(0)
    x, w = torch.randn(4, 30), torch.randn(30)
    for _ in range(calls):
        expected = x * w / torch.sqrt((x * x).mean(dim=1, keepdim=True) + 1e-6)
        torch.testing.assert_close(row_scale(x, w), expected, rtol=1e-4, atol=1e-4)
    y = torch.randn(100)
    torch.testing.assert_close(gelu(y), torch.nn.functional.gelu(y), rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2)
    main(parser.parse_args(sys.argv[1:]).calls)
