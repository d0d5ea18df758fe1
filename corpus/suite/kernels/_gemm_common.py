"""Shared, pure-Python helpers of the matmul and attention families: seeded tensor builders and
the resource rules that decide whether a tile configuration can run.

The shared-memory limit is the planned target's (:func:`corpus.suite.targets.current_limits`,
sm_90 by default); the other limits hold on every target. They are
estimates a tuner's pruning step would make before compiling; the harvest still records an
``out_of_resources`` row if the real kernel needs more than estimated.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from corpus.suite.spec import next_pow2, torch_dtype
from corpus.suite.targets import current_limits

STATIC_SHARED_BYTES = 1024
"""Static shared memory Triton's sm_90 kernels add to their dynamic buffers (barriers);
measured on compiled GEMM and attention kernels (bytes)."""

REGISTERS_PER_THREAD_LIMIT = 255
"""Hardware limit of 32-bit registers per thread."""

MIN_DOT_BLOCK = 16
"""``tl.dot`` needs every operand dimension to be at least 16."""

THREADS_PER_WARP = 32


def cpu_generator(seed: int) -> torch.Generator:
    """A CPU generator seeded with ``seed``: inputs are drawn on CPU so they do not depend on
    the device, then moved."""
    return torch.Generator(device="cpu").manual_seed(seed)


def normal(
    shape: Sequence[int], dtype: str, device: str, generator: torch.Generator, std: float = 1.0
) -> torch.Tensor:
    """Seeded N(0, std^2) tensor of ``dtype`` on ``device``; an uninitialised tensor on meta."""
    if device == "meta":
        return torch.empty(tuple(shape), dtype=torch_dtype(dtype), device="meta")
    values = torch.randn(tuple(shape), generator=generator, dtype=torch.float32) * std
    return values.to(torch_dtype(dtype)).to(device)


def uniform(
    shape: Sequence[int], dtype: str, device: str, generator: torch.Generator, low: float, high: float
) -> torch.Tensor:
    """Seeded U(low, high) tensor of ``dtype`` on ``device``; an uninitialised tensor on meta."""
    if device == "meta":
        return torch.empty(tuple(shape), dtype=torch_dtype(dtype), device="meta")
    values = torch.rand(tuple(shape), generator=generator, dtype=torch.float32) * (high - low) + low
    return values.to(torch_dtype(dtype)).to(device)


def int8_values(shape: Sequence[int], device: str, generator: torch.Generator) -> torch.Tensor:
    """Seeded int8 tensor uniform over [-127, 127]; an uninitialised tensor on meta."""
    if device == "meta":
        return torch.empty(tuple(shape), dtype=torch.int8, device="meta")
    values = torch.randint(-127, 128, tuple(shape), generator=generator, dtype=torch.int16)
    return values.to(torch.int8).to(device)


def empty(shape: Sequence[int], dtype: str, device: str) -> torch.Tensor:
    """An output buffer (contents undefined until the kernel writes it)."""
    return torch.empty(tuple(shape), dtype=torch_dtype(dtype), device=device)


def block_too_large(knob: str, block: int, extent: int) -> str | None:
    """Reason when a tile dimension is larger than the (power-of-two padded) problem extent:
    such a tile only computes padding, and the smaller tile does the same work."""
    limit = max(MIN_DOT_BLOCK, next_pow2(extent))
    if block > limit:
        return f"{knob}={block} exceeds the problem extent {extent} (padded to {limit})"
    return None


def shared_memory_reason(needed_bytes: int) -> str | None:
    """Reason when the estimated dynamic shared memory of a block (``needed_bytes``), plus
    the static part, is over the planned target's per-block limit."""
    limits = current_limits()
    if needed_bytes + STATIC_SHARED_BYTES > limits.shared_memory_per_block_bytes:
        return (
            f"needs ~{needed_bytes // 1024} KiB shared memory, over the "
            f"{limits.shared_memory_per_block_bytes // 1024} KiB per-block limit of {limits.arch}"
        )
    return None


def accumulator_reason(fp32_elements: int, num_warps: int, low: int = 8, high: int = 128) -> str | None:
    """Reason when the fp32 accumulator tiles of one block fit ``num_warps`` badly: over
    ``high`` registers per thread leaves too few for the operand fragments and addresses
    (local-memory spills, at 255 the hardware limit); under ``low`` elements per thread the
    warps share too small a tile for full ``tl.dot`` fragments."""
    per_thread = math.ceil(fp32_elements / (num_warps * THREADS_PER_WARP))
    if per_thread > high:
        return (
            f"accumulator needs {per_thread} fp32 registers per thread with num_warps={num_warps} "
            f"(over {high}; the register limit is {REGISTERS_PER_THREAD_LIMIT})"
        )
    if per_thread < low:
        return f"accumulator gives each thread only {per_thread} elements with num_warps={num_warps} (under {low})"
    return None


def first_reason(*reasons: str | None) -> str | None:
    """The first non-None reason, or None."""
    return next((r for r in reasons if r is not None), None)


def matmul_tolerance(dtype: str) -> tuple[float, float]:
    """(atol, rtol) of a GEMM whose inputs are scaled so that outputs are ~N(0, 1): the error
    is the output rounding plus, for float32, TF32 rounding of the inputs inside ``tl.dot``."""
    return {
        "float32": (1e-2, 1e-2),
        "float16": (1e-2, 1e-2),
        "bfloat16": (6e-2, 2e-2),
    }.get(dtype, (1e-2, 1e-2))


def is_meta(tensor: Any) -> bool:
    return isinstance(tensor, torch.Tensor) and tensor.device.type == "meta"
