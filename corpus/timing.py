"""Latency measurement: wall clock (interpreter), CUDA events with L2 flush, CUDA graphs.

Every timer takes a ``launch`` callable (one kernel launch) and an optional ``restore``
callable (puts mutated inputs back); ``restore`` and the L2 flush always run outside the
timed region. Results are per-rep samples in milliseconds, in timing order.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from schemas.enums import Timer

Launch = Callable[[], Any]


@dataclass(frozen=True)
class TimingStats:
    """Summary of per-rep latencies, ms."""

    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    p20_ms: float
    p80_ms: float
    std_ms: float
    n_reps: int


def summarize(samples_ms: Sequence[float]) -> TimingStats:
    """Median, mean, extremes, 20th/80th percentiles (linear interpolation) and std."""
    ordered = sorted(samples_ms)
    if not ordered:
        raise ValueError("no timing samples")

    def percentile(q: float) -> float:
        position = q * (len(ordered) - 1)
        low = int(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    return TimingStats(
        median_ms=statistics.median(ordered),
        mean_ms=statistics.fmean(ordered),
        min_ms=ordered[0],
        max_ms=ordered[-1],
        p20_ms=percentile(0.2),
        p80_ms=percentile(0.8),
        std_ms=statistics.pstdev(ordered) if len(ordered) > 1 else 0.0,
        n_reps=len(ordered),
    )


MIN_FLUSH_BYTES = 64 << 20


def l2_flush_bytes(l2_bytes: int | None) -> int:
    """Size of the buffer written between reps: at least twice the L2, and 64 MiB."""
    return max(2 * int(l2_bytes or 0), MIN_FLUSH_BYTES)


def _noop() -> None:
    return None


class WallTimer:
    """``time.perf_counter`` around each synchronous launch (the interpreter is synchronous)."""

    kind = Timer.WALL.value
    l2_flush_bytes = 0

    def measure(self, launch: Launch, restore: Launch | None, warmup: int, rep: int) -> list[float]:
        restore = restore or _noop
        for _ in range(warmup):
            restore()
            launch()
        samples = []
        for _ in range(rep):
            restore()
            start = time.perf_counter()
            launch()
            samples.append((time.perf_counter() - start) * 1e3)
        return samples


class CudaEventTimer:
    """CUDA events around each launch; before each rep the L2 is flushed by writing a buffer
    of ``flush_bytes`` (>= 2x L2) and mutated inputs are restored, both outside the events."""

    kind = Timer.CUDA_EVENT.value

    def __init__(self, device: Any, flush_bytes: int) -> None:
        import torch

        self.torch = torch
        self.device = device
        self.l2_flush_bytes = flush_bytes
        self.flush_buffer = torch.empty(max(flush_bytes // 4, 1), dtype=torch.int32, device=device) if flush_bytes else None

    def _flush(self) -> None:
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()

    def _prepare_launch(self, launch: Launch) -> Launch:
        return launch

    def measure(self, launch: Launch, restore: Launch | None, warmup: int, rep: int) -> list[float]:
        torch = self.torch
        restore = restore or _noop
        for _ in range(warmup):
            restore()
            launch()
        timed = self._prepare_launch(launch)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
        torch.cuda.synchronize(self.device)
        for start, end in zip(starts, ends):
            restore()
            self._flush()
            start.record()
            timed()
            end.record()
        torch.cuda.synchronize(self.device)
        return [start.elapsed_time(end) for start, end in zip(starts, ends)]


class CudaGraphTimer(CudaEventTimer):
    """Like :class:`CudaEventTimer`, but the launch is captured once into a CUDA graph and each
    rep replays it: the samples exclude Python and driver launch overhead."""

    kind = Timer.CUDA_GRAPH.value

    def _prepare_launch(self, launch: Launch) -> Launch:
        torch = self.torch
        stream = torch.cuda.Stream(device=self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream):
            launch()  # the first launch on a stream may allocate; keep it out of the capture
        torch.cuda.current_stream(self.device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            launch()
        return graph.replay
