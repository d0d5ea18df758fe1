"""The scheduler and the benchmark lane, driven in-process with fake workers (no subprocess)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

from corpus.harvest.measure_worker import ConfigCheck, MeasureOutcome, Probe, RunSetup, TimeReps
from corpus.harvest.plan import PlannedConfig
from corpus.harvest.runner import SETUP_FAILED, Execution, MeasureLane
from corpus.harvest.scheduler import Scheduler
from corpus.suite.spec import Config
from schemas.enums import Status
from tests.corpus.harvest.fake_workers import Crash, InlineWorker

ILLEGAL_ADDRESS = "RuntimeError: CUDA error: an illegal memory access was encountered"


@dataclass(frozen=True)
class FakeRun:
    run_id: str


# -- scheduler ----------------------------------------------------------------------------------


class Recorder:
    """execute/submit pair that records who ran what and how far compiles ran ahead."""

    def __init__(self, work_s: float = 0.0, fail_on: str | None = None) -> None:
        self.work_s = work_s
        self.fail_on = fail_on
        self.lock = threading.Lock()
        self.executed: list[tuple[str, str, Any]] = []
        self.queued = 0
        self.max_queued = 0

    def submit(self, run: FakeRun) -> str:
        with self.lock:
            self.queued += 1
            self.max_queued = max(self.max_queued, self.queued)
        return f"compiles-of-{run.run_id}"

    def execute(self, lane: str, run: FakeRun, compiles: Any) -> None:
        if run.run_id == self.fail_on:
            raise RuntimeError(f"lane {lane} failed on {run.run_id}")
        time.sleep(self.work_s)
        with self.lock:
            self.executed.append((lane, run.run_id, compiles))
            self.queued -= 1


def test_every_run_runs_once_with_its_own_compiles_across_lanes():
    runs = [FakeRun(f"r{i}") for i in range(12)]
    recorder = Recorder(work_s=0.01)
    Scheduler(["a", "b"], recorder.execute, recorder.submit, lookahead=1).run(runs)
    assert sorted(run_id for _, run_id, _ in recorder.executed) == sorted(r.run_id for r in runs)
    assert all(compiles == f"compiles-of-{run_id}" for _, run_id, compiles in recorder.executed)
    assert set(Counter(lane for lane, _, _ in recorder.executed)) == {"a", "b"}


@pytest.mark.parametrize("lookahead", [0, 2])
def test_compiles_run_ahead_by_at_most_lookahead_runs(lookahead: int):
    runs = [FakeRun(f"r{i}") for i in range(10)]
    recorder = Recorder(work_s=0.02)
    scheduler = Scheduler(["a"], recorder.execute, recorder.submit, lookahead=lookahead)
    scheduler.run(runs)
    assert recorder.max_queued == lookahead + 1  # pipelined: reaches the bound, never passes it
    assert scheduler.submitted_order == [r.run_id for r in runs]  # plan order


def test_without_pipelining_nothing_is_queued_ahead():
    recorder = Recorder()
    Scheduler(["a"], recorder.execute, recorder.submit, pipeline=False).run(
        [FakeRun("x"), FakeRun("y")]
    )
    assert recorder.max_queued == 0
    assert [(run_id, compiles) for _, run_id, compiles in recorder.executed] == [
        ("x", None),
        ("y", None),
    ]


def test_a_failing_lane_stops_the_others_and_its_error_surfaces():
    runs = [FakeRun(f"r{i}") for i in range(20)]
    recorder = Recorder(work_s=0.01, fail_on="r3")
    scheduler = Scheduler(["a", "b"], recorder.execute, recorder.submit)
    with pytest.raises(RuntimeError, match="failed on r3"):
        scheduler.run(runs)
    assert scheduler.stop.is_set()
    assert len(recorder.executed) < len(runs) - 1  # the lanes took no more runs


def test_a_stop_from_outside_ends_the_schedule_after_the_current_runs():
    stop = threading.Event()
    runs = [FakeRun(f"r{i}") for i in range(50)]
    recorder = Recorder(work_s=0.01)

    def execute(lane: str, run: FakeRun, compiles: Any) -> None:
        recorder.execute(lane, run, compiles)
        if len(recorder.executed) == 3:
            stop.set()

    Scheduler(["a"], execute, recorder.submit, stop=stop).run(runs)
    assert len(recorder.executed) == 3


def test_the_scheduler_refuses_no_lanes_and_negative_lookahead():
    with pytest.raises(ValueError, match="at least one benchmark lane"):
        Scheduler([], lambda *a: None, lambda run: None)
    with pytest.raises(ValueError, match="lookahead"):
        Scheduler(["a"], lambda *a: None, lambda run: None, lookahead=-1)


# -- benchmark lane -------------------------------------------------------------------------------


class FakeDevice:
    """A bench handler whose behaviour per config is scripted; a fresh handler (a respawned
    worker) starts with a healthy context, as a fresh CUDA context does."""

    def __init__(self, behaviour: dict[str, str], setup_fails: str | None = None) -> None:
        self.behaviour = behaviour
        self.setup_fails = setup_fails
        self.setups: list[RunSetup] = []

    def __call__(self) -> Any:
        state = {"poisoned": False, "setup": None}

        def handle(request: Any) -> Any:
            if isinstance(request, Probe):
                if state["poisoned"]:
                    raise RuntimeError(ILLEGAL_ADDRESS)
                return True
            if state["poisoned"]:
                raise RuntimeError(ILLEGAL_ADDRESS)
            if isinstance(request, RunSetup):
                if self.setup_fails:
                    raise RuntimeError(self.setup_fails)
                state["setup"] = request
                self.setups.append(request)
                return {"outputs": ["out"]}
            assert state["setup"] is not None, "a fresh worker must be set up before a request"
            what = self.behaviour.get(request.config.kwargs["name"], "ok")
            if isinstance(request, TimeReps):
                return MeasureOutcome(Status.OK.value, samples_ms=[1.0] * request.reps)
            assert isinstance(request, ConfigCheck)
            if what == "sticky":
                state["poisoned"] = True
                return MeasureOutcome(Status.RUNTIME_ERROR.value, ILLEGAL_ADDRESS, sticky=True)
            if what == "late_sticky":  # the launch's error surfaces only at the next sync
                state["poisoned"] = True
                return MeasureOutcome(Status.MISMATCH.value, "out: 3 of 64 elements wrong")
            if what == "mismatch":
                return MeasureOutcome(Status.MISMATCH.value, "out: 3 of 64 elements wrong")
            if what == "hang":
                time.sleep(2)
            if what == "crash":
                raise Crash("killed by signal 9")
            if what == "bug":
                raise KeyError("handler bug")
            return MeasureOutcome(Status.OK.value, max_abs_error=0.0)

        return handle


def execution(**changes: Any) -> Execution:
    values: dict[str, Any] = {
        "out": "unused",
        "suite": (),
        "devices": ("interpreter",),
        "target": "sm_90",
        "workers": 1,
        "compile_timeout_s": 5.0,
        "bench_timeout_s": 0.5,
        "warmup": 0,
        "passes": 1,
        "reps_per_pass": 1,
        "timer": "thread_cpu",
        "l2_flush": False,
        "l2_flush_bytes": 0,
    }
    return Execution(**{**values, **changes})


def lane_with(device: FakeDevice, **changes: Any) -> tuple[MeasureLane, InlineWorker]:
    worker = InlineWorker(device)
    return MeasureLane("interpreter", execution(**changes), {}, worker=worker), worker


def planned(name: str) -> PlannedConfig:
    return PlannedConfig(Config({"name": name}))  # type: ignore[dict-item]


SETUP = RunSetup("family", {"N": 64}, "float32", 0)


def test_a_sticky_error_replaces_the_worker_and_the_next_config_runs_in_a_fresh_one():
    lane, worker = lane_with(FakeDevice({"bad": "sticky"}))
    assert lane.setup(SETUP) is None
    bad = lane.check(SETUP, planned("bad"), None)
    assert (bad.status, bad.error) == (Status.RUNTIME_ERROR.value, ILLEGAL_ADDRESS)
    good = lane.check(SETUP, planned("good"), None)
    assert good.status == Status.OK.value
    assert worker.restarts == 1 and lane.replaced == ["sticky error"]


def test_a_failure_is_followed_by_a_probe_and_a_failed_probe_replaces_the_worker():
    lane, worker = lane_with(FakeDevice({"late": "late_sticky", "wrong": "mismatch"}))
    lane.setup(SETUP)
    wrong = lane.check(SETUP, planned("wrong"), None)
    assert wrong.status == Status.MISMATCH.value and worker.restarts == 0
    assert sum(isinstance(r, Probe) for r in worker.requests) == 1  # probed, and fine
    late = lane.check(SETUP, planned("late"), None)
    assert late.status == Status.MISMATCH.value  # the row keeps the classified status
    assert "device probe failed afterwards" in late.error and "illegal memory access" in late.error
    assert worker.restarts == 1
    assert lane.check(SETUP, planned("good"), None).status == Status.OK.value


def test_an_error_of_unknown_cause_replaces_the_worker():
    lane, worker = lane_with(FakeDevice({"bug": "bug"}))
    lane.setup(SETUP)
    outcome = lane.check(SETUP, planned("bug"), None)
    assert outcome.status == Status.RUNTIME_ERROR.value and "handler bug" in outcome.error
    assert lane.replaced == ["error of unknown cause"] and worker.restarts == 1
    assert lane.check(SETUP, planned("good"), None).status == Status.OK.value


def test_timeouts_and_crashes_become_rows_and_the_lane_goes_on():
    device = FakeDevice({"slow": "hang", "boom": "crash"})
    lane, worker = lane_with(device)
    lane.setup(SETUP)
    assert lane.check(SETUP, planned("slow"), None).status == Status.TIMEOUT.value
    crashed = lane.check(SETUP, planned("boom"), None)
    assert crashed.status == Status.RUNTIME_ERROR.value and "crashed" in crashed.error
    assert lane.check(SETUP, planned("good"), None).status == Status.OK.value
    assert worker.restarts == 2
    assert len(device.setups) == 3  # every fresh worker was set up again before its request


def test_a_worker_that_died_while_idle_is_respawned_by_the_next_request():
    device = FakeDevice({})
    lane, worker = lane_with(device)
    lane.setup(SETUP)
    worker.die_while_idle()
    assert lane.check(SETUP, planned("good"), None).status == Status.OK.value
    assert worker.restarts == 1


def test_a_failed_setup_is_reported_once_with_its_reason():
    lane, worker = lane_with(
        FakeDevice({}, setup_fails="torch.OutOfMemoryError: CUDA out of memory.")
    )
    problem = lane.setup(SETUP)
    assert problem is not None and "out of memory" in problem
    assert worker.restarts == 1  # an error the classifier does not know: a fresh process
    outcome = lane.check(SETUP, planned("good"), None)
    assert outcome.error is not None and outcome.error.startswith(SETUP_FAILED)


def test_workers_are_recycled_after_n_runs():
    device = FakeDevice({})
    lane, worker = lane_with(device, recycle_runs=2)
    for seed in range(5):
        assert lane.setup(RunSetup("family", {"N": 64}, "float32", seed)) is None
    assert worker.restarts == 2  # before the 3rd and the 5th run
    assert lane.replaced == ["served 2 runs", "served 2 runs"]
