"""Validity rules shared by the row-wise families (normalization, losses, scan, rotary, GEMV).

Tensor builders and the per-thread register rule live in :mod:`corpus.suite.spec`; these
are the pruning rules for configs that would duplicate another config's work or overflow
shared memory.

Pipelining: Triton's ``num_stages`` compile option only pipelines loads that feed a
``tl.dot``; a row loop is pipelined only when its ``tl.range`` carries ``num_stages``. So
these families bind a ``NUM_STAGES`` constexpr equal to the config's ``num_stages`` and put
it on their load loops; without that, configs differing only in num_stages would compile
to identical code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from corpus.suite.spec import (
    Config,
    Dims,
    KernelSpec,
    cdiv,
    dtype_bytes,
    per_thread_reason,
    product_configs,
)
from corpus.suite.targets import current_limits
from schemas.enums import Role

WARPS: tuple[int, ...] = (1, 2, 4, 8, 16)
"""num_warps values real row-kernel tuners sweep."""


def block_reason(name: str, block: int, extent: int, floor: int = 1) -> str | None:
    """Why a block of ``block`` along a dimension of ``extent`` is redundant: it is larger than
    the dimension rounded up to a power of two (and than ``floor``, the smallest block in the
    space), so it only adds masked lanes to the config with the covering block."""
    cover = max(floor, 1 << max(0, (extent - 1).bit_length()))
    if block > cover:
        return f"{name}={block} exceeds {extent} rounded up to {cover}: duplicate of {name}={cover}"
    return None


def stages_reason(config: Config, loop_trips: int) -> str | None:
    """Software pipelining needs a loop with loads: without one (or with fewer trips than
    stages) a larger num_stages compiles to the same kernel as num_stages=1 or only adds an
    empty prologue."""
    if config.num_stages > 1 and loop_trips < config.num_stages:
        return f"num_stages={config.num_stages} with {loop_trips} loop trip(s): nothing to pipeline"
    return None


SHARED_MEMORY_HEADROOM = 27 * 1024
"""Bytes of a block's shared memory kept free of pipelined loads, for reduction scratch and
the second loop of two-pass kernels (on sm_90: 227 KiB opt-in - 27 KiB = a 200 KiB budget)."""


def shared_memory_budget() -> int:
    """Bytes of shared memory the pipelined loads of one program may take on the planned
    target (:func:`corpus.suite.targets.current_limits`)."""
    return current_limits().shared_memory_per_block_bytes - SHARED_MEMORY_HEADROOM


def shared_memory_reason(config: Config, bytes_per_stage: int) -> str | None:
    """Why the load pipeline does not fit: a loop pipelined ``num_stages`` deep keeps
    ``num_stages - 1`` iterations of its loads in flight in shared memory."""
    needed = (config.num_stages - 1) * bytes_per_stage
    budget = shared_memory_budget()
    if needed > budget:
        return (
            f"num_stages={config.num_stages} buffers {needed // 1024} KiB of loads in shared memory "
            f"(> {budget // 1024} KiB on {current_limits().arch})"
        )
    return None


class RowTileSpec(KernelSpec):
    """A family whose program handles a BLOCK_M x BLOCK_N tile of rows of length N, looping
    over N in BLOCK_N chunks when one chunk does not cover the row.

    Subclasses give the bytes one pipeline stage loads (:meth:`stage_bytes`) and, when they
    differ, the tile values, the live-element limit per thread and the loop trip count."""

    roles: ClassVar[Mapping[str, str]] = {"BLOCK_M": Role.TILE_M, "BLOCK_N": Role.REDUCTION_BLOCK}
    block_m_values: Sequence[int] = (1, 2, 4)
    block_n_values: Sequence[int] = (512, 1024, 2048, 4096, 8192)
    block_n_floor: int | None = None
    """Smallest useful BLOCK_N (default: the smallest in the space)."""

    def config_space(self) -> list[Config]:
        return product_configs(
            {"BLOCK_M": self.block_m_values, "BLOCK_N": self.block_n_values}, num_warps=WARPS, num_stages=(1, 2)
        )

    def default_config(self) -> Config:
        return Config({"BLOCK_M": 1, "BLOCK_N": 1024}, num_warps=4, num_stages=1)

    def stage_bytes(self, block_m: int, block_n: int, dtype: str) -> int:
        """Bytes of loads one iteration of the chunk loop keeps in flight."""
        return block_m * block_n * dtype_bytes(dtype)

    def live_limit(self, chunks: int) -> int:
        """Most tile elements a thread may hold: the whole tile stays live when one chunk
        covers the row; the loop keeps one chunk plus its temporaries."""
        return 64 if chunks == 1 else 32

    def loop_trips(self, chunks: int) -> int:
        return 0 if chunks == 1 else chunks

    def invalid_reason(self, config: Config, dims: Dims, dtype: str) -> str | None:
        block_m, block_n = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        chunks = cdiv(dims["N"], block_n)
        floor = self.block_n_values[0] if self.block_n_floor is None else self.block_n_floor
        return (
            block_reason("BLOCK_N", block_n, dims["N"], floor=floor)
            or block_reason("BLOCK_M", block_m, dims["M"])
            or per_thread_reason(block_m * block_n, config.num_warps, high=self.live_limit(chunks))
            or stages_reason(config, self.loop_trips(chunks))
            or shared_memory_reason(config, self.stage_bytes(block_m, block_n, dtype))
        )
