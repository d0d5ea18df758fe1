"""Latency clocks: CPU time of the benchmark worker (interpreter), CUDA events with an L2 flush,
CUDA graphs, and the wall clock.

A timer times ``reps`` launches of one config at a time (:meth:`time_reps`); the interleaved
pass schedule that decides which config is timed when lives in :mod:`corpus.harvest.interleave`.
``launch`` is one kernel launch with its arguments bound beforehand
(:meth:`corpus.suite.spec.KernelSpec.bound_launch`: the spec's ``prepare`` plus
``kernel[grid](**args)``), ``restore`` puts mutated inputs back; ``restore`` and the L2 flush
always run outside the timed region. Samples are per-rep milliseconds in timing order.

What one sample includes, per timer (``runs.timer``):

- ``thread_cpu`` / ``process_cpu`` / ``wall`` (interpreter): the host clock read before and
  after one synchronous launch: Triton's launcher (argument checks, cache lookup) and the
  interpreted execution; CPU time of the launching thread / of the whole worker process /
  elapsed wall time (the last also counts time spent waiting for a core).
- ``cuda_event``: GPU time between two events recorded on the stream around one launch. The
  flush buffer (:func:`l2_flush_bytes`, recorded in ``runs.l2_flush_bytes``) is written and
  mutated inputs are restored before the start event, so the L2 holds none of the kernel's
  data. The sample includes the launch's GPU-side start-up and, when the host enqueues slower
  than the GPU runs (kernels of a few microseconds), the gap the host's launch overhead
  leaves between the events.
- ``cuda_graph``: ``launches_per_graph`` back-to-back launches captured in one CUDA graph;
  one sample is one replay's event-to-event time divided by that count (as
  ``triton.testing.do_bench_cudagraph`` does), so host launch overhead and the graph launch's
  own latency are amortized away. Flush and restore run before each replay, so only the first
  launch of a replay starts from a cold L2; a kernel that mutates its inputs sees its own
  output in the later launches of a replay.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

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


MIN_FLUSH_BYTES = 256 << 20
"""Triton's ``do_bench`` flushes with a 256 MB buffer; never flush with less."""

GRAPH_LAUNCHES = 16
"""Launches captured in one CUDA graph by :class:`CudaGraphTimer` (one sample = replay / 16)."""


def l2_flush_bytes(l2_bytes: int | None) -> int:
    """Size of the buffer written between reps, bytes: twice the L2, at least 256 MiB."""
    return max(2 * int(l2_bytes or 0), MIN_FLUSH_BYTES)


def _noop() -> None:
    return None


class LatencyTimer(Protocol):
    """What the benchmark worker needs of a clock."""

    kind: str
    """Value of ``runs.timer``."""
    l2_flush_bytes: int

    def prepare(self, launch: Launch) -> Launch:
        """The launch to time (e.g. a CUDA graph replay); called once per config, after warmup."""
        ...

    def time_reps(self, launch: Launch, restore: Launch | None, reps: int) -> list[float]:
        """``reps`` timed launches of one config, ms each, in timing order."""
        ...


def measure(
    timer: LatencyTimer, launch: Launch, restore: Launch | None, warmup: int, rep: int
) -> list[float]:
    """Warm up, prepare and time one config in one go (the sequential, version-1 schedule)."""
    restore = restore or _noop
    for _ in range(warmup):
        restore()
        launch()
    return timer.time_reps(timer.prepare(launch), restore, rep)


class _HostClockTimer:
    """A host clock read around each synchronous launch (the interpreter is synchronous)."""

    kind = ""
    l2_flush_bytes = 0
    clock: Callable[[], float] = staticmethod(time.perf_counter)

    def prepare(self, launch: Launch) -> Launch:
        return launch

    def time_reps(self, launch: Launch, restore: Launch | None, reps: int) -> list[float]:
        restore = restore or _noop
        clock = self.clock
        samples = []
        for _ in range(reps):
            restore()
            start = clock()
            launch()
            samples.append((clock() - start) * 1e3)
        return samples


class WallTimer(_HostClockTimer):
    """``time.perf_counter``: counts time the process waits for a core, so it follows the
    machine's load (version-1 interpreter labels)."""

    kind = Timer.WALL.value


class ThreadCpuTimer(_HostClockTimer):
    """``time.thread_time``: CPU time of the launching thread only. The interpreter computes
    in that thread (NumPy's BLAS is pinned to one thread in the interpreter worker, see
    :func:`corpus.harvest.settings.worker_environment`), so other processes competing for the cores
    do not lengthen the samples."""

    kind = Timer.THREAD_CPU.value
    clock = staticmethod(time.thread_time)


class ProcessCpuTimer(_HostClockTimer):
    """``time.process_time``: CPU time of every thread of the worker process (use it when the
    interpreted kernel's library calls run on helper threads)."""

    kind = Timer.PROCESS_CPU.value
    clock = staticmethod(time.process_time)


HOST_TIMERS: dict[str, type[_HostClockTimer]] = {
    Timer.THREAD_CPU.value: ThreadCpuTimer,
    Timer.PROCESS_CPU.value: ProcessCpuTimer,
    Timer.WALL.value: WallTimer,
}
"""Timers of the interpreter, by ``runs.timer`` value."""


class CudaEventTimer:
    """CUDA events around each launch; before each rep the L2 is flushed by writing a buffer
    of ``flush_bytes`` (>= 2x L2) and mutated inputs are restored, both outside the events.

    ``hold_cycles`` > 0: after the flush the GPU also spins that many SM clock cycles
    (``torch.cuda._sleep``, which touches no memory), so the host has enqueued the launch
    before the start event fires and the sample holds no host launch overhead, whether or not
    a flush ran (the self-test's L2-flush check compares the two)."""

    kind = Timer.CUDA_EVENT.value

    def __init__(self, device: Any, flush_bytes: int, *, hold_cycles: int = 0) -> None:
        import torch

        if hold_cycles < 0:
            raise ValueError(f"hold_cycles must be >= 0, got {hold_cycles}")
        self.torch = torch
        self.device = device
        self.l2_flush_bytes = flush_bytes
        self.hold_cycles = hold_cycles
        words = max(flush_bytes // 4, 1)
        self.flush_buffer = (
            torch.empty(words, dtype=torch.int32, device=device) if flush_bytes else None
        )

    def _flush(self) -> None:
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()
        if self.hold_cycles:
            self.torch.cuda._sleep(self.hold_cycles)

    def prepare(self, launch: Launch) -> Launch:
        return launch

    def time_reps(self, launch: Launch, restore: Launch | None, reps: int) -> list[float]:
        torch = self.torch
        restore = restore or _noop
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        torch.cuda.synchronize(self.device)
        for start, end in zip(starts, ends):
            restore()
            self._flush()
            start.record()
            launch()
            end.record()
        torch.cuda.synchronize(self.device)
        return [start.elapsed_time(end) for start, end in zip(starts, ends)]


class CudaGraphTimer(CudaEventTimer):
    """Like :class:`CudaEventTimer`, but ``launches_per_graph`` launches are captured once into
    a CUDA graph and each rep replays it; a sample is the replay's time divided by the number
    of launches, so Python, driver and graph-launch overhead are amortized away."""

    kind = Timer.CUDA_GRAPH.value

    def __init__(self, device: Any, flush_bytes: int, launches_per_graph: int = GRAPH_LAUNCHES) -> None:
        if launches_per_graph < 1:
            raise ValueError(f"launches_per_graph must be >= 1, got {launches_per_graph}")
        super().__init__(device, flush_bytes)
        self.launches_per_graph = launches_per_graph

    def time_reps(self, launch: Launch, restore: Launch | None, reps: int) -> list[float]:
        replays = super().time_reps(launch, restore, reps)
        return [elapsed / self.launches_per_graph for elapsed in replays]

    def prepare(self, launch: Launch) -> Launch:
        torch = self.torch
        stream = torch.cuda.Stream(device=self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream):
            launch()  # the first launch on a stream may allocate; keep it out of the capture
        torch.cuda.current_stream(self.device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(self.launches_per_graph):
                launch()
        return graph.replay
