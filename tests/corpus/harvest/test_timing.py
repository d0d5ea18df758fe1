from __future__ import annotations

import threading
import time

import pytest
import torch

from corpus.harvest.interleave import PassPlan, pass_order, run_passes, run_sequential
from corpus.harvest.timing import (
    ProcessCpuTimer,
    ThreadCpuTimer,
    WallTimer,
    l2_flush_bytes,
    measure,
    summarize,
)


def test_summary_statistics():
    stats = summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (stats.median_ms, stats.min_ms, stats.max_ms, stats.mean_ms) == (3.0, 1.0, 5.0, 3.0)
    assert stats.p20_ms == pytest.approx(1.8) and stats.p80_ms == pytest.approx(4.2)
    assert stats.std_ms == pytest.approx(2**0.5)
    assert stats.n_reps == 5
    with pytest.raises(ValueError):
        summarize([])


@pytest.mark.parametrize(
    "timer", [WallTimer(), ThreadCpuTimer(), ProcessCpuTimer()], ids=lambda t: t.kind
)
def test_host_timers_restore_outside_timed_region_every_rep(timer):
    events: list[str] = []
    samples = measure(
        timer, lambda: events.append("launch"), lambda: events.append("restore"), warmup=1, rep=3
    )
    assert len(samples) == 3 and all(s >= 0 for s in samples)
    assert events == ["restore", "launch"] * 4


def _spin(cpu_seconds: float) -> None:
    """Burn ``cpu_seconds`` of this thread's CPU time (however long a loaded machine takes)."""
    end = time.thread_time() + cpu_seconds
    while time.thread_time() < end:
        pass


def test_thread_cpu_time_ignores_sleeping_and_other_threads():
    """A launch that waits costs no CPU; work on another thread is not the launching thread's."""
    helper = threading.Thread(target=_spin, args=(0.15,))

    def launch() -> None:
        helper.start()
        time.sleep(0.1)  # stands in for the core being taken by another process
        _spin(0.02)
        helper.join()

    [thread_ms] = ThreadCpuTimer().time_reps(launch, None, 1)
    assert 20 <= thread_ms < 60, thread_ms


def test_process_cpu_time_counts_every_thread_of_the_process():
    def launch() -> None:
        helper = threading.Thread(target=_spin, args=(0.1,))
        helper.start()
        helper.join()

    [process_ms] = ProcessCpuTimer().time_reps(launch, None, 1)
    [thread_ms] = ThreadCpuTimer().time_reps(launch, None, 1)
    assert process_ms >= 80 and thread_ms < 30, (process_ms, thread_ms)


def test_flush_buffer_is_twice_l2_and_never_less_than_do_bench():
    assert l2_flush_bytes(50 << 20) == 256 << 20  # H100: 2 x 50 MB is below Triton's 256 MB
    assert l2_flush_bytes(200 << 20) == 400 << 20
    assert l2_flush_bytes(None) == 256 << 20


class RecordingLaunches:
    """Drives the pass scheduler: each 'rep' records which config ran and returns a sample."""

    def __init__(self, fail: dict[str, int] | None = None) -> None:
        self.calls: list[tuple[str, int]] = []
        self.fail = fail or {}

    def __call__(self, key: str, reps: int) -> list[float] | None:
        self.calls.append((key, reps))
        visit = sum(1 for k, _ in self.calls if k == key)
        if self.fail.get(key) == visit:
            return None
        return [float(len(self.calls))] * reps


def test_interleaved_passes_visit_every_config_once_per_pass_in_seeded_orders():
    keys = [f"c{i}" for i in range(8)]
    plan = PassPlan(passes=4, reps_per_pass=2, seed=7)
    launches = RecordingLaunches()
    samples = run_passes(keys, launches, plan)
    visits = [launches.calls[i * len(keys) : (i + 1) * len(keys)] for i in range(plan.passes)]
    orders = [[key for key, _ in visit] for visit in visits]
    assert all(sorted(order) == keys for order in orders)  # every config in every pass
    assert all(reps == 2 for _, reps in launches.calls)
    assert len({tuple(order) for order in orders}) > 1  # orders differ between passes
    assert orders == [pass_order(keys, 7, i) for i in range(4)]  # and depend on the seed only
    assert orders != [pass_order(keys, 8, i) for i in range(4)]
    # samples are in timing order, pass by pass: the n-th call stamped its reps with n
    for key in keys:
        stamps = [index + 1 for index, (k, _) in enumerate(launches.calls) if k == key]
        assert samples[key] == [float(s) for s in stamps for _ in range(2)]


def test_a_config_that_fails_in_a_pass_leaves_the_later_passes():
    keys = ["a", "b", "c"]
    launches = RecordingLaunches(fail={"b": 2})
    samples = run_passes(keys, launches, PassPlan(passes=3, reps_per_pass=1, seed=0))
    assert set(samples) == {"a", "c"}
    assert [k for k, _ in launches.calls].count("b") == 2
    assert all(len(samples[k]) == 3 for k in ("a", "c"))


def test_sequential_schedule_takes_all_reps_of_a_config_at_once():
    launches = RecordingLaunches()
    samples = run_sequential(["x", "y"], launches, PassPlan(passes=3, reps_per_pass=2, seed=0))
    assert launches.calls == [("x", 6), ("y", 6)]
    assert samples == {"x": [1.0] * 6, "y": [2.0] * 6}


def test_pass_plan_refuses_empty_timing():
    with pytest.raises(ValueError, match="at least one pass"):
        PassPlan(passes=0, reps_per_pass=1, seed=0)
    with pytest.raises(ValueError, match="repeat"):
        run_passes(["a", "a"], RecordingLaunches(), PassPlan(1, 1, 0))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_graph_timer_divides_a_replay_of_many_launches():
    """One graph sample is a replay of GRAPH_LAUNCHES launches divided by their number: about
    the per-launch GPU time the event timer sees for a kernel far longer than a launch."""
    from corpus.harvest.timing import GRAPH_LAUNCHES, CudaEventTimer, CudaGraphTimer

    a = torch.randn(4096, 4096, device="cuda")
    launches = []

    def launch():
        launches.append(1)
        torch.mm(a, a)

    graph = CudaGraphTimer("cuda", 0)
    replay = graph.prepare(launch)
    captured = len(launches)
    assert captured == 1 + GRAPH_LAUNCHES  # one warm launch on a side stream, then the capture
    per_launch = sorted(graph.time_reps(replay, None, 5))[2]
    assert len(launches) == captured  # replays do not run Python
    event = sorted(CudaEventTimer("cuda", 0).time_reps(launch, None, 5))[2]
    assert 0.5 < per_launch / event < 1.5, (per_launch, event)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_event_timer_flushes_with_at_least_256_mib():
    from corpus.harvest.timing import CudaEventTimer, l2_flush_bytes

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    timer = CudaEventTimer("cuda", l2_flush_bytes(l2))
    assert timer.flush_buffer is not None
    assert timer.flush_buffer.numel() * 4 >= max(256 << 20, 2 * l2)
