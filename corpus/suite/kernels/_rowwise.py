"""Helpers shared by the row-wise families (normalization, losses, scan, rotary, GEMV).

Input builders here are seeded and also work on ``device="meta"``, where they only allocate
shapes (no values), because compile workers derive kernel signatures from meta tensors.
Values are drawn on the target device with that device's generator, so multi-GiB inputs
(vocabulary logits) never pass through host memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from corpus.suite.spec import Config

THREADS_PER_WARP = 32

WARPS: tuple[int, ...] = (1, 2, 4, 8, 16)
"""num_warps values real row-kernel tuners sweep."""


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype named ``name`` ('float16', 'bfloat16', 'float32', 'int64', ...)."""
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown torch dtype {name!r}")
    return dtype


def element_size(dtype: str) -> int:
    """Bytes per element of the dtype named ``dtype``."""
    return torch.empty((), dtype=torch_dtype(dtype)).element_size()


def generator(device: str, seed: int) -> torch.Generator | None:
    """A generator seeded with ``seed`` on ``device``; None on the meta device."""
    if torch.device(device).type == "meta":
        return None
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def randn(
    shape: Sequence[int],
    dtype: str,
    device: str,
    gen: torch.Generator | None,
    scale: float = 1.0,
) -> torch.Tensor:
    """Normal(0, scale**2) values of ``dtype``, drawn in float32 then cast."""
    if gen is None:
        return torch.empty(tuple(shape), dtype=torch_dtype(dtype), device=device)
    values = torch.randn(tuple(shape), generator=gen, device=device, dtype=torch.float32)
    if scale != 1.0:
        values.mul_(scale)
    return values.to(torch_dtype(dtype))


def empty(shape: Sequence[int], dtype: str, device: str) -> torch.Tensor:
    """An output buffer; filled with NaN (where the dtype has one) so unwritten elements fail
    the reference check instead of passing by luck."""
    out = torch.empty(tuple(shape), dtype=torch_dtype(dtype), device=device)
    if torch.device(device).type != "meta" and out.is_floating_point():
        out.fill_(float("nan"))
    return out


def per_thread(elements: int, config: Config) -> float:
    """Elements of a tile each thread of the program holds."""
    return elements / (THREADS_PER_WARP * config.num_warps)


def tile_reason(elements: int, config: Config, max_per_thread: int) -> str | None:
    """Why a register tile of ``elements`` cannot be spread over the config's threads: more
    threads than elements (replicated work, duplicate of a smaller num_warps), or more
    elements per thread than the register file holds without spilling."""
    threads = THREADS_PER_WARP * config.num_warps
    if elements < threads:
        return f"tile of {elements} elements is smaller than {threads} threads (num_warps={config.num_warps})"
    if per_thread(elements, config) > max_per_thread:
        return (
            f"tile of {elements} elements needs {per_thread(elements, config):.0f} per thread "
            f"(> {max_per_thread}): register spills"
        )
    return None


def block_reason(name: str, block: int, extent: int, floor: int = 1) -> str | None:
    """Why a block of ``block`` along a dimension of ``extent`` is redundant: it is larger than
    the dimension rounded up to a power of two (and than ``floor``), so it duplicates that
    config with only masked lanes added."""
    cover = max(floor, 1 << max(0, (extent - 1).bit_length()))
    if block > cover:
        return f"{name}={block} exceeds {extent} rounded up to {cover}: duplicate of {name}={cover}"
    return None


def stages_reason(config: Config, loop_trips: int) -> str | None:
    """Software pipelining needs a loop: without one (or with fewer trips than stages) a
    larger num_stages compiles to the same kernel as num_stages=1."""
    if config.num_stages > 1 and loop_trips < config.num_stages:
        return f"num_stages={config.num_stages} with {loop_trips} loop trip(s): nothing to pipeline"
    return None
