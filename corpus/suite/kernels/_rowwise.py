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

from corpus.suite.spec import Config

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


SHARED_MEMORY_BUDGET = 200 * 1024
"""Bytes of shared memory the pipelined loads of one program may take: the 227 KiB a
Hopper block can opt into, less room for reduction scratch and the second loop of
two-pass kernels."""


def shared_memory_reason(config: Config, bytes_per_stage: int) -> str | None:
    """Why the load pipeline does not fit: a loop pipelined ``num_stages`` deep keeps
    ``num_stages - 1`` iterations of its loads in flight in shared memory."""
    needed = (config.num_stages - 1) * bytes_per_stage
    if needed > SHARED_MEMORY_BUDGET:
        return (
            f"num_stages={config.num_stages} buffers {needed // 1024} KiB of loads in shared memory "
            f"(> {SHARED_MEMORY_BUDGET // 1024} KiB)"
        )
    return None
