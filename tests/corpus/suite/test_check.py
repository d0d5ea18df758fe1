"""The planning helpers of ``corpus.suite.check``: sampled interpreter cases and the compile
plan (one job per distinct binary, knob-covering subsets)."""

from __future__ import annotations

import pytest
import torch

from corpus.suite.check import check_suite, limit_jobs, on_device, plan_cases, plan_compiles
from corpus.suite.spec import KernelSpec


def knob_values(configs: list) -> set[tuple[str, object]]:
    return {item for c in configs for item in {**c.kwargs, **c.compile_options()}.items()}


def test_plan_cases_has_default_everywhere_and_seeded_samples(specs: dict[str, KernelSpec]) -> None:
    spec = specs["add_broadcast"]
    cases = plan_cases(spec, "tiny", dtypes=("float32",), samples=5, seed=3)
    defaults = [c for c in cases if c.is_default]
    assert len(defaults) == len(spec.shapes_for("tiny"))
    assert len(cases) == len(defaults) + 5
    assert cases == plan_cases(spec, "tiny", dtypes=("float32",), samples=5, seed=3), (
        "seeded: same plan"
    )
    assert cases != plan_cases(spec, "tiny", dtypes=("float32",), samples=5, seed=4)
    every = plan_cases(spec, "tiny", dtypes=("float32",), every_config=True)
    assert len(every) == sum(len(spec.valid_configs(d, "float32")) for d in spec.shapes_for("tiny"))


def test_compile_plan_covers_every_valid_config_once(specs: dict[str, KernelSpec]) -> None:
    for name in ("row_reduce", "transpose"):
        spec = specs[name]
        plan = plan_compiles(spec, "default")
        assert sum(job.covers for job in plan.jobs) == plan.valid == plan.space - len(plan.invalid)
        for job in plan.jobs:
            assert spec.invalid_reason(job.config, job.dims, job.dtype) is None


def test_limit_jobs_keeps_default_and_covers_every_knob_value(specs: dict[str, KernelSpec]) -> None:
    spec = specs["long_row_reduce"]
    full = plan_compiles(spec, "default")
    limited = limit_jobs(full, 12, default=spec.default_config())
    assert len(limited.jobs) == 12 and limited.distinct == len(full.jobs)
    assert limited.jobs[0].config == spec.default_config()
    assert knob_values([j.config for j in limited.jobs]) == knob_values(
        [j.config for j in full.jobs]
    )
    assert limit_jobs(full, 0).jobs == full.jobs


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_check_on_a_second_gpu_launches_there(specs: dict[str, KernelSpec]) -> None:
    """Triton launches on torch's current device, not the arguments': the check of ``cuda:1``
    must make it current, or its kernels read device 1's memory from device 0."""
    results = check_suite({"add_broadcast": specs["add_broadcast"]}, "tiny", "cuda:1", samples=1)
    assert results and all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert torch.cuda.current_device() == 0  # put back afterwards


def test_only_an_indexed_cuda_device_becomes_current() -> None:
    for device in ("cpu", "cuda"):  # nothing to make current (no CUDA touched)
        with on_device(device):
            pass
    assert isinstance(on_device("cuda:1"), torch.cuda.device)
