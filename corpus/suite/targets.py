"""Hardware limits of a compile target, for the suite's validity rules.

A family's :meth:`~corpus.suite.spec.KernelSpec.invalid_reason` prunes configs a tuner would
not try on the device, e.g. a pipeline that needs more shared memory than one block may use.
Those limits depend on the architecture, so the rules read them from :func:`current_limits`,
the limits of the target being planned: the harvest plans inside :func:`targeting` its IR
target (the device's own arch on a GPU); anything else sees :data:`DEFAULT_TARGET`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

DEFAULT_TARGET = "sm_90"
"""The suite's reference architecture (H100/H200), used when no target is being planned."""

SHARED_MEMORY_PER_BLOCK_KIB: dict[int, int] = {
    70: 96,
    75: 64,
    80: 163,
    86: 99,
    87: 163,
    89: 99,
    90: 227,
    100: 227,
    103: 227,
    120: 99,
}
"""Largest shared memory one block may opt into, KiB, by compute capability (major * 10 +
minor), from the CUDA C programming guide's table of technical specifications."""


@dataclass(frozen=True)
class TargetLimits:
    """What one block may use on a target."""

    arch: str
    """``sm_<major><minor>``, e.g. ``sm_90``."""
    shared_memory_per_block_bytes: int
    """Opt-in maximum of (dynamic + static) shared memory per block, bytes."""
    registers_per_thread: int = 255
    """32-bit registers one thread may use (the same on every target since sm_35)."""


def target_limits(arch: str) -> TargetLimits:
    """Limits of ``arch`` (``sm_90``, ``sm_90a``, ``sm_100``...). A capability missing from
    :data:`SHARED_MEMORY_PER_BLOCK_KIB` takes the limit of the closest known one below it (the
    oldest known when none is below). Raises ValueError naming a malformed target."""
    match = re.fullmatch(r"sm_(\d+)[a-z]?", arch)
    if match is None:
        raise ValueError(f"target {arch!r} is not of the form sm_<capability>, e.g. sm_90")
    capability = int(match.group(1))
    known = sorted(SHARED_MEMORY_PER_BLOCK_KIB)
    below = [c for c in known if c <= capability]
    return TargetLimits(arch, SHARED_MEMORY_PER_BLOCK_KIB[below[-1] if below else known[0]] * 1024)


def is_cuda_target(arch: str) -> bool:
    """Whether ``arch`` names a CUDA architecture (``sm_<capability>``)."""
    return re.fullmatch(r"sm_(\d+)[a-z]?", arch) is not None


_CURRENT: ContextVar[TargetLimits | None] = ContextVar("corpus_suite_target", default=None)


def current_limits() -> TargetLimits:
    """Limits of the target being planned (:data:`DEFAULT_TARGET` outside :func:`targeting`)."""
    return _CURRENT.get() or target_limits(DEFAULT_TARGET)


_SM_COUNT: ContextVar[int | None] = ContextVar("corpus_suite_sm_count", default=None)


def device_sm_count() -> int | None:
    """SM count of the GPU whose runs are being planned or compiled (inside :func:`on_sm_count`),
    None when unknown: a family whose arguments depend on it (a persistent kernel's program
    count) then assumes a nominal device's for ``device="meta"`` inputs."""
    return _SM_COUNT.get()


@contextlib.contextmanager
def on_sm_count(count: int | None) -> Iterator[None]:
    """``device="meta"`` inputs built inside the block stand for a GPU with ``count`` SMs, so
    their device-dependent arguments (and hence Triton's specialization of them, the grid and
    the run's signature) are those a launch on that GPU binds. None: unknown."""
    token = _SM_COUNT.set(count)
    try:
        yield
    finally:
        _SM_COUNT.reset(token)


@contextlib.contextmanager
def targeting(arch: str) -> Iterator[TargetLimits]:
    """Validity rules inside the block use the limits of ``arch``."""
    token = _CURRENT.set(target_limits(arch))
    try:
        yield current_limits()
    finally:
        _CURRENT.reset(token)
