"""GPU-only: a kernel that reads out of bounds poisons its worker's CUDA context; the lane
replaces the worker and the next run is measured normally; the launched binary is the
compiled one. Skipped without CUDA."""

from __future__ import annotations

import pytest
import torch

from corpus.harvest.measure_worker import RunSetup
from corpus.harvest.plan import PlannedConfig
from corpus.harvest.runner import MeasureLane
from schemas.enums import Status
from tests.corpus.harvest.gpu_kernels import GoodCopy
from tests.corpus.harvest.test_scheduler import execution

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]

SUITE = ("tests.corpus.harvest.gpu_kernels",)
CONFIG = PlannedConfig(GoodCopy().default_config())


@pytest.fixture
def lane():
    lane = MeasureLane(
        "cuda:0",
        execution(suite=SUITE, devices=("cuda:0",), timer="cuda_event", bench_timeout_s=120.0),
        {},
    )
    yield lane
    lane.close()


def test_an_out_of_bounds_read_replaces_the_worker_and_the_next_run_is_measured(lane: MeasureLane):
    bad = RunSetup("test_gpu_out_of_bounds", {"N": 4096}, "float32", 0)
    assert lane.setup(bad) is None
    first_pid = lane.worker.pid
    outcome = lane.check(bad, CONFIG, None)
    assert outcome.status == Status.RUNTIME_ERROR.value
    assert "illegal memory access" in (outcome.error or "")
    assert lane.replaced and lane.replaced[0] in ("sticky error", "probe failed")
    good = RunSetup("test_gpu_copy", {"N": 4096}, "float32", 0)
    checked = lane.check(good, CONFIG, None)
    assert checked.status == Status.OK.value, checked.error
    assert lane.worker.pid not in (None, first_pid)
    timed = lane.time(good, CONFIG, 5)
    assert timed.status == Status.OK.value and len(timed.samples_ms) == 5
    assert all(sample > 0 for sample in timed.samples_ms)


def test_the_launched_binary_is_checked_against_the_compiled_one(lane: MeasureLane):
    from corpus.harvest.compile_worker import CompileInit, CompileTask, make_handler

    major, minor = torch.cuda.get_device_capability(0)
    compile_handler = make_handler(CompileInit(SUITE, f"sm_{major}{minor}"))
    good = RunSetup("test_gpu_copy", {"N": 4096}, "float32", 0)
    compiled = compile_handler(
        CompileTask(good.family, good.dims, good.dtype, good.seed, CONFIG.config)
    )
    assert compiled.status == Status.OK.value and compiled.binary_hash
    assert lane.check(good, CONFIG, compiled.binary_hash).launch_verified is True
    assert lane.check(good, CONFIG, "0" * len(compiled.binary_hash)).launch_verified is False


def test_a_cuda_graph_lane_times_a_checked_config():
    """The CUDA-graph timer in the benchmark worker: warmup, capture, replays; a second request
    for the config replays the graph captured by the first."""
    graph_lane = MeasureLane(
        "cuda:0",
        execution(
            suite=SUITE, devices=("cuda:0",), timer="cuda_graph", bench_timeout_s=120.0, warmup=2, l2_flush=True
        ),
        {},
    )
    try:
        good = RunSetup("test_gpu_copy", {"N": 4096}, "float32", 0)
        assert graph_lane.check(good, CONFIG, None).status == Status.OK.value
        for _ in range(2):
            timed = graph_lane.time(good, CONFIG, 5)
            assert timed.status == Status.OK.value, timed.error
            assert len(timed.samples_ms) == 5 and all(0 < s < 10 for s in timed.samples_ms)
        assert not graph_lane.replaced
    finally:
        graph_lane.close()
